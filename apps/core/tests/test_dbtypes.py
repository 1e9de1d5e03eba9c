"""Timestamps read from PostgreSQL go through psycopg's C loader when the session's zone is UTC
(apps.core.dbtypes), and come back exactly as Django's own loader gives them."""

from __future__ import annotations

import datetime
from types import SimpleNamespace

import pytest
from django.db import connection
from psycopg.pq import Format

from apps.core import dbtypes

UTC = datetime.UTC


@pytest.mark.postgres
@pytest.mark.django_db
class TestOnPostgres:
    def test_the_connection_reads_timestamptz_with_the_c_loader(self):
        assert dbtypes.HAVE_C_LOADER  # psycopg-binary is pinned in requirements/base.txt
        connection.ensure_connection()
        loader = connection.connection.adapters.get_loader(1184, Format.TEXT)
        assert loader is dbtypes.UtcTimestamptzLoader
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        # Django keeps it: the loader's zone is the connection's, so create_cursor registers nothing else.
        assert connection.connection.adapters.get_loader(1184, Format.TEXT) is dbtypes.UtcTimestamptzLoader

    @pytest.mark.parametrize(
        "text, expected",
        [
            ("2026-11-23 04:51:02.123456+03", datetime.datetime(2026, 11, 23, 1, 51, 2, 123456, tzinfo=UTC)),
            ("2024-02-29 23:59:59-11:30", datetime.datetime(2024, 3, 1, 11, 29, 59, tzinfo=UTC)),
            ("1970-01-01 00:00:00+00", datetime.datetime(1970, 1, 1, tzinfo=UTC)),
            ("0001-01-01 00:00:00+00", datetime.datetime(1, 1, 1, tzinfo=UTC)),
        ],
    )
    def test_values_are_the_same_instants_in_utc(self, text, expected):
        with connection.cursor() as cursor:
            cursor.execute("SELECT %s::timestamptz, NULL::timestamptz", [text])
            value, null = cursor.fetchone()
        assert value == expected
        assert value.tzinfo is UTC
        assert value.isoformat() == expected.isoformat()
        assert null is None

    def test_the_same_as_djangos_python_loader(self):
        with connection.cursor() as cursor:
            cursor.execute("SELECT now() - (n || ' seconds')::interval FROM generate_series(1, 200) AS n")
            ours = [row[0] for row in cursor.fetchall()]
        raw = connection.connection
        try:
            from django.db.backends.postgresql.psycopg_any import register_tzloader

            register_tzloader(UTC, raw)
            with raw.cursor() as cursor:
                cursor.execute("SELECT now() - (n || ' seconds')::interval FROM generate_series(1, 200) AS n")
                djangos = [row[0] for row in cursor.fetchall()]
        finally:
            raw.adapters.register_loader("timestamptz", dbtypes.UtcTimestamptzLoader)
        # now() is the transaction's start: both statements ran in the test's transaction.
        assert ours == djangos
        assert all(value.tzinfo is UTC for value in ours)

    def test_orm_round_trip(self):
        from apps.core.models import Account
        from apps.core.testing.factories import AccountFactory

        stamp = datetime.datetime(2026, 11, 23, 4, 51, 2, 654321, tzinfo=UTC)
        account = AccountFactory()
        Account.objects.filter(pk=account.pk).update(created_at=stamp)
        assert Account.objects.get(pk=account.pk).created_at == stamp


class _Raw:
    def __init__(self, zone: str):
        self.info = SimpleNamespace(parameter_status=lambda name: zone)
        self.registered = []
        self.adapters = SimpleNamespace(
            register_loader=lambda oid, cls: self.registered.append((oid, cls)),
            get_loader=lambda oid, fmt: self.registered[-1][1] if self.registered else None,
        )


@pytest.mark.parametrize(
    "vendor, zone, session_zone",
    [("postgresql", datetime.timezone(datetime.timedelta(hours=3)), "UTC"), ("postgresql", UTC, "Europe/Moscow")],
)
def test_other_zones_keep_djangos_loader(vendor, zone, session_zone):
    raw = _Raw(session_zone)
    dbtypes.use_c_timestamptz_loader(None, SimpleNamespace(vendor=vendor, timezone=zone, connection=raw))
    assert raw.registered == []


def test_other_databases_are_left_alone():
    raw = _Raw("UTC")
    dbtypes.use_c_timestamptz_loader(None, SimpleNamespace(vendor="sqlite", timezone=UTC, connection=raw))
    assert raw.registered == []


def test_a_utc_postgres_session_gets_the_c_loader():
    raw = _Raw("UTC")
    dbtypes.use_c_timestamptz_loader(None, SimpleNamespace(vendor="postgresql", timezone=UTC, connection=raw))
    assert raw.registered == [("timestamptz", dbtypes.UtcTimestamptzLoader)]
    assert dbtypes.UtcTimestamptzLoader.timezone is UTC


def test_a_pooled_connection_is_not_registered_again_at_each_checkout():
    raw = _Raw("UTC")
    connection_ = SimpleNamespace(vendor="postgresql", timezone=UTC, connection=raw)
    for _ in range(3):  # the connection_created signal of three checkouts of one pooled connection
        dbtypes.use_c_timestamptz_loader(None, connection_)
    assert raw.registered == [("timestamptz", dbtypes.UtcTimestamptzLoader)]
