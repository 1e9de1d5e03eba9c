"""PostgreSQL preparation (setting DB_PREPARE_THRESHOLD, Django's `server_side_binding` and
`prepare_threshold` options): values are bound on the server, and a query's text run that many
times on one connection is prepared there, parsed and planned once for the connection."""

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
