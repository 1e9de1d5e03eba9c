"""Single sign-on in Chromium: the login page offers the provider, the operator signs in at a real
OpenID Connect provider on loopback (tests/oidc_provider) and lands in the console; the login page
is clean under axe-core at desktop and phone widths and its button works from the keyboard."""

from __future__ import annotations

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from tests.browser.console_pages import connected
from tests.browser.owner_pages import OWNER_EMAIL, WAIT, start_owner_server
from tests.oidc_provider import process

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def provider(tmp_path_factory):
    people = {"demo-owner": {"email": OWNER_EMAIL.upper(), "email_verified": True}}
    with process.running(tmp_path_factory.mktemp("oidc"), people=people, redirect_uri="http://unset/") as running:
        yield running


@pytest.fixture(scope="module")
def sso_server(live_template, tmp_path_factory, provider):
    env = {
        "OIDC_ISSUER": provider.issuer,
        "OIDC_CLIENT_ID": provider.client_id,
        "OIDC_CLIENT_SECRET": provider.client_secret,
        "OIDC_PROVIDER_NAME": "Example ID",
        "OUTBOUND_ALLOW_LOOPBACK": "1",
        "REQUESTS_CA_BUNDLE": provider.ca_path,
    }
    with start_owner_server(live_template, tmp_path_factory, **env) as server:
        provider.register_redirect(server.url("/console/sso/callback/"))
        yield server


@pytest.mark.parametrize("width", [1280, 390])
def test_an_operator_signs_in_with_the_provider(browser, sso_server, width):
    # The provider's certificate comes from the test's own CA.
    context = browser.new_context(viewport={"width": width, "height": 800}, locale="en-US", ignore_https_errors=True)
    try:
        page = context.new_page()
        page.goto(sso_server.url("/console/login/"))
        button = page.get_by_role("link", name="Sign in with Example ID")
        expect(button).to_be_visible()
        results = Axe().run(page)
        assert results.violations_count == 0, results.generate_report()
        page.screenshot(path=f"/tmp/sso-login-{width}.png", full_page=True)

        button.focus()
        page.keyboard.press("Enter")
        page.locator("input[name=username]").fill("demo-owner")
        page.locator("input[name=password]").fill(process.PASSWORD)
        page.get_by_role("button", name="Sign in").click()

        expect(page).to_have_url(sso_server.url("/console/"), timeout=WAIT)
        connected(page)
    finally:
        context.close()
