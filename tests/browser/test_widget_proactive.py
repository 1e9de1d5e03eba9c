"""Proactive messages in Chromium against the real web process: the widget shows the bubble by URL
pattern (also after a single-page site's pushState) and by time on page, keeps the `once` cap across
reloads, opens the chat from the bubble with the proactive text first, and the visitor's reply starts
a chat whose first message the operator's API shows as that text; `trigger(name)` ignores the rules."""

from __future__ import annotations

import secrets
import uuid

import pytest
from playwright.sync_api import expect

from tests.browser.widget_pages import send_text, wait_ready

pytestmark = pytest.mark.browser

BUBBLE = "chat-widget .pro"
RULES = ("url_patterns", "time_on_page_seconds", "visits_at_least", "attributes", "only_when_open")


@pytest.fixture
def proactive(api):
    """make(**members) -> the created message; every one made is deleted after the test (the web
    process is shared by the session's tests)."""
    made = []

    def make(**members) -> dict:
        rules = {key: members.pop(key) for key in RULES if key in members}
        body = {
            "name": f"m-{uuid.uuid4().hex[:8]}",
            "text_i18n": {"en": "Need help choosing a plan?"},
            "rules": rules,
            **members,
        }
        response = api("POST", "/api/v1/proactive-messages", json=body, headers=_key())
        assert response.status_code == 201, response.text
        made.append(response.json()["id"])
        return response.json()

    yield make
    for pk in made:
        api("DELETE", f"/api/v1/proactive-messages/{pk}", headers=_key())


def _key() -> dict:
    return {"X-Service-Idempotency-Key": secrets.token_hex(8)}


def host(host_pages, web_server, path: str, script: str = "") -> str:
    guid = web_server.seed["button_guid"]
    return host_pages.add(
        path,
        f"""<!doctype html><html lang="en"><head><title>Shop</title></head><body><main><h1>A shop</h1></main>
<script>{script}</script>
<script src="{web_server.base}/static/widget/loader.js?guid={guid}" async></script></body></html>""",
    )


def stats(api, message: dict) -> dict:
    return api("GET", f"/api/v1/proactive-messages/{message['id']}/stats").json()


def test_a_bubble_shows_by_url_pattern_and_after_a_pushstate(page, web_server, api, host_pages, proactive, shot):
    tag = uuid.uuid4().hex[:6]
    message = proactive(url_patterns=[f"{host_pages.base}/{tag}/pricing*"], frequency="always")
    # Given a page the pattern does not match: no bubble
    page.goto(host(host_pages, web_server, f"/{tag}/home.html"))
    wait_ready(page)
    expect(page.locator("chat-widget")).to_have_attribute("data-ready", "1")
    page.wait_for_timeout(1000)
    expect(page.locator(BUBBLE)).to_have_count(0)

    # When the single-page site moves to a matching URL, the bubble shows with the sender's name
    page.evaluate(f"history.pushState({{}}, '', '/{tag}/pricing/annual')")
    bubble = page.locator(BUBBLE)
    expect(bubble).to_be_visible()
    expect(bubble).to_contain_text("Need help choosing a plan?")
    expect(bubble).to_have_attribute("role", "status")
    # focus stays where the page had it
    assert page.evaluate("document.activeElement === document.body")
    shot(page, "desktop")

    # And on a phone-sized page loaded at a matching URL it shows too, and is counted
    page.set_viewport_size({"width": 390, "height": 760})
    page.goto(host(host_pages, web_server, f"/{tag}/pricing.html"))
    expect(page.locator(BUBBLE)).to_be_visible()
    shot(page, "phone")
    assert stats(api, message)["shown"] == 2

    # The keyboard reaches the dismiss button and Escape-free closing works by Enter on it
    page.get_by_role("button", name="Dismiss").focus()
    page.keyboard.press("Enter")
    expect(page.locator(BUBBLE)).to_have_count(0)


def test_a_bubble_waits_for_its_time_on_page(page, web_server, host_pages, proactive):
    tag = uuid.uuid4().hex[:6]
    proactive(url_patterns=[f"*/{tag}/*"], time_on_page_seconds=2, frequency="always")
    page.goto(host(host_pages, web_server, f"/{tag}/slow.html"))
    wait_ready(page)
    started = page.evaluate("performance.now()")
    expect(page.locator(BUBBLE)).to_be_visible()
    assert page.evaluate("performance.now()") - started >= 1000  # it did wait (generous bound)


def test_once_is_kept_across_reloads(page, web_server, host_pages, proactive):
    tag = uuid.uuid4().hex[:6]
    first = proactive(url_patterns=[f"*/{tag}/*"], frequency="once", priority=10, text_i18n={"en": "First offer"})
    proactive(url_patterns=[f"*/{tag}/*"], frequency="always", priority=1, text_i18n={"en": "Fallback offer"})
    url = host(host_pages, web_server, f"/{tag}/a.html")
    page.goto(url)
    bubble = page.locator(BUBBLE)
    expect(bubble).to_contain_text("First offer")
    assert bubble.get_attribute("data-proactive") == str(first["id"])
    # After a reload the capped one does not show again: the lower priority one does instead
    page.reload()
    expect(bubble).to_contain_text("Fallback offer")
    page.reload()
    expect(bubble).to_contain_text("Fallback offer")


def test_a_reply_starts_the_chat_with_the_proactive_text_first(page, web_server, api, host_pages, proactive):
    tag = uuid.uuid4().hex[:6]
    message = proactive(url_patterns=[f"*/{tag}/*"], text_i18n={"en": "Want 10% off today?", "de": "10% Rabatt?"})
    page.goto(host(host_pages, web_server, f"/{tag}/offer.html"))
    bubble = page.locator(BUBBLE)
    expect(bubble).to_be_visible()

    # When the visitor clicks the bubble, the chat opens with the proactive text as its first message
    bubble.get_by_role("button", name="Want 10% off today?").click()
    expect(page.get_by_role("dialog")).to_be_visible()
    expect(bubble).to_have_count(0)
    expect(page.locator("chat-widget .log .msg", has_text="Want 10% off today?")).to_be_visible()

    # And the reply starts the chat: the operator's API shows the proactive text, then the reply
    chat_id = send_text(page, "Yes please")
    listed = api("GET", f"/api/v1/chats/{chat_id}/messages").json()["data"]
    bodies = [m["body"] for m in sorted(listed, key=lambda m: m["id"])]
    assert bodies == ["Want 10% off today?", "Yes please"]
    # the visitor's widget shows it once, from the server now
    expect(page.locator("chat-widget .log .msg", has_text="Want 10% off today?")).to_have_count(1)
    assert stats(api, message) == {"shown": 1, "opened": 1, "replied": 1}


def test_trigger_ignores_the_rules_but_keeps_the_frequency(page, web_server, api, host_pages, proactive):
    message = proactive(url_patterns=["https://nowhere.example/*"], frequency="once_per_session")
    url = host(host_pages, web_server, f"/{uuid.uuid4().hex[:6]}/t.html")
    page.goto(url)
    wait_ready(page)
    bubble = page.locator(BUBBLE)
    page.evaluate(f"ChatWidget.trigger({message['name']!r})")
    expect(bubble).to_be_visible()
    page.get_by_role("button", name="Dismiss").click()
    expect(bubble).to_have_count(0)
    # once per session: a reload in the same tab and a second trigger show nothing
    page.reload()
    wait_ready(page)
    page.evaluate(f"ChatWidget.trigger({message['name']!r})")
    page.wait_for_timeout(1000)
    expect(bubble).to_have_count(0)
    assert stats(api, message)["shown"] == 1


def test_trigger_before_the_widget_is_ready_is_queued(page, web_server, host_pages, proactive):
    message = proactive(url_patterns=["https://nowhere.example/*"], frequency="always")
    script = f"window.ChatWidget = {{q: [['trigger', [{message['name']!r}]]]}};"
    page.goto(host(host_pages, web_server, f"/{uuid.uuid4().hex[:6]}/q.html", script=script))
    expect(page.locator(BUBBLE)).to_be_visible()


def test_attributes_set_by_the_page_make_a_bubble_show(page, web_server, host_pages, proactive):
    tag = uuid.uuid4().hex[:6]
    proactive(url_patterns=[f"*/{tag}/*"], attributes={"plan": "pro", "seats": 3}, frequency="always")
    page.goto(host(host_pages, web_server, f"/{tag}/account.html"))
    wait_ready(page)
    page.evaluate("ChatWidget.setAttributes({plan: 'free', seats: 3})")
    page.wait_for_timeout(1000)
    expect(page.locator(BUBBLE)).to_have_count(0)
    page.evaluate("ChatWidget.setAttributes({plan: 'pro'})")  # merged: seats stays 3
    expect(page.locator(BUBBLE)).to_be_visible()
