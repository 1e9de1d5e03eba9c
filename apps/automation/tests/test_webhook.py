"""A rule's send_webhook through the webhook delivery engine, against a real HTTPS receiver on
loopback: signed with the secret of the widget's subscription to the same URL (rotations included),
the body naming the rule and the event, never the visitor's words."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from apps.chats.tests.factories import MessageFactory
from apps.core.crypto import encrypt_secret
from apps.webhooks import delivery as engine
from apps.webhooks import services as webhooks
from apps.webhooks.models import Subscription
from apps.webhooks.tests.receiver import Receiver

from .conftest import event_data, runs

pytestmark = pytest.mark.django_db

SECRET = "whsec_rule_test_secret"


@pytest.fixture
def receiver(monkeypatch, settings):
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    with Receiver() as rx:
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(rx.ca_path))
        yield rx


@pytest.fixture(autouse=True)
def _engine_inline(monkeypatch):
    monkeypatch.setattr(engine.sweep, "trigger", lambda countdown=None: None)


def signature(secret: str, body: bytes) -> str:
    return "sha256=v1:" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def test_a_vip_writes_and_the_outside_tool_gets_one_signed_call(widget, chat, rule, fire, receiver):
    url = receiver.url("/vip")
    Subscription.objects.create(widget=widget, url=url, events=[], secret_encrypted=encrypt_secret(SECRET))
    mine = rule(
        name="VIP writes",
        event="message.created",
        conditions=[{"field": "contact.attributes.plan", "op": "equals", "value": "vip"}],
        actions=[{"type": "send_webhook", "url": url}],
    )
    message = MessageFactory(chat=chat, body="My secret order number is 12345")
    fire(widget, "message.created", **{**event_data("message.created", chat), "message_id": message.pk})
    webhooks.deliver_due(concurrency=1)
    [hit] = receiver.wait_for(1)
    assert hit.header("x-service-signature") == signature(SECRET, hit.body)
    assert hit.header("x-service-event") == "automation.rule_matched"
    body = hit.json()
    assert body["data"]["rule_id"] == mine.pk and body["data"]["message_id"] == message.pk
    assert b"12345" not in hit.body


def test_a_rotated_subscription_secret_signs_the_next_call(widget, chat, rule, fire, receiver):
    url = receiver.url("/vip")
    subscription = Subscription.objects.create(
        widget=widget, url=url, events=[], secret_encrypted=encrypt_secret(SECRET)
    )
    rule(actions=[{"type": "send_webhook", "url": url}])
    fire(widget, "chat.created", **event_data("chat.created", chat))
    webhooks.rotate_secret(widget=widget, subscription=subscription, secret="whsec_rotated")
    fire(widget, "chat.created", **event_data("chat.created", chat))
    webhooks.deliver_due(concurrency=1)
    hits = receiver.wait_for(2)
    assert sorted(h.header("x-service-signature") == signature("whsec_rotated", h.body) for h in hits) == [True, True]


def test_a_deleted_subscription_makes_the_run_fail_and_nothing_is_sent(widget, chat, rule, fire, receiver):
    url = receiver.url("/vip")
    subscription = Subscription.objects.create(
        widget=widget, url=url, events=[], secret_encrypted=encrypt_secret(SECRET)
    )
    mine = rule(actions=[{"type": "add_note", "text": "VIP"}, {"type": "send_webhook", "url": url}])
    subscription.delete()
    fire(widget, "chat.created", **event_data("chat.created", chat))
    [(outcome, detail)] = runs(mine)
    assert outcome == "failed" and "Subscribe this address under Webhooks first" in detail
    assert not chat.messages.exists() and webhooks.deliver_due(concurrency=1) == 0
