"""`delete_in_batches`: many rows deleted a batch a transaction, first rows first in the order given,
answering how many of the model's rows went."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.core.models import OutboxEvent
from apps.core.services import delete_in_batches
from apps.webhooks.models import Delivery, Subscription

pytestmark = pytest.mark.django_db


def events_of(widget, count: int) -> list[OutboxEvent]:
    """`count` events, the first the oldest."""
    now = timezone.now()
    return [
        OutboxEvent.objects.create(widget=widget, type="chat.created", created_at=now - timedelta(hours=count - n))
        for n in range(count)
    ]


def named(sql: str, event: OutboxEvent) -> bool:
    return str(event.pk) in sql or event.pk.hex in sql


def test_the_first_rows_in_the_order_given_go_first(widget):
    made = events_of(widget, 3)

    with CaptureQueriesContext(connection) as ctx:
        delete_in_batches(OutboxEvent.objects.filter(widget=widget), batch_size=1, order_by=("created_at", "pk"))

    deletes = [q["sql"] for q in ctx.captured_queries if q["sql"].startswith('DELETE FROM "core_outboxevent"')]
    assert len(deletes) == 3
    assert [next(i for i, e in enumerate(made) if named(sql, e)) for sql in deletes] == [0, 1, 2]


def test_the_answer_counts_the_models_rows_not_what_cascaded(widget):
    sub = Subscription.objects.create(widget=widget, url="https://hooks.example.com/b", events=["chat.created"])
    made = events_of(widget, 3)
    Delivery.objects.bulk_create(
        [Delivery(widget=widget, subscription=sub, event=e, event_type=e.type, body="{}") for e in made]
    )

    assert delete_in_batches(OutboxEvent.objects.filter(widget=widget), batch_size=2) == 3
    assert not Delivery.objects.exists()


def test_nothing_to_delete_answers_zero(widget):
    assert delete_in_batches(OutboxEvent.objects.filter(widget=widget)) == 0
