"""Requests any stranger can send must be answered with a 4xx problem, never a 500 (and never a
traceback in the log): query strings, headers and bodies built to break parsers."""

import logging

import pytest

from apps.core.testing.plugin import assert_problem

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


# --- JSON nested deeper than anything we read --------------------------------------------------------


def nested(depth: int) -> str:
    return '{"name": ' + "[" * depth + "]" * depth + "}"


@pytest.mark.parametrize("depth", [65, 900, 1000, 100_000])
def test_json_nested_too_deep_is_400_on_the_public_visitor_sessions_route(client, widget, depth, no_errors_logged):
    response = client.post(f"/api/visitor/v1/{widget.button_guid}/sessions", nested(depth), content_type="application/json")
    body = assert_problem(response, 400, "invalid_json")
    assert "64 levels" in body["detail"]


@pytest.mark.parametrize("depth", [65, 1000])
def test_json_nested_too_deep_is_400_on_the_api(api, depth, no_errors_logged):
    response = api().post(
        "/api/v1/_test/notes", nested(depth), content_type="application/json", HTTP_X_SERVICE_IDEMPOTENCY_KEY="k-2"
    )
    assert_problem(response, 400, "invalid_json")


def test_json_nested_64_deep_reaches_validation(client, widget, no_errors_logged):
    # 63 brackets inside the top-level object: 64 levels in all
    response = client.post(f"/api/visitor/v1/{widget.button_guid}/sessions", nested(63), content_type="application/json")
    assert_problem(response, 422, "validation_failed")
