"""The conversation's states as the visitor sees them, in Chromium against the real web process:
the "conversation ended" line (live, after a reload, and on a load after a close the widget did not
watch; writing again continues the same chat), closed by business hours (the opening time in the
visitor's language and time zone, no presence shown), and the AI's hand-over with nobody online
(the offline form instead of the composer, with the reason)."""

from __future__ import annotations

import secrets
from datetime import datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import SERVER_ENV, api_client
from tests.browser.console_pages import add_operator, console_open
from tests.browser.widget_pages import LAUNCHER, open_widget, send_text, wait_ready
from tests.llm_fake import FakeLLM, ca_path, ok

pytestmark = pytest.mark.browser

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
ENDED = "This conversation has ended. Write again any time."
HANDOVER = "Our assistant passed your question to the team, and nobody is online right now."
PHONE = {"width": 390, "height": 844}
ALL_LANGUAGES = {"widget_supported_languages": ["ru", "en", "el", "de", "es", "ar", "zh"]}


def write(call, method: str, path: str, body: dict) -> dict:
    response = call(method, path, json=body, headers={"X-Service-Idempotency-Key": secrets.token_hex(8)})
    assert response.status_code in (200, 201, 202), response.text
    return response.json()


def both_widths(page, shot, name: str) -> None:
    """Screenshots at desktop width and at 390 px (the widget fills a phone's screen)."""
    shot(page, name)
    desktop = page.viewport_size
    page.set_viewport_size(PHONE)
    page.reload()
    open_widget(page)
    shot(page, f"{name}-390")
    page.set_viewport_size(desktop)


# --- the conversation ended ---------------------------------------------------------------------------


def test_a_closed_conversation_says_it_ended_and_writing_again_continues_it(page, web_server, api, shot):
    # Given a visitor talking with an operator
    page.goto(web_server.url("/demo/"))
    open_widget(page)
    chat_id = send_text(page, "Do you ship to Cyprus?")
    ended = page.locator("chat-widget .ended")
    expect(ended).to_have_count(0)

    # When the operator closes the chat while the widget is open
    write(api, "POST", f"/api/v1/chats/{chat_id}/close", {})

    # Then the conversation shows the line, under the last message, and the composer stays
    expect(ended).to_have_text(ENDED)
    expect(page.locator("chat-widget .log > :last-child")).to_have_text(ENDED)
    expect(page.get_by_role("textbox", name="Type a message…")).to_be_enabled()

    # And a reload shows it once, where it was
    page.reload()
    open_widget(page)
    expect(ended).to_have_count(1)
    both_widths(page, shot, "ended")

    # When the visitor writes again, the same chat goes on below the line
    assert send_text(page, "One more question") == chat_id
    expect(page.locator("chat-widget .log > :last-child")).to_contain_text("One more question")
    expect(ended).to_have_count(1)
    assert api("GET", f"/api/v1/chats/{chat_id}").json()["status"] == "active"
    shot(page, "continued")


def test_a_chat_closed_while_the_widget_was_away_shows_the_line_on_load(browser, web_server, api):
    # Given a visitor who wrote, then left the page
    context = browser.new_context(viewport={"width": 1280, "height": 800}, locale="en-US")
    page = context.new_page()
    page.goto(web_server.url("/demo/"))
    open_widget(page)
    chat_id = send_text(page, "I will come back later")
    page.close()

    # When the operator closes the chat meanwhile
    write(api, "POST", f"/api/v1/chats/{chat_id}/close", {})

    # Then the next page load shows the conversation ended
    page = context.new_page()
    page.goto(web_server.url("/demo/"))
    open_widget(page)
    expect(page.locator("chat-widget .ended")).to_have_text(ENDED)
    context.close()


# --- closed by business hours --------------------------------------------------------------------------


def test_closed_by_business_hours_says_when_it_opens_and_shows_no_presence(browser, start_server, live_var, shot):
    # Given an operator online, and business hours in Berlin open only two days from now, 09:00 to 10:00
    server = start_server(**SERVER_ENV)
    call = api_client(server)
    add_operator(live_var, server.seed["button_guid"])
    write(call, "PATCH", "/api/v1/widget/settings", {"operators_display_mode": "all", **ALL_LANGUAGES})
    berlin, visitor_zone = ZoneInfo("Europe/Berlin"), ZoneInfo("America/New_York")
    opening_day = datetime.now(berlin).date() + timedelta(days=2)
    weekly = {day: [] for day in DAYS}
    weekly[DAYS[opening_day.weekday()]] = [["09:00", "10:00"]]
    hours = {"enabled": True, "timezone": "Europe/Berlin", "weekly": weekly, "holidays": []}
    with console_open(browser, server):
        write(call, "PUT", "/api/v1/widget/business-hours", {**hours, "outside_hours": "ai_only"})

        # When a visitor in New York opens the widget
        context = browser.new_context(
            viewport={"width": 1280, "height": 800}, locale="en-US", timezone_id=str(visitor_zone)
        )
        page = context.new_page()
        page.goto(server.url("/demo/"))
        open_widget(page)

        # Then the header says it is closed and when it opens, in the visitor's time zone
        opens = datetime.combine(opening_day, time(9, 0), tzinfo=berlin).astimezone(visitor_zone)
        status = page.locator("chat-widget .head .closed")
        expect(status).to_contain_text("Closed now · opens")
        expect(status).to_contain_text(opens.strftime("%a"))
        expect(status).to_contain_text(opens.strftime("%I:%M"))
        # And no online dot, no operator with a presence dot, though the operator is online
        expect(page.locator("chat-widget .head .dot")).to_have_count(0)
        expect(page.locator("chat-widget .head .pres")).to_have_count(0)
        expect(page.locator("chat-widget .head .ops")).to_have_count(0)
        both_widths(page, shot, "closed")

        # And in Arabic, right to left
        page.evaluate("ChatWidget.setLanguage('ar')")
        expect(page.locator("chat-widget .cw")).to_have_attribute("dir", "rtl")
        expect(status).to_contain_text("مغلق الآن · نفتح")
        shot(page, "closed-ar")
        context.close()


def test_closed_with_no_opening_in_sight_says_closed(browser, start_server):
    server = start_server(**SERVER_ENV)
    call = api_client(server)
    write(call, "PATCH", "/api/v1/widget/settings", ALL_LANGUAGES)
    hours = {"enabled": True, "timezone": "Europe/Berlin", "weekly": {d: [] for d in DAYS}, "holidays": []}
    write(call, "PUT", "/api/v1/widget/business-hours", {**hours, "outside_hours": "offline_form"})
    context = browser.new_context(viewport={"width": 1280, "height": 800}, locale="de-DE")
    page = context.new_page()
    page.goto(server.url("/demo/"))
    wait_ready(page)
    page.evaluate("ChatWidget.setLanguage('de')")
    page.locator(LAUNCHER).click()
    expect(page.locator("chat-widget .head .closed")).to_have_text("Gerade geschlossen")
    context.close()


# --- the AI hands over with nobody online ----------------------------------------------------------------


def test_a_hand_over_with_nobody_online_offers_the_offline_form(browser, start_server, start_process, shot):
    # Given the AI operator on the loopback provider fake, which hands over at once, and no person online
    env = {**SERVER_ENV, "OUTBOUND_ALLOW_LOOPBACK": "1", "REQUESTS_CA_BUNDLE": ca_path()}
    with FakeLLM("openai") as fake:
        fake.script(ok("[KEY_TO_OPERATOR]"))
        server = start_server(**env)
        worker = start_process("ai", **env)  # the AI replies run on the `ai` queue
        call = api_client(server)
        write(
            call,
            "POST",
            "/api/v1/ai/credentials",
            {"provider": "openai", "api_key": fake.api_key, "base_url": fake.base_url},
        )
        assistant = write(
            call, "POST", "/api/v1/ai/assistants", {"name": "Day shift", "is_default": True, "enabled": True}
        )
        write(call, "POST", "/api/v1/ai/operators", {"assistant_id": (assistant.get("data") or assistant)["id"]})
        write(call, "PATCH", "/api/v1/ai/settings", {"enabled": True})
        worker.wait_for_output("ready.", timeout=90)

        # When a visitor writes (the AI answering, the widget offers the chat) and the AI hands over
        context = browser.new_context(viewport={"width": 1280, "height": 800}, locale="en-US")
        page = context.new_page()
        page.goto(server.url("/demo/"))
        open_widget(page)
        chat_id = send_text(page, "I need a person, please")
        handed = []
        for _ in range(600):
            messages = call("GET", f"/api/v1/chats/{chat_id}/messages").json()["data"]
            handed = [m for m in messages if m["author"]["kind"] == "ai"]  # the phrase, with the hand-over
            if handed:
                break
            page.wait_for_timeout(100)
        assert handed, worker.output()[-3000:]

        # Then (on the embedded default a worker's push cannot reach the web process's in-memory
        # channel layer: the widget learns it from the socket's state after a reload) the composer
        # gives way to the offline form, with the reason
        page.reload()
        open_widget(page)
        handover = page.locator("chat-widget .handover")
        expect(handover.locator(".why")).to_have_text(HANDOVER)
        expect(page.get_by_role("form", name="Leave us a message")).to_be_visible()
        expect(page.get_by_role("textbox", name="Type a message…")).to_have_count(0)
        expect(page.locator("chat-widget .msg.me", has_text="I need a person, please")).to_be_visible()
        # And the header no longer promises someone online
        expect(page.locator("chat-widget .head .dot.on")).to_have_count(0)
        expect(page.locator("chat-widget .head")).to_contain_text("Offline")
        both_widths(page, shot, "handover")

        # And the visitor leaves a message there, stored in the same chat
        form = page.get_by_role("form", name="Leave us a message")
        form.get_by_label("E-mail").fill("anna@example.com")
        form.get_by_label("Message").fill("Call me back tomorrow, please")
        form.get_by_role("button").click()
        expect(handover).to_contain_text("Thank you")
        bodies = [m.get("body") for m in call("GET", f"/api/v1/chats/{chat_id}/messages").json()["data"]]
        assert any("Call me back tomorrow, please" in (b or "") for b in bodies), bodies
        context.close()
