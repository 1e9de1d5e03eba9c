"""The shared API layer: every error path is problem+json, auth, scopes, tenancy, lists, limits.

Exercised through the test-only Note resource (tests/testapp), never in production URLs.
"""

import json

import pytest

from tests.support.factories import AgentFactory
from tests.support.plugin import assert_problem
from tests.testapp.models import Note

NOTES = "/api/v1/_test/notes"
IDEM = {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": "k-1"}

pytestmark = pytest.mark.django_db


def note(widget, title="n"):
    return Note.objects.create(widget=widget, title=title)


# --- 401 -----------------------------------------------------------------------------------------


def test_missing_token_is_401_with_www_authenticate(client):
    response = client.get(NOTES)
    body = assert_problem(response, 401, "not_authenticated")
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert body["instance"] == NOTES


@pytest.mark.parametrize(
    "header",
    [
        "Bearer",
        "Bearer ",
        "Basic dXNlcjpwYXNz",
        "Token abc",
        "Bearer cwt_short",
        "Bearer cwt_" + "A" * 46,  # right shape, wrong checksum
        "Bearer a b",
    ],
)
def test_malformed_token_is_401(client, header):
    response = client.get(NOTES, HTTP_AUTHORIZATION=header)
    assert_problem(response, 401)
    assert "WWW-Authenticate" in response


def test_unknown_well_formed_token_is_401(client):
    from apps.core.auth import tokens

    plaintext, _ = tokens.generate()
    response = client.get(NOTES, HTTP_AUTHORIZATION=f"Bearer {plaintext}")
    assert_problem(response, 401, "invalid_token")


def test_revoked_token_is_401(client, widget):
    from apps.core import services

    issued = services.issue_token(widget=widget, scopes=["chats:read"])
    services.revoke_token(token=issued.token)
    response = client.get(NOTES, HTTP_AUTHORIZATION=f"Bearer {issued.plaintext}")
    assert_problem(response, 401, "invalid_token")


def test_expired_token_is_401(client, widget):
    from datetime import timedelta

    from django.utils import timezone

    from apps.core import services

    issued = services.issue_token(widget=widget, scopes=["chats:read"], expires_in=60)
    issued.token.expires_at = timezone.now() - timedelta(seconds=1)
    issued.token.save()
    response = client.get(NOTES, HTTP_AUTHORIZATION=f"Bearer {issued.plaintext}")
    assert_problem(response, 401, "invalid_token")


def test_token_in_query_string_is_refused_even_with_a_header(client, make_token):
    token = make_token()
    response = client.get(f"{NOTES}?access_token={token}", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert_problem(response, 401, "token_in_query")


def test_token_shaped_value_under_any_query_name_is_refused(client, make_token):
    token = make_token()
    response = client.get(f"{NOTES}?q={token}", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert_problem(response, 401, "token_in_query")


def test_last_used_at_is_recorded(client, widget):
    from apps.core import services

    issued = services.issue_token(widget=widget, scopes=["chats:read"])
    client.get(NOTES, HTTP_AUTHORIZATION=f"Bearer {issued.plaintext}")
    issued.token.refresh_from_db()
    assert issued.token.last_used_at is not None


# --- 403 -----------------------------------------------------------------------------------------


def test_api_disabled_widget_is_403(api, widget):
    widget.api_enabled = False
    widget.save()
    assert_problem(api().get(NOTES), 403, "api_disabled")


def test_missing_scope_is_403_naming_the_alternatives(api, widget):
    n = note(widget)
    body = assert_problem(api(scopes=["chats:read"]).delete(f"{NOTES}/{n.pk}"), 403, "missing_scope")
    assert body["required_scopes"] == ["chats:write", "contacts:write"]


def test_alternative_scope_suffices(api, widget):
    n = note(widget)
    assert api(scopes=["contacts:write"]).delete(f"{NOTES}/{n.pk}").status_code == 204


def test_write_scope_does_not_imply_read(api):
    assert_problem(api(scopes=["chats:write"]).get(NOTES), 403, "missing_scope")


def test_reserved_scope_grants_nothing(api):
    assert_problem(api(scopes=["partners:withdraw"]).get(NOTES), 403, "missing_scope")


# --- 404 and tenancy -------------------------------------------------------------------------------


def test_foreign_id_is_the_same_404_as_a_missing_one(api, widget, other_widget):
    foreign = note(other_widget)
    missing_id = foreign.pk + 1000
    client = api()
    a = assert_problem(client.get(f"{NOTES}/{foreign.pk}"), 404, "not_found")
    b = assert_problem(client.get(f"{NOTES}/{missing_id}"), 404, "not_found")
    a.pop("instance"), b.pop("instance")
    assert a == b


def test_foreign_row_never_listed(api, widget, other_widget):
    mine, _ = note(widget, "mine"), note(other_widget, "theirs")
    data = api().get(NOTES).json()["data"]
    assert [row["id"] for row in data] == [mine.pk]


def test_foreign_id_in_body_resolved_within_tenant_404(api, widget, other_widget):
    n = note(widget)
    foreign_agent = AgentFactory(widget=other_widget)
    response = api().post(f"{NOTES}/{n.pk}/assign", {"agent_id": foreign_agent.pk}, format="json")
    a = assert_problem(response, 404, "not_found")
    response = api().post(f"{NOTES}/{n.pk}/assign", {"agent_id": foreign_agent.pk + 999}, format="json")
    b = assert_problem(response, 404, "not_found")
    assert a["detail"] == b["detail"]


def test_own_id_in_body_resolves(api, widget):
    n = note(widget)
    agent = AgentFactory(widget=widget)
    response = api().post(f"{NOTES}/{n.pk}/assign", {"agent_id": agent.pk}, format="json")
    assert response.status_code == 200
    assert response.json()["agent_id"] == agent.pk


def test_body_id_field_can_answer_422_at_its_path(api, other_widget):
    foreign_agent = AgentFactory(widget=other_widget)
    response = api().post(NOTES, {"title": "x", "agent_id": foreign_agent.pk}, format="json", **IDEM)
    body = assert_problem(response, 422, "validation_failed")
    assert list(body["errors"]) == ["agent_id"]


def test_unknown_path_under_api_is_problem_404(client):
    assert_problem(client.get("/api/v1/does-not-exist"), 404)


def test_non_numeric_id_is_404(api):
    assert_problem(api().get(f"{NOTES}/abc"), 404, "not_found")


# --- 405 / 415 / 400 / 413 / 422 ---------------------------------------------------------------------


def test_method_not_allowed_is_problem_405_with_allow(api):
    response = api().put(NOTES, {}, format="json")
    assert_problem(response, 405, "method_not_allowed")
    assert "GET" in response["Allow"]


def test_trailing_slash_is_accepted_not_redirected(api, widget):
    response = api().get(NOTES + "/")
    assert response.status_code == 200


def test_json_write_with_another_content_type_is_415(api):
    response = api().post(NOTES, "title=x", content_type="application/x-www-form-urlencoded", **IDEM)
    assert_problem(response, 415, "unsupported_media_type")


def test_malformed_json_is_400_invalid_json(api):
    response = api().post(NOTES, '{"title": ', content_type="application/json", **IDEM)
    assert_problem(response, 400, "invalid_json")


def test_nan_is_not_json(api):
    response = api().post(NOTES, '{"title": "x", "slow": NaN}', content_type="application/json", **IDEM)
    assert_problem(response, 400, "invalid_json")


def test_body_over_the_limit_is_413(api, settings):
    settings.API_MAX_BODY_BYTES = 100
    body = json.dumps({"title": "x" * 200})
    assert_problem(api().post(NOTES, body, content_type="application/json", **IDEM), 413, "body_too_large")


@pytest.mark.parametrize(
    ("member", "value", "message"),
    [
        ("slow", False, "Must be a number."),
        ("slow", "1.5", "Must be a number."),
        ("title", 12, "Must be a string."),
        ("title", True, "Must be a string."),
    ],
)
def test_a_member_of_another_json_type_is_422_and_changes_nothing(api, member, value, message):
    """A value is never coerced to the schema's type: `false` is not the number 0, nor 12 the text "12"."""
    body = {"title": "x", member: value}
    refused = assert_problem(api().post(NOTES, body, format="json", **IDEM), 422, "validation_failed")
    assert refused["errors"] == {member: [message]}
    assert not Note.objects.exists()


def test_unknown_fields_are_422_by_name(api):
    response = api().post(NOTES, {"title": "x", "colour": "red", "size": 1}, format="json", **IDEM)
    body = assert_problem(response, 422, "validation_failed")
    assert set(body["errors"]) == {"colour", "size"}


def test_read_only_field_sent_back_is_422_by_name(api):
    response = api().post(NOTES, {"title": "x", "id": 5}, format="json", **IDEM)
    body = assert_problem(response, 422)
    assert list(body["errors"]) == ["id"]


def test_nested_errors_use_dotted_paths(api):
    buttons = [{"label": "ok", "url": "https://example.com"}] * 3 + [{"label": "bad", "url": "nope"}]
    response = api().post(NOTES, {"title": "x", "keyboard": {"buttons": buttons}}, format="json", **IDEM)
    body = assert_problem(response, 422)
    assert list(body["errors"]) == ["keyboard.buttons.3.url"]


def test_body_must_be_an_object(api):
    response = api().post(NOTES, "[1, 2]", content_type="application/json", **IDEM)
    body = assert_problem(response, 422)
    assert "body" in body["errors"]


def test_unhandled_error_is_problem_500_without_stack(api):
    client = api()
    client.raise_request_exception = False
    response = client.get("/api/v1/_test/boom")
    body = assert_problem(response, 500, "server_error")
    assert "secret stack detail" not in response.content.decode()
    assert "Traceback" not in json.dumps(body)


def test_problem_pages_exist_for_codes(client, api):
    body = assert_problem(api(scopes=["stats:read"]).get(NOTES), 403, "missing_scope")
    assert body["type"] == "/api/problems/missing_scope"
    page = client.get(body["type"])
    assert page.status_code == 200
    assert b"missing_scope" in page.content


# --- lists ---------------------------------------------------------------------------------------------


def test_list_envelope_newest_first_with_cursor(api, widget):
    notes = [note(widget, f"n{i}") for i in range(5)]
    client = api()
    first = client.get(NOTES, {"limit": 2}).json()
    assert [r["id"] for r in first["data"]] == [notes[4].pk, notes[3].pk]
    second = client.get(NOTES, {"limit": 2, "cursor": first["next_cursor"]}).json()
    third = client.get(NOTES, {"limit": 2, "cursor": second["next_cursor"]}).json()
    assert [r["id"] for r in second["data"]] == [notes[2].pk, notes[1].pk]
    assert [r["id"] for r in third["data"]] == [notes[0].pk]
    assert third["next_cursor"] is None


def test_same_timestamp_rows_are_split_by_id(api, widget):
    from django.utils import timezone

    now = timezone.now()
    notes = [Note.objects.create(widget=widget, title=str(i), created_at=now) for i in range(3)]
    client = api()
    seen, cursor = [], None
    while True:
        page = client.get(NOTES, {"limit": 1, **({"cursor": cursor} if cursor else {})}).json()
        seen += [r["id"] for r in page["data"]]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert seen == [n.pk for n in reversed(notes)]


@pytest.mark.parametrize("limit", ["0", "101", "-1", "abc", "1.5", ""])
def test_limit_outside_range_is_422(api, limit):
    body = assert_problem(api().get(NOTES, {"limit": limit}), 422)
    assert "limit" in body["errors"]


def test_forged_cursor_is_422(api, widget):
    import base64

    for i in range(3):
        note(widget, str(i))
    client = api()
    real = client.get(NOTES, {"limit": 1}).json()["next_cursor"]
    forged_payload = base64.urlsafe_b64encode(b'[{"dt":"2030-01-01T00:00:00+00:00"},999999]').decode().rstrip("=")
    for bad in [forged_payload, real[:-2] + ("AA" if not real.endswith("AA") else "BB"), "x", real + "x"]:
        body = assert_problem(client.get(NOTES, {"cursor": bad}), 422)
        assert "cursor" in body["errors"]


def test_list_issues_no_count_query(api, widget, django_assert_max_num_queries):
    for i in range(30):
        note(widget, str(i))
    client = api()
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as ctx:
        assert client.get(NOTES).status_code == 200
    assert not any("COUNT(" in q["sql"].upper() for q in ctx.captured_queries)


# --- rate limit headers ------------------------------------------------------------------------------


def test_rate_limit_headers_on_every_authenticated_response(api, widget):
    client = api()
    ok = client.get(NOTES)
    assert ok["X-RateLimit-Limit"] == "600"
    assert int(ok["X-RateLimit-Remaining"]) == 599
    assert int(ok["X-RateLimit-Reset"]) >= 0
    err = client.get(f"{NOTES}/999999")
    assert err.status_code == 404 and err["X-RateLimit-Remaining"] == "598"


def test_token_over_its_budget_is_429_with_retry_after(api, settings):
    settings.API_RATE_LIMIT_PER_MINUTE = 3
    client = api()
    for _ in range(3):
        assert client.get(NOTES).status_code == 200
    response = client.get(NOTES)
    assert_problem(response, 429, "rate_limited")
    assert int(response["Retry-After"]) >= 1
    assert response["X-RateLimit-Remaining"] == "0"
