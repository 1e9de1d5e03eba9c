"""The harness itself: Debian's Chromium reaches the real web process and the seeded widget."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser


def test_chromium_reads_the_seeded_widget_config_across_origins(page, web_server, shot):
    # Given a page of another origin than the service (what a customer's site is)
    page.set_content("<!doctype html><title>host</title><h1>Host page</h1>")
    guid = web_server.seed["button_guid"]

    # When it reads the public config of the seeded widget
    config = page.evaluate("async (url) => (await fetch(url)).json()", web_server.url(f"/api/visitor/v1/{guid}/config"))

    # Then the browser got it (CORS allows any origin) and the screenshot is saved
    assert config["button_guid"] == guid
    assert "Chrom" in page.evaluate("navigator.userAgent")
    assert shot(page).exists()
