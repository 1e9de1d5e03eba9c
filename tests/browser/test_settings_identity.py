"""The owner's identity verification page in Chromium: from the Developers area the owner makes an
identity secret (shown once, copied with the button), and a hash made with it proves an id to the
visitor API; switches the mode to `required` with the keyboard; the page is clean under axe-core at
desktop and phone widths (the guide's screenshot)."""

from __future__ import annotations

import hashlib
import hmac

import pytest
import requests
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from tests.browser.owner_pages import WAIT, sign_in_owner, start_owner_server
from tests.live import ROOT

pytestmark = pytest.mark.browser

DOCS_IMG = ROOT / "docs" / "img" / "owners"
PAGE = "/console/settings/developers/identity/"


@pytest.fixture(scope="module")
def owner_server(live_template, tmp_path_factory):
    with start_owner_server(live_template, tmp_path_factory) as server:
        yield server


def axe_clean(page) -> None:
    results = Axe().run(page)
    assert results.violations_count == 0, results.generate_report()


def identify(server, external_id: str, hash_: str) -> requests.Response:
    token = server.visitor_session()
    return requests.post(
        server.url(f"/api/visitor/v1/{server.seed['button_guid']}/identity"),
        json={"id": external_id, "hash": hash_},
        headers={"Authorization": f"Visitor {token}"},
        timeout=15,
    )


def test_the_owner_makes_a_secret_and_requires_verification(browser, owner_server, shot):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=owner_server.base)
    try:
        page = context.new_page()
        sign_in_owner(page, owner_server)
        page.goto(owner_server.url("/console/settings/developers/"))
        page.get_by_role("link", name="Set up identity verification").click()
        expect(page.get_by_role("heading", name="Identity verification", level=1)).to_be_visible(timeout=WAIT)
        expect(page.locator("#identity-secret-state")).to_contain_text("No secret yet")
        axe_clean(page)

        # The owner makes a secret: shown once, copied with the button
        page.get_by_role("button", name="Make a secret").click()
        secret = page.locator("#new-identity-secret").input_value()
        assert secret.startswith("idsec_")
        page.get_by_role("button", name="Copy").click()
        assert page.evaluate("navigator.clipboard.readText()") == secret
        expect(page.locator("#identity-secret-state")).to_contain_text("Current secret made")
        DOCS_IMG.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(DOCS_IMG / "identity.png"), full_page=True)
        axe_clean(page)

        # The mode, chosen with the keyboard
        select = page.get_by_label("Identity verification")
        select.focus()
        select.select_option("required")
        page.keyboard.press("Tab")
        page.keyboard.press("Enter")
        expect(page.locator(".flash")).to_contain_text("Saved.")
        expect(page.get_by_label("Identity verification")).to_have_value("required")

        # The visitor API now checks ids with that secret, and refuses a wrong hash
        right = hmac.new(secret.encode(), b"user-7", hashlib.sha256).hexdigest()
        answer = identify(owner_server, "user-7", right)
        assert answer.status_code == 200 and answer.json()["verified"] is True, answer.text
        assert identify(owner_server, "user-7", "0" * 64).status_code == 401

        # A reload never shows the secret again
        page.goto(owner_server.url(PAGE))
        assert secret not in page.content()
        shot(page, "desktop")
    finally:
        context.close()


def test_the_page_is_clean_and_usable_on_a_phone(browser, owner_server, shot):
    context = browser.new_context(viewport={"width": 390, "height": 844}, locale="en-US", has_touch=True)
    try:
        page = context.new_page()
        sign_in_owner(page, owner_server)
        page.goto(owner_server.url(PAGE))
        expect(page.get_by_role("heading", name="Identity verification", level=1)).to_be_visible(timeout=WAIT)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, width
        axe_clean(page)
        shot(page, "phone")
    finally:
        context.close()
