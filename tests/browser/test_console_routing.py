"""The console under routing in Chromium: the owner sees the routing queue (order, places, waiting
times, SLA marks), assigns a queued chat to an operator, and the operator's console shows it at once
with "Chat assigned to you"; the SLA countdown is redrawn by the page every 30 s without a request,
and a breached chat is marked red. Clean under axe-core at 1280 and 390 px (the narrow one right to
left, in Arabic); the owner's queue is saved for the docs at docs/img/console-queue.png.

Nobody online is eligible for the visitors' chats (a department lists the widget's channel and has
no members), so they stay in the queue until the owner assigns one.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from tests.browser.console_pages import EMAIL, PASSWORD, WAIT, add_operator, connected, sign_in
from tests.browser.owner_pages import sign_in_owner, start_owner_server
from tests.live import manage

pytestmark = pytest.mark.browser

IMAGE = Path(__file__).resolve().parents[2] / "docs" / "img" / "console-queue.png"

ROUTING = (
    "from apps.core.models import Widget; from apps.agents.models import Department; "
    "from apps.routing.models import RoutingSettings; "
    "w = Widget.objects.get(button_guid={guid!r}); "
    "RoutingSettings.objects.update_or_create(widget=w, defaults={{'mode': 'round_robin'}}); "
    "Department.objects.create(widget=w, name='Night desk', channels=['smb'])"
)

# Clocks as the SLA timer leaves them: one running (due in 4 min), one breached, one running later;
# the chats waiting 12, 7 and 3 minutes (the order they came in).
CLOCKS = (
    "from datetime import timedelta; from django.utils import timezone; "
    "from apps.chats.models import Chat; from apps.routing.models import ChatRouting, SlaClock; "
    "now = timezone.now(); "
    "rows = [({soon}, now + timedelta(minutes=3, seconds=50), None), "
    "({late}, now - timedelta(minutes=3), now - timedelta(minutes=2)), "
    "({later}, now + timedelta(minutes=48), None)]; "
    "[ChatRouting.objects.filter(chat_id=chat_id).update(queued_at=now - timedelta(minutes=m), "
    "queue_since=now - timedelta(minutes=m)) for chat_id, m in [({soon}, 12), ({late}, 7), ({later}, 3)]]; "
    "[SlaClock.objects.create(widget_id=c.widget_id, chat=c, policy_id=None, kind='first_response', "
    "started_at=now - timedelta(minutes=6), due_at=due, breached_at=breached) "
    "for chat_id, due, breached in rows for c in [Chat.objects.get(pk=chat_id)]]"
)


@pytest.fixture(scope="module")
def server(live_template, tmp_path_factory):
    with start_owner_server(live_template, tmp_path_factory) as server:
        guid = live_template.seed["button_guid"]
        add_operator(server.var_dir, guid)
        manage(server.var_dir, "shell", "-c", ROUTING.format(guid=guid))
        yield server


def visitor_writes(server, name: str, body: str) -> int:
    import requests

    token = server.visitor_session(name=name)
    response = requests.post(
        server.url(f"/api/visitor/v1/{server.seed['button_guid']}/messages"),
        json={"type": "text", "body": body},
        headers={"Authorization": f"Visitor {token}"},
        timeout=10,
    )
    assert response.status_code == 201, response.text
    return response.json()["chat_id"]


def switch_language(page, name: str) -> None:
    """The language switcher in the header's account menu."""
    account = page.locator("details.account")
    if not account.evaluate("el => el.open"):
        account.locator("summary").click()
    page.locator("#language-switch").select_option(label=name)
    page.locator("#language-form button[type=submit]").click()


def axe_clean(page) -> None:
    results = Axe().run(page)
    assert results.violations_count == 0, results.generate_report()


def queue_ids(page) -> list[int]:
    return [
        int(i) for i in page.locator("#chat-list .chat-row").evaluate_all("rows => rows.map(r => r.dataset.chatId)")
    ]


def test_the_owner_assigns_from_the_queue_and_the_operator_is_told(browser, server, shot):
    # Given three visitors waiting in the queue, with SLA clocks: running, breached, running later
    soon = visitor_writes(server, "Amelia", "Is the order shipped?")
    late = visitor_writes(server, "Bruno", "Nobody answers me")
    later = visitor_writes(server, "Chen", "A question about invoices")
    manage(server.var_dir, "shell", "-c", CLOCKS.format(soon=soon, late=late, later=later))

    # And an operator looking at their console (its clock faked, so the countdown can be moved on)
    operator_context = browser.new_context(viewport={"width": 1280, "height": 800}, locale="en-US")
    owner_context = browser.new_context(viewport={"width": 1280, "height": 800}, locale="en-US")
    try:
        operator = operator_context.new_page()
        operator.clock.install()
        sign_in(operator, server, email=EMAIL, password=PASSWORD)
        expect(operator.locator("#count-mine")).to_have_text("0")

        # When the owner opens the Unassigned view: the queue, first served first
        owner = owner_context.new_page()
        sign_in_owner(owner, server)
        owner.locator("label[for=view-unassigned]").click()
        expect(owner.locator("#chat-list")).to_have_attribute("aria-label", "The queue, first served first")
        assert queue_ids(owner) == [soon, late, later]
        first = owner.locator(f'.chat-row[data-chat-id="{soon}"]')
        expect(first).to_contain_text("No. 1 in the queue")
        expect(first).to_contain_text("waiting 12\xa0minutes")
        expect(first.locator(".sla-mark")).to_have_text("SLA due in 4 min")
        expect(owner.locator(f'.chat-row[data-chat-id="{late}"] .sla-breached')).to_have_text("SLA breached")
        expect(owner.locator(f'.chat-row[data-chat-id="{later}"]')).to_contain_text("No. 3 in the queue")
        red = owner.locator(".sla-breached").first.evaluate("el => getComputedStyle(el).color")
        assert red != owner.locator(".sla-due").first.evaluate("el => getComputedStyle(el).color")
        axe_clean(owner)
        owner.screenshot(path=str(IMAGE))

        # And assigns the first queued chat to Olga, with the keyboard
        select = owner.locator(f"#assign-{soon}")
        select.focus()
        select.select_option(label="Olga")
        owner.keyboard.press("Tab")
        expect(owner.locator(f'.chat-row[data-chat-id="{soon}"] button')).to_be_focused()
        owner.keyboard.press("Enter")

        # Then the chat leaves the queue, the others move up
        expect(owner.locator(f'.chat-row[data-chat-id="{soon}"]')).to_have_count(0, timeout=WAIT)
        expect(owner.locator(f'.chat-row[data-chat-id="{late}"]')).to_contain_text("No. 1 in the queue")
        expect(owner.locator("#count-unassigned")).to_have_text("2")

        # And the operator's console says so and lists the chat as theirs, first
        notice = operator.locator("#notice")
        expect(notice).to_contain_text("Chat assigned to you", timeout=WAIT)
        expect(notice.locator("a")).to_have_attribute("href", f"/console/chats/{soon}/")
        expect(operator.locator("#count-mine")).to_have_text("1", timeout=WAIT)
        expect(operator.locator("#chat-list .chat-row").first).to_have_attribute("data-chat-id", str(soon))
        expect(operator.locator("#chat-list .chat-row").first.locator(".owner")).to_have_text("Olga")
        axe_clean(operator)
        shot(operator, "assigned")

        # And the dismiss button clears the notice
        notice.get_by_role("button", name="Dismiss").click()
        expect(notice).to_be_empty()

        # And the countdown moves on by itself, without a request: a mark due in 7 min 20 s reads
        # "7 min" after the next 30 s redraw (the server drew "4 min"; its 60 s list refresh has not
        # come yet on the freshly loaded page)
        operator.reload()
        connected(operator)
        mark = operator.locator(f'.chat-row[data-chat-id="{soon}"] .sla-due')
        expect(mark).to_have_text(re.compile(r"^SLA due in [34] min$"))
        strings = json.loads(operator.locator("#console-strings").text_content())
        assert strings["sla_minutes"] == "SLA due in %(minutes)s min"
        requests_seen: list[str] = []
        operator.on("request", lambda request: requests_seen.append(request.url))
        mark.evaluate("el => el.setAttribute('datetime', new Date(Date.now() + 440000).toISOString())")
        operator.clock.run_for(31_000)
        expect(mark).to_have_text("SLA due in 7 min")
        assert not [url for url in requests_seen if "/console/" in url], requests_seen
        expect(operator.locator(f'.chat-row[data-chat-id="{late}"] .sla-breached')).to_be_visible()
    finally:
        operator_context.close()
        owner_context.close()


def test_the_queue_is_clean_under_axe_on_a_phone_right_to_left(browser, server):
    visitor_writes(server, "Dana", "Hello from a phone")
    context = browser.new_context(viewport={"width": 390, "height": 800}, locale="en-US")
    try:
        page = context.new_page()
        sign_in_owner(page, server)
        switch_language(page, "العربية")
        page.goto(server.url("/console/?view=unassigned"))
        connected(page)
        expect(page.locator("html")).to_have_attribute("dir", "rtl")
        expect(page.locator("#chat-list form.assign").first).to_be_visible()
        axe_clean(page)
        # nothing wider than the screen
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        page.screenshot(path=str(Path(__file__).resolve().parents[2] / "var" / "screenshots" / "console-queue-ar.png"))
    finally:
        context.close()
