"""The engine's thread pool on PostgreSQL with real commits: operator calls and subscription
deliveries in one run, and a rotation that ends by itself when the old endpoint drains (the
engine's settled hook, run on commit)."""

from __future__ import annotations

from collections import Counter

import pytest
from django.db import transaction
from django.utils import timezone

from apps.core.events import emit, fan_out
from apps.external import services
from apps.external.models import ExternalOperator
from apps.webhooks import delivery as engine
from apps.webhooks import services as webhooks
from apps.webhooks.models import Delivery
from apps.webhooks.tests.receiver import fail_first

from .factories import make_operator, visitor_message

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_the_pool_sends_operator_calls_and_subscription_deliveries_together(widget, receiver, triggers, monkeypatch):
    # the fan-out's process takes none of its new rows (it would send them on commit): all are due
    monkeypatch.setattr(engine.first_attempts, "NEW_AT_ONCE", 0)
    webhooks.create_subscription(widget=widget, url=receiver.url("/sub"), events=["message.created"])
    make_operator(widget, receiver.url("/op"))
    for n in range(10):
        message = visitor_message(widget, f"question {n}")
        services.dispatch_visitor_message(chat=message.chat, message=message)
        with transaction.atomic():
            event = emit(
                widget, "message.created", chat_id=n, message_id=n, client_id="c" * 32, author_type="USER", source="api"
            )
        fan_out(event.pk)
    assert webhooks.deliver_due(concurrency=8, batch_size=16) == 20
    hits = receiver.wait_for(20)
    assert Counter(h.path for h in hits) == {"/sub": 10, "/op": 10}
    assert Counter(Delivery.objects.values_list("status", flat=True)) == {"delivered": 20}


def test_a_rotation_ends_when_the_old_endpoint_drains(widget, receiver, triggers):
    receiver.rule = fail_first(1)
    operator = make_operator(widget, receiver.url("/old"))
    message = visitor_message(widget)
    services.dispatch_visitor_message(chat=message.chat, message=message)
    webhooks.deliver_due(concurrency=4)  # the first attempt fails: the call waits for its retry
    operator = services.update_external_operator(
        widget=widget, operator=operator, changes={"url": receiver.url("/new")}
    )
    assert operator.state == "rotating"
    Delivery.objects.filter(status="pending").update(next_attempt_at=timezone.now())
    webhooks.deliver_due(concurrency=4)
    assert [h.path for h in receiver.wait_for(2)] == ["/old", "/old"]
    operator.refresh_from_db()
    assert operator.state == "active" and operator.draining_id is None
    assert ExternalOperator.objects.get(pk=operator.pk).endpoint.url.endswith("/new")
