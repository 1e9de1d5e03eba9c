"""The whole loop in Chromium: a visitor on the /demo/ page (the real widget, from its loader) and an
operator in the console chat both ways in real time, including a reconnect of the visitor's socket
during which the operator replies, and a reconnect of the console during which the visitor writes.
Each side has its own browser context (its own cookies and storage), as two people have."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.console_pages import WAIT, connected, open_chat, sign_in, start_console_server
from tests.browser.widget_pages import open_widget, send_text

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def console_server(live_template, tmp_path_factory):
    with start_console_server(live_template, tmp_path_factory) as server:
        yield server


def test_a_visitor_on_the_demo_page_and_an_operator_in_the_console_chat_both_ways(
    browser,
    page,
    console_server,
    shot,  # noqa: F811
):
    # Given the visitor's socket runs through a route the test can cut, and an operator signed in
    sockets, state = [], {"down": False}

    def route(ws):
        sockets.append(ws.url)
        if state["down"]:
            ws.close(code=1011, reason="test: network down")
            return
        server = ws.connect_to_server()
        state["page_side"], state["server_side"] = ws, server

    visitor = page
    visitor.route_web_socket(re.compile(r".*/ws/visitor/.*"), route)
    operator_context = browser.new_context(viewport={"width": 1280, "height": 800}, locale="en-US")
    operator = operator_context.new_page()
    sign_in(operator, console_server)

    # When the visitor opens the widget on the demo page and writes
    visitor.goto(console_server.url("/demo/"))
    open_widget(visitor)
    chat_id = send_text(visitor, "Hello from the demo page")

    # Then the chat arrives in the console live, and the operator opens it
    expect(operator.locator(f'.chat-row[data-chat-id="{chat_id}"]')).to_contain_text(
        "Hello from the demo page", timeout=WAIT
    )
    open_chat(operator, chat_id)
    expect(operator.locator("#messages")).to_contain_text("Hello from the demo page")

    # When the visitor types, the console says so
    visitor.get_by_role("textbox", name="Type a message…").press_sequentially("I have a question")
    expect(operator.locator("#typing")).to_have_text("The visitor is typing…", timeout=WAIT)
    visitor.get_by_role("textbox", name="Type a message…").press("Enter")
    expect(operator.locator("#messages")).to_contain_text("I have a question", timeout=WAIT)

    # When the operator replies in the console
    reply = operator.get_by_role("combobox", name="Reply")
    reply.fill("Hello! Ask away.")
    reply.press("Enter")

    # Then the widget shows it live
    expect(visitor.locator("chat-widget .msg:not(.me)", has_text="Hello! Ask away.")).to_be_visible(timeout=WAIT)
    shot(visitor, "visitor-live")
    shot(operator, "operator-live")

    # When the visitor's connection drops and the operator replies meanwhile
    state["down"] = True
    state["server_side"].close()
    state["page_side"].close(code=1011, reason="test: dropped")
    expect(visitor.get_by_role("status").filter(has_text="Reconnecting")).to_be_visible(timeout=WAIT)
    reply.fill("Written while your connection was down")
    reply.press("Enter")
    expect(operator.locator("#messages")).to_contain_text("Written while your connection was down", timeout=WAIT)
    visitor.wait_for_timeout(800)
    expect(visitor.locator("chat-widget .msg", has_text="Written while your connection")).to_have_count(0)
    shot(visitor, "visitor-down")

    # Then once the network is back the widget shows that reply, once
    state["down"] = False
    expect(visitor.locator("chat-widget .msg", has_text="Written while your connection")).to_have_count(
        1, timeout=20_000
    )
    expect(visitor.locator("chat-widget .msg", has_text="Hello! Ask away.")).to_have_count(1)

    # When the console's socket drops (2 s) and the visitor writes meanwhile from the widget
    operator.evaluate("window.consoleSocket.drop(2000)")
    expect(operator.locator("#connection")).to_have_attribute("data-state", "connecting")
    send_text(visitor, "Did you get this while you were away?")

    # Then the console replays it after its reconnect, once
    connected(operator)
    expect(operator.locator("#messages")).to_contain_text("Did you get this while you were away?", timeout=WAIT)
    assert operator.locator("#messages").inner_text().count("Did you get this while you were away?") == 1

    # And the conversation reads the same on both sides
    expected = [
        "Hello from the demo page",
        "I have a question",
        "Hello! Ask away.",
        "Written while your connection was down",
        "Did you get this while you were away?",
    ]
    console_text = operator.locator("#messages").inner_text()
    widget_text = visitor.locator("chat-widget .log").inner_text()
    positions = [console_text.index(text) for text in expected]
    assert positions == sorted(positions)
    positions = [widget_text.index(text) for text in expected]
    assert positions == sorted(positions)
    shot(visitor, "visitor-end")
    shot(operator, "operator-end")
    operator_context.close()
