"""The screenshots of the README and the guides (docs/img/widget.png, docs/img/console.png), taken
from the running product so they show what a newcomer will see: a visitor writes on the demo page,
an operator answers in the console, and both sides are captured once the answer has arrived."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.console_pages import WAIT, open_chat, sign_in, start_console_server
from tests.browser.widget_pages import open_widget, send_text

pytestmark = pytest.mark.browser

IMAGES = Path(__file__).resolve().parents[2] / "docs" / "img"
QUESTION = "Hello! Do you ship green tea to Berlin?"
ANSWER = "Hi! Yes, we ship across Germany within 3 days."


@pytest.fixture(scope="module")
def console_server(live_template, tmp_path_factory):
    with start_console_server(live_template, tmp_path_factory) as server:
        yield server


def test_the_guides_screenshots_show_a_visitor_and_an_operator_talking(browser, console_server):
    # Given an operator signed in to the console
    operator_context = browser.new_context(viewport={"width": 1280, "height": 760}, locale="en-US")
    visitor_context = browser.new_context(viewport={"width": 900, "height": 760}, locale="en-US")
    try:
        operator = operator_context.new_page()
        sign_in(operator, console_server)

        # When a visitor writes from the widget on the demo page
        visitor = visitor_context.new_page()
        visitor.goto(console_server.url("/demo/"))
        open_widget(visitor)
        chat_id = send_text(visitor, QUESTION)

        # And the operator opens the chat and answers
        expect(operator.locator(f'.chat-row[data-chat-id="{chat_id}"]')).to_contain_text(QUESTION, timeout=WAIT)
        open_chat(operator, chat_id)
        reply = operator.get_by_role("textbox", name="Reply")
        reply.fill(ANSWER)
        reply.press("Enter")

        # Then both sides show the answer, and the images are written where the guides link them
        expect(operator.locator("#messages")).to_contain_text(ANSWER, timeout=WAIT)
        expect(visitor.locator("chat-widget .msg:not(.me)", has_text=ANSWER)).to_be_visible(timeout=WAIT)
        # and the console's list shows the chat as the panel does: the answer last, and who owns it
        row = operator.locator(f'.chat-row[data-chat-id="{chat_id}"]')
        expect(row).to_contain_text(ANSWER, timeout=WAIT)
        expect(row.locator(".owner")).to_have_text("Olga", timeout=WAIT)
        expect(row.locator(".unread")).to_have_count(0, timeout=WAIT)  # read: the operator has it open
        IMAGES.mkdir(parents=True, exist_ok=True)
        visitor.screenshot(path=str(IMAGES / "widget.png"))
        operator.screenshot(path=str(IMAGES / "console.png"))
        for name in ("widget.png", "console.png"):
            assert (IMAGES / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    finally:
        visitor_context.close()
        operator_context.close()
