"""The owner's routing pages in Chromium: from the People page's tabs the owner switches routing to
round robin with re-routing, gives one operator a capacity of their own, and creates an SLA policy,
all with the keyboard for the routing form; the pages are clean under axe-core at desktop and phone
widths, and the screenshot of the routing page for the owner's guide is taken on the way."""

from __future__ import annotations

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from tests.browser.owner_pages import WAIT, sign_in_owner, start_owner_server
from tests.live import ROOT

pytestmark = pytest.mark.browser

SCREENSHOT = ROOT / "docs" / "img" / "owners" / "routing.png"
PHONE = ROOT / "var" / "screenshots"


@pytest.fixture(scope="module")
def owner_server(live_template, tmp_path_factory):
    with start_owner_server(live_template, tmp_path_factory) as server:
        yield server


def axe_clean(page) -> None:
    results = Axe().run(page)
    assert results.violations_count == 0, results.generate_report()


def test_the_owner_sets_round_robin_a_capacity_and_an_sla_policy(browser, owner_server):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    try:
        page = context.new_page()
        sign_in_owner(page, owner_server)
        page.goto(owner_server.url("/console/settings/people/"))
        page.get_by_role("navigation", name="People pages").get_by_role("link", name="Routing").click()
        expect(page.get_by_role("heading", name="Routing", level=1)).to_be_visible(timeout=WAIT)
        expect(page.get_by_label("Manual")).to_be_checked()

        # the keyboard: arrows move between the modes, Tab to the numbers, Enter saves
        page.get_by_label("Manual").focus()
        page.keyboard.press("ArrowDown")
        expect(page.get_by_label("Round robin")).to_be_checked()
        page.keyboard.press("Tab")
        expect(page.get_by_label("Capacity of each operator")).to_be_focused()
        page.keyboard.press("Control+a")
        page.keyboard.type("4")
        page.keyboard.press("Tab")
        page.keyboard.type("5")
        page.keyboard.press("Enter")
        expect(page.get_by_label("Move an unanswered chat after (seconds)").locator("xpath=..")).to_contain_text(
            "Ensure this value is greater than or equal to 15.", timeout=WAIT
        )
        expect(page.locator(".flash")).to_have_count(0)
        page.get_by_label("Move an unanswered chat after (seconds)").fill("60")
        page.get_by_role("button", name="Save the routing").click()
        expect(page.locator(".flash")).to_contain_text("Saved.", timeout=WAIT)
        expect(page.get_by_label("Round robin")).to_be_checked()
        expect(page.get_by_label("Capacity of each operator")).to_have_value("4")
        expect(page.get_by_label("Move an unanswered chat after (seconds)")).to_have_value("60")
        axe_clean(page)
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOT), full_page=True)

        # one operator's own capacity on the People page; empty shows the default just saved
        page.get_by_role("link", name="Operators and departments").click()
        row = page.locator("tbody tr").first
        expect(row).to_contain_text("default: 4", timeout=WAIT)
        field = row.get_by_role("spinbutton")
        field.fill("2")
        field.press("Enter")
        expect(page.locator(".flash")).to_contain_text("takes at most 2 chats at once.", timeout=WAIT)
        expect(page.locator("tbody tr").first.get_by_role("spinbutton")).to_have_value("2")
        PHONE.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(PHONE / "people-capacity.png"), full_page=True)

        # an SLA policy: answer within 5 minutes, resolve within 1 day, counted in business hours
        page.get_by_role("link", name="SLA policies").click()
        page.get_by_role("link", name="New SLA policy").click()
        page.get_by_label("Name", exact=True).fill("Standard")
        page.get_by_label("First response within", exact=True).fill("5")
        page.get_by_label("Resolved within", exact=True).fill("1")
        page.get_by_label("Resolved within: unit").select_option("days")
        page.get_by_label("Count only business hours").check()
        axe_clean(page)
        page.get_by_role("button", name="Create the policy").click()
        expect(page.locator(".flash")).to_contain_text("SLA policy Standard created.", timeout=WAIT)
        policy = page.locator("#sla-policies tbody tr", has_text="Standard")
        expect(policy).to_contain_text("5 minutes")
        expect(policy).to_contain_text("1 day")
        expect(policy).to_contain_text("Default")
        axe_clean(page)
        page.screenshot(path=str(PHONE / "sla-list.png"), full_page=True)
    finally:
        context.close()


def test_the_routing_pages_are_clean_under_axe_on_a_phone(browser, owner_server):
    context = browser.new_context(viewport={"width": 390, "height": 844}, locale="en-US")
    try:
        page = context.new_page()
        sign_in_owner(page, owner_server)
        PHONE.mkdir(parents=True, exist_ok=True)
        for path, heading, shot in (
            ("/console/settings/people/routing/", "Routing", "routing-phone.png"),
            ("/console/settings/people/sla/new/", "New SLA policy", "sla-phone.png"),
            ("/console/settings/people/sla/", "SLA policies", None),
            ("/console/settings/people/", "People", None),
        ):
            page.goto(owner_server.url(path))
            expect(page.get_by_role("heading", name=heading, level=1)).to_be_visible(timeout=WAIT)
            axe_clean(page)
            if shot:
                page.screenshot(path=str(PHONE / shot), full_page=True)
    finally:
        context.close()


def test_the_routing_page_reads_right_to_left_in_arabic(browser, owner_server):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    try:
        page = context.new_page()
        sign_in_owner(page, owner_server)
        context.add_cookies([{"name": "django_language", "value": "ar", "url": owner_server.url("/console/")}])
        page.goto(owner_server.url("/console/settings/people/routing/"))
        expect(page.locator("html")).to_have_attribute("dir", "rtl", timeout=WAIT)
        axe_clean(page)
        page.screenshot(path=str(PHONE / "routing-rtl.png"), full_page=True)
    finally:
        context.close()
