"""The delivery log's retention (apps.webhooks.retention) and an external operator's rows: a settled
probe or call past WEBHOOK_DELIVERY_RETENTION_DAYS goes with its delivery; the call row that names
its causation id stays."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.external import services
from apps.external.models import Call, Probe
from apps.webhooks import retention
from apps.webhooks.models import Delivery
from tests.support.plugin import assert_problem

from .factories import make_operator, visitor_message

pytestmark = pytest.mark.django_db

BASE = "/api/v1/external-operators"


def settle(delivery_id: int, *, days_ago: float) -> None:
    """The delivery made and settled `days_ago` days ago."""
    then = timezone.now() - timedelta(days=days_ago)
    Delivery.objects.filter(pk=delivery_id).update(
        status=Delivery.Status.DELIVERED, next_attempt_at=None, created_at=then, updated_at=then
    )


def test_a_probe_settled_past_the_window_answers_as_an_unknown_one(api, widget, settings, triggers):
    operator = make_operator(widget, state="testing")
    old = services.send_probe(widget=widget, operator=operator)
    settle(old.delivery_id, days_ago=settings.WEBHOOK_DELIVERY_RETENTION_DAYS + 1)
    recent = services.send_probe(widget=widget, operator=operator)
    settle(recent.delivery_id, days_ago=1)

    retention.purge_delivery_log()

    client = api(scopes=["agents:read"])
    gone = assert_problem(client.get(f"{BASE}/{operator.public_id}/tests/{old.public_id}"), 404)
    unknown = assert_problem(client.get(f"{BASE}/{operator.public_id}/tests/xtest_000000000000000000000000"), 404)
    assert {k: v for k, v in gone.items() if k != "instance"} == {k: v for k, v in unknown.items() if k != "instance"}
    assert client.get(f"{BASE}/{operator.public_id}/tests/{recent.public_id}").status_code == 200
    assert not Probe.objects.filter(pk=old.pk).exists()


def test_a_call_loses_its_expired_delivery_and_keeps_its_causation(widget, settings, triggers):
    operator = make_operator(widget)
    message = visitor_message(widget)
    services.dispatch_visitor_message(chat=message.chat, message=message)
    call = Call.objects.get(operator=operator, message=message)
    settle(call.delivery_id, days_ago=settings.WEBHOOK_DELIVERY_RETENTION_DAYS + 1)

    retention.purge_delivery_log()

    kept = Call.objects.get(pk=call.pk)
    assert kept.delivery_id is None and kept.causation_id == call.causation_id
    assert not Delivery.objects.filter(pk=call.delivery_id).exists()
