"""The delivery log says why a delivery failed: each row lists its attempts (time, outcome kind,
HTTP status, duration, the first bytes of the answer, masked) and when the next one is due. Every
failure kind is produced by a real HTTPS receiver on loopback; the engine runs inline.

Writing a subscription says which of its events are `Wired` (not delivered until enabled).
"""

from __future__ import annotations

import ssl
import threading
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import trustme
from django.db import transaction
from django.utils import timezone

from apps.core import events
from apps.webhooks import delivery as engine
from apps.webhooks import services
from apps.webhooks.models import Attempt, Delivery, EventSwitch
from apps.webhooks.tests.receiver import Receiver, Reply

pytestmark = pytest.mark.django_db

BASE = "/api/v1/webhook-subscriptions"
_keys = iter(range(10**6))


def idem() -> dict:
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"log-{next(_keys)}"}


@pytest.fixture(autouse=True)
def triggers(monkeypatch: pytest.MonkeyPatch) -> list:
    asked: list = []
    monkeypatch.setattr(engine.sweep, "trigger", lambda countdown=None: asked.append(countdown))
    return asked


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch, settings):
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    with Receiver() as rx:
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(rx.ca_path))
        yield rx


def subscribe(client, url: str, **body) -> dict:
    response = client.post(BASE, {"url": url, "events": ["message.created"], **body}, format="json", **idem())
    assert response.status_code == 201, response.content
    return response.json()


def emit_message(widget, n: int = 1) -> None:
    with transaction.atomic():
        event = events.emit(
            widget,
            events.MESSAGE_CREATED,
            chat_id=n,
            message_id=100 + n,
            client_id="e" * 32,
            author_type="USER",
            source="api",
        )
    events.fan_out(event.pk)


def one_row(client, sub_id: int) -> dict:
    response = client.get(f"{BASE}/{sub_id}/deliveries")
    assert response.status_code == 200
    (row,) = response.json()["data"]
    return row


def make_due() -> None:
    """Skip the retry waits: every pending delivery is due now."""
    Delivery.objects.filter(status=Delivery.Status.PENDING).update(
        next_attempt_at=timezone.now() - timedelta(seconds=1)
    )


def attempt_once() -> None:
    assert services.deliver_due(concurrency=1) == 1


# --- failure kinds -----------------------------------------------------------------------------------


def test_a_500_shows_status_masked_answer_duration_and_the_next_attempt(api, widget, receiver):
    # given a receiver answering 500 with a body naming a person's e-mail and phone
    receiver.rule = lambda hit: Reply(status=500, body=b"db down; paged ops@example.com +1 415 555 0100")
    client = api()
    sub = subscribe(client, receiver.url("/hook"))
    emit_message(widget)
    # when one attempt runs
    attempt_once()
    # then the row says what happened and when the next attempt is due (10 s later)
    row = one_row(client, sub["id"])
    assert row["status"] == "pending" and row["attempts"] == 1
    (attempt,) = row["attempt_log"]
    assert attempt["number"] == 1
    assert attempt["outcome"] == "http_error" and attempt["error"] == "http_500"
    assert attempt["status_code"] == 500
    assert attempt["response_excerpt"] == "db down; paged [скрыто] [скрыто]"
    assert 0 <= attempt["duration_ms"] < 10_000
    started = datetime.fromisoformat(attempt["at"])
    next_at = datetime.fromisoformat(row["next_attempt_at"])
    assert timedelta(seconds=9) < next_at - started < timedelta(seconds=11)


def test_a_refused_certificate_is_a_tls_error(api, widget, receiver, monkeypatch, tmp_path):
    # given a CA bundle that does not hold the receiver's CA
    other = tmp_path / "other-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(other))
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(other))
    client = api()
    sub = subscribe(client, receiver.url("/hook"))
    emit_message(widget)
    # when
    attempt_once()
    # then no request reached the receiver and the log names the TLS refusal
    (attempt,) = one_row(client, sub["id"])["attempt_log"]
    assert attempt["outcome"] == "tls_error" and attempt["error"] == "tls_error"
    assert attempt["status_code"] is None and attempt["response_excerpt"] is None
    assert receiver.snapshot() == []


def test_a_connection_closed_without_an_answer_is_a_connection_error(api, widget, receiver):
    receiver.rule = lambda hit: Reply(drop=True)
    client = api()
    sub = subscribe(client, receiver.url("/hook"))
    emit_message(widget)
    attempt_once()
    (attempt,) = one_row(client, sub["id"])["attempt_log"]
    assert attempt["outcome"] == "connection_error"
    assert attempt["status_code"] is None and attempt["response_excerpt"] is None
    assert len(receiver.snapshot()) == 1  # the request arrived; no answer came back


def test_a_receiver_slower_than_the_read_timeout_is_a_timeout(api, widget, receiver, monkeypatch):
    monkeypatch.setattr(engine.send, "TIMEOUT", (1.0, 0.3))
    receiver.rule = lambda hit: Reply(status=200, delay=1.5)
    client = api()
    sub = subscribe(client, receiver.url("/hook"))
    emit_message(widget)
    attempt_once()
    (attempt,) = one_row(client, sub["id"])["attempt_log"]
    assert attempt["outcome"] == "timeout" and attempt["status_code"] is None
    assert 250 <= attempt["duration_ms"] < 1500


def test_after_the_last_failure_the_row_is_failed_with_four_attempts_and_no_next(api, widget, receiver):
    receiver.rule = lambda hit: Reply(status=503, body=b"maintenance")
    client = api()
    sub = subscribe(client, receiver.url("/hook"))
    emit_message(widget)
    for _ in range(4):
        make_due()
        attempt_once()
    row = one_row(client, sub["id"])
    assert row["status"] == "failed" and row["next_attempt_at"] is None
    assert [a["number"] for a in row["attempt_log"]] == [1, 2, 3, 4]
    assert {(a["outcome"], a["status_code"], a["response_excerpt"]) for a in row["attempt_log"]} == {
        ("http_error", 503, "maintenance")
    }


def test_a_delivered_row_shows_its_successful_attempt(api, widget, receiver):
    client = api()
    sub = subscribe(client, receiver.url("/hook"))
    emit_message(widget)
    attempt_once()
    row = one_row(client, sub["id"])
    assert row["status"] == "delivered" and row["next_attempt_at"] is None
    (attempt,) = row["attempt_log"]
    assert (attempt["outcome"], attempt["error"], attempt["status_code"], attempt["response_excerpt"]) == (
        "delivered",
        None,
        200,
        "ok",
    )


class _StandardLibraryReceiver(BaseHTTPRequestHandler):
    """A receiver as Python's http.server writes one: HTTP/1.0, no Content-Length, the answer ends
    when the connection closes (and over TLS, Python's ssl sends no close_notify)."""

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.server.hits.append(self.headers["X-Service-Idempotency-Key"])  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        self.wfile.write(b"received")


def test_a_receiver_that_ends_its_answer_by_closing_the_connection_is_delivered_once(
    api, widget, monkeypatch, settings, tmp_path
):
    # given an https receiver built on http.server, its certificate from a CA the service trusts
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(tmp_path / "ca.pem"))
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _StandardLibraryReceiver)
    httpd.daemon_threads, httpd.hits = True, []
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        client = api()
        sub = subscribe(client, f"https://127.0.0.1:{httpd.server_address[1]}/hook")
        emit_message(widget)
        # when the delivery is attempted, and the engine looks for due rows once more
        attempt_once()
        make_due()
        assert services.deliver_due(concurrency=1) == 0
    finally:
        httpd.shutdown()
        httpd.server_close()
    # then its 200 delivered it on the first attempt: nothing is retried
    row = one_row(client, sub["id"])
    assert (row["status"], row["attempts"], row["next_attempt_at"]) == ("delivered", 1, None)
    (attempt,) = row["attempt_log"]
    assert (attempt["outcome"], attempt["status_code"], attempt["response_excerpt"]) == ("delivered", 200, "received")
    assert len(httpd.hits) == 1


def test_a_pending_row_not_yet_attempted_has_no_attempts_and_is_due(api, widget, receiver):
    client = api()
    sub = subscribe(client, receiver.url("/hook"))
    emit_message(widget)
    row = one_row(client, sub["id"])
    assert row["attempt_log"] == [] and row["attempts"] == 0 and row["next_attempt_at"] is not None


def test_answers_are_cut_to_their_first_bytes_and_nuls_replaced():
    text = engine.response_excerpt(b"\x00" + b"x" * 1000)
    assert text.startswith("\ufffd") and len(text) == engine.RESPONSE_EXCERPT_BYTES


def test_the_log_reads_attempts_in_a_fixed_number_of_queries(api, widget, receiver, django_assert_max_num_queries):
    # given 5 deliveries with 2 attempts each
    receiver.rule = lambda hit: Reply(status=500, body=b"no")
    client = api()
    sub = subscribe(client, receiver.url("/hook"))
    for n in range(5):
        emit_message(widget, n)
    for _ in range(2):
        make_due()
        services.deliver_due(concurrency=1)
    assert Attempt.objects.count() == 10
    client.get(f"{BASE}/{sub['id']}/deliveries")  # warm (token lookup caches)
    # then the page costs the same as a page of one row plus one query for all attempts
    with django_assert_max_num_queries(12) as captured:
        rows = client.get(f"{BASE}/{sub['id']}/deliveries").json()["data"]
    assert len(rows) == 5 and all(len(r["attempt_log"]) == 2 for r in rows)
    assert sum("webhooks_attempt" in q["sql"] for q in captured.captured_queries) == 1


# --- not live events on write ------------------------------------------------------------------------


def test_create_names_the_subscribed_events_that_will_not_deliver_yet(api, receiver):
    client = api()
    body = subscribe(client, receiver.url("/x"), events=["message.created", "agent.online", "chat.closed"])
    assert body["not_live_events"] == ["agent.online", "chat.closed"]


def test_patch_names_them_too_and_an_enabled_event_is_no_longer_listed(api, receiver):
    client = api()
    sub = subscribe(client, receiver.url("/y"))
    assert sub["not_live_events"] == []
    EventSwitch.objects.create(event_type="chat.closed", enabled=True)
    response = client.patch(
        f"{BASE}/{sub['id']}", {"events": ["chat.closed", "chat.accepted"]}, format="json", **idem()
    )
    assert response.status_code == 200
    assert response.json()["not_live_events"] == ["chat.accepted"]


def test_legacy_names_are_judged_by_the_native_event_they_map_to(api, receiver):
    client = api()
    body = subscribe(client, receiver.url("/z"), events=["chat_finished"], is_legacy_compat=True)
    assert body["not_live_events"] == ["chat_finished"]
