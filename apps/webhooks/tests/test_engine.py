"""The delivery engine against a real HTTPS receiver on loopback: the request as sent, the retry
policy (4 attempts, 10/20/40 s), permanent failures, silent drops, secret rotation, the Wired/Live
switch and redirects.

Each test runs `deliver_due(concurrency=1)` inline, in the test's transaction. Time is a fake clock
standing in for `timezone.now()` inside the engine, so waits are exact and nothing sleeps; the
Celery trigger a failed attempt schedules is recorded instead of run.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import socket
import time
import uuid
from datetime import datetime, timedelta
from types import ModuleType, SimpleNamespace

import pytest
from cryptography.fernet import Fernet
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.core.crypto import encrypt_secret
from apps.core.events import emit, fan_out, fan_out_many
from apps.core.models import OutboxEvent, Widget
from apps.platform import outbound
from apps.webhooks import delivery as engine
from apps.webhooks import event_deliveries, redelivery, services, signing
from apps.webhooks.models import Attempt, Delivery, EventSwitch, Subscription
from apps.webhooks.tests.receiver import Receiver, Reply, always, fail_first
from tests.support.factories import WidgetFactory

pytestmark = pytest.mark.django_db

CLIENT_GUID = "c" * 32


# --- fixtures and helpers ---------------------------------------------------------------------------


class Clock:
    """The engine's `timezone.now()`: starts at the real now and moves only when told."""

    def __init__(self) -> None:
        self.current: datetime = timezone.now()

    def now(self) -> datetime:
        return self.current

    def advance(self, seconds: float) -> None:
        self.current += timedelta(seconds=seconds)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    engine_modules = [
        module
        for module in vars(engine).values()
        if isinstance(module, ModuleType) and module.__name__.startswith(f"{engine.__name__}.")
    ]
    for module in (engine, *engine_modules, event_deliveries, redelivery):
        if hasattr(module, "timezone"):
            monkeypatch.setattr(module, "timezone", SimpleNamespace(now=fake.now))
    return fake


@pytest.fixture(autouse=True)
def triggers(monkeypatch: pytest.MonkeyPatch) -> list[float | None]:
    """Celery triggers the engine asks for (countdowns), recorded instead of sent: eager Celery would
    run them inline and ignore the countdown."""
    asked: list[float | None] = []
    monkeypatch.setattr(engine.sweep, "trigger", lambda countdown=None: asked.append(countdown))
    return asked


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch, settings):
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    with Receiver() as rx:
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(rx.ca_path))
        yield rx


def subscribe(widget: Widget, url: str, events=("message.created",), secret: str | None = None):
    return services.create_subscription(widget=widget, url=url, events=list(events), secret=secret)


def emit_message(widget: Widget, n: int = 1) -> OutboxEvent:
    with transaction.atomic():
        event = emit(
            widget,
            "message.created",
            chat_id=n,
            message_id=1000 + n,
            client_id=CLIENT_GUID,
            author_type="USER",
            source="api",
        )
    fan_out(event.pk)
    return event


def emit_chat_closed(widget: Widget, n: int = 1) -> OutboxEvent:
    with transaction.atomic():
        event = emit(widget, "chat.closed", chat_id=n, reason="expired")
    fan_out(event.pk)
    return event


def deliver() -> int:
    return services.deliver_due(concurrency=1)


def standard_webhooks_verify(secret: str, headers: dict[str, str], body: bytes, *, tolerance: int = 300) -> bool:
    """Verification as the Standard Webhooks specification writes it, independent of our signing
    module: key = base64-decode(secret without `whsec_`), signed content = `{id}.{timestamp}.{body}`,
    header = space-separated `v1,<base64 HMAC-SHA256>` entries, timestamp within the tolerance."""
    msg_id, timestamp = headers["webhook-id"], headers["webhook-timestamp"]
    if abs(time.time() - int(timestamp)) > tolerance:
        return False
    key = base64.b64decode(secret.removeprefix("whsec_"))
    content = f"{msg_id}.{timestamp}.".encode() + body
    expected = base64.b64encode(hmac.new(key, content, hashlib.sha256).digest()).decode()
    for entry in headers["webhook-signature"].split(" "):
        version, _, signature = entry.partition(",")
        if version == "v1" and hmac.compare_digest(signature, expected):
            return True
    return False


def service_signature_of(secret: str, body: bytes) -> str:
    return "sha256=v1:" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


# --- 1. the delivery request -------------------------------------------------------------------------


def test_delivery_request_has_the_spec_method_headers_and_body(widget, receiver):
    # given a subscription with a generated secret, and one message.created event
    sub, secret = subscribe(widget, receiver.url("/hook"))
    event = emit_message(widget)
    delivery = Delivery.objects.get(subscription=sub)
    # when
    assert deliver() == 1
    # then one POST reached the receiver
    [hit] = receiver.wait_for(1)
    assert (hit.method, hit.path) == ("POST", "/hook")
    assert hit.header("Content-Type") == "application/json"
    assert hit.header("X-Service-Event") == "message.created"
    # the body is {id, type, data} and data carries button_guid besides the catalogue fields
    body = json.loads(hit.body)
    assert body == {
        "id": str(event.pk),
        "type": "message.created",
        "data": {
            "chat_id": 1,
            "message_id": 1001,
            "client_id": CLIENT_GUID,
            "author_type": "USER",
            "source": "api",
            "button_guid": widget.button_guid,
        },
    }
    assert hit.body == delivery.body.encode()
    # X-Service-Signature: sha256=v1:<lowercase hex> over the raw body, keyed with the secret
    assert re.fullmatch(r"sha256=v1:[0-9a-f]{64}", hit.header("X-Service-Signature"))
    assert hmac.compare_digest(hit.header("X-Service-Signature"), service_signature_of(secret, hit.body))
    assert signing.verify_service_signature(secret, hit.body, hit.header("X-Service-Signature"))
    # idempotency key == body id, delivery id == the row's
    assert hit.header("X-Service-Idempotency-Key") == body["id"]
    assert hit.header("X-Service-Delivery") == str(delivery.delivery_id)
    # X-Service-Timestamp: a Unix time in whole seconds, near now
    timestamp = hit.header("X-Service-Timestamp")
    assert re.fullmatch(r"\d+", timestamp)
    assert abs(int(timestamp) - time.time()) <= 5
    # Standard Webhooks headers, verified by our module and by the spec's algorithm written here
    assert hit.header("webhook-id") == body["id"]
    assert hit.header("webhook-timestamp") == timestamp
    assert signing.verify_standard_signature(
        secret, body["id"], int(timestamp), hit.body, hit.header("webhook-signature")
    )
    assert standard_webhooks_verify(secret, hit.headers, hit.body)
    # and the row says delivered after one attempt
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("delivered", 1, 200)
    assert delivery.next_attempt_at is None
    assert list(delivery.attempt_rows.values_list("number", "status_code", "error")) == [(1, 200, "")]


def test_a_wrong_secret_does_not_verify(widget, receiver):
    # given
    subscribe(widget, receiver.url())
    emit_message(widget)
    # when
    deliver()
    # then: the checks above are not vacuous
    [hit] = receiver.wait_for(1)
    other = "whsec_" + base64.b64encode(b"x" * 32).decode()
    assert not signing.verify_service_signature(other, hit.body, hit.header("X-Service-Signature"))
    assert not standard_webhooks_verify(other, hit.headers, hit.body)
    assert not standard_webhooks_verify(other, hit.headers, hit.body + b" ")


def test_retries_send_identical_bytes_with_the_same_key_and_delivery_id(widget, receiver, clock):
    # given an endpoint failing twice
    receiver.rule = fail_first(2)
    sub, secret = subscribe(widget, receiver.url())
    emit_message(widget)
    # when the three attempts run
    for wait in (0, 10, 20):
        clock.advance(wait)
        assert deliver() == 1
    # then
    first, second, third = receiver.wait_for(3)
    assert [h.status for h in (first, second, third)] == [500, 500, 200]
    assert first.body == second.body == third.body
    assert len({h.header("X-Service-Idempotency-Key") for h in (first, second, third)}) == 1
    assert len({h.header("X-Service-Delivery") for h in (first, second, third)}) == 1
    assert {h.header("webhook-id") for h in (first, second, third)} == {first.key}
    for hit in (first, second, third):
        assert signing.verify_service_signature(secret, hit.body, hit.header("X-Service-Signature"))
        assert standard_webhooks_verify(secret, hit.headers, hit.body)
    assert Delivery.objects.get(subscription=sub).status == "delivered"


def test_every_subscription_gets_its_own_delivery_id_and_the_same_idempotency_key(widget, receiver):
    # given two endpoints of one widget subscribed to the event
    subscribe(widget, receiver.url("/a"))
    subscribe(widget, receiver.url("/b"))
    event = emit_message(widget)
    # when
    assert deliver() == 2
    # then
    hits = receiver.wait_for(2)
    assert sorted(h.path for h in hits) == ["/a", "/b"]
    assert {h.key for h in hits} == {str(event.pk)}
    assert len({h.delivery for h in hits}) == 2


# --- 2. retry policy ------------------------------------------------------------------------------------


def test_a_failing_endpoint_gets_four_attempts_10_20_40_seconds_apart_then_failed(widget, receiver, clock, triggers):
    # given an endpoint answering 500 forever
    receiver.rule = always(500)
    sub, _ = subscribe(widget, receiver.url())
    emit_message(widget)
    delivery = Delivery.objects.get(subscription=sub)
    for number, wait in enumerate((10, 20, 40), start=1):
        # when attempt `number` runs
        assert deliver() == 1
        # then it is scheduled again exactly `wait` seconds after it started, and a trigger asked for
        delivery.refresh_from_db()
        attempt = Attempt.objects.get(delivery=delivery, number=number)
        assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("pending", number, 500)
        assert delivery.next_attempt_at - attempt.started_at == timedelta(seconds=wait)
        assert services.retry_wait(number) == wait
        assert triggers[-1] == wait
        # and nothing goes out a moment before the wait is over
        clock.advance(wait - 0.001)
        assert deliver() == 0
        assert len(receiver.hits) == number
        clock.advance(0.001)
    # when the fourth attempt fails too
    assert deliver() == 1
    # then the delivery is failed for good
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.next_attempt_at) == ("failed", 4, None)
    assert delivery.last_error == "http_500"
    assert list(delivery.attempt_rows.order_by("number").values_list("number", flat=True)) == [1, 2, 3, 4]
    clock.advance(3600)
    assert deliver() == 0
    assert len(receiver.hits) == 4


@pytest.mark.parametrize("status", [400, 404, 410, 429, 502, 503])
def test_any_non_2xx_answer_consumes_an_attempt(widget, receiver, clock, status):
    # given
    receiver.rule = fail_first(1, status)
    sub, _ = subscribe(widget, receiver.url())
    emit_message(widget)
    # when
    deliver()
    # then
    delivery = Delivery.objects.get(subscription=sub)
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("pending", 1, status)
    clock.advance(10)
    deliver()
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("delivered", 2)


@pytest.mark.parametrize("status", [200, 201, 202, 204])
def test_any_2xx_answer_delivers(widget, receiver, status):
    # given
    receiver.rule = always(status)
    sub, _ = subscribe(widget, receiver.url())
    emit_message(widget)
    # when
    deliver()
    # then
    assert Delivery.objects.get(subscription=sub).status == "delivered"


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_a_failure_and_its_location_is_never_requested(widget, receiver, clock, status):
    # given an endpoint redirecting to another local path, every time
    receiver.rule = lambda hit: Reply(status, location="/elsewhere") if hit.path == "/hook" else Reply(200)
    sub, _ = subscribe(widget, receiver.url("/hook"))
    emit_message(widget)
    delivery = Delivery.objects.get(subscription=sub)
    # when the first attempt runs
    deliver()
    # then it failed with the 3xx and is scheduled again
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("pending", 1, status)
    assert delivery.last_error == f"http_{status}"
    # when every attempt runs
    for wait in (10, 20, 40):
        clock.advance(wait)
        deliver()
    # then four failures and the target path was never requested
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("failed", 4)
    assert receiver.paths() == ["/hook"] * 4


def test_a_dropped_connection_consumes_an_attempt(widget, receiver, clock):
    # given an endpoint that closes the first connection without answering
    receiver.rule = lambda hit: Reply(drop=True) if hit.key_attempt == 1 else Reply(200)
    sub, _ = subscribe(widget, receiver.url())
    emit_message(widget)
    # when
    deliver()
    # then the transport error is attempt 1, retried after 10 s
    delivery = Delivery.objects.get(subscription=sub)
    attempt = delivery.attempt_rows.get()
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("pending", 1, None)
    assert attempt.status_code is None and attempt.error == delivery.last_error != ""
    assert delivery.next_attempt_at - attempt.started_at == timedelta(seconds=10)
    clock.advance(10)
    deliver()
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("delivered", 2)


def test_a_timeout_consumes_an_attempt(widget, receiver, clock, monkeypatch):
    # given a read timeout of 0.3 s and an endpoint that first answers after 1 s
    monkeypatch.setattr(engine.send, "TIMEOUT", (2.0, 0.3))
    receiver.rule = lambda hit: Reply(200, delay=1.0) if hit.key_attempt == 1 else Reply(200)
    sub, _ = subscribe(widget, receiver.url())
    emit_message(widget)
    # when
    deliver()
    # then
    delivery = Delivery.objects.get(subscription=sub)
    assert (delivery.status, delivery.attempts, delivery.last_error) == ("pending", 1, "timeout")
    clock.advance(10)
    deliver()
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("delivered", 2)


def test_a_closed_port_consumes_an_attempt(widget, receiver, clock):
    # given a subscription whose port has nothing listening any more
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    sub, _ = subscribe(widget, f"https://127.0.0.1:{port}/hook")
    emit_message(widget)
    # when
    deliver()
    # then
    delivery = Delivery.objects.get(subscription=sub)
    assert (delivery.status, delivery.attempts, delivery.last_error) == ("pending", 1, "connection_error")


@pytest.fixture
def connect_spy(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    original = socket.socket.connect

    def spy(sock: socket.socket, address) -> None:
        seen.append(address[0] if isinstance(address, tuple) else str(address))
        return original(sock, address)

    monkeypatch.setattr(socket.socket, "connect", spy)
    return seen


def test_a_private_destination_at_send_time_fails_at_once(widget, receiver, connect_spy):
    # given a subscription whose url was changed behind the save-time check
    sub, _ = subscribe(widget, receiver.url())
    emit_message(widget)
    Subscription.objects.filter(pk=sub.pk).update(url="https://10.0.0.1/hook")
    # when
    assert deliver() == 1
    # then failed after one attempt, nothing sent anywhere, never retried
    delivery = Delivery.objects.get(subscription=sub)
    assert (delivery.status, delivery.attempts, delivery.next_attempt_at) == ("failed", 1, None)
    assert delivery.last_error.startswith("blocked:")
    assert receiver.hits == []
    assert "10.0.0.1" not in connect_spy


def test_a_name_rebound_to_a_private_address_fails_at_once(widget, receiver, monkeypatch, connect_spy, clock):
    # given a name that resolved to loopback when the subscription was made
    table = {"hook.test": ["127.0.0.1"]}
    monkeypatch.setattr(
        outbound.policy, "resolve_host", lambda host, port: [outbound.parse_ip_literal(a) for a in table[host]]
    )
    sub, _ = subscribe(widget, f"https://hook.test:{receiver.port}/hook")
    emit_message(widget)
    # when it answers with a private address at send time
    table["hook.test"] = ["10.0.0.5"]
    deliver()
    # then
    delivery = Delivery.objects.get(subscription=sub)
    assert (delivery.status, delivery.attempts) == ("failed", 1)
    assert delivery.last_error.startswith("blocked:")
    assert receiver.hits == [] and "10.0.0.5" not in connect_spy
    clock.advance(3600)
    assert deliver() == 0


@pytest.mark.parametrize(
    "stored",
    [
        pytest.param("", id="missing"),
        pytest.param("not-a-fernet-token", id="garbage"),
        pytest.param(Fernet(Fernet.generate_key()).encrypt(b"whsec_x").decode(), id="unknown-key"),
    ],
)
def test_a_missing_or_undecryptable_secret_fails_at_once(widget, receiver, clock, stored):
    # given a subscription whose stored secret cannot be read
    sub, _ = subscribe(widget, receiver.url())
    emit_message(widget)
    Subscription.objects.filter(pk=sub.pk).update(secret_encrypted=stored)
    # when
    deliver()
    # then failed at once, nothing sent, never retried
    delivery = Delivery.objects.get(subscription=sub)
    assert (delivery.status, delivery.attempts, delivery.next_attempt_at) == ("failed", 1, None)
    assert delivery.last_error == "missing_secret"
    clock.advance(3600)
    assert deliver() == 0
    assert receiver.hits == []


def test_a_rotated_secret_signs_the_next_attempt_though_secrets_are_decrypted_once(widget, receiver, monkeypatch):
    # given a delivered event (its secret decrypted once and kept), counting decryptions
    decrypted = []
    real = engine.secret_cache.decrypt_secret
    monkeypatch.setattr(engine.secret_cache, "decrypt_secret", lambda token: decrypted.append(token) or real(token))
    monkeypatch.setattr(engine.secret_cache, "_secrets", {})
    sub, old = subscribe(widget, receiver.url())
    emit_message(widget)
    emit_message(widget)
    deliver()
    assert len(receiver.hits) == 2 and len(decrypted) == 1
    # when the secret is rotated and another event goes out
    new = services.rotate_secret(widget=widget, subscription=sub)
    emit_message(widget)
    deliver()
    # then it is signed with the new secret (the new stored token is read anew), never the old one
    hit = receiver.hits[-1]
    assert signing.verify_service_signature(new, hit.body, hit.header("X-Service-Signature"))
    assert not signing.verify_service_signature(old, hit.body, hit.header("X-Service-Signature"))
    assert len(decrypted) == 2


def test_a_delivery_of_a_deleted_subscription_is_dropped_silently(widget, receiver):
    # given a queued delivery whose endpoint is then deleted
    sub, _ = subscribe(widget, receiver.url())
    emit_message(widget)
    services.delete_subscription(widget=widget, subscription=sub)
    # when
    deliver()
    # then no request and no row (failed or otherwise) left behind
    assert receiver.hits == []
    assert not Delivery.objects.filter(widget=widget).exists()


@pytest.mark.parametrize("when", ["queued", "backing_off"])
def test_a_delivery_of_a_deactivated_subscription_is_dropped_silently(widget, receiver, clock, when):
    # given a delivery queued (or waiting for its retry) when the endpoint is deactivated
    receiver.rule = always(500)
    sub, _ = subscribe(widget, receiver.url())
    emit_message(widget)
    if when == "backing_off":
        deliver()
        clock.advance(10)
    sent = len(receiver.hits)
    services.update_subscription(widget=widget, subscription=sub, changes={"is_active": False})
    # when its attempt comes
    deliver()
    # then nothing more was sent and there is no failure record
    assert len(receiver.hits) == sent
    assert not Delivery.objects.filter(subscription=sub, status=Delivery.Status.FAILED).exists()
    assert not Delivery.objects.filter(subscription=sub).exists()
    clock.advance(3600)
    assert deliver() == 0


def test_one_fan_out_of_events_from_three_widgets_reaches_each_widgets_own_subscriptions(receiver):
    # given three widgets, each with its subscription, and a fourth widget's deactivated one
    widgets = [WidgetFactory() for _ in range(4)]
    subs = [subscribe(w, receiver.url(f"/w{n}"))[0] for n, w in enumerate(widgets)]
    subs[3].is_active = False
    subs[3].save(update_fields=["is_active"])
    with transaction.atomic():
        events = [
            emit(w, "message.created", chat_id=n, message_id=n, client_id=CLIENT_GUID, author_type="USER", source="api")
            for n, w in enumerate(widgets)
        ]
    # when one fan-out takes the four events (one query reads every widget's subscriptions)
    fan_out_many([event.pk for event in events])
    # then each active subscription holds exactly its own widget's event, and the inactive one none
    rows = Delivery.objects.values_list("subscription_id", "event_id")
    assert sorted(rows) == sorted((subs[n].pk, events[n].pk) for n in range(3))


def test_a_deactivated_subscription_gets_no_new_deliveries(widget, receiver):
    # given
    sub, _ = subscribe(widget, receiver.url())
    services.update_subscription(widget=widget, subscription=sub, changes={"is_active": False})
    # when
    emit_message(widget)
    deliver()
    # then
    assert not Delivery.objects.filter(subscription=sub).exists()
    assert receiver.hits == []


def test_a_rotated_secret_signs_the_next_retry(widget, receiver, clock):
    # given a first attempt signed with the old secret that failed
    receiver.rule = fail_first(1)
    sub, old = subscribe(widget, receiver.url())
    emit_message(widget)
    deliver()
    # when the secret is rotated while the delivery backs off, and the retry runs
    new = services.rotate_secret(widget=widget, subscription=sub)
    clock.advance(10)
    deliver()
    # then the retry is signed with the new secret only (immediate cutover, no overlap)
    first, retry = receiver.wait_for(2)
    assert new != old
    assert signing.verify_service_signature(old, first.body, first.header("X-Service-Signature"))
    assert standard_webhooks_verify(old, first.headers, first.body)
    assert signing.verify_service_signature(new, retry.body, retry.header("X-Service-Signature"))
    assert standard_webhooks_verify(new, retry.headers, retry.body)
    assert not signing.verify_service_signature(old, retry.body, retry.header("X-Service-Signature"))
    assert not standard_webhooks_verify(old, retry.headers, retry.body)
    assert first.body == retry.body
    assert Delivery.objects.get(subscription=sub).status == "delivered"


def test_a_secret_rotated_before_the_first_attempt_signs_it(widget, receiver):
    # given a queued delivery, then a rotation to a caller-chosen secret
    sub, _ = subscribe(widget, receiver.url())
    emit_message(widget)
    chosen = "whsec_" + base64.b64encode(b"n" * 32).decode()
    new = services.rotate_secret(widget=widget, subscription=sub, secret=chosen)
    # when
    deliver()
    # then
    [hit] = receiver.wait_for(1)
    assert signing.verify_service_signature(new, hit.body, hit.header("X-Service-Signature"))
    assert standard_webhooks_verify(new, hit.headers, hit.body)


def test_a_leased_delivery_is_not_sent_again_until_the_lease_expires(widget, receiver, clock):
    # given a delivery leased by a worker that then died (its row still pending, moved forward)
    sub, _ = subscribe(widget, receiver.url())
    emit_message(widget)
    assert engine.lease._lease(10) == [Delivery.objects.get(subscription=sub).pk]
    # when another engine runs before the lease is over
    clock.advance(services.LEASE.total_seconds() - 1)
    assert deliver() == 0
    # then nothing was sent; after the lease it goes
    clock.advance(1)
    assert deliver() == 1
    assert len(receiver.wait_for(1)) == 1
    assert Delivery.objects.get(subscription=sub).status == "delivered"


def test_a_lease_takes_the_oldest_due_pending_rows_up_to_the_batch(widget, receiver, clock):
    # given five deliveries due at different times, one not yet due and one already delivered
    sub, _ = subscribe(widget, receiver.url())
    for n in range(7):
        emit_message(widget, n)
    rows = list(Delivery.objects.filter(subscription=sub).order_by("pk"))
    now = clock.now()
    for age, row in zip([5, 1, 4, 2, 3], rows[:5], strict=True):
        Delivery.objects.filter(pk=row.pk).update(next_attempt_at=now - timedelta(seconds=age))
    Delivery.objects.filter(pk=rows[5].pk).update(next_attempt_at=now + timedelta(seconds=30))
    Delivery.objects.filter(pk=rows[6].pk).update(status=Delivery.Status.DELIVERED, next_attempt_at=None)
    # when an engine leases three, then the rest
    first = engine.lease._lease_rows(3)
    rest = engine.lease._lease_rows(10)
    # then the oldest due come first, with their endpoint; nothing is leased twice
    key = f"s{sub.pk}"
    assert first == [(rows[0].pk, key), (rows[2].pk, key), (rows[4].pk, key)]
    assert rest == [(rows[3].pk, key), (rows[1].pk, key)]
    # and the leased rows moved LEASE ahead, the others kept their times
    leased = Delivery.objects.filter(pk__in=[pk for pk, _ in first + rest])
    assert set(leased.values_list("next_attempt_at", flat=True)) == {now + services.LEASE}
    assert Delivery.objects.get(pk=rows[5].pk).next_attempt_at == now + timedelta(seconds=30)
    assert engine.lease._lease_rows(10) == []


def test_lease_and_load_reads_the_due_rows_with_their_targets_oldest_first(widget, receiver, clock):
    # given a subscription's two due rows, an endpoint's row due between them, and a row not yet due
    sub, _ = subscribe(widget, receiver.url())
    for n in range(3):
        emit_message(widget, n)
    endpoint = services.create_endpoint(
        widget=widget, owner="external", owner_id=7, url=receiver.url("/ep"), secret_encrypted=encrypt_secret("s" * 32)
    )
    call = services.enqueue_call(endpoint=endpoint, event_type="message.created", body=b'{"id": 1}', key=uuid.uuid4())
    first, second, later = Delivery.objects.filter(subscription=sub).order_by("pk")
    now = clock.now()
    for age, row in ((3, first), (2, call), (1, second), (-30, later)):
        Delivery.objects.filter(pk=row.pk).update(next_attempt_at=now - timedelta(seconds=age))
    # when an engine leases and loads them (one statement on PostgreSQL: no load after the lease)
    with CaptureQueriesContext(connection) as queries:
        rows = engine.lease._lease_and_load(10)
    if connection.vendor == "postgresql":
        assert len(queries) == 1, [query["sql"][:60] for query in queries]
    # then they come oldest due first, each with its target, read with no further query
    assert [row.pk for row in rows] == [first.pk, call.pk, second.pk]
    with CaptureQueriesContext(connection) as queries:
        assert [(row.target.url, row.target_key, row.attempts, row.body) for row in rows] == [
            (receiver.url(), f"s{sub.pk}", 0, first.body),
            (receiver.url("/ep"), f"e{endpoint.pk}", 0, '{"id": 1}'),
            (receiver.url(), f"s{sub.pk}", 0, second.body),
        ]
        assert (rows[1].target.owner, rows[1].target.is_active, rows[1].idempotency_key) == (
            "external",
            True,
            str(call.key),
        )
        assert rows[0].subscription.secret_encrypted == sub.secret_encrypted
        assert rows[0].idempotency_key == str(first.event_id)
    assert len(queries) == 0
    # and each row is what the ORM would have built: loaded from the database, the columns the engine
    # does not read deferred (read on access)
    orm = Delivery.objects.select_related("subscription").only(*engine.load._SEND_FIELDS).get(pk=first.pk)
    assert (rows[0]._state.adding, rows[0]._state.db) == (False, orm._state.db)
    assert rows[0].get_deferred_fields() == orm.get_deferred_fields()
    assert rows[0].subscription.get_deferred_fields() == orm.subscription.get_deferred_fields()
    assert rows[0].created_at == first.created_at
    # and they are leased; the one not yet due is not
    leased = Delivery.objects.filter(pk__in=[row.pk for row in rows]).values_list("next_attempt_at", flat=True)
    assert set(leased) == {now + services.LEASE}
    assert Delivery.objects.get(pk=later.pk).next_attempt_at == now + timedelta(seconds=30)
    assert engine.lease._lease_and_load(10) == []


@pytest.mark.postgres
def test_lease_and_load_drops_a_deactivated_subscriptions_rows(widget, receiver):
    sub, _ = subscribe(widget, receiver.url())
    emit_message(widget)
    Subscription.objects.filter(pk=sub.pk).update(is_active=False)
    assert engine.lease._lease_and_load(10) == []
    assert not Delivery.objects.exists()


def test_recording_writes_each_outcome_and_skips_a_row_gone_meanwhile(widget, receiver, clock):
    # given three leased deliveries: one answered 200, one 500 (first attempt), one whose endpoint
    # was deleted while its attempt ran
    sub, _ = subscribe(widget, receiver.url())
    doomed, _ = subscribe(widget, receiver.url("/doomed"))
    for n in range(2):
        emit_message(widget, n)
    ok, failing = Delivery.objects.filter(subscription=sub).order_by("pk")
    gone = Delivery.objects.filter(subscription=doomed).first()
    started = clock.now()
    outcomes = [
        engine.Outcome(ok, started, 12, 200, "", False, "fine"),
        engine.Outcome(failing, started, 30, 500, "http_500", False, "oops"),
        engine.Outcome(gone, started, 7, 200, "", False, ""),
    ]
    doomed.delete()
    # when they are recorded together
    statuses = engine.record._record(outcomes)
    # then each row has its new state and its one attempt row; the gone one has neither
    assert statuses == ["delivered", "pending", "gone"]
    ok.refresh_from_db()
    failing.refresh_from_db()
    assert (ok.status, ok.attempts, ok.next_attempt_at, ok.last_status_code, ok.last_error) == (
        "delivered",
        1,
        None,
        200,
        "",
    )
    assert (failing.status, failing.attempts, failing.last_status_code, failing.last_error) == (
        "pending",
        1,
        500,
        "http_500",
    )
    assert failing.next_attempt_at == clock.now() + timedelta(seconds=engine.retry_wait(1))
    rows = {row.delivery_id: row for row in Attempt.objects.all()}
    assert set(rows) == {ok.pk, failing.pk}
    assert (rows[ok.pk].number, rows[ok.pk].duration_ms, rows[ok.pk].status_code, rows[ok.pk].error) == (
        1,
        12,
        200,
        "",
    )
    assert rows[ok.pk].started_at == started and rows[ok.pk].response_excerpt == "fine"
    assert (rows[failing.pk].status_code, rows[failing.pk].error, rows[failing.pk].response_excerpt) == (
        500,
        "http_500",
        "oops",
    )
    # and recording the same outcomes again (a row no longer pending) writes nothing more
    assert engine.record._record(outcomes[:1]) == ["gone"]
    assert Attempt.objects.count() == 2


# --- 3. the Wired/Live switch ------------------------------------------------------------------------


def test_a_wired_event_is_logged_skipped_and_never_sent(widget, receiver):
    # given a chat.closed subscription with the default WEBHOOK_LIVE_EVENTS
    sub, _ = subscribe(widget, receiver.url(), events=["chat.closed"])
    # when
    emit_chat_closed(widget)
    deliver()
    # then
    delivery = Delivery.objects.get(subscription=sub)
    assert (delivery.status, delivery.next_attempt_at, delivery.attempts) == ("skipped", None, 0)
    assert receiver.hits == []


def test_an_event_switch_row_turns_a_wired_event_on_for_new_events(widget, receiver):
    # given a skipped chat.closed delivery
    sub, _ = subscribe(widget, receiver.url(), events=["chat.closed"])
    emit_chat_closed(widget, 1)
    # when the type is switched on in admin and a new event comes
    EventSwitch.objects.create(event_type="chat.closed", enabled=True)
    event = emit_chat_closed(widget, 2)
    deliver()
    # then the new event is delivered; the old one stays skipped (not sent after the fact)
    [hit] = receiver.wait_for(1)
    assert hit.key == str(event.pk)
    assert hit.header("X-Service-Event") == "chat.closed"
    assert json.loads(hit.body)["data"] == {"chat_id": 2, "reason": "expired", "button_guid": widget.button_guid}
    statuses = dict(Delivery.objects.filter(subscription=sub).values_list("event__data__chat_id", "status"))
    assert statuses == {1: "skipped", 2: "delivered"}


def test_the_setting_turns_a_wired_event_on(widget, receiver, settings):
    # given
    settings.WEBHOOK_LIVE_EVENTS = ["message.created", "chat.closed"]
    subscribe(widget, receiver.url(), events=["chat.closed"])
    # when
    emit_chat_closed(widget)
    deliver()
    # then
    assert [h.header("X-Service-Event") for h in receiver.wait_for(1)] == ["chat.closed"]


def test_an_event_switch_row_turns_a_live_event_off(widget, receiver):
    # given
    EventSwitch.objects.create(event_type="message.created", enabled=False)
    sub, _ = subscribe(widget, receiver.url())
    # when
    emit_message(widget)
    deliver()
    # then
    assert Delivery.objects.get(subscription=sub).status == "skipped"
    assert receiver.hits == []


def test_an_attempt_is_bounded_in_total_not_only_per_socket_read(widget, receiver, monkeypatch):
    # given timeouts of 1 s (connect) and 0.5 s (read), an attempt deadline of 1 s, and an endpoint
    # trickling its answer one byte every 40 ms: no single read waits 0.5 s, the whole answer takes
    # about 3 s
    monkeypatch.setattr(engine.send, "TIMEOUT", (1.0, 0.5))
    monkeypatch.setattr(engine.send, "ATTEMPT_DEADLINE", 1.0)
    receiver.rule = lambda hit: Reply(200, trickle=0.04)
    subscribe(widget, receiver.url())
    emit_message(widget)
    # when
    started = time.monotonic()
    deliver()
    elapsed = time.monotonic() - started
    # then the attempt ended at its deadline, as LEASE (a multiple of the deadline) assumes:
    # otherwise a trickling endpoint holds a pool thread past the lease and a second worker sends
    # the same delivery again while the first attempt is still in flight
    assert elapsed < 1.0 + 0.5 + 0.5, f"one attempt took {elapsed:.1f} s with a deadline of 1 s"
    assert Delivery.objects.get().last_error == "deadline_exceeded"
