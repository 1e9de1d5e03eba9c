"""Business hours and the typing preview in Chromium against the real web process: each
`outside_hours` mode while the widget is closed (no launcher, the offline form, the AI answering with
the `outside_hours` phrase against the loopback AI provider fake), and a visitor's draft shown live in
the operator's console under the widget's notice."""

from __future__ import annotations

import secrets

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import SERVER_ENV, api_client
from tests.browser.console_pages import WAIT, open_chat, sign_in, start_console_server
from tests.browser.widget_pages import LAUNCHER, open_widget, send_text, wait_ready
from tests.llm_fake import FakeLLM, ca_path, ok

pytestmark = pytest.mark.browser

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
NOTICE = "Operators may see your text as you type, before you send it."


def write(call, method: str, path: str, body: dict) -> dict:
    response = call(method, path, json=body, headers={"X-Service-Idempotency-Key": secrets.token_hex(8)})
    assert response.status_code in (200, 201), response.text
    return response.json()


def closed_all_week(call, mode: str) -> None:
    """Business hours on with an empty week: closed now, whatever the server's clock says."""
    body = {"enabled": True, "timezone": "Europe/Berlin", "weekly": {d: [] for d in DAYS}, "holidays": []}
    write(call, "PUT", "/api/v1/widget/business-hours", {**body, "outside_hours": mode})


def fresh_page(browser):
    """A visitor of their own whose browser never serves the config from its HTTP cache."""
    context = browser.new_context(viewport={"width": 1280, "height": 800}, locale="en-US")
    page = context.new_page()
    context.new_cdp_session(page).send("Network.setCacheDisabled", {"cacheDisabled": True})
    return context, page


def test_hidden_shows_no_launcher_but_an_open_conversation_stays_readable(browser, start_server, shot):
    # Given a widget that keeps the chat while nobody is online, and a visitor who wrote while open
    server = start_server(**SERVER_ENV)
    call = api_client(server)
    write(call, "PATCH", "/api/v1/widget/settings", {"widget_offline_mode": "chat"})
    talker_context, talker = fresh_page(browser)
    talker.goto(server.url("/demo/"))
    open_widget(talker)
    send_text(talker, "A question before closing time")

    # When the widget closes with `hidden`
    closed_all_week(call, "hidden")

    # Then a new visitor sees no launcher at all
    newcomer_context, newcomer = fresh_page(browser)
    newcomer.goto(server.url("/demo/"))
    wait_ready(newcomer)
    expect(newcomer.locator(LAUNCHER)).to_have_count(0)
    shot(newcomer, "newcomer")
    newcomer_context.close()

    # And the visitor with a conversation still has the launcher and reads it
    talker.reload()
    open_widget(talker)
    expect(talker.locator("chat-widget .msg.me", has_text="A question before closing time")).to_be_visible()
    shot(talker, "conversation")
    talker_context.close()


def test_offline_form_is_offered_while_closed(browser, start_server, shot):
    # Given a widget that would keep the chat open while nobody is online
    server = start_server(**SERVER_ENV)
    call = api_client(server)
    write(call, "PATCH", "/api/v1/widget/settings", {"widget_offline_mode": "chat"})

    # When it is outside its business hours with `offline_form`
    closed_all_week(call, "offline_form")
    context, page = fresh_page(browser)
    page.goto(server.url("/demo/"))
    open_widget(page)

    # Then the visitor gets the offline form, not the chat
    expect(page.get_by_role("form", name="Leave us a message")).to_be_visible()
    expect(page.get_by_role("textbox", name="Type a message…")).to_have_count(0)
    expect(page.locator("chat-widget .head .closed")).to_have_text("Closed now")  # no opening in sight
    shot(page)
    context.close()


def test_ai_only_answers_and_posts_outside_hours_instead_of_handing_over(browser, start_server, start_process, shot):
    # Given the AI operator on the loopback provider fake, which asks for a person on the first question
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
            call, "POST", "/api/v1/ai/assistants", {"name": "Night shift", "is_default": True, "enabled": True}
        )
        write(call, "POST", "/api/v1/ai/operators", {"assistant_id": (assistant.get("data") or assistant)["id"]})
        write(call, "PATCH", "/api/v1/ai/settings", {"enabled": True})
        worker.wait_for_output("ready.", timeout=90)

        # When the widget is closed with `ai_only` and the visitor writes
        closed_all_week(call, "ai_only")
        context, page = fresh_page(browser)
        page.goto(server.url("/demo/"))
        open_widget(page)
        chat_id = send_text(page, "Where is my parcel?")

        # Then the AI asked the provider and, instead of a hand-over, posted `outside_hours` (on the
        # embedded default a worker's push cannot reach the web process's in-memory channel layer:
        # the widget shows the message from its replay after a reload)
        phrase = "We are closed right now. An operator will reply when we open."
        bodies = []
        for _ in range(600):
            bodies = [m.get("body") for m in call("GET", f"/api/v1/chats/{chat_id}/messages").json()["data"]]
            if phrase in bodies:
                break
            page.wait_for_timeout(100)
        assert phrase in bodies, (bodies, worker.output()[-3000:])
        assert any("/chat/completions" in r.path for r in fake.requests)
        page.reload()
        open_widget(page)
        expect(page.locator("chat-widget .msg:not(.me)", has_text=phrase)).to_be_visible()
        shot(page)
        context.close()


@pytest.fixture(scope="module")
def console_server(live_template, tmp_path_factory):
    with start_console_server(live_template, tmp_path_factory) as server:
        yield server


def test_the_visitors_draft_shows_live_in_the_console_under_the_widgets_notice(browser, page, console_server, shot):
    # Given the typing preview switched on and an operator in the console
    write(api_client(console_server), "PATCH", "/api/v1/widget/settings", {"typing_preview": True})
    operator_context = browser.new_context(viewport={"width": 1280, "height": 800}, locale="en-US")
    operator = operator_context.new_page()
    sign_in(operator, console_server)

    # When a visitor opens the widget, they are told operators may see their text before it is sent
    page.goto(console_server.url("/demo/"))
    open_widget(page)
    expect(page.locator("chat-widget [data-notice=typing-preview]")).to_have_text(NOTICE)
    chat_id = send_text(page, "Hello, one question")
    expect(operator.locator(f'.chat-row[data-chat-id="{chat_id}"]')).to_be_visible(timeout=WAIT)
    open_chat(operator, chat_id)

    # And then types without sending
    page.get_by_role("textbox", name="Type a message…").press_sequentially("Is delivery free?", delay=40)

    # Then the console shows the draft live
    expect(operator.locator("#draft")).to_have_text("Is delivery free?", timeout=WAIT)
    shot(page, "visitor")
    shot(operator, "console")

    # And once sent, the message replaces the draft
    page.get_by_role("textbox", name="Type a message…").press("Enter")
    expect(operator.locator("#messages")).to_contain_text("Is delivery free?", timeout=WAIT)
    expect(operator.locator("#draft")).to_be_hidden()
    operator_context.close()


def test_the_notice_is_in_the_visitors_language(browser, console_server):
    # (no console is open here: the chat stays offered while nobody is online)
    settings = {"typing_preview": True, "widget_offline_mode": "chat"}
    write(api_client(console_server), "PATCH", "/api/v1/widget/settings", settings)
    context = browser.new_context(viewport={"width": 1280, "height": 800}, locale="ru-RU")
    page = context.new_page()
    page.goto(console_server.url("/demo/"))
    wait_ready(page)
    page.evaluate("ChatWidget.setLanguage('ru')")
    page.locator(LAUNCHER).click()
    notice = "Операторы могут видеть ваш текст во время набора, ещё до отправки."
    expect(page.locator("chat-widget [data-notice=typing-preview]")).to_have_text(notice)
    context.close()
