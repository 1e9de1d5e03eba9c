"""The demo page `/demo/` as a newcomer's browser loads it."""

from __future__ import annotations

import pytest

from tests.browser.widget_pages import wait_ready

pytestmark = pytest.mark.browser


def test_the_demo_page_loads_without_a_missing_request_and_shows_the_whole_snippet(browser, web_server, shot):
    # given a phone-sized browser (the snippet is one long line)
    context = browser.new_context(viewport={"width": 375, "height": 740})
    page = context.new_page()
    missing = []
    page.on("response", lambda response: missing.append(response.url) if response.status >= 400 else None)
    try:
        # when it opens the demo page
        page.goto(web_server.url("/demo/"))
        wait_ready(page)
        page.wait_for_load_state("networkidle")

        # then no request failed, and the page names its icon (else a browser asks for /favicon.ico)
        assert not missing, missing
        icon = page.locator("link[rel=icon]").get_attribute("href")
        assert icon and page.request.get(web_server.url(icon)).status == 200
        # and the snippet box shows all of the snippet: nothing hidden past its right edge
        box = page.locator("pre").first
        hidden = box.evaluate("el => el.scrollWidth - el.clientWidth")
        shot(page)
        assert hidden <= 0, f"{hidden}px of the snippet are cut off"
    finally:
        context.close()
