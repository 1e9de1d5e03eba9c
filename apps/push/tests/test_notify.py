"""The one notification service against a loopback RFC 8030 push service that decrypts what it
receives with the device's own keys and checks the VAPID signature."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext

from apps.agents import services as agent_services
from apps.push import notify, send, tasks
from apps.push.models import PushSubscription
from apps.webhooks.tests.receiver import Reply

from .conftest import add_device

pytestmark = pytest.mark.django_db

WORDS = "My card was charged twice, order 5512"


def test_a_push_reaches_the_device_encrypted_and_signed(push_svc, olga, chat, django_capture_on_commit_callbacks):
    device, row = add_device(olga, push_svc, "olga-phone")
    with django_capture_on_commit_callbacks(execute=True):
        queued = notify.notify(olga, "assigned", chat)
    assert queued == 1
    [hit] = push_svc.rx.wait_for(1)
    assert push_svc.problems == []
    assert hit.status == 201
    assert hit.header("TTL") == str(send.TTL_SECONDS)
    assert hit.header("Urgency") == "high"
    assert device.read(hit) == {
        "title": "A chat was assigned to you",
        "body": "Open the console to read it.",
        "url": reverse("console:chat", args=[chat.pk]),
        "tag": f"chat-{chat.pk}-assigned",
    }
    row.refresh_from_db()
    assert row.last_success_at is not None


def test_no_message_text_without_previews(push_svc, olga, chat, django_capture_on_commit_callbacks):
    device, _ = add_device(olga, push_svc, "quiet")
    with django_capture_on_commit_callbacks(execute=True):
        notify.notify(olga, "mention", chat, text=WORDS)
    [hit] = push_svc.rx.wait_for(1)
    shown = device.read(hit)
    assert "5512" not in str(shown) and "charged" not in str(shown)
    assert shown["body"] == "Open the console to read it."


def test_previews_put_the_words_in_the_notification(push_svc, olga, chat, django_capture_on_commit_callbacks):
    device, _ = add_device(olga, push_svc, "chatty", previews=True)
    with django_capture_on_commit_callbacks(execute=True):
        notify.notify(olga, "mention", chat, text=WORDS)
    [hit] = push_svc.rx.wait_for(1)
    assert device.read(hit)["body"] == WORDS


def test_the_notification_speaks_the_language_the_device_subscribed_in(
    push_svc, olga, chat, django_capture_on_commit_callbacks
):
    device, row = add_device(olga, push_svc, "de")
    PushSubscription.objects.filter(pk=row.pk).update(language="de")
    with django_capture_on_commit_callbacks(execute=True):
        notify.notify(olga, "assigned", chat)
    [hit] = push_svc.rx.wait_for(1)
    with translation.override("de"):
        expected = {"title": gettext("A chat was assigned to you"), "body": gettext("Open the console to read it.")}
    shown = device.read(hit)
    assert {"title": shown["title"], "body": shown["body"]} == expected


@pytest.mark.parametrize("status", [404, 410])
def test_a_gone_subscription_is_deleted(push_svc, olga, chat, status, django_capture_on_commit_callbacks):
    _, gone = add_device(olga, push_svc, "gone")
    _, kept = add_device(olga, push_svc, "kept")
    push_svc.answers["/push/gone"] = status
    with django_capture_on_commit_callbacks(execute=True):
        notify.notify(olga, "assigned", chat)
    push_svc.rx.wait_for(2)
    assert list(PushSubscription.objects.filter(agent=olga).values_list("pk", flat=True)) == [kept.pk]


def test_another_failure_keeps_the_subscription(push_svc, olga, chat, django_capture_on_commit_callbacks):
    _, row = add_device(olga, push_svc, "busy")
    push_svc.answers["/push/busy"] = 503
    with django_capture_on_commit_callbacks(execute=True):
        notify.notify(olga, "assigned", chat)
    push_svc.rx.wait_for(1)
    assert PushSubscription.objects.filter(pk=row.pk).exists()


def test_only_the_devices_that_chose_the_kind_hear_it(push_svc, olga, chat, django_capture_on_commit_callbacks):
    add_device(olga, push_svc, "all")
    add_device(olga, push_svc, "no-queue", queue=False)
    with django_capture_on_commit_callbacks(execute=True):
        assert notify.notify(olga, "queue", chat) == 1
    push_svc.rx.wait_for(1)
    assert [hit.path for hit in push_svc.rx.hits] == ["/push/all"]


def test_without_vapid_keys_nothing_is_sent(push_svc, olga, chat, settings, django_capture_on_commit_callbacks):
    add_device(olga, push_svc, "phone")
    settings.VAPID_PRIVATE_KEY = ""
    with django_capture_on_commit_callbacks(execute=True):
        assert notify.notify(olga, "assigned", chat) == 0
    assert push_svc.rx.hits == []


def test_nothing_is_sent_before_the_change_commits(push_svc, olga, chat, django_capture_on_commit_callbacks):
    add_device(olga, push_svc, "phone")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        notify.notify(olga, "assigned", chat)
    assert push_svc.rx.hits == []
    assert len(callbacks) == 1


@pytest.mark.django_db(transaction=True)
def test_a_hanging_push_service_holds_up_nothing_else(
    push_svc, olga, chat, monkeypatch, django_capture_on_commit_callbacks
):
    """Each device is its own task: the caller only queues them, and a push service that never
    answers keeps only its own task waiting (until the deadline), never the other device's push."""
    hang_released = threading.Event()
    push_svc.answers["/push/hangs"] = Reply(status=201, delay=60)
    add_device(olga, push_svc, "hangs")
    _, fine = add_device(olga, push_svc, "fine")
    queued: list[tuple[int, dict]] = []
    monkeypatch.setattr(notify, "_dispatch", lambda subscription_id, body: queued.append((subscription_id, body)))
    monkeypatch.setattr(send, "DEADLINE", 3.0)
    with django_capture_on_commit_callbacks(execute=True):
        notify.notify(olga, "assigned", chat)
    assert len(queued) == 2 and push_svc.rx.hits == []  # queued, nothing sent by the caller

    results: dict[int, str] = {}

    def work(subscription_id: int, body: dict) -> None:
        try:
            results[subscription_id] = tasks.send_push(subscription_id, body)
        finally:
            connection.close()
        if subscription_id != fine.pk:
            hang_released.set()

    # Two workers take the two tasks, the hanging device's first.
    threads = {
        subscription_id: threading.Thread(target=work, args=(subscription_id, body)) for subscription_id, body in queued
    }
    for thread in threads.values():
        thread.start()
    threads[fine.pk].join(timeout=30)
    assert results.get(fine.pk) == "sent"
    assert not hang_released.is_set()  # the hanging push was still waiting when the other arrived
    for thread in threads.values():
        thread.join(timeout=30)
    assert hang_released.is_set()
    assert set(results.values()) == {"sent", "failed"}
    assert PushSubscription.objects.filter(agent=olga).count() == 2  # a timeout is not "gone"


def test_a_suspended_operator_loses_every_device(push_svc, olga, widget):
    add_device(olga, push_svc, "a")
    add_device(olga, push_svc, "b")
    agent_services.suspend_agent(widget=widget, agent=olga)
    assert not PushSubscription.objects.filter(agent=olga).exists()


def test_a_chat_under_erasure_pushes_nothing(push_svc, olga, chat, django_capture_on_commit_callbacks):
    from apps.privacy import services as privacy

    add_device(olga, push_svc, "phone")
    privacy.request_contact_erasure(widget=chat.widget, contact=chat.contact)  # its worker never runs here
    with django_capture_on_commit_callbacks(execute=True):
        assert notify.notify(olga, "assigned", chat) == 0
    assert push_svc.rx.hits == []
