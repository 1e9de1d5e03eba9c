"""The console's canned-response picker in Chromium, driven by the keyboard alone: `/` at the start
of the reply opens a listbox filtered as one types, the arrow keys move the active option
(`aria-activedescendant`), Enter inserts the text rendered for the chat by the server, Escape closes."""

from __future__ import annotations

import uuid

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import api_client
from tests.browser.console_pages import WAIT, connected, sign_in, start_console_server
from tests.browser.test_console import Visitor

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def canned_server(live_template, tmp_path_factory):
    with start_console_server(live_template, tmp_path_factory) as server:
        api = api_client(server)
        for shortcut, title, text in [
            ("thanks", "Thank you", "Thank you, {{contact.name|there}}!"),
            ("thanks-email", "Thank you by e-mail", "We will write to {{contact.email|your address}}."),
            ("hello", "Greeting", "Hello!"),
        ]:
            response = api(
                "POST",
                "/api/v1/canned-responses",
                json={"shortcut": shortcut, "title": title, "text": text},
                headers={"X-Service-Idempotency-Key": uuid.uuid4().hex},
            )
            assert response.status_code == 201, response.text
        yield server


def composer(page, server, chat_id: int):
    page.goto(server.url(f"/console/chats/{chat_id}/"))
    connected(page)
    field = page.get_by_role("textbox", name="Reply")
    field.focus()
    return field


def test_the_picker_inserts_the_rendered_reply_with_the_keyboard_alone(page, canned_server, shot):
    # Given a visitor's chat open in the console, the reply field focused
    chat_id = Visitor(canned_server, name="Anna").say("Hello, I need help")["chat_id"]
    sign_in(page, canned_server)
    field = composer(page, canned_server, chat_id)
    listbox = page.get_by_role("listbox", name="Canned responses")

    # When the operator types `/th`
    page.keyboard.type("/th")

    # Then the picker lists the matching responses, the first one active
    options = listbox.get_by_role("option")
    expect(options).to_have_count(2, timeout=WAIT)
    expect(options.nth(0)).to_contain_text("/thanks")
    expect(listbox).to_be_visible()
    expect(field).to_have_attribute("aria-activedescendant", options.nth(0).get_attribute("id"))
    shot(page, "picker-open")

    # When the arrow keys move down (and wrap around and back)
    page.keyboard.press("ArrowDown")
    expect(options.nth(1)).to_have_attribute("aria-selected", "true")
    expect(field).to_have_attribute("aria-activedescendant", options.nth(1).get_attribute("id"))
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowUp")
    expect(options.nth(1)).to_have_attribute("aria-selected", "true")

    # And Enter picks the active one
    page.keyboard.press("Enter")

    # Then the text rendered for this chat replaces the command, the picker closed, nothing sent
    expect(field).to_have_value("We will write to your address.")
    expect(listbox).to_be_hidden()
    expect(page.locator("#messages")).not_to_contain_text("We will write to")

    # And Enter then sends it as the reply
    page.keyboard.press("Enter")
    expect(page.locator("#messages")).to_contain_text("We will write to your address.", timeout=WAIT)
    shot(page, "picked-and-sent")


def test_escape_closes_the_picker_and_keeps_the_text(page, canned_server):
    chat_id = Visitor(canned_server, name="Boris").say("Question")["chat_id"]
    sign_in(page, canned_server)
    field = composer(page, canned_server, chat_id)
    listbox = page.get_by_role("listbox", name="Canned responses")

    page.keyboard.type("/")
    expect(listbox.get_by_role("option")).to_have_count(3, timeout=WAIT)
    page.keyboard.type("hel")
    expect(listbox.get_by_role("option")).to_have_count(1)
    page.keyboard.press("Escape")
    expect(listbox).to_be_hidden()
    expect(field).to_have_value("/hel")

    # A slash that is not at the start opens nothing
    page.keyboard.press("Control+A")
    page.keyboard.type("see /thanks")
    page.wait_for_timeout(400)
    expect(listbox).to_be_hidden()


def test_the_chosen_reply_is_rendered_with_the_visitors_name(page, canned_server):
    chat_id = Visitor(canned_server, name="Clara").say("Hi")["chat_id"]
    sign_in(page, canned_server)
    field = composer(page, canned_server, chat_id)
    page.keyboard.type("/thanks")
    expect(page.get_by_role("listbox", name="Canned responses").get_by_role("option")).to_have_count(2, timeout=WAIT)
    page.keyboard.press("Enter")
    expect(field).to_have_value("Thank you, Clara!")
