"""The installable console in Chromium: the service worker registered for the console's scope, the
DevTools protocol's installability check answering no errors, the worker's cache holding the shell
only, the offline page when the network is gone, and the phone layout at 390 px (the list and the
chat as two screens, the composer above the on-screen keyboard), clean under axe-core.

The phone screenshots are the guide's (docs/img/operators/phone-*.png, docs/operators/phone.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from tests.browser.console_pages import WAIT, connected, sign_in, start_console_server
from tests.browser.test_console import Visitor

pytestmark = pytest.mark.browser

IMAGES = Path(__file__).resolve().parents[2] / "docs" / "img" / "operators"
PHONE = {"width": 390, "height": 844}
# What is left of a 390 x 844 phone's layout viewport while its on-screen keyboard is open
# (interactive-widget=resizes-content: the keyboard shrinks the layout, not just the visual viewport).
PHONE_WITH_KEYBOARD = {"width": 390, "height": 480}


@pytest.fixture(scope="module")
def server(live_template, tmp_path_factory):
    with start_console_server(live_template, tmp_path_factory) as server:
        yield server


def axe_clean(page) -> None:
    results = Axe().run(page)
    violations = [
        f"{v['id']} ({v['impact']}): {v['help']} — {[n['target'] for n in v['nodes']][:5]}"
        for v in results.response["violations"]
    ]
    assert violations == []


def worker_ready(page) -> str:
    """Wait for the console's service worker to be active; its scope."""
    return page.evaluate("navigator.serviceWorker.ready.then((registration) => registration.scope)")


def cached_urls(page) -> list[str]:
    return page.evaluate(
        """async () => {
            const urls = [];
            for (const name of await caches.keys()) {
                const cache = await caches.open(name);
                for (const request of await cache.keys()) urls.push(new URL(request.url).pathname);
            }
            return urls.sort();
        }"""
    )


def test_the_console_installs_and_its_worker_keeps_the_shell_only(
    browser_type, browser_type_launch_args, server, tmp_path
):
    # A profile on disk: Chromium never offers to install from an incognito context (a new_context)
    context = browser_type.launch_persistent_context(
        str(tmp_path / "profile"), **browser_type_launch_args, viewport={"width": 1280, "height": 800}, locale="en-US"
    )
    page = context.pages[0] if context.pages else context.new_page()
    try:
        # Given an operator signed in, with a visitor's chat open
        chat_id = Visitor(server, name="Ines").say("A private question about my order 5521")["chat_id"]
        sign_in(page, server)

        # Then the service worker is registered for the console's scope and controls the page
        assert worker_ready(page) == server.url("/console/")
        page.reload()
        connected(page)
        assert page.evaluate("navigator.serviceWorker.controller !== null")

        # And Chromium finds the console installable: a manifest it parsed without errors, its icons
        cdp = context.new_cdp_session(page)
        manifest = cdp.send("Page.getAppManifest")
        assert manifest["url"] == server.url("/console/manifest.webmanifest")
        assert manifest["errors"] == []
        assert cdp.send("Page.getInstallabilityErrors")["installabilityErrors"] == []

        # When the operator reads the chat (its page and the console's fragments pass the worker)
        page.goto(server.url(f"/console/chats/{chat_id}/"))
        connected(page)
        expect(page.locator("#messages")).to_contain_text("order 5521")

        # Then the worker's cache holds the shell only: static files and the offline page
        urls = cached_urls(page)
        assert "/static/console/console.css" in urls and "/static/console/icons/icon-512.png" in urls
        assert "/console/offline/" in urls
        others = [url for url in urls if not url.startswith("/static/console/") and url != "/console/offline/"]
        assert others == []
        texts = page.evaluate(
            """async () => {
                const cache = await caches.open((await caches.keys())[0]);
                return Promise.all((await cache.keys()).map(async (r) => (await cache.match(r)).text()));
            }"""
        )
        assert not any("order 5521" in text or "Olga" in text for text in texts)
    finally:
        context.close()


def test_without_network_the_console_shows_the_offline_page(browser, server, shot):
    context = browser.new_context(viewport=PHONE, locale="en-US", has_touch=True)
    page = context.new_page()
    try:
        # Given an operator whose console has installed its worker
        sign_in(page, server)
        worker_ready(page)
        page.reload()
        connected(page)

        # When the network goes and they open a page of the console
        context.set_offline(True)
        page.goto(server.url("/console/mentions/"))

        # Then the offline page says so, in words and with a way back, clean under axe
        expect(page.get_by_role("heading", name="No connection")).to_be_visible()
        expect(page.get_by_role("link", name="Try again")).to_have_attribute("href", "/console/")
        axe_clean(page)
        shot(page)

        # And with the network back, "Try again" opens the console again
        context.set_offline(False)
        page.get_by_role("link", name="Try again").click()
        connected(page)
    finally:
        context.close()


def test_on_a_phone_the_list_and_the_chat_are_two_screens_and_the_composer_stays_above_the_keyboard(browser, server):
    context = browser.new_context(viewport=PHONE, locale="en-US", has_touch=True, is_mobile=True)
    page = context.new_page()
    try:
        # Given two visitors waiting and an operator on a 390-pixel phone
        Visitor(server, name="Mia Keller").say("Hello, is the blue teapot back in stock?")
        chat_id = Visitor(server, name="Jonas Berg").say("Can I change the delivery address of order 7?")["chat_id"]
        sign_in(page, server)
        row = page.locator(f'.chat-row[data-chat-id="{chat_id}"]')
        expect(row).to_be_visible(timeout=WAIT)

        # The list is the first screen, the whole width, nothing wider than the phone
        assert row.bounding_box()["width"] >= PHONE["width"] - 2
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        axe_clean(page)
        IMAGES.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(IMAGES / "phone-list.png"))

        # The chat is the second screen, with the way back to the list
        row.locator("a").click()
        connected(page)
        expect(page.locator(".pane-list")).to_be_hidden()
        expect(page.get_by_role("link", name="All chats")).to_be_in_viewport()
        reply = page.get_by_role("textbox", name="Reply")
        page.get_by_role("textbox", name="Reply").fill("Of course: which address?")
        reply.press("Enter")
        expect(page.locator("#messages")).to_contain_text("which address?", timeout=WAIT)
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        axe_clean(page)
        page.screenshot(path=str(IMAGES / "phone-chat.png"))

        # When the on-screen keyboard opens (the layout viewport shrinks: resizes-content)
        viewport = page.locator('meta[name="viewport"]').get_attribute("content")
        assert "interactive-widget=resizes-content" in viewport
        reply.focus()
        page.set_viewport_size(PHONE_WITH_KEYBOARD)

        # Then the reply box and Send stay on screen above it, the page itself does not scroll
        expect(reply).to_be_in_viewport(ratio=1)
        expect(page.get_by_role("button", name="Send", exact=True)).to_be_in_viewport(ratio=1)
        composer = page.locator(".composer").bounding_box()
        assert composer["y"] + composer["height"] <= PHONE_WITH_KEYBOARD["height"] + 1
        assert page.evaluate("document.documentElement.scrollHeight") <= PHONE_WITH_KEYBOARD["height"]
        page.screenshot(path=str(IMAGES / "phone-keyboard.png"))

        # And "All chats" leads back to the list
        page.set_viewport_size(PHONE)
        page.get_by_role("link", name="All chats").click()
        expect(row).to_be_visible(timeout=WAIT)
    finally:
        context.close()


def test_the_phone_screens_mirror_right_to_left(browser, server, shot):
    context = browser.new_context(viewport=PHONE, locale="en-US", has_touch=True, is_mobile=True)
    page = context.new_page()
    try:
        # Given an operator on a phone whose console speaks Arabic
        chat_id = Visitor(server, name="Layla").say("مرحبا، هل الطلب جاهز؟")["chat_id"]
        sign_in(page, server)
        context.add_cookies([{"name": "django_language", "value": "ar", "url": server.url("/console/")}])

        # The list: right to left, nothing wider than the phone, clean under axe
        page.reload()
        connected(page)
        assert page.locator("html").get_attribute("dir") == "rtl"
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        axe_clean(page)
        shot(page, "list")

        # The chat: the way back to the list at the start side (the right), its arrow pointing there
        page.goto(server.url(f"/console/chats/{chat_id}/"))
        connected(page)
        back = page.locator(".title-row > .phone-only").first
        assert back.bounding_box()["x"] > PHONE["width"] / 2
        arrow = back.evaluate("el => getComputedStyle(el, '::before').content")
        assert "→" in arrow
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        axe_clean(page)
        shot(page, "chat")
    finally:
        context.close()
