"""The owner's AI page in Chromium: connecting a provider (a loopback fake OpenAI-compatible server) and
testing it (success, then a wrong key's failure), setting up the AI operator (an assistant, an AI
operator, the switch) and trying it; clean under axe-core at desktop and phone widths, usable with
the keyboard; the guide's screenshot."""

from __future__ import annotations

from pathlib import Path

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from tests.browser.owner_pages import WAIT, sign_in_owner, start_owner_server
from tests.llm_fake import FakeLLM, ca_path

pytestmark = pytest.mark.browser

ANSWER = "Yes, we sell green tea from Yunnan."
GUIDE_SHOT = Path(__file__).resolve().parents[2] / "docs" / "img" / "owners" / "ai.png"
PROVIDER_WAIT = 30_000  # ms: a live call to the fake through the guarded client, on a loaded machine


@pytest.fixture(scope="module")
def fake():
    with FakeLLM("openai_compatible", text=ANSWER) as server:
        yield server


@pytest.fixture(scope="module")
def owner_server(live_template, tmp_path_factory, fake):
    # The web process may call loopback (the fake) and trusts the fake's certificate authority.
    env = {"OUTBOUND_ALLOW_LOOPBACK": "1", "REQUESTS_CA_BUNDLE": ca_path()}
    with start_owner_server(live_template, tmp_path_factory, **env) as server:
        yield server


def axe_clean(page) -> None:
    results = Axe().run(page)
    assert results.violations_count == 0, results.generate_report()


def test_the_owner_connects_tests_and_sets_up_the_ai_operator(browser, owner_server, fake):
    context = browser.new_context(viewport={"width": 1280, "height": 1000}, locale="en-US")
    try:
        page = context.new_page()
        sign_in_owner(page, owner_server)
        page.goto(owner_server.url("/console/settings/ai/"))
        expect(page.get_by_role("heading", name="AI operator", level=1)).to_be_visible(timeout=WAIT)

        # Connect the provider
        page.get_by_role("link", name="Connect a provider").click()
        page.get_by_label("Provider").select_option("openai_compatible")
        page.get_by_label("API key").fill(fake.api_key)
        page.get_by_label("Server address (base URL)").fill(fake.base_url)
        page.get_by_label("Model", exact=True).fill("llama3.1:8b")
        axe_clean(page)
        page.get_by_role("button", name="Connect").click()
        expect(page.locator(".flash")).to_contain_text("The provider is connected", timeout=WAIT)
        assert fake.api_key not in page.content()

        # Test it: the key and the address work
        row = page.locator("#credentials tbody tr").first
        row.get_by_role("button", name="Test").click()
        expect(row.locator(".ai-test-result")).to_contain_text("It works.", timeout=PROVIDER_WAIT)
        expect(row.locator(".ai-test-result")).to_contain_text("2 models")

        # A wrong key: the test says it failed, and why
        row.get_by_role("link", name="Edit").click()
        page.get_by_label("API key").fill("sk-not-the-right-key")
        page.get_by_role("button", name="Save").click()
        expect(page.locator(".flash")).to_contain_text("Saved.", timeout=WAIT)
        row = page.locator("#credentials tbody tr").first
        row.get_by_role("button", name="Test").click()
        result = row.locator(".ai-test-result")
        expect(result).to_contain_text("The test failed.", timeout=PROVIDER_WAIT)
        expect(result).to_contain_text("401")
        assert "sk-not-the-right-key" not in page.content()

        # The right key again
        row.get_by_role("link", name="Edit").click()
        page.get_by_label("API key").fill(fake.api_key)
        page.get_by_role("button", name="Save").click()
        expect(page.locator(".flash")).to_contain_text("Saved.", timeout=WAIT)

        # An assistant, tried with a question
        page.get_by_role("link", name="New assistant").click()
        page.get_by_label("Name", exact=True).fill("Tea helper")
        page.get_by_label("The default assistant").check()
        page.get_by_label("Instructions (system prompt)").fill("You answer questions about our tea shop.")
        page.get_by_role("button", name="Create the assistant").click()
        expect(page.locator(".flash")).to_contain_text("The assistant Tea helper is created.", timeout=WAIT)
        page.get_by_label("A visitor's question").fill("Do you sell green tea?")
        page.get_by_role("button", name="Ask").click()
        expect(page.locator("#assistant-test-result")).to_contain_text(ANSWER, timeout=PROVIDER_WAIT)
        axe_clean(page)

        # The AI operator, then the switch: the page says it answers visitors
        page.get_by_role("link", name="Back to AI").click()
        operators = page.locator("#operators")
        operators.get_by_label("Name").fill("Tea bot")
        operators.get_by_role("button", name="Add the AI operator").click()
        expect(page.locator(".flash")).to_contain_text("The AI operator Tea bot is ready.", timeout=WAIT)
        # With the keyboard: the switch is ticked with Space and the form sent with Enter
        switch = page.get_by_label("The AI operator answers visitors")
        switch.focus()
        page.keyboard.press("Space")
        expect(switch).to_be_checked()
        page.get_by_label("Seconds before the AI answers again").focus()
        page.keyboard.press("Enter")
        expect(page.locator(".flash")).to_contain_text("Saved.", timeout=WAIT)
        expect(page.locator(".ai-state")).to_contain_text("Answering visitors")
        expect(page.locator("#operators")).to_contain_text("Tea bot")
        axe_clean(page)
        GUIDE_SHOT.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(GUIDE_SHOT))
    finally:
        context.close()


@pytest.mark.parametrize("path", ["/console/settings/ai/", "/console/settings/ai/learning/"])
def test_the_ai_pages_are_clean_at_phone_width(browser, owner_server, path):
    context = browser.new_context(viewport={"width": 390, "height": 844}, locale="en-US")
    try:
        page = context.new_page()
        sign_in_owner(page, owner_server)
        page.goto(owner_server.url(path))
        expect(page.locator("main h1")).to_be_visible(timeout=WAIT)
        axe_clean(page)
        assert page.evaluate("document.documentElement.scrollWidth") <= 390  # nothing widens the page
        page.screenshot(path=str(Path("var/screenshots") / f"settings-ai-390{path.count('/')}.png"), full_page=True)
    finally:
        context.close()
