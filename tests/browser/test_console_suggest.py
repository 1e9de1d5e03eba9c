"""The console's "Suggest" in Chromium: with an assistant and its knowledge base (against the loopback
AI provider fake, which also embeds), a click fills the reply field with the AI's answer and lists
the documents it drew on under it (a crawled page as a link opened in a new tab, an upload as plain
text, an address that is not a web page never as a link); nothing is sent until the operator sends."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import SERVER_ENV, api_client
from tests.browser.console_pages import WAIT, add_operator, connected, sign_in
from tests.browser.test_console import Visitor
from tests.browser.test_widget_sources import PAGE, store_knowledge, write
from tests.llm_fake import FakeLLM, ca_path

pytestmark = pytest.mark.browser

ANSWER = "Your tea leaves our warehouse within two days."


def test_suggest_fills_the_reply_with_the_answer_and_its_sources_and_sends_nothing(page, start_server, live_var, shot):
    # Given an assistant with a knowledge base on the fake (the AI operator itself is off: people
    # answer this widget) and a visitor's question open in the console
    env = {**SERVER_ENV, "OUTBOUND_ALLOW_LOOPBACK": "1", "REQUESTS_CA_BUNDLE": ca_path()}
    with FakeLLM("openai", text=ANSWER) as fake:
        server = start_server(**env)
        add_operator(live_var, server.seed["button_guid"])
        call = api_client(server)
        write(
            call,
            "POST",
            "/api/v1/ai/credentials",
            {"provider": "openai", "api_key": fake.api_key, "base_url": fake.base_url},
        )
        write(
            call,
            "POST",
            "/api/v1/ai/assistants",
            {"name": "Tea shop", "is_default": True, "enabled": True, "rag_enabled": True},
        )
        store_knowledge(live_var, env, server.seed["button_guid"])
        visitor = Visitor(server, name="Anna")
        chat_id = visitor.say("How long does tea delivery take?")["chat_id"]
        sign_in(page, server)
        page.goto(server.url(f"/console/chats/{chat_id}/"))
        connected(page)

        # When the operator clicks Suggest
        page.get_by_role("button", name="Suggest").click()

        # Then the reply field holds the AI's answer and the sources are listed under it
        field = page.get_by_role("textbox", name="Reply")
        expect(field).to_have_value(ANSWER, timeout=WAIT)
        sources = page.locator("#composer .sources")
        expect(sources).to_contain_text("Based on:")
        link = sources.get_by_role("link", name=PAGE)
        expect(link).to_have_attribute("href", PAGE)
        expect(link).to_have_attribute("target", "_blank")
        expect(link).to_have_attribute("rel", "noopener noreferrer")
        expect(sources).to_contain_text("Shipping terms.pdf")
        expect(sources.get_by_role("link")).to_have_count(1)
        expect(page.locator('#composer a[href^="javascript:"]')).to_have_count(0)
        # and nothing was sent
        expect(page.locator("#messages")).not_to_contain_text(ANSWER)
        assert ANSWER not in visitor.bodies()
        shot(page, "suggested")

        # When the operator sends it with Enter, the visitor receives it as the operator's reply
        field.focus()
        page.keyboard.press("Enter")
        expect(page.locator("#messages")).to_contain_text(ANSWER, timeout=WAIT)
        assert ANSWER in visitor.bodies()
