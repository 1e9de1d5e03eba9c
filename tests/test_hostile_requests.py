"""Requests any stranger can send must be answered with a 4xx problem, never a 500 (and never a
traceback in the log): query strings, headers and bodies built to break parsers."""

import logging

import pytest

from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db


@pytest.fixture
def no_errors_logged(caplog):
    """Fails the test when anything was logged at ERROR or above (an unhandled exception)."""
    caplog.set_level(logging.ERROR)
    yield
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors, [(r.name, r.getMessage()) for r in errors]


# --- integers written as text ------------------------------------------------------------------


@pytest.mark.parametrize("limit", ["²", "５", "+5", " 5", "5.0", "0", "101"])
def test_limit_of_anything_but_ascii_digits_in_range_is_422(api, limit, no_errors_logged):
    # "²" passes str.isdigit() and crashes int(); "５" is read by int() as 5.
    body = assert_problem(api().get("/api/v1/chats", {"limit": limit}), 422, "validation_failed")
    assert "limit" in body["errors"]


# --- dates no query can use ----------------------------------------------------------------------------


@pytest.fixture
def chat(widget):
    from apps.chats.tests.factories import ChatFactory

    return ChatFactory(widget=widget)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("from", "0001-01-01"),
        ("to", "0001-01-01T00:00:00+14:00"),
        ("to", "9999-12-31T23:59:59-14:00"),
        ("from", "9999-12-31"),
        ("from", "1899-12-31T23:59:59+03:00"),
    ],
)
@pytest.mark.parametrize("route", ["/api/v1/chats", "/api/v1/chats/{chat}/messages", "/api/v1/stats"])
def test_from_and_to_outside_the_supported_range_are_422_on_every_route(
    api, chat, route, name, value, no_errors_logged
):
    response = api().get(route.format(chat=chat.pk), {name: value})
    body = assert_problem(response, 422, "validation_failed")
    assert body["errors"][name] == ["Must be from 1900-01-01 to 9999-01-01 (Europe/Moscow)."]


def test_the_edges_of_the_supported_range_are_accepted(api, chat, no_errors_logged):
    response = api().get("/api/v1/chats", {"from": "1900-01-01", "to": "9999-01-01"})
    assert response.status_code == 200, response.content


# --- more parameters, fields and files than Django reads ---------------------------------------------

MANY_PARAMS = "&".join(f"p{i}=1" for i in range(1001))


@pytest.mark.parametrize("path", ["/api/v1/chats", "/api/v1/contacts", "/api/v1/_test/ping"])
def test_more_than_1000_query_parameters_is_400_before_authentication(client, path, no_errors_logged):
    # Content negotiation reads the query string before the token is looked at.
    assert_problem(client.get(f"{path}?{MANY_PARAMS}"), 400, "too_many_fields")


def test_more_than_1000_query_parameters_with_a_token_is_400(api, no_errors_logged):
    assert_problem(api().get(f"/api/v1/chats?{MANY_PARAMS}"), 400, "too_many_fields")


def multipart(parts: list[tuple[str, str | None, bytes]]) -> tuple[bytes, str]:
    boundary = "hostileboundary42"
    chunks = []
    for field, filename, data in parts:
        disposition = f'form-data; name="{field}"' + (f'; filename="{filename}"' if filename is not None else "")
        chunks.append(f"--{boundary}\r\nContent-Disposition: {disposition}\r\n\r\n".encode() + data + b"\r\n")
    return b"".join(chunks) + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


@pytest.fixture
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def post_multipart(client, path, parts, **headers):
    body, content_type = multipart(parts)
    return client.generic(
        "POST", path, body, content_type=content_type, HTTP_X_SERVICE_IDEMPOTENCY_KEY="k-1", **headers
    )


def test_a_multipart_upload_of_more_than_100_files_is_400(api, media_root, no_errors_logged):
    parts = [("file", f"f{i}.txt", b"x") for i in range(101)]
    assert_problem(post_multipart(api(), "/api/v1/files", parts), 400, "too_many_files")


def test_a_multipart_upload_of_more_than_1000_fields_is_400(api, media_root, no_errors_logged):
    parts = [(f"field{i}", None, b"x") for i in range(1001)]
    assert_problem(post_multipart(api(), "/api/v1/files", parts), 400, "too_many_fields")


@pytest.fixture
def visitor_token(client, widget):
    response = client.post(f"/api/visitor/v1/{widget.button_guid}/sessions", {}, content_type="application/json")
    assert response.status_code == 201, response.content
    return response.json()["session_token"]


@pytest.mark.parametrize(
    ("parts", "code"),
    [
        ([("file", f"f{i}.txt", b"x") for i in range(101)], "too_many_files"),
        ([(f"field{i}", None, b"x") for i in range(1001)], "too_many_fields"),
    ],
)
def test_a_visitor_upload_of_too_many_parts_is_400(
    client, widget, visitor_token, media_root, parts, code, no_errors_logged
):
    path = f"/api/visitor/v1/{widget.button_guid}/files"
    response = post_multipart(client, path, parts, HTTP_AUTHORIZATION=f"Visitor {visitor_token}")
    assert_problem(response, 400, code)


# --- JSON nested deeper than anything we read --------------------------------------------------------


def nested(depth: int) -> str:
    return '{"name": ' + "[" * depth + "]" * depth + "}"


@pytest.mark.parametrize("depth", [65, 900, 1000, 100_000])
def test_json_nested_too_deep_is_400_on_the_public_visitor_sessions_route(client, widget, depth, no_errors_logged):
    response = client.post(
        f"/api/visitor/v1/{widget.button_guid}/sessions", nested(depth), content_type="application/json"
    )
    body = assert_problem(response, 400, "invalid_json")
    assert "64 levels" in body["detail"]


@pytest.mark.parametrize("depth", [65, 1000])
def test_json_nested_too_deep_is_400_on_the_api(api, depth, no_errors_logged):
    response = api().post(
        "/api/v1/_test/notes", nested(depth), content_type="application/json", HTTP_X_SERVICE_IDEMPOTENCY_KEY="k-2"
    )
    assert_problem(response, 400, "invalid_json")


@pytest.mark.parametrize("body", ["\t", " ", "\r\n"])
def test_a_body_of_whitespace_alone_is_400_not_an_empty_object(api, body, no_errors_logged):
    # found by the fuzzer: PUT /api/v1/ai/messages with the body "\t" answered 200 as if it were {}
    response = api().put(
        "/api/v1/ai/messages", body, content_type="application/json", HTTP_X_SERVICE_IDEMPOTENCY_KEY=f"ws-{len(body)}"
    )
    assert_problem(response, 400, "invalid_json")


def test_json_nested_64_deep_reaches_validation(client, widget, no_errors_logged):
    # 63 brackets inside the top-level object: 64 levels in all
    response = client.post(
        f"/api/visitor/v1/{widget.button_guid}/sessions", nested(63), content_type="application/json"
    )
    assert_problem(response, 422, "validation_failed")


# --- exceptions of plain views under /api/ -----------------------------------------------------------


def test_an_unknown_problem_page_is_404(client, no_errors_logged):
    assert_problem(client.get("/api/problems/no_such_condition"), 404, "not_found")


def test_a_known_problem_page_is_served(client):
    response = client.get("/api/problems/not_found")
    assert response.status_code == 200
    assert b"not_found" in response.content


def test_an_unexpected_error_is_still_a_logged_500(api, caplog):
    # the test-only BoomView raises an unexpected exception
    assert_problem(api().get("/api/v1/_test/boom"), 500, "server_error")
    assert any(r.levelno >= logging.ERROR for r in caplog.records)


# --- a NUL in a path key ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "method,path",
    [
        ("get", "/api/v1/contacts/%00"),
        ("get", "/api/v1/contacts/a%00b/export"),
        ("post", "/api/v1/contacts/%00/erase"),
    ],
)
def test_a_nul_in_a_string_key_is_404_like_any_missing_key(api, method, path, no_errors_logged):
    client = api(scopes=["contacts:read", "privacy:write"])
    response = getattr(client, method)(path, HTTP_X_SERVICE_IDEMPOTENCY_KEY="nul-key")
    assert_problem(response, 404, "not_found")


# --- lone surrogates echoed in a problem -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "errors"),
    [
        ('{"title": "n", "\\ud800": 1}', {"\\ud800": ["Unknown field."]}),
        ('{"title": "n", "x\\udfffy": 1}', {"x\\udfffy": ["Unknown field."]}),
    ],
)
def test_a_lone_surrogate_a_problem_echoes_is_written_as_its_escape(api, raw, errors, no_errors_logged):
    # a JSON escape of half a surrogate pair decodes to a string UTF-8 cannot encode; the problem
    # naming it is still rendered, with the escape as text
    response = api().post(
        "/api/v1/_test/notes", raw, content_type="application/json", HTTP_X_SERVICE_IDEMPOTENCY_KEY="s"
    )
    assert assert_problem(response, 422, "validation_failed")["errors"] == errors
