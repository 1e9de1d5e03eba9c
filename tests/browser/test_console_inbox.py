"""The operator's inbox in Chromium: the views and their counts following visitors live, a working
day with the keyboard alone, the phone layout, and axe-core finding nothing on any console page.

Visitors speak the visitor API from outside the operator's page (another browser context would do
the same through the widget). Screenshots: var/screenshots/.
"""

from __future__ import annotations

import re
import uuid

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from tests.browser.conftest import api_client
from tests.browser.console_pages import EMAIL, PASSWORD, WAIT, connected, sign_in, start_console_server
from tests.browser.test_console import Visitor

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def inbox_server(live_template, tmp_path_factory):
    with start_console_server(live_template, tmp_path_factory) as server:
        response = api_client(server)(
            "POST",
            "/api/v1/canned-responses",
            json={
                "shortcut": "track",
                "title": "Tracking",
                "text": "Your parcel is on its way, {{contact.name|there}}.",
            },
            headers={"X-Service-Idempotency-Key": uuid.uuid4().hex},
        )
        assert response.status_code == 201, response.text
        yield server


def count(page, view: str):
    return page.locator(f"#count-{view}")


def row(page, chat_id: int):
    return page.locator(f'.chat-row[data-chat-id="{chat_id}"]')


def test_each_view_and_its_count_follow_visitors_live(page, inbox_server, shot):
    # Given an operator looking at the list
    sign_in(page, inbox_server)
    before = {view: int(count(page, view).inner_text()) for view in ("mine", "unassigned", "all")}

    # When a visitor writes for the first time
    visitor = Visitor(inbox_server, name=f"Nora {uuid.uuid4().hex[:4]}")
    chat_id = visitor.say("Where is my parcel?")["chat_id"]

    # Then All and Unassigned count it, without a reload, and the row says who and how long
    expect(count(page, "all")).to_have_text(str(before["all"] + 1), timeout=WAIT)
    expect(count(page, "unassigned")).to_have_text(str(before["unassigned"] + 1), timeout=WAIT)
    expect(count(page, "mine")).to_have_text(str(before["mine"]))
    expect(row(page, chat_id)).to_contain_text("Nora")
    expect(row(page, chat_id).locator(".unread")).to_contain_text("1")
    expect(row(page, chat_id)).to_contain_text("waiting")

    # When the Unassigned view is chosen, the chat is there; in Mine, it is not
    page.get_by_text("Unassigned", exact=False).first.click()
    expect(row(page, chat_id)).to_be_visible(timeout=WAIT)
    page.locator('label[for="view-mine"]').click()
    expect(row(page, chat_id)).to_have_count(0, timeout=WAIT)
    shot(page, "mine")

    # When the operator answers it (the reply claims it), the counts move from the queue to Mine
    page.locator('label[for="view-all"]').click()
    row(page, chat_id).locator("a").click()
    connected(page)
    page.get_by_role("textbox", name="Reply").fill("It left the warehouse today.")
    page.get_by_role("button", name="Send", exact=True).click()
    expect(page.locator("#chat-owner")).to_have_text("Olga", timeout=WAIT)
    expect(count(page, "mine")).to_have_text(str(before["mine"] + 1), timeout=WAIT)
    expect(count(page, "unassigned")).to_have_text(str(before["unassigned"]), timeout=WAIT)
    # And, opened, the visitor's message was seen: the row's unread count is gone
    expect(row(page, chat_id).locator(".unread")).to_have_count(0, timeout=WAIT)

    # When another visitor writes while the operator is in this chat, the counts follow there too
    Visitor(inbox_server, name="Omar").say("Hello?")
    expect(count(page, "all")).to_have_text(str(before["all"] + 2), timeout=WAIT)
    shot(page, "counted")


def test_a_day_with_the_keyboard_alone(page, inbox_server, shot):
    # Given two visitors waiting and an operator on the list
    first = Visitor(inbox_server, name=f"Kim {uuid.uuid4().hex[:4]}")
    first_id = first.say("Can I change my order?")["chat_id"]
    lee = f"Lee {uuid.uuid4().hex[:4]}"
    second = Visitor(inbox_server, name=lee)
    second_id = second.say("Do you ship abroad?")["chat_id"]
    sign_in(page, inbox_server)
    # (the Unassigned view: the operator's own chats of earlier tests would come first in All)
    page.locator('label[for="view-unassigned"]').click()
    expect(page.locator("#chat-list .chat-row").first).to_have_attribute("data-chat-id", str(second_id), timeout=WAIT)
    page.locator("body").focus()

    def at(chat_id: int) -> re.Pattern:
        return re.compile(re.escape(inbox_server.url(f"/console/chats/{chat_id}/")) + r"(\?.*)?$")

    # `?` lists the shortcuts; Escape closes the list
    page.keyboard.press("?")
    expect(page.get_by_role("dialog", name="Keyboard shortcuts")).to_be_visible()
    shot(page, "shortcuts")
    page.keyboard.press("Escape")
    expect(page.get_by_role("dialog", name="Keyboard shortcuts")).to_be_hidden()

    # `j` opens the newest chat (the second visitor's), `j` again the next one
    page.keyboard.press("j")
    expect(page).to_have_url(at(second_id), timeout=WAIT)
    connected(page)
    page.keyboard.press("j")
    expect(page).to_have_url(at(first_id), timeout=WAIT)
    connected(page)
    # `k` goes back up
    page.keyboard.press("k")
    expect(page).to_have_url(at(second_id), timeout=WAIT)
    connected(page)

    # `r` replies: type and Enter
    page.keyboard.press("r")
    reply = page.get_by_role("textbox", name="Reply")
    expect(reply).to_be_focused()
    page.keyboard.type("Yes, to 40 countries.")
    page.keyboard.press("Enter")
    expect(page.locator("#messages .msg.by-agent").last).to_contain_text("Yes, to 40 countries.", timeout=WAIT)

    # Escape leaves the field; `/` picks a canned response, Enter inserts it, Enter sends it
    expect(reply).to_be_focused()
    page.keyboard.press("Escape")
    page.keyboard.press("/")
    expect(page.get_by_role("listbox", name="Canned responses").get_by_role("option")).to_have_count(1, timeout=WAIT)
    page.keyboard.press("Enter")
    expect(reply).to_have_value(f"Your parcel is on its way, {lee}.", timeout=WAIT)
    page.keyboard.press("Enter")
    expect(page.locator("#messages .msg.by-agent").last).to_contain_text("Your parcel is on its way", timeout=WAIT)

    # `n` writes a private note: Enter adds it
    page.keyboard.press("Escape")
    page.keyboard.press("n")
    expect(page.locator("#note_body")).to_be_focused()
    page.keyboard.type("Ships from the Berlin warehouse")
    page.keyboard.press("Enter")
    expect(page.locator("#messages .msg.note").last).to_contain_text("Ships from the Berlin warehouse", timeout=WAIT)

    # `e` closes the chat, and its head says what closed means
    page.keyboard.press("Escape")
    page.keyboard.press("e")
    expect(page.locator("#chat-status")).to_have_text("closed", timeout=WAIT)
    expect(page.locator("#chat-state")).to_contain_text("Reopens if the visitor writes.")
    shot(page, "closed")

    # And Tab alone reaches every action of the chat, the menu's spam too, which asks first
    page.locator("summary", has_text="More").focus()
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Mark as spam…")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#confirm-spam")).to_be_focused(timeout=WAIT)
    shot(page, "confirm")
    page.keyboard.press("Enter")
    expect(page.locator("#chat-status")).to_have_text("spam", timeout=WAIT)
    assert second.bodies()[-2:] == ["Yes, to 40 countries.", f"Your parcel is on its way, {lee}."]


def test_the_phone_layout_is_two_screens(browser, inbox_server, shot):
    # Given an operator on a 390-pixel phone
    context = browser.new_context(viewport=PHONE, locale="en-US", has_touch=True)
    page = context.new_page()
    try:
        chat_id = Visitor(inbox_server, name="Mia").say("Hi from my phone")["chat_id"]
        sign_in(page, inbox_server)

        # The list is the first screen: no conversation beside it
        expect(row(page, chat_id)).to_be_visible(timeout=WAIT)
        assert page.locator("#main").bounding_box()["width"] <= 1  # out of sight, still the page's landmark
        shot(page, "list")

        # Opening a chat shows the conversation alone, its header and composer on screen
        row(page, chat_id).locator("a").click()
        connected(page)
        expect(page.locator(".pane-list")).to_be_hidden()
        expect(page.locator("#chat-title")).to_be_in_viewport()
        expect(page.get_by_role("button", name="Send", exact=True)).to_be_in_viewport()
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        shot(page, "chat")

        # The details open over it and close back to it
        page.get_by_role("link", name="Details").click()
        expect(page.locator("#context")).to_be_in_viewport()
        shot(page, "details")
        page.get_by_role("link", name="Back to the conversation").click()
        expect(page.locator("#context")).to_be_hidden()

        # And "All chats" is the way back to the list
        page.get_by_role("link", name="All chats").click()
        expect(row(page, chat_id)).to_be_visible(timeout=WAIT)
    finally:
        context.close()


def _violations(page) -> list[str]:
    results = Axe().run(page)
    return [
        f"{v['id']} ({v['impact']}): {v['help']} — {[n['target'] for n in v['nodes']][:5]}"
        for v in results.response["violations"]
    ]


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
def test_axe_finds_nothing_on_any_console_page(browser, inbox_server, viewport):
    size = PHONE if viewport == "phone" else {"width": 1280, "height": 800}
    context = browser.new_context(viewport=size, locale="en-US")
    page = context.new_page()
    try:
        chat_id = Visitor(inbox_server, name="Axel").say("Checking accessibility")["chat_id"]
        found = {}
        page.goto(inbox_server.url("/console/login/"))
        found["sign-in"] = _violations(page)
        page.get_by_label("E-mail").fill("nobody@example.com")
        page.get_by_label("Password").fill("wrong-password")
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("alert")).to_be_visible()
        found["sign-in refused"] = _violations(page)
        sign_in(page, inbox_server, email=EMAIL, password=PASSWORD)
        found["list"] = _violations(page)
        page.goto(inbox_server.url(f"/console/chats/{chat_id}/"))
        connected(page)
        found["chat"] = _violations(page)
        page.goto(inbox_server.url(f"/console/chats/{chat_id}/?confirm=spam"))
        found["confirm"] = _violations(page)
        page.goto(inbox_server.url(f"/console/chats/{chat_id}/"))
        connected(page)
        if viewport == "desktop":
            page.locator("body").focus()
            page.keyboard.press("?")
            found["shortcuts"] = _violations(page)
            page.keyboard.press("Escape")
            page.get_by_role("tab", name="Private note").click()
            found["note"] = _violations(page)
        else:
            page.get_by_role("link", name="Details").click()
            found["details"] = _violations(page)
        assert {name: problems for name, problems in found.items() if problems} == {}
    finally:
        context.close()
