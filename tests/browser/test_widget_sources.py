"""Answers with sources in Chromium: an assistant with `cite_sources` answers from the knowledge base
(against the loopback AI provider fake, which also embeds), and the widget lists the documents under
the answer: a crawled page as a link opened in a new tab with `rel="noopener noreferrer"`, an
uploaded document as plain text, and an address that is not http(s) never as a link, even when a
frame carries it as the source's `url`."""

from __future__ import annotations

import json
import re
import secrets
import subprocess
import sys

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import SERVER_ENV, api_client
from tests.browser.widget_pages import open_widget, send_text
from tests.live import ROOT, environment
from tests.llm_fake import FakeLLM, ca_path

pytestmark = pytest.mark.browser

PAGE = "https://shop.example/delivery"
HOSTILE = "javascript:alert(document.domain)"
ANSWER = "Tea ships from our warehouse in two days."

# Run by `manage.py shell` on the server's VAR_DIR: the knowledge base's chunks as a crawl and an
# upload store them, embedded through the widget's credential (the fake).
STORE_KNOWLEDGE = """
from django.db import transaction
from apps.core.models import Widget
from apps.kb import services
from apps.kb.models import KbDocument

widget = Widget.objects.get(button_guid={guid!r})
document = KbDocument.objects.create(
    widget=widget, name="Shipping terms.pdf", format="pdf", size=10, sha256="0" * 64, state="ready"
)
for text, ref, doc in [
    ("Tea delivery takes two days from the warehouse.", "crawl:" + {page!r}, None),
    ("Tea delivery is free over 50 euros.", "upload:%d" % document.pk, document),
    ("Tea delivery is tracked by parcel number.", "crawl:" + {hostile!r}, None),
]:
    embedded = services.embed_texts(widget=widget, texts=[text])
    with transaction.atomic():
        services.store_chunks(
            widget=widget, texts=[text], vectors=embedded.vectors, model=embedded.model, source_ref=ref,
            document=doc,
        )
"""


def store_knowledge(live_var, env: dict, button_guid: str) -> None:
    """STORE_KNOWLEDGE for the widget, run as the server runs (its VAR_DIR and environment)."""
    code = STORE_KNOWLEDGE.format(guid=button_guid, page=PAGE, hostile=HOSTILE)
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=ROOT,
        env=environment(live_var, **env),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def write(call, method: str, path: str, body: dict) -> dict:
    response = call(method, path, json=body, headers={"X-Service-Idempotency-Key": secrets.token_hex(8)})
    assert response.status_code in (200, 201), response.text
    return response.json()


def test_an_answer_lists_its_sources_under_it_and_links_only_web_pages(
    browser, start_server, start_process, live_var, shot
):
    # Given the AI operator on the fake, its assistant citing sources, and a knowledge base of a
    # crawled page, an uploaded document and a crawled address that is not a web page
    env = {**SERVER_ENV, "OUTBOUND_ALLOW_LOOPBACK": "1", "REQUESTS_CA_BUNDLE": ca_path()}
    with FakeLLM("openai", text=ANSWER) as fake:
        server = start_server(**env)
        worker = start_process("ai", **env)  # the AI replies run on the `ai` queue
        call = api_client(server)
        write(call, "PATCH", "/api/v1/widget/settings", {"widget_offline_mode": "chat"})
        write(
            call,
            "POST",
            "/api/v1/ai/credentials",
            {"provider": "openai", "api_key": fake.api_key, "base_url": fake.base_url},
        )
        assistant = write(
            call,
            "POST",
            "/api/v1/ai/assistants",
            {"name": "Tea shop", "is_default": True, "enabled": True, "rag_enabled": True, "cite_sources": True},
        )
        assert assistant["cite_sources"] is True
        write(call, "POST", "/api/v1/ai/operators", {"assistant_id": assistant["id"]})
        write(call, "PATCH", "/api/v1/ai/settings", {"enabled": True})
        store_knowledge(live_var, env, server.seed["button_guid"])
        worker.wait_for_output("ready.", timeout=90)

        # When the visitor asks (on the embedded default a worker's push cannot reach the web
        # process's in-memory channel layer: the widget shows the answer from its replay after a
        # reload)
        context = browser.new_context(viewport={"width": 1280, "height": 800}, locale="en-US")
        page = context.new_page()
        page.goto(server.url("/demo/"))
        open_widget(page)
        chat_id = send_text(page, "How long does tea delivery take?")
        answer = {}
        for _ in range(600):
            listed = call("GET", f"/api/v1/chats/{chat_id}/messages").json()["data"]
            answer = next((m for m in listed if m["author"]["kind"] == "ai"), {})
            if answer:
                break
            page.wait_for_timeout(100)
        assert answer.get("body") == ANSWER, (answer, worker.output()[-3000:])
        assert sorted(s["title"] for s in answer["sources"]) == sorted([PAGE, "Shipping terms.pdf", HOSTILE])

        # (a frame whose source carries a hostile address as its url, as a tampered server would send)
        tampered = []

        def tamper(ws):
            upstream = ws.connect_to_server()

            def relay(text):
                frame = json.loads(text)
                for source in (frame.get("message") or {}).get("sources") or []:
                    if source["title"] == HOSTILE:
                        source["url"] = HOSTILE
                        tampered.append(source)
                ws.send(json.dumps(frame))

            upstream.on_message(relay)

        page.route_web_socket(re.compile(r".*/ws/visitor/.*"), tamper)
        page.reload()
        open_widget(page)

        # Then the answer lists its sources under it: the page as a safe link, the others as text
        reply = page.locator("chat-widget .msg:not(.me)", has_text=ANSWER)
        expect(reply).to_be_visible()
        sources = reply.locator(".src")
        expect(sources).to_contain_text("Sources")
        link = sources.get_by_role("link", name=PAGE)
        expect(link).to_have_attribute("href", PAGE)
        expect(link).to_have_attribute("target", "_blank")
        expect(link).to_have_attribute("rel", "noopener noreferrer")
        expect(sources.get_by_text("Shipping terms.pdf")).to_be_visible()
        expect(sources.get_by_text(HOSTILE)).to_be_visible()
        expect(sources.get_by_role("link")).to_have_count(1)
        expect(page.locator('chat-widget a[href^="javascript:"]')).to_have_count(0)
        assert tampered, "the answer's frame never reached the widget through the route"
        # and a message without sources looks as before
        expect(page.locator("chat-widget .msg.me .src")).to_have_count(0)
        shot(page)
        context.close()
