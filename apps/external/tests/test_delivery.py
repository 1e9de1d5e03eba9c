"""Calls to external operators through the webhook engine, against a real HTTPS receiver on loopback:
the signed frame, retries, the kill switch, pause, URL rotation with its drain and force-drain, and
the secret's overlap window. The engine runs inline (`deliver_due(concurrency=1)`)."""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid

import pytest
from django.utils import timezone

from apps.external import services
from apps.external.models import Call, ExternalOperator
from apps.webhooks import services as webhooks
from apps.webhooks.models import Attempt, Delivery
from apps.webhooks.tests.receiver import fail_first

from .factories import SECRET, make_operator, visitor_message

pytestmark = pytest.mark.django_db


def deliver() -> int:
    return webhooks.deliver_due(concurrency=1)


def signature(secret: str, body: bytes) -> str:
    return "sha256=v1:" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def make_due(**filters) -> None:
    """Retries wait 10/20/40 s: bring them forward instead of sleeping."""
    Delivery.objects.filter(status=Delivery.Status.PENDING, **filters).exclude(next_attempt_at=None).update(
        next_attempt_at=timezone.now()
    )


def test_a_visitor_message_reaches_the_operator_as_a_signed_frame(widget, receiver, triggers):
    # given an active operator and a visitor message
    operator = make_operator(widget, receiver.url("/bot"))
    message = visitor_message(widget, "Where is my order?")
    # when it is dispatched and the engine runs
    assert services.dispatch_visitor_message(chat=message.chat, message=message) is True
    deliver()
    # then one POST reached the operator, signed over the raw body with its secret
    [hit] = receiver.wait_for(1)
    assert hit.path == "/bot" and hit.header("x-service-signature") == signature(SECRET, hit.body)
    frame = hit.json()
    call = Call.objects.get(operator=operator, message=message)
    assert frame == {
        "id": hit.key,
        "type": "chat.assigned",
        "causation_id": str(call.causation_id),
        "data": {
            "button_guid": widget.button_guid,
            "chat_id": message.chat_id,
            "message_id": message.pk,
            "client_id": message.chat.contact.guid,
            "text": "Where is my order?",
        },
    }
    assert hit.header("x-service-event") == "chat.assigned"
    assert hit.header("x-service-idempotency-key") == frame["id"]
    assert hit.header("x-service-delivery") == str(call.delivery.delivery_id)
    assert hit.header("x-service-timestamp").isdigit()
    assert hit.header("x-service-signature-previous") is None
    assert Delivery.objects.get(pk=call.delivery_id).status == Delivery.Status.DELIVERED


def test_a_wrong_secret_does_not_verify(widget, receiver, triggers):
    make_operator(widget, receiver.url())
    message = visitor_message(widget)
    services.dispatch_visitor_message(chat=message.chat, message=message)
    deliver()
    [hit] = receiver.wait_for(1)
    assert not hmac.compare_digest(signature("whsec_other", hit.body), hit.header("x-service-signature"))


def test_the_next_message_of_the_chat_is_message_created_with_its_own_causation(widget, receiver, triggers):
    operator = make_operator(widget, receiver.url())
    first = visitor_message(widget, "one")
    second = visitor_message(widget, "two", chat=first.chat)
    services.dispatch_visitor_message(chat=first.chat, message=first)
    services.dispatch_visitor_message(chat=second.chat, message=second)
    deliver()
    hits = sorted(receiver.wait_for(2), key=lambda h: h.json()["data"]["message_id"])
    assert [h.json()["type"] for h in hits] == ["chat.assigned", "message.created"]
    calls = Call.objects.filter(operator=operator).order_by("message_id")
    assert [str(c.causation_id) for c in calls] == [h.json()["causation_id"] for h in hits]
    assert len({c.causation_id for c in calls}) == 2


def test_dispatch_is_idempotent_per_message(widget, receiver, triggers):
    make_operator(widget, receiver.url())
    message = visitor_message(widget)
    services.dispatch_visitor_message(chat=message.chat, message=message)
    services.dispatch_visitor_message(chat=message.chat, message=message)
    assert Call.objects.filter(message=message).count() == 1
    assert Delivery.objects.filter(endpoint__isnull=False).count() == 1


def test_every_active_operator_gets_the_message_and_the_others_none(widget, receiver, triggers):
    make_operator(widget, receiver.url("/a"), name="A")
    make_operator(widget, receiver.url("/b"), name="B")
    make_operator(widget, receiver.url("/t"), name="T", state="testing")
    make_operator(widget, receiver.url("/p"), name="P", state="paused")
    message = visitor_message(widget)
    services.dispatch_visitor_message(chat=message.chat, message=message)
    deliver()
    hits = receiver.wait_for(2)
    assert sorted(h.path for h in hits) == ["/a", "/b"]
    assert hits[0].json()["causation_id"] != hits[1].json()["causation_id"]
    assert hits[0].key != hits[1].key


def test_without_an_active_operator_nothing_is_dispatched(widget, other_widget, receiver, triggers):
    make_operator(other_widget, receiver.url())
    make_operator(widget, receiver.url(), state="testing")
    message = visitor_message(widget)
    assert services.dispatch_visitor_message(chat=message.chat, message=message) is False
    assert not Call.objects.exists()


def test_failures_are_retried_with_identical_bytes_and_logged(widget, receiver, triggers):
    # given a receiver that fails twice
    receiver.rule = fail_first(2)
    make_operator(widget, receiver.url())
    message = visitor_message(widget)
    services.dispatch_visitor_message(chat=message.chat, message=message)
    # when the engine runs three times (the waits brought forward)
    deliver()
    assert triggers == [10]  # the first retry waits 10 s
    make_due()
    deliver()
    make_due()
    deliver()
    # then three attempts with the same bytes, key and delivery id; the third delivered
    hits = receiver.wait_for(3)
    assert len({h.body for h in hits}) == 1 and len({h.key for h in hits}) == 1
    assert len({h.delivery for h in hits}) == 1
    row = Delivery.objects.get(endpoint__isnull=False)
    assert row.status == Delivery.Status.DELIVERED and row.attempts == 3
    assert list(Attempt.objects.filter(delivery=row).order_by("number").values_list("error", flat=True)) == [
        "http_500",
        "http_500",
        "",
    ]


def test_after_four_failures_the_call_is_failed(widget, receiver, triggers):
    receiver.rule = fail_first(10)
    make_operator(widget, receiver.url())
    message = visitor_message(widget)
    services.dispatch_visitor_message(chat=message.chat, message=message)
    for _ in range(5):
        make_due()
        deliver()
    assert len(receiver.wait_for(4)) == 4
    assert Delivery.objects.get(endpoint__isnull=False).status == Delivery.Status.FAILED


def test_revoking_stops_every_queued_call_at_once(widget, receiver, triggers):
    # given two queued calls (one waiting for a retry)
    receiver.rule = fail_first(1)
    operator = make_operator(widget, receiver.url())
    first = visitor_message(widget)
    services.dispatch_visitor_message(chat=first.chat, message=first)
    deliver()
    second = visitor_message(widget, chat=first.chat)
    services.dispatch_visitor_message(chat=second.chat, message=second)
    # when the operator is revoked
    services.set_lifecycle(widget=widget, operator=operator, state="revoked")
    make_due()
    deliver()
    # then nothing more is sent and both rows are skipped
    assert len(receiver.hits) == 1
    assert set(Delivery.objects.filter(endpoint__isnull=False).values_list("status", flat=True)) == {"skipped"}
    assert ExternalOperator.objects.get(pk=operator.pk).agent.status == "banned"


def test_a_call_leased_before_the_revocation_is_skipped_when_loaded(widget, receiver, triggers):
    from apps.webhooks import delivery as engine

    operator = make_operator(widget, receiver.url())
    message = visitor_message(widget)
    services.dispatch_visitor_message(chat=message.chat, message=message)
    [(pk, _)] = engine.lease._lease_rows(10)  # an engine took the row...
    services.set_lifecycle(widget=widget, operator=operator, state="revoked")  # ...then the kill switch
    assert engine.attempt_delivery(pk) == "gone"
    assert receiver.hits == []
    assert Delivery.objects.get(pk=pk).status == Delivery.Status.SKIPPED


def test_pause_holds_calls_and_resuming_sends_them(widget, receiver, triggers):
    operator = make_operator(widget, receiver.url())
    message = visitor_message(widget)
    services.dispatch_visitor_message(chat=message.chat, message=message)
    services.set_lifecycle(widget=widget, operator=operator, state="paused")
    deliver()
    assert receiver.hits == []
    row = Delivery.objects.get(endpoint__isnull=False)
    assert row.status == Delivery.Status.PENDING and row.next_attempt_at is None
    # a paused operator receives no new visitor messages
    later = visitor_message(widget, chat=message.chat)
    assert services.dispatch_visitor_message(chat=later.chat, message=later) is False
    services.set_lifecycle(widget=widget, operator=operator, state="active")
    deliver()
    assert len(receiver.wait_for(1)) == 1
    assert Delivery.objects.get(pk=row.pk).status == Delivery.Status.DELIVERED


def test_a_url_change_drains_the_old_endpoint_then_returns_to_active(
    widget, receiver, triggers, django_capture_on_commit_callbacks
):
    # given a call waiting for a retry at the old URL
    receiver.rule = fail_first(1)
    operator = make_operator(widget, receiver.url("/old"))
    first = visitor_message(widget)
    services.dispatch_visitor_message(chat=first.chat, message=first)
    deliver()
    # when the URL changes
    operator = services.update_external_operator(
        widget=widget, operator=operator, changes={"url": receiver.url("/new")}
    )
    assert operator.state == "rotating" and operator.resume_state == "active"
    # then new calls go to the new URL while the old one drains
    second = visitor_message(widget, chat=first.chat)
    assert services.dispatch_visitor_message(chat=second.chat, message=second) is True
    make_due()
    with django_capture_on_commit_callbacks(execute=True):  # the engine's settled hook runs on commit
        deliver()
    hits = receiver.wait_for(3)
    assert sorted(h.path for h in hits) == ["/new", "/old", "/old"]
    # and once the old queue is empty the operator is active again
    operator.refresh_from_db()
    assert operator.state == "active" and operator.draining_id is None


def test_a_url_change_with_nothing_queued_switches_at_once(widget, receiver, triggers):
    operator = make_operator(widget, receiver.url("/old"))
    operator = services.update_external_operator(
        widget=widget, operator=operator, changes={"url": receiver.url("/new")}
    )
    assert operator.state == "active" and operator.url.endswith("/new")


def test_force_drain_abandons_the_old_queue(widget, receiver, triggers):
    receiver.rule = fail_first(10)
    operator = make_operator(widget, receiver.url("/old"))
    message = visitor_message(widget)
    services.dispatch_visitor_message(chat=message.chat, message=message)
    deliver()
    operator = services.update_external_operator(
        widget=widget, operator=operator, changes={"url": receiver.url("/new")}
    )
    assert operator.state == "rotating"
    operator, abandoned = services.force_drain(widget=widget, operator=operator)
    assert abandoned == 1 and operator.state == "active"
    make_due()
    deliver()
    assert [h.path for h in receiver.hits] == ["/old"]  # never again
    assert Delivery.objects.get(endpoint__isnull=False).status == Delivery.Status.SKIPPED


def test_after_a_secret_rotation_both_secrets_sign_during_the_overlap(widget, receiver, triggers, settings):
    operator = make_operator(widget, receiver.url())
    new = services.rotate_operator_secret(widget=widget, operator=operator)
    message = visitor_message(widget)
    services.dispatch_visitor_message(chat=message.chat, message=message)
    deliver()
    [hit] = receiver.wait_for(1)
    assert hit.header("x-service-signature") == signature(new, hit.body)
    assert hit.header("x-service-signature-previous") == signature(SECRET, hit.body)
    assert len(hit.header("webhook-signature").split(" ")) == 2


def test_after_the_overlap_only_the_new_secret_signs(widget, receiver, triggers, settings):
    settings.EXTERNAL_OPERATOR_SECRET_OVERLAP_SECONDS = 0
    operator = make_operator(widget, receiver.url())
    new = services.rotate_operator_secret(widget=widget, operator=operator)
    message = visitor_message(widget)
    services.dispatch_visitor_message(chat=message.chat, message=message)
    deliver()
    [hit] = receiver.wait_for(1)
    assert hit.header("x-service-signature") == signature(new, hit.body)
    assert hit.header("x-service-signature-previous") is None


def test_a_settled_call_can_be_redelivered_with_the_same_key(widget, receiver, triggers):
    make_operator(widget, receiver.url())
    message = visitor_message(widget)
    services.dispatch_visitor_message(chat=message.chat, message=message)
    deliver()
    row = Delivery.objects.get(endpoint__isnull=False)
    copy = webhooks.redeliver_endpoint_call(widget=widget, original=row)
    deliver()
    first, second = receiver.wait_for(2)
    assert first.key == second.key and first.delivery != second.delivery and first.body == second.body
    assert copy.redelivery_of_id == row.pk


def test_a_probe_is_a_signed_delivery_test_frame(widget, receiver, triggers):
    operator = make_operator(widget, receiver.url(), state="testing")
    probe = services.send_probe(widget=widget, operator=operator)
    deliver()
    [hit] = receiver.wait_for(1)
    frame = hit.json()
    assert frame["type"] == "delivery.test" and frame["causation_id"] == str(probe.causation_id)
    assert frame["data"] == {
        "button_guid": widget.button_guid,
        "chat_id": None,
        "message_id": None,
        "client_id": None,
        "text": "",
    }
    assert hit.header("x-service-signature") == signature(SECRET, hit.body)
    uuid.UUID(frame["id"])
    assert json.loads(Delivery.objects.get(pk=probe.delivery_id).body) == frame


def test_the_beat_job_ends_a_drained_rotation_whose_hook_was_lost(widget, receiver, triggers):
    from apps.external import tasks

    operator = make_operator(widget, receiver.url("/old"))
    message = visitor_message(widget)
    services.dispatch_visitor_message(chat=message.chat, message=message)
    operator = services.update_external_operator(
        widget=widget, operator=operator, changes={"url": receiver.url("/new")}
    )
    deliver()  # the test's transaction never commits: the on-commit hook does not run
    assert ExternalOperator.objects.get(pk=operator.pk).state == "rotating"
    assert tasks.finish_rotations() == 1
    assert ExternalOperator.objects.get(pk=operator.pk).state == "active"
