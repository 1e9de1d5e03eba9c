"""A database that refuses connections or is locked answers 503 with Retry-After, never 500."""

import sqlite3

import psycopg
import pytest
from django.db import OperationalError

from apps.chats.api.views import ChatViewSet
from apps.core.errors import database_busy
from tests.support.plugin import assert_problem


def wrapped(cause: Exception) -> OperationalError:
    """As Django's DatabaseErrorWrapper raises it: the driver's error as the cause."""
    try:
        raise OperationalError(str(cause)) from cause
    except OperationalError as err:
        return err


@pytest.mark.parametrize(
    "cause",
    [
        psycopg.errors.TooManyConnections("FATAL: sorry, too many clients already"),
        psycopg.OperationalError("connection failed: Connection refused"),
        psycopg.errors.AdminShutdown("terminating connection due to administrator command"),
        sqlite3.OperationalError("database is locked"),
    ],
)
def test_refused_dropped_or_locked_is_busy(cause):
    assert database_busy(wrapped(cause))


@pytest.mark.parametrize(
    "exc",
    [
        wrapped(psycopg.errors.DeadlockDetected("deadlock detected")),
        wrapped(psycopg.errors.QueryCanceled("canceling statement due to statement timeout")),
        wrapped(sqlite3.OperationalError("no such table: x")),
        psycopg.errors.TooManyConnections("not wrapped by Django"),
        RuntimeError("database is locked"),
    ],
)
def test_other_errors_stay_bugs(exc):
    assert not database_busy(exc)


@pytest.mark.django_db
def test_a_view_meeting_a_full_database_answers_503_with_retry_after(api, monkeypatch):
    def refuse(self, request, *args, **kwargs):
        raise wrapped(psycopg.errors.TooManyConnections("FATAL: sorry, too many clients already"))

    monkeypatch.setattr(ChatViewSet, "list", refuse)
    response = api().get("/api/v1/chats")
    assert_problem(response, 503, "service_unavailable")
    assert response["Retry-After"] == "1"
    assert "too many clients" not in response.content.decode()
