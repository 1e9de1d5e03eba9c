"""The knowledge base's settings page in Chromium, as the demo widget's owner against the loopback AI
provider fake (which embeds) and the `bulk` worker (documents and crawls are read there): a document
uploaded with its progress shown becomes ready while the page polls, the search preview finds its
chunk, a crawl of a slow loopback site shows its progress and is cancelled; the page is clean under
axe at desktop and phone widths and its upload form works from the keyboard."""

from __future__ import annotations

from pathlib import Path

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from apps.kb.tests.site import serve
from tests.browser.conftest import api_client
from tests.browser.owner_pages import sign_in_owner, start_owner_server
from tests.browser.test_widget_sources import write
from tests.live import ROOT, Process, environment
from tests.llm_fake import FakeLLM, ca_path

pytestmark = pytest.mark.browser

PAGE = "/console/settings/ai/knowledge/"
DOCUMENT = "Our green tea leaves the Riga warehouse within two days of the order."
LIVE = 60_000  # ms: the worker reads and embeds the document on a shared two-core machine
GUIDE_SHOT = ROOT / "docs" / "img" / "owners" / "kb.png"


@pytest.fixture
def site(tmp_path):
    yield from serve(tmp_path, host="127.0.0.1")


@pytest.fixture
def kb_server(live_template, tmp_path_factory, tmp_path, site):
    """The owner's web process and the `bulk` worker, trusting the AI fake and the loopback site,
    with an OpenAI credential on the fake (so uploads are embedded)."""
    bundle = tmp_path / "ca-bundle.pem"
    bundle.write_text(Path(ca_path()).read_text() + site.ca_path.read_text())
    env = {"OUTBOUND_ALLOW_LOOPBACK": "1", "REQUESTS_CA_BUNDLE": str(bundle)}
    with FakeLLM("openai") as fake, start_owner_server(live_template, tmp_path_factory, **env) as server:
        write(
            api_client(server),
            "POST",
            "/api/v1/ai/credentials",
            {"provider": "openai", "api_key": fake.api_key, "base_url": fake.base_url},
        )
        bulk = Process.start("bulk", environment(server.var_dir, **env), tmp_path / "bulk.log")
        try:
            bulk.wait_for_output("ready.", timeout=90)
            yield server
        finally:
            bulk.terminate(timeout=5)


def axe_clean(page) -> None:
    results = Axe().run(page)
    assert results.violations_count == 0, results.generate_report()


def test_the_owner_uploads_a_document_finds_it_in_the_preview_and_cancels_a_crawl(
    browser, kb_server, site, tmp_path, shot
):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    try:
        page = context.new_page()
        sign_in_owner(page, kb_server)
        page.goto(kb_server.url(PAGE))
        expect(page.get_by_role("heading", name="Knowledge base", level=1)).to_be_visible()
        axe_clean(page)

        # The owner uploads a small document from the keyboard; the bytes sent show on the bar
        document = tmp_path / "shipping.txt"
        document.write_text(DOCUMENT + "\n", encoding="utf-8")
        page.evaluate(
            """() => { window.kbSent = [];
                 document.addEventListener('htmx:xhr:progress', () => {
                   const bar = document.querySelector('[data-kb-progress]');
                   window.kbSent.push([bar.hidden, bar.value]); }); }"""
        )
        page.get_by_label("Document", exact=True).set_input_files(str(document))
        page.get_by_label("Document", exact=True).focus()
        page.keyboard.press("Tab")
        expect(page.get_by_role("button", name="Upload")).to_be_focused()
        page.keyboard.press("Enter")
        row = page.locator("#kb-documents tr", has_text="shipping.txt")
        expect(row).to_be_visible()
        sent = page.evaluate("window.kbSent")
        assert sent and sent[-1] == [False, 100], sent

        # It becomes ready while the page polls, with no reload
        expect(row.get_by_text("Ready")).to_be_visible(timeout=LIVE)
        expect(row.locator("td").nth(3)).to_have_text("1")

        # The search preview finds its chunk
        page.get_by_label("A visitor’s question").fill("How fast do you ship green tea?")
        page.get_by_role("button", name="Preview").click()
        hit = page.locator(".kb-hit").first
        expect(hit).to_contain_text("shipping.txt")
        expect(hit).to_contain_text(DOCUMENT)
        # and the state, refreshed with the list, counts its chunk
        expect(page.locator("#kb-status")).to_contain_text("1 chunk")
        axe_clean(page)

        # A crawl of a slow loopback site shows its progress and is cancelled
        site.delay = 3.0
        links = "".join(f'<a href="/p/{n}">page {n}</a> ' for n in range(1, 40))
        site.html("/p/0", f"<p>Delivery notes for every order.</p>{links}")
        for n in range(1, 40):
            site.html(f"/p/{n}", f"<p>Delivery notes, part {n}: parcels leave the warehouse daily.</p>")
        page.get_by_label("Start addresses").fill(site.url("/p/0"))
        page.get_by_role("button", name="Save and crawl now").click()
        progress = page.locator("#kb-crawl .kb-run")
        expect(progress).to_contain_text("Crawl in progress")
        expect(progress.get_by_text("Running")).to_be_visible(timeout=LIVE)
        expect(progress.locator('[data-count="fetched"]')).not_to_have_text("0", timeout=LIVE)
        progress.get_by_role("link", name="Cancel the crawl").click()
        expect(page.get_by_role("heading", name="Cancel the crawl?")).to_be_visible()
        page.get_by_role("button", name="Cancel the crawl").click()
        expect(page.get_by_role("status").first).to_contain_text("The crawl is cancelled")
        expect(page.locator("#kb-crawl .kb-run")).to_have_count(0)
        expect(page.locator("#kb-crawl table")).to_contain_text("Cancelled")
        fetched = len([p for p in site.requested if p.startswith("/p/")])
        page.wait_for_timeout(4_000)  # one slow page's time: a cancelled crawl asks for at most the one in flight
        assert len([p for p in site.requested if p.startswith("/p/")]) <= fetched + 1

        # The guide's picture: the document, the past crawl and a preview's answer
        page.get_by_label("A visitor’s question").fill("How fast do you ship green tea?")
        page.get_by_role("button", name="Preview").click()
        expect(page.locator(".kb-hit").first).to_contain_text("shipping.txt")
        axe_clean(page)
        page.screenshot(path=str(GUIDE_SHOT), full_page=True)
    finally:
        context.close()

    # On a phone, in Arabic (right to left), the page with a preview's results is clean under axe too
    phone = browser.new_context(viewport={"width": 390, "height": 800}, locale="en-US")
    try:
        page = phone.new_page()
        sign_in_owner(page, kb_server)
        phone.add_cookies([{"name": "django_language", "value": "ar", "url": kb_server.url("/console/")}])
        page.goto(kb_server.url(PAGE + "search/?q=green+tea"))
        expect(page.locator(".kb-hit").first).to_contain_text("shipping.txt")
        assert page.evaluate("document.documentElement.scrollWidth") <= 390  # wide tables scroll in their box
        axe_clean(page)
        shot(page, "phone")
    finally:
        phone.close()
