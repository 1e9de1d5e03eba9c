"""Two widgets crawl a slow site at once, on the Procfile's processes (`web`, `worker`, `bulk`) and the
embedded default: a third widget's `message.created` webhook still arrives within seconds, because
crawl slices run on the `bulk` worker and deliveries on `worker`; and an owner cancels a running crawl
with `DELETE /kb/crawler?cancel_running=true`, after which the crawl fetches at most the page that was
in flight.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import requests

from apps.kb.tests.site import serve
from apps.webhooks.tests.receiver import Receiver
from tests.live import manage

pytestmark = [pytest.mark.embedded, pytest.mark.django_db]  # django_db: the plugin's autouse fixtures want it

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
