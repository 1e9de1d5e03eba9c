"""Two widgets crawl a slow site at once, on the Procfile's processes (`web`, `worker`, `bulk`) and the
embedded default: a third widget's `message.created` webhook still arrives within seconds, because
crawl slices run on the `bulk` worker and deliveries on `worker`; and an owner cancels a running crawl
with `DELETE /kb/crawler?cancel_running=true`, after which the crawl fetches at most the page that was
in flight.

The same holds with pages answering 20 s late, on the embedded default and on PostgreSQL and Redis,
for a third widget whose receiver is Python's `http.server` over TLS (HTTP/1.0: no Content-Length,
the answer ends when the connection closes, without a TLS close_notify): its deliveries are
recorded `delivered` on the first attempt within seconds, while both crawls keep fetching.
"""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests

from apps.kb.tests.site import serve
from apps.webhooks.tests.receiver import Receiver
from tests.live import manage

pytestmark = pytest.mark.django_db  # the plugin's autouse fixtures want it

PAGE_SECONDS = 4.0  # each page of the slow site answers this late (robots.txt and sitemaps at once)
HOOK_LIMIT_SECONDS = 15.0  # a delivery on an idle worker takes about a second; a crawl slice 20 s and more

WIDGETS = """
import json
from apps.core import services
from apps.core.auth import scopes as catalogue
made = []
for name in ("Crawler A", "Crawler B", "Hooks"):
    widget = services.create_widget(owner_email=name.replace(" ", "").lower() + "@example.com", name=name, enable_api=True)
    issued = services.issue_token(widget=widget, scopes=sorted(catalogue.OPERATIONAL_SCOPES), name="abuse")
    made.append({"button_guid": widget.button_guid, "token": issued.plaintext})
print(json.dumps(made))
"""


def _slow_site(site, prefix: str, pages: int = 200) -> None:
    """Pages prefix/0 .. prefix/<pages-1>, the first linking to every other: a crawl that would run
    for many minutes."""
    links = "".join(f'<a href="{prefix}/{n}">page {n}</a> ' for n in range(1, pages))
    site.html(f"{prefix}/0", f"<p>Delivery notes: every part.</p>{links}")
    for n in range(1, pages):
        site.html(f"{prefix}/{n}", f"<p>Delivery notes, part {n}: parcels leave the warehouse daily.</p>")


def _wait(predicate, timeout: float, what: str, step: float = 0.5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    raise AssertionError(f"{what} within {timeout} s")


def _crawler(server, token: str) -> dict:
    response = requests.get(server.url("/api/v1/kb/crawler"), headers={"Authorization": f"Bearer {token}"}, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture
def site(tmp_path):
    yield from serve(tmp_path, host="127.0.0.1")


@pytest.mark.embedded
def test_two_slow_crawls_leave_deliveries_prompt_and_a_running_crawl_can_be_cancelled(
    site, live_var, start_server, start_process, tmp_path
):
    # given a site answering each page 4 s late, and a webhook receiver, both trusted by one CA bundle
    site.delay = PAGE_SECONDS
    _slow_site(site, "/a")
    _slow_site(site, "/b")
    with Receiver() as receiver:
        bundle = Path(tmp_path / "ca-bundle.pem")
        bundle.write_text(site.ca_path.read_text() + Path(receiver.ca_path).read_text())
        env = {"OUTBOUND_ALLOW_LOOPBACK": "1", "REQUESTS_CA_BUNDLE": str(bundle)}
        crawler_a, crawler_b, hooks = json.loads(manage(live_var, "shell", "-c", WIDGETS).strip().splitlines()[-1])
        server = start_server(**env)
        worker = start_process("worker", **env)
        bulk = start_process("bulk", **env)
        for process in (worker, bulk):
            process.wait_for_output("ready.", timeout=90)

        subscribed = requests.post(
            server.url("/api/v1/webhook-subscriptions"),
            json={"url": receiver.url("/hook"), "events": ["message.created"], "secret": "s" * 32},
            headers={"Authorization": f"Bearer {hooks['token']}", "X-Service-Idempotency-Key": "hook-1"},
            timeout=30,
        )
        assert subscribed.status_code == 201, subscribed.text

        # when two widgets start crawling it
        for widget, prefix in ((crawler_a, "/a"), (crawler_b, "/b")):
            put = requests.put(
                server.url("/api/v1/kb/crawler"),
                json={"start_urls": [site.url(f"{prefix}/0")], "max_pages": 200, "max_depth": 1, "schedule": "manual"},
                headers={"Authorization": f"Bearer {widget['token']}", "X-Service-Idempotency-Key": f"crawl{prefix}"},
                timeout=30,
            )
            assert put.status_code == 200, put.text

        def pages(prefix: str) -> int:
            return sum(1 for path in list(site.requested) if path.startswith(prefix + "/"))

        _wait(lambda: pages("/a") >= 2 and pages("/b") >= 2, 120, "both crawls did not fetch pages")
        for widget in (crawler_a, crawler_b):
            assert _crawler(server, widget["token"])["current_run"]["status"] == "running"

        # then the third widget's visitor messages reach its webhook within seconds, three times over
        session = requests.post(server.url(f"/api/visitor/v1/{hooks['button_guid']}/sessions"), json={}, timeout=30)
        assert session.status_code == 201, session.text
        visitor = {"Authorization": f"Visitor {session.json()['session_token']}"}
        waits = []
        for n in range(3):
            sent = time.monotonic()
            message = requests.post(
                server.url(f"/api/visitor/v1/{hooks['button_guid']}/messages"),
                json={"type": "text", "body": f"Where is my parcel? ({n})"},
                headers=visitor,
                timeout=30,
            )
            assert message.status_code == 201, message.text
            receiver.wait_for(n + 1, timeout=60)
            waits.append(time.monotonic() - sent)
        print(f"webhook waits while two crawls run: {[round(w, 2) for w in waits]} s")
        assert max(waits) < HOOK_LIMIT_SECONDS, waits
        assert all(hit.json()["type"] == "message.created" for hit in receiver.snapshot())

        # and both crawls were still running meanwhile, each in its own slot of the bulk worker
        for widget in (crawler_a, crawler_b):
            assert _crawler(server, widget["token"])["current_run"]["status"] == "running"

        # when the first owner cancels the running crawl
        cancelled = requests.delete(
            server.url("/api/v1/kb/crawler?cancel_running=true"),
            headers={"Authorization": f"Bearer {crawler_a['token']}"},
            timeout=30,
        )
        assert cancelled.status_code == 204, cancelled.text
        at_cancel = pages("/a")

        # then it ends `cancelled` once the page in flight is in, and fetches nothing more
        state = _wait(
            lambda: (lambda s: s if s["current_run"] is None else None)(_crawler(server, crawler_a["token"])),
            PAGE_SECONDS * 3 + 30,
            "the cancelled crawl did not end",
        )
        assert state["last_run"]["status"] == "cancelled", state
        assert pages("/a") <= at_cancel + 1
        fetched_b = pages("/b")
        time.sleep(PAGE_SECONDS * 2 + 2)
        assert pages("/a") <= at_cancel + 1
        assert pages("/b") > fetched_b, "the other widget's crawl stopped too"
        assert _crawler(server, crawler_b["token"])["current_run"]["status"] == "running"
        for process in (server, worker, bulk):
            assert process.alive(), process.output()[-3000:]
            assert "Traceback" not in process.output(), process.output()[-3000:]


# --- pages 20 s late, a receiver that ends its answers by closing the connection, both topologies ----

SLOW_PAGE_SECONDS = 20.0


class _StandardLibraryReceiver(BaseHTTPRequestHandler):
    """Python's http.server as an integrator writes a receiver: HTTP/1.0, no Content-Length."""

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.server.arrivals.append(time.monotonic())  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        self.wfile.write(b"received")


@pytest.fixture
def closing_receiver(tmp_path) -> Iterator[tuple[str, Path, list[float]]]:
    """(url, CA file, arrival times) of an https http.server receiver on loopback."""
    import trustme

    ca = trustme.CA()
    ca_path = tmp_path / "receiver-ca.pem"
    ca.cert_pem.write_to_path(str(ca_path))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _StandardLibraryReceiver)
    httpd.daemon_threads, httpd.arrivals = True, []
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield f"https://127.0.0.1:{httpd.server_address[1]}/hook", ca_path, httpd.arrivals
    httpd.shutdown()
    httpd.server_close()


def _slow_linked_site(site) -> None:
    """/a/0 and /b/0 answer at once and link to 100 pages each (/sa/N, /sb/N) answering 20 s late."""
    site.delay, site.delay_prefix = SLOW_PAGE_SECONDS, "/s"
    for name in ("a", "b"):
        site.html(f"/{name}/0", "<p>Every part.</p>" + "".join(f'<a href="/s{name}/{n}">{n}</a> ' for n in range(100)))
        for n in range(100):
            site.html(f"/s{name}/{n}", f"<p>Delivery notes, part {n}.</p>")


def _crawls_keep_a_third_widgets_deliveries_prompt(server, site, widgets, receiver) -> None:
    crawler_a, crawler_b, hooks = widgets
    url, _, arrivals = receiver
    headers = {"Authorization": f"Bearer {hooks['token']}"}
    subscribed = requests.post(
        server.url("/api/v1/webhook-subscriptions"),
        json={"url": url, "events": ["message.created"], "secret": "s" * 32},
        headers={**headers, "X-Service-Idempotency-Key": "hook-slow"},
        timeout=30,
    )
    assert subscribed.status_code == 201, subscribed.text
    sub_id = subscribed.json()["id"]

    # when two widgets crawl a site whose pages answer 20 s late
    for widget, name in ((crawler_a, "a"), (crawler_b, "b")):
        put = requests.put(
            server.url("/api/v1/kb/crawler"),
            json={"start_urls": [site.url(f"/{name}/0")], "max_pages": 200, "max_depth": 1, "schedule": "manual"},
            headers={"Authorization": f"Bearer {widget['token']}", "X-Service-Idempotency-Key": f"slow-{name}"},
            timeout=30,
        )
        assert put.status_code == 200, put.text

    def slow_pages(name: str) -> int:
        return sum(1 for path in list(site.requested) if path.startswith(f"/s{name}/"))

    _wait(lambda: slow_pages("a") >= 1 and slow_pages("b") >= 1, 120, "both crawls did not reach the slow pages")

    # then the third widget's visitor messages are delivered, each on its first attempt, within seconds
    session = requests.post(server.url(f"/api/visitor/v1/{hooks['button_guid']}/sessions"), json={}, timeout=30)
    assert session.status_code == 201, session.text
    visitor = {"Authorization": f"Visitor {session.json()['session_token']}"}

    def delivered() -> list[dict]:
        log = requests.get(
            server.url(f"/api/v1/webhook-subscriptions/{sub_id}/deliveries"), headers=headers, timeout=30
        )
        assert log.status_code == 200, log.text
        return [row for row in log.json()["data"] if row["status"] == "delivered"]

    waits = []
    for n in range(3):
        sent = time.monotonic()
        message = requests.post(
            server.url(f"/api/visitor/v1/{hooks['button_guid']}/messages"),
            json={"type": "text", "body": f"Where is my parcel? ({n})"},
            headers=visitor,
            timeout=30,
        )
        assert message.status_code == 201, message.text
        _wait(lambda n=n: len(delivered()) >= n + 1, 60, f"message {n} was not delivered", step=0.25)
        waits.append(time.monotonic() - sent)
    print(f"deliveries while two 20 s crawls run: {[round(w, 2) for w in waits]} s")
    assert max(waits) < HOOK_LIMIT_SECONDS, waits
    rows = delivered()
    assert [row["attempts"] for row in rows] == [1, 1, 1], rows
    assert {attempt["outcome"] for row in rows for attempt in row["attempt_log"]} == {"delivered"}
    assert len(arrivals) == 3  # nothing was sent twice

    # and both crawls are still at it
    for widget in (crawler_a, crawler_b):
        assert _crawler(server, widget["token"])["current_run"]["status"] == "running"


@pytest.mark.embedded
def test_crawls_of_pages_20_s_late_leave_a_closing_receivers_deliveries_prompt_on_the_embedded_default(
    site, closing_receiver, live_var, start_server, start_process, tmp_path
):
    # given the Procfile's web, worker and bulk on the embedded default, trusting the site and receiver
    _slow_linked_site(site)
    bundle = tmp_path / "ca-bundle.pem"
    bundle.write_text(site.ca_path.read_text() + closing_receiver[1].read_text())
    env = {"OUTBOUND_ALLOW_LOOPBACK": "1", "REQUESTS_CA_BUNDLE": str(bundle)}
    widgets = json.loads(manage(live_var, "shell", "-c", WIDGETS).strip().splitlines()[-1])
    server = start_server(**env)
    processes = [start_process(name, **env) for name in ("worker", "bulk")]
    for process in processes:
        process.wait_for_output("ready.", timeout=90)
    _crawls_keep_a_third_widgets_deliveries_prompt(server, site, widgets, closing_receiver)
    for process in (server, *processes):
        assert process.alive(), process.output()[-3000:]


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_crawls_of_pages_20_s_late_leave_a_closing_receivers_deliveries_prompt_on_postgres_and_redis(
    site, closing_receiver, tmp_path
):
    from django.conf import settings

    from apps.core import services
    from apps.core.auth import scopes as catalogue
    from tests.live import Process, environment, start_web
    from tests.support.concurrency import database_url

    # given the Procfile's web, worker and bulk on the test's PostgreSQL database and Redis
    _slow_linked_site(site)
    bundle = tmp_path / "ca-bundle.pem"
    bundle.write_text(site.ca_path.read_text() + closing_receiver[1].read_text())
    env = {
        "OUTBOUND_ALLOW_LOOPBACK": "1",
        "REQUESTS_CA_BUNDLE": str(bundle),
        "DATABASE_URL": database_url(),
        "REDIS_URL": settings.REDIS_URL,
        "WEB_CONCURRENCY": "1",
        "VISITOR_SESSIONS_PER_ADDRESS_PER_HOUR": "0",
        "VISITOR_MESSAGES_PER_ADDRESS_PER_MINUTE": "0",
    }
    widgets = []
    for name in ("Crawler A", "Crawler B", "Hooks"):
        widget = services.create_widget(
            owner_email=name.replace(" ", "").lower() + "@example.com", name=name, enable_api=True
        )
        issued = services.issue_token(widget=widget, scopes=sorted(catalogue.OPERATIONAL_SCOPES), name="abuse")
        widgets.append({"button_guid": widget.button_guid, "token": issued.plaintext})
    var = tmp_path / "var"
    var.mkdir()
    server = start_web(var, {}, tmp_path / "web.log", **env)
    processes = []
    try:
        for name in ("worker", "bulk"):
            processes.append(Process.start(name, environment(var, **env), tmp_path / f"{name}.log"))
        for process in processes:
            process.wait_for_output("ready.", timeout=90)
        _crawls_keep_a_third_widgets_deliveries_prompt(server, site, widgets, closing_receiver)
        for process in (server, *processes):
            assert process.alive(), process.output()[-3000:]
    finally:
        for process in (*processes, server):
            process.terminate(timeout=5)
