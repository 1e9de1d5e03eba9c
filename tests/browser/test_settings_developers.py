"""The owner's developers and channels pages in Chromium: the owner issues a token and the API takes
it; subscribes a webhook to a loopback receiver, a visitor's message makes an event, the worker
delivers it and the owner sees it in the delivery log; revokes the token with the keyboard and the
API refuses it; both pages clean under axe-core at desktop and phone widths (the guide's
screenshots)."""

from __future__ import annotations

from pathlib import Path

import pytest
import requests
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from apps.webhooks.tests.receiver import Receiver
from tests.browser.owner_pages import WAIT, sign_in_owner, start_owner_server
from tests.live import ROOT, Process, environment

pytestmark = pytest.mark.browser

DOCS_IMG = ROOT / "docs" / "img" / "owners"
DELIVERY_WAIT = 60  # s: a delivery on an idle worker takes about a second


@pytest.fixture(scope="module")
def receiver():
    with Receiver() as rx:
        yield rx


@pytest.fixture(scope="module")
def owner_server(live_template, tmp_path_factory, receiver):
    env = {"OUTBOUND_ALLOW_LOOPBACK": "1", "REQUESTS_CA_BUNDLE": str(receiver.ca_path)}
    with start_owner_server(live_template, tmp_path_factory, **env) as server:
        log = Path(tmp_path_factory.mktemp("worker")) / "worker.log"
        worker = Process.start("worker", environment(server.var_dir, **env), log)
        try:
            worker.wait_for_output("ready.", timeout=90)
            yield server
        finally:
            worker.terminate(timeout=5)


def chats(server, token: str) -> int:
    return requests.get(
        server.url("/api/v1/chats"), headers={"Authorization": f"Bearer {token}"}, timeout=15
    ).status_code


def visitor_writes(server, body: str) -> None:
    session = server.visitor_session(name="Hook tester")
    response = requests.post(
        server.url(f"/api/visitor/v1/{server.seed['button_guid']}/messages"),
        json={"type": "text", "body": body},
        headers={"Authorization": f"Visitor {session}"},
        timeout=10,
    )
    assert response.status_code == 201, response.text


def axe_clean(page) -> None:
    results = Axe().run(page)
    assert results.violations_count == 0, results.generate_report()


def test_the_owner_issues_a_token_subscribes_a_webhook_sees_the_delivery_and_revokes(
    browser, owner_server, receiver, shot
):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    try:
        page = context.new_page()
        sign_in_owner(page, owner_server)
        page.goto(owner_server.url("/console/settings/developers/"))
        expect(page.get_by_role("heading", name="Developers", level=1)).to_be_visible(timeout=WAIT)
        api_switch = page.get_by_label("Allow API access with tokens")
        if not api_switch.is_checked():
            api_switch.check()
            page.get_by_role("button", name="Save").first.click()
            expect(page.locator(".flash")).to_contain_text("API access is on.")

        # issue: a name, two ticked scopes, 30 days; the token is shown once and the API takes it
        page.get_by_label("Name", exact=True).fill("Browser test")
        page.get_by_label("Expires after (days)").fill("30")
        page.locator('input[name=scopes][value="chats:read"]').check()
        page.locator('input[name=scopes][value="webhooks:read"]').check()
        page.get_by_role("button", name="Issue the token").click()
        once = page.locator("#new-token")
        expect(once).to_be_visible(timeout=WAIT)
        token = once.input_value()
        assert chats(owner_server, token) == 200

        # subscribe the receiver to message.created; the signing secret is shown once
        page.goto(owner_server.url("/console/settings/developers/"))
        assert page.locator("#new-token").count() == 0 and token not in page.content()
        page.get_by_label("Receiver URL").fill(receiver.url("/hook"))
        page.locator('input[name=events][value="message.created"]').check()
        page.get_by_role("button", name="Add the webhook").click()
        expect(page.locator("#new-secret")).to_be_visible(timeout=WAIT)
        expect(page.locator(".once")).to_be_visible()

        # a visitor writes: the worker delivers the event, the log shows it
        seen = len(receiver.hits)
        visitor_writes(owner_server, "Hello from the webhook test")
        receiver.wait_for(seen + 1, timeout=DELIVERY_WAIT)
        page.get_by_role("link", name=receiver.url("/hook")).click()
        expect(page.get_by_role("heading", name="Delivery log")).to_be_visible(timeout=WAIT)
        for _ in range(30):
            if page.locator("td", has_text="Delivered").count():
                break
            page.wait_for_timeout(1000)
            page.reload()
        row = page.locator("tr", has_text="message.created").first
        expect(row).to_contain_text("Delivered")
        expect(row).to_contain_text("200")
        axe_clean(page)

        # revoke with the keyboard: the summary opens the confirmation, its button revokes
        page.goto(owner_server.url("/console/settings/developers/"))
        summary = page.locator("tr", has_text="Browser test").locator(".dev-confirm summary")
        summary.focus()
        page.keyboard.press("Enter")
        page.keyboard.press("Tab")
        expect(page.get_by_role("button", name="Revoke now")).to_be_focused()
        page.keyboard.press("Enter")
        expect(page.locator(".flash")).to_contain_text("is revoked", timeout=WAIT)
        assert chats(owner_server, token) == 401
        axe_clean(page)
        DOCS_IMG.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(DOCS_IMG / "developers.png"), full_page=False)
        shot(page, "desktop")
    finally:
        context.close()


@pytest.mark.parametrize("width", [1280, 390])
def test_the_channels_page_is_clean_and_adds_a_channel(browser, owner_server, receiver, width, shot):
    context = browser.new_context(viewport={"width": width, "height": 900}, locale="en-US")
    try:
        page = context.new_page()
        sign_in_owner(page, owner_server)
        page.goto(owner_server.url("/console/settings/channels/"))
        expect(page.get_by_role("heading", name="Channels", level=1)).to_be_visible(timeout=WAIT)
        axe_clean(page)
        page.get_by_text("Add a channel").click()
        page.get_by_label("Name", exact=True).fill(f"Shop app {width}")
        page.get_by_label("URL for the operators' replies").fill(receiver.url(f"/channel-{width}"))
        page.get_by_role("button", name="Add the channel").click()
        expect(page.locator("#channel-secret")).to_be_visible(timeout=WAIT)
        expect(page.get_by_role("link", name=f"Shop app {width}")).to_be_visible()
        axe_clean(page)
        # a refused telegram token shows the API's message under its field
        telegram = page.locator("#messenger-tg")
        telegram.locator("details.chan-connect > summary").click()
        telegram.get_by_label("Access token").fill("nope")
        telegram.get_by_role("button", name="Connect Telegram").click()
        expect(page.locator("#messenger-tg .refusal, #messenger-tg .error").first).to_be_visible(timeout=WAIT)
        axe_clean(page)
        page.goto(owner_server.url("/console/settings/channels/"))
        if width == 1280:
            page.screenshot(path=str(DOCS_IMG / "channels.png"), full_page=False)
        shot(page)
        page.goto(owner_server.url("/console/settings/developers/"))
        axe_clean(page)
        shot(page, "developers")
    finally:
        context.close()
