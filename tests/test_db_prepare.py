"""PostgreSQL preparation (setting DB_PREPARE_THRESHOLD, Django's `server_side_binding` and
`prepare_threshold` options): values are bound on the server, and a query's text run that many
times on one connection is prepared there: parsed once for the connection, and planned for each
run's values."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.db import connection

from apps.core.models import Widget

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


def _prepared_texts() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [text for (text,) in cursor.fetchall()]


def test_a_query_run_threshold_times_on_a_connection_is_prepared_once(widget):
    threshold = settings.DATABASES["default"]["OPTIONS"]["prepare_threshold"]
    assert threshold == settings.DB_PREPARE_THRESHOLD > 0
    assert settings.DATABASES["default"]["OPTIONS"]["server_side_binding"] is True

    def mine(texts):
        return [text for text in texts if '"core_widget"."button_guid" = $1' in text]

    for n in range(threshold + 3):  # different values, one text
        assert Widget.objects.filter(button_guid=f"absent-{n}").first() is None
    assert len(mine(_prepared_texts())) == 1


def test_a_prepared_query_is_planned_for_each_runs_values(widget):
    # PostgreSQL would switch a prepared statement to its generic plan after five runs; that plan
    # reads a chat of 50,000 messages whole to sort a page of it (config/settings.py).
    runs = settings.DB_PREPARE_THRESHOLD + 10
    for n in range(runs):
        assert Widget.objects.filter(button_guid=f"planned-{n}").first() is None
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE %s",
            ['%"core_widget"."button_guid" = $1%'],
        )
        ((generic, custom),) = cursor.fetchall()
    assert generic == 0
    assert custom > 5  # past the five runs after which PostgreSQL would weigh its generic plan
