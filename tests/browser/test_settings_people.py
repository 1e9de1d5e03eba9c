"""The owner's People and business-hours pages in Chromium: the owner invites an operator, the link
from the mail the server sent is accepted in another browser, the new operator is listed and signs in
to the console; the owner sets business hours; both pages are clean under axe-core at desktop and
phone widths and are driven with the keyboard."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from tests.browser.console_pages import sign_in
from tests.browser.owner_pages import WAIT, sign_in_owner, start_owner_server
from tests.live import ROOT

pytestmark = pytest.mark.browser

SCREENSHOT = ROOT / "docs" / "img" / "owners" / "people.png"
INVITEE = "new-operator@example.com"
INVITEE_PASSWORD = "Invited-Browser-Test-76"


@pytest.fixture(scope="module")
def owner_server(live_template, tmp_path_factory):
    with start_owner_server(live_template, tmp_path_factory) as server:
        yield server


def mailed_link(server, email: str, page) -> str:
    """The invitation link of the last mail to `email` the server wrote (development mail goes to the
    process's output, as `make run` shows it)."""
    pattern = re.compile(rf"To: {re.escape(email)}.*?(http://[^\s]+/invite/[A-Za-z0-9_-]+)", re.S)
    for _ in range(WAIT // 100):
        found = pattern.findall(server.output())
        if found:
            return found[-1]
        page.wait_for_timeout(100)
    raise AssertionError(f"no invitation mail to {email} in the server's output")


def axe_clean(page) -> None:
    results = Axe().run(page)
    assert results.violations_count == 0, results.generate_report()


def test_the_owner_invites_an_operator_who_accepts_and_signs_in(browser, owner_server):
    owner = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    invitee = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    try:
        page = owner.new_page()
        sign_in_owner(page, owner_server)
        page.goto(owner_server.url("/console/settings/"))
        page.get_by_role("link", name="People", exact=True).first.click()
        expect(page.get_by_role("heading", name="People", level=1)).to_be_visible(timeout=WAIT)
        # the keyboard: the address field, typed, and Enter sends the form
        page.get_by_label("E-mail address").focus()
        page.keyboard.type(INVITEE)
        page.keyboard.press("Enter")
        expect(page.locator(".flash")).to_contain_text(f"Invitation sent to {INVITEE}", timeout=WAIT)
        expect(page.locator("#invitations")).to_contain_text(INVITEE)

        link = mailed_link(owner_server, INVITEE, page)
        other = invitee.new_page()
        other.goto(link)
        expect(other.get_by_role("heading", name="Operator invitation")).to_be_visible(timeout=WAIT)
        axe_clean(other)
        other.get_by_label("Name", exact=True).fill("Nadia")
        other.get_by_label("Password", exact=True).fill(INVITEE_PASSWORD)
        other.get_by_label("Password again").fill(INVITEE_PASSWORD)
        other.get_by_role("button", name="Accept the invitation").click()
        expect(other.get_by_role("heading", name="Invitation accepted")).to_be_visible(timeout=WAIT)

        page.reload()
        row = page.locator("tr", has_text=INVITEE)
        expect(row).to_contain_text("Nadia")
        expect(row).to_contain_text("Active")
        expect(page.locator("#invitations")).to_have_count(0)

        other.get_by_role("link", name="Sign in to the console").click()
        sign_in(other, owner_server, email=INVITEE, password=INVITEE_PASSWORD)
        page.reload()
        expect(page.locator("tr", has_text=INVITEE)).to_contain_text("online now", timeout=WAIT)
    finally:
        invitee.close()
        owner.close()


def test_the_owner_sets_business_hours(browser, owner_server):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    try:
        page = context.new_page()
        sign_in_owner(page, owner_server)
        page.goto(owner_server.url("/console/settings/widget/hours/"))
        expect(page.get_by_role("heading", name="Business hours", level=1)).to_be_visible(timeout=WAIT)
        page.get_by_label("Use business hours (off: always open)").check()
        page.get_by_label("Time zone").select_option("Europe/Berlin")
        monday = page.locator("#day-mon")
        monday.get_by_label("Closed").uncheck()
        monday.get_by_label("From").fill("09:00")
        monday.get_by_label("To").fill("18:00")
        page.get_by_role("button", name="Save the business hours").click()
        expect(page.locator(".flash")).to_contain_text("Saved.", timeout=WAIT)
        expect(page.locator("#mon-start-0")).to_have_value("09:00")
        expect(page.locator("#mon-start-1")).to_have_value("")  # room for a second interval
        # a refusal in the API's words, beside its input, and nothing stored
        page.locator("#tue-start-0").fill("18:00")
        expect(page.locator("#tue-closed")).not_to_be_checked()  # typing a time opens the day
        page.locator("#tue-end-0").fill("09:00")
        page.get_by_role("button", name="Save the business hours").click()
        expect(page.locator("#day-tue .error")).to_have_text("The start must be before the end.")
        page.goto(owner_server.url("/console/settings/widget/hours/"))
        expect(page.locator("#tue-start-0")).to_have_value("")
    finally:
        context.close()


@pytest.mark.parametrize("width", [1280, 390])
def test_the_people_and_hours_pages_are_clean_under_axe(browser, owner_server, width):
    context = browser.new_context(viewport={"width": width, "height": 900}, locale="en-US")
    try:
        page = context.new_page()
        sign_in_owner(page, owner_server)
        page.goto(owner_server.url("/console/settings/people/"))
        expect(page.get_by_role("heading", name="People", level=1)).to_be_visible(timeout=WAIT)
        axe_clean(page)
        if width == 1280:
            SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOT), full_page=True)
        else:
            page.screenshot(path=str(Path(ROOT / "var" / "screenshots" / "people-phone.png")), full_page=True)
        page.get_by_label("Name", exact=True).fill("Support")
        page.get_by_role("button", name="Create the department").click()
        expect(page.get_by_role("heading", name="Support", level=1)).to_be_visible(timeout=WAIT)
        axe_clean(page)
        page.goto(owner_server.url("/console/settings/widget/hours/"))
        expect(page.get_by_role("heading", name="Business hours", level=1)).to_be_visible(timeout=WAIT)
        axe_clean(page)
        if width == 390:
            page.screenshot(path=str(ROOT / "var" / "screenshots" / "hours-phone.png"), full_page=True)
    finally:
        context.close()
