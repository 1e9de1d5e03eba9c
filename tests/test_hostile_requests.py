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
