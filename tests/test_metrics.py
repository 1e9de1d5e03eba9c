"""GET /metrics (product-decisions.md "Operations"): who may read it, the families and their labels,
bounded label values, and the pending-deliveries readings while a receiver refuses."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from django.db import transaction
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from apps.core.events import emit, fan_out
from apps.platform import metrics, queue_depth
from apps.webhooks import delivery as engine
from apps.webhooks import services as webhook_services
from apps.webhooks.models import Delivery
from apps.webhooks.tests.receiver import Receiver, always
from config.celery import app as celery_app
from tests.support.metrics import sample as current

pytestmark = pytest.mark.django_db

TOKEN = "metrics-token-0123456789"


def scrape(client, **headers) -> dict:
    """{family name: family} of one scrape (the parser names a counter without its `_total`)."""
    response = client.get("/metrics", **headers)
    assert response.status_code == 200, response.content[:500]
    assert response["Content-Type"].startswith("text/plain; version=")
    return {family.name: family for family in text_string_to_metric_families(response.content.decode())}


def series(families: dict) -> set[tuple]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))) for family in families.values() for sample in family.samples
    }


def value(families: dict, name: str, **labels) -> float:
    """The one sample of `name` with these labels; 0 when the series does not exist yet."""
    family = families.get(name.removesuffix("_total").removesuffix("_count"))
    found = [
        s.value
        for s in (family.samples if family else [])
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    ]
    assert len(found) <= 1, (name, labels, found)
    return found[0] if found else 0.0


# --- access -----------------------------------------------------------------------------------------


def test_without_a_token_setting_a_remote_caller_is_refused_whatever_it_sends(client, settings, assert_problem):
    settings.METRICS_TOKEN = ""
    assert_problem(client.get("/metrics", REMOTE_ADDR="203.0.113.7"), 403, "forbidden")
    response = client.get("/metrics", REMOTE_ADDR="203.0.113.7", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert_problem(response, 403, "forbidden")


def test_without_a_token_setting_loopback_callers_are_answered(client, settings):
    settings.METRICS_TOKEN = ""
    for address in ("127.0.0.1", "127.0.0.2", "::1", "::ffff:127.0.0.1"):
        assert client.get("/metrics", REMOTE_ADDR=address).status_code == 200, address


def test_a_proxy_on_the_same_host_does_not_make_its_callers_loopback(client, settings, assert_problem):
    # given a trusted proxy on loopback that forwards a remote caller
    settings.METRICS_TOKEN = ""
    settings.TRUSTED_PROXY_HOPS = 1
    # then the caller is the forwarded address, and refused
    response = client.get("/metrics", REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.7")
    assert_problem(response, 403, "forbidden")


def test_with_a_token_setting_only_the_bearer_token_is_answered(client, settings, assert_problem):
    settings.METRICS_TOKEN = TOKEN
    # loopback is no longer enough, and a wrong token is refused
    body = assert_problem(client.get("/metrics", REMOTE_ADDR="127.0.0.1"), 401)
    assert body["instance"] == "/metrics"
    refused = client.get("/metrics", REMOTE_ADDR="203.0.113.7", HTTP_AUTHORIZATION=f"Bearer {TOKEN}x")
    assert_problem(refused, 401)
    assert refused["WWW-Authenticate"].startswith("Bearer")
    assert_problem(client.get("/metrics", REMOTE_ADDR="203.0.113.7", HTTP_AUTHORIZATION=f"Basic {TOKEN}"), 401)
    # the right token is answered from anywhere
    scrape(client, REMOTE_ADDR="203.0.113.7", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")


# --- families and labels ----------------------------------------------------------------------------

FAMILIES = {
    # name as parsed: (type, label names of its samples besides `le`)
    "chatwidget_http_requests": ("counter", {"method", "route", "status"}),
    "chatwidget_http_request_duration_seconds": ("histogram", {"method", "route"}),
    "chatwidget_websockets_open": ("gauge", {"kind"}),
    "chatwidget_delivery_attempts": ("counter", {"kind", "outcome"}),
    "chatwidget_ai_answer_duration_seconds": ("histogram", {"outcome"}),
    "chatwidget_ai_provider_errors": ("counter", {"driver", "kind"}),
    "chatwidget_celery_queue_length": ("gauge", {"queue"}),
    "chatwidget_celery_queue_oldest_task_age_seconds": ("gauge", {"queue"}),
    "chatwidget_deliveries_pending": ("gauge", {"kind"}),
    "chatwidget_deliveries_oldest_pending_age_seconds": ("gauge", {"kind"}),
    "chatwidget_kb_documents_waiting": ("gauge", {"state"}),
    "chatwidget_metrics_source_up": ("gauge", {"source"}),
}


def test_every_family_is_present_with_its_type_help_and_labels(client):
    client.get("/healthz")
    families = scrape(client)
    for name, (kind, labels) in FAMILIES.items():
        assert name in families, name
        family = families[name]
        assert family.type == kind, name
        assert family.documentation, name
        assert family.samples, name
        for sample in family.samples:
            assert set(sample.labels) - {"le"} == labels, (name, sample)
    assert {s.labels["kind"] for s in families["chatwidget_websockets_open"].samples} == {"visitor", "operator"}
    assert {s.labels["kind"] for s in families["chatwidget_deliveries_pending"].samples} == {"webhook", "channel"}
    assert {s.labels["queue"] for s in families["chatwidget_celery_queue_length"].samples} >= {"celery", "ai"}
    assert {s.labels["source"] for s in families["chatwidget_metrics_source_up"].samples} == {"database", "broker"}
    assert all(s.value == 1 for s in families["chatwidget_metrics_source_up"].samples)


def test_names_follow_the_prometheus_conventions(client):
    families = scrape(client)
    for family in families.values():
        assert family.name.startswith("chatwidget_"), family.name
        for sample in family.samples:
            if family.type == "counter":
                assert sample.name.endswith(("_total", "_created")), sample.name
            if "duration" in family.name or "age" in family.name:
                assert family.name.endswith("_seconds"), family.name


def test_requests_are_counted_by_route_pattern_status_and_duration(client):
    before = scrape(client)
    client.get("/api/v1/chats/987654321")
    after = scrape(client)
    labels = {"method": "GET", "route": "/api/v1/chats/{pk}"}
    requests = "chatwidget_http_requests_total"
    assert value(after, requests, **labels, status="401") == value(before, requests, **labels, status="401") + 1
    durations = "chatwidget_http_request_duration_seconds_count"
    assert value(after, durations, **labels) == value(before, durations, **labels) + 1


def _chat_route_count(families) -> float:
    return value(families, "chatwidget_http_requests_total", method="GET", route="/api/v1/chats/{pk}", status="401")


def test_ten_thousand_chat_ids_add_no_series(client, widget):
    # given one request that made the chat route's series, and a scrape that made the scrape's own
    assert client.get("/api/v1/chats/10000000").status_code == 401
    scrape(client)
    before = scrape(client)
    # when 10,000 requests name 10,000 other chat ids (without a token: the cheapest answer of the
    # route, resolved like any other)
    for n in range(10_000):
        assert client.get(f"/api/v1/chats/{10_000_001 + n}").status_code == 401
    after = scrape(client)
    # then no series was added, the route's counter took every request, and no id is in a label
    assert series(after) == series(before)
    assert _chat_route_count(after) == _chat_route_count(before) + 10_000
    labels = {value for family in after.values() for sample in family.samples for value in sample.labels.values()}
    assert not any("1000" in value for value in labels)  # no chat id (values may hold any digits)
    assert widget.button_guid not in labels and str(widget.pk) not in labels


# --- the pending deliveries while a receiver refuses --------------------------------------------------


@pytest.fixture
def refusing_receiver(monkeypatch, settings):
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    # the retry an attempt asks for is not run inline (eager Celery would ignore its countdown)
    monkeypatch.setattr(engine.sweep, "trigger", lambda countdown=None: None)
    with Receiver(rule=always(503)) as rx:
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(rx.ca_path))
        yield rx


def test_pending_deliveries_and_their_age_move_while_a_receiver_refuses(client, widget, refusing_receiver, monkeypatch):
    # given a subscription whose receiver answers 503, and nothing pending
    webhook_services.create_subscription(widget=widget, url=refusing_receiver.url("/hook"), events=["message.created"])
    families = scrape(client)
    assert value(families, "chatwidget_deliveries_pending", kind="webhook") == 0
    assert value(families, "chatwidget_deliveries_oldest_pending_age_seconds", kind="webhook") == 0
    refused_before = value(families, "chatwidget_delivery_attempts_total", kind="webhook", outcome="retrying")
    delivered_before = value(families, "chatwidget_delivery_attempts_total", kind="webhook", outcome="delivered")
    # when an event is delivered and refused
    with transaction.atomic():
        event = emit(
            widget, "message.created", chat_id=1, message_id=2, client_id="c" * 32, author_type="USER", source="api"
        )
    fan_out(event.pk)
    assert webhook_services.deliver_due(concurrency=1) == 1
    refusing_receiver.wait_for(1)
    row = Delivery.objects.get()
    assert row.status == "pending"
    # then, five minutes on, the gauge counts it and its age is the row's
    later = timezone.now() + timedelta(minutes=5)
    monkeypatch.setattr(metrics, "timezone", SimpleNamespace(now=lambda: later))
    families = scrape(client)
    assert value(families, "chatwidget_deliveries_pending", kind="webhook") == 1
    age = value(families, "chatwidget_deliveries_oldest_pending_age_seconds", kind="webhook")
    assert age == pytest.approx((later - row.created_at).total_seconds())
    assert age >= 300
    assert (
        value(families, "chatwidget_delivery_attempts_total", kind="webhook", outcome="retrying") == refused_before + 1
    )
    # and once the receiver accepts, the retry empties it again
    refusing_receiver.rule = always(200)
    Delivery.objects.filter(pk=row.pk).update(next_attempt_at=timezone.now())
    assert webhook_services.deliver_due(concurrency=1) == 1
    families = scrape(client)
    assert value(families, "chatwidget_deliveries_pending", kind="webhook") == 0
    assert value(families, "chatwidget_deliveries_oldest_pending_age_seconds", kind="webhook") == 0
    assert (
        value(families, "chatwidget_delivery_attempts_total", kind="webhook", outcome="delivered")
        == delivered_before + 1
    )


# --- the alert rules and the docs page ----------------------------------------------------------------

DEPLOY = Path(__file__).resolve().parents[1] / "deploy" / "prometheus"
ALERTS = {
    "ChatwidgetDeliveriesDelayed",
    "ChatwidgetAiQueueBacklog",
    "ChatwidgetAiProviderErrors",
    "ChatwidgetApiErrorRate",
    "ChatwidgetMetricsSourceDown",
}


def test_the_alert_rules_use_only_metrics_the_service_exports():
    rules = yaml.safe_load((DEPLOY / "alerts.yml").read_text(encoding="utf-8"))
    alerts = {rule["alert"]: rule for group in rules["groups"] for rule in group["rules"]}
    assert set(alerts) == ALERTS
    for name, rule in alerts.items():
        used = set(re.findall(r"\bchatwidget_\w+", rule["expr"]))
        assert used, name
        for metric in used:
            family = re.sub(r"_(total|count|sum|bucket)$", "", metric)
            assert family in FAMILIES, (name, metric)
        assert rule["labels"]["severity"] in {"warning", "critical"}
        assert rule["annotations"]["summary"] and rule["annotations"]["description"]


def test_the_docs_page_lists_every_metric_and_alert():
    page = (DEPLOY.parents[1] / "docs" / "operating" / "metrics.md").read_text(encoding="utf-8")
    exported = {name + "_total" if kind == "counter" else name for name, (kind, _) in FAMILIES.items()}
    listed = set(re.findall(r"^\| `(chatwidget_\w+)`", page, re.M))
    assert listed == exported
    assert ALERTS <= set(re.findall(r"`(Chatwidget\w+)`", page))


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool (Debian's prometheus package) is not installed")
def test_promtool_loads_the_rules_and_their_unit_tests_pass():
    checked = subprocess.run(["promtool", "check", "rules", "alerts.yml"], cwd=DEPLOY, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = subprocess.run(
        ["promtool", "test", "rules", "alerts_test.yml"], cwd=DEPLOY, capture_output=True, text=True
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr


# --- the broker's queues ----------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore::celery.exceptions.AlwaysEagerIgnored")  # sent for real, on purpose
def test_a_queue_reading_counts_the_waiting_tasks_and_dates_the_oldest():
    # given a queue of this test's own that no worker consumes (the broker of this run: the SQLite
    # one on the embedded default, Redis with REDIS_URL)
    queue = f"metrics-test-{uuid.uuid4().hex[:12]}"
    assert queue_depth.read([queue]) == {queue: (0, None)}
    try:
        # when two tasks are sent to it
        first_sent = time.time()
        celery_app.send_task("apps.core.tasks.purge_signed_nonces", queue=queue)
        second_sent = time.time()
        celery_app.send_task("apps.core.tasks.purge_signed_nonces", queue=queue)
        # then both wait, and the oldest is dated when the first was sent
        [(waiting, oldest)] = queue_depth.read([queue]).values()
        assert waiting == 2
        assert first_sent - 0.01 <= oldest <= second_sent + 0.01
    finally:
        with celery_app.connection_for_write() as connection:
            connection.default_channel.queue_purge(queue)
    assert queue_depth.read([queue]) == {queue: (0, None)}


def test_the_celery_queue_families_report_the_default_the_ai_and_the_bulk_queue(client):
    families = scrape(client)
    assert {s.labels["queue"] for s in families["chatwidget_celery_queue_length"].samples} == {"celery", "ai", "bulk"}
    for sample in families["chatwidget_celery_queue_oldest_task_age_seconds"].samples:
        assert sample.value >= 0


# --- every process of the host ------------------------------------------------------------------------------

OTHER_PROCESS = """
import sys
from prometheus_client import Gauge

Gauge("chatwidget_websockets_open", "-", ["kind"], multiprocess_mode="livesum").labels("visitor").inc(5)
print("counted", flush=True)
sys.stdin.read()
"""


def test_another_process_counts_into_the_scrape_until_it_is_gone():
    # given another process of the host (the same multiprocess folder) holding five visitor sockets
    before = current("chatwidget_websockets_open", kind="visitor")
    other = subprocess.Popen(
        [sys.executable, "-c", OTHER_PROCESS], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert other.stdout.readline().strip() == "counted"
        # then the scrape sums it
        assert current("chatwidget_websockets_open", kind="visitor") == before + 5
    finally:
        # when it is killed without a word (it never marks itself dead)
        other.kill()
        other.wait()
    # then the next scrape forgets its sockets
    assert current("chatwidget_websockets_open", kind="visitor") == before
