"""The owner's pre-chat form in Chromium (product-decisions.md, "Pre-chat form"): required fields and
the consent block the start with the server's own messages beside each field, the answers reach the
contact's fields and attributes, Arabic right to left on a 390 px phone, the keyboard, axe."""

from __future__ import annotations

import secrets

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from tests.browser.conftest import SERVER_ENV, api_client
from tests.browser.widget_pages import open_widget, send_text

pytestmark = pytest.mark.browser

PRIVACY = "https://shop.example/privacy"
FORM = {
    "when": "always",
    "fields": [
        {"key": "name", "type": "text", "label_i18n": {"en": "Your name", "ar": "اسمك"}, "required": True},
        {"key": "email", "type": "email", "label_i18n": {"en": "E-mail", "ar": "البريد الإلكتروني"}},
        {"key": "company", "type": "text", "label_i18n": {"en": "Company"}},
        {"key": "seats", "type": "number", "label_i18n": {"en": "Seats", "ar": "المقاعد"}},
        {
            "key": "plan",
            "type": "select",
            "label_i18n": {"en": "Plan", "ar": "الخطة"},
            "required": True,
            "options": [
                {"value": "free", "label_i18n": {"en": "Free", "ar": "مجاني"}},
                {"value": "pro", "label_i18n": {"en": "Pro", "ar": "احترافي"}},
            ],
        },
        {
            "key": "consent",
            "type": "checkbox",
            "label_i18n": {"en": "I accept the [privacy policy]", "ar": "أوافق على [سياسة الخصوصية]"},
            "required": True,
        },
    ],
}


@pytest.fixture
def server(start_server):
    server = start_server(**SERVER_ENV)
    response = api_client(server)(
        "PATCH",
        "/api/v1/widget/settings",
        json={
            "prechat": FORM,
            "widget_privacy_policy_url": PRIVACY,
            # Nobody is online in this test: the chat stays open (messages wait) instead of the offline form.
            "widget_offline_mode": "chat",
            "widget_supported_languages": ["ru", "en", "ar"],
            # The older simple form is on too: while `prechat` shows, it never does.
            "widget_prechat_form_enabled": True,
        },
        headers={"X-Service-Idempotency-Key": secrets.token_hex(8)},
    )
    assert response.status_code == 200, response.text
    return server


def axe_clean(page) -> None:
    results = Axe().run(page, context={"include": [["chat-widget", "form.pf"]]})
    # Targets inside the shadow root are lists (host, inner selector): the report is built here.
    violations = [
        (v["id"], [(n["target"], n.get("failureSummary", "")) for n in v["nodes"]][:5])
        for v in results.response["violations"]
    ]
    assert not violations, violations


def contact_of(server, chat_id: int) -> dict:
    api = api_client(server)
    chat = api("GET", f"/api/v1/chats/{chat_id}").json()
    return api("GET", f"/api/v1/contacts/{chat['client_id']}").json()


def test_required_fields_and_the_consent_block_the_start_with_the_servers_messages(browser, server, shot):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    page = context.new_page()
    try:
        page.goto(server.url("/demo/"))
        open_widget(page)
        form = page.get_by_role("form", name="Please introduce yourself before we start.")
        expect(form).to_be_visible()
        expect(page.locator("chat-widget form")).to_have_count(1)
        expect(page.get_by_role("textbox", name="Type a message…")).to_have_count(0)
        expect(form.get_by_role("spinbutton", name="Seats")).to_be_visible()
        expect(form.get_by_role("textbox", name="E-mail")).to_have_attribute("type", "email")
        expect(form.get_by_role("link", name="privacy policy")).to_have_attribute("href", PRIVACY)
        axe_clean(page)

        # When the visitor starts without answering
        form.get_by_role("button", name="Start chat").click()

        # Then each required field shows the server's message and the chat does not start
        expect(form.get_by_role("alert")).to_have_text("Please check the marked fields.")
        for name in ("Your name", "Plan"):
            field = form.get_by_label(name)
            expect(field).to_have_attribute("aria-invalid", "true")
            expect(field).to_have_accessible_description("Required.")
        expect(form.get_by_role("checkbox")).to_have_accessible_description("Must be checked to continue.")
        expect(form.get_by_label("Your name")).to_be_focused()
        axe_clean(page)
        shot(page, "refused")

        # When the answers are filled but the e-mail is not one and the consent is still missing
        form.get_by_label("Your name").fill("Daria")
        form.get_by_label("E-mail").fill("daria-at-example")
        form.get_by_label("Seats").fill("12")
        form.get_by_label("Plan").select_option("pro")
        form.get_by_role("button", name="Start chat").click()
        expect(form.get_by_label("E-mail")).to_have_accessible_description("Enter a valid email address.")
        expect(form.get_by_role("checkbox")).to_have_attribute("aria-invalid", "true")
        expect(form.get_by_label("Your name")).not_to_have_attribute("aria-invalid", "true")

        # When they are put right, the chat starts and its contact carries every answer
        form.get_by_label("E-mail").fill("daria@example.com")
        form.get_by_role("checkbox").check()
        form.get_by_role("button", name="Start chat").click()
        expect(page.get_by_role("textbox", name="Type a message…")).to_be_focused()
        chat_id = send_text(page, "Hello, it's Daria")
        contact = contact_of(server, chat_id)
        assert (contact["name"], contact["email"]) == ("Daria", "daria@example.com")
        assert contact["attributes"] == {"seats": 12, "plan": "pro", "consent": True}

        # And a reload keeps the chat: the form is not asked again
        page.reload()
        open_widget(page)
        expect(page.locator("chat-widget .msg.me", has_text="Hello, it's Daria")).to_be_visible()
        expect(page.get_by_role("form", name="Please introduce yourself before we start.")).to_have_count(0)
    finally:
        context.close()


def test_arabic_right_to_left_on_a_phone_with_the_keyboard(browser, server, shot):
    context = browser.new_context(
        viewport={"width": 390, "height": 844}, locale="ar", is_mobile=True, has_touch=True, device_scale_factor=2
    )
    page = context.new_page()
    try:
        page.goto(server.url("/demo/"))
        open_widget(page)
        form = page.locator("chat-widget form.pf")
        expect(form).to_be_visible()
        expect(page.locator("chat-widget .cw")).to_have_attribute("dir", "rtl")
        # Labels in Arabic, the one without an Arabic label in the fallback language's words
        expect(form.get_by_label("اسمك")).to_be_visible()
        expect(form.get_by_label("Company")).to_be_visible()
        expect(form.get_by_role("link", name="سياسة الخصوصية")).to_have_attribute("href", PRIVACY)
        # The form fits the phone: nothing wider than the screen
        overflow = form.evaluate("f => [f.scrollWidth, f.clientWidth, f.getBoundingClientRect().right]")
        assert overflow[0] <= overflow[1] and overflow[2] <= 390, overflow
        axe_clean(page)
        shot(page, "ar-phone")

        # When the visitor answers with the keyboard alone (Tab between fields, Space on the consent)
        form.get_by_label("اسمك").focus()
        page.keyboard.type("ليلى")
        page.keyboard.press("Tab")
        page.keyboard.type("layla@example.com")
        page.keyboard.press("Tab")
        page.keyboard.press("Tab")
        page.keyboard.type("3")
        page.keyboard.press("Tab")
        form.get_by_label("الخطة").press("ArrowDown")
        expect(form.get_by_label("الخطة")).to_have_value("free")
        page.keyboard.press("Tab")
        page.keyboard.press("Space")
        expect(form.get_by_role("checkbox")).to_be_checked()
        form.get_by_role("button").last.press("Enter")

        # Then the chat opens and the answers reach the contact
        box = page.locator("chat-widget .foot textarea")
        expect(box).to_be_visible()
        box.fill("مرحبا")
        box.press("Enter")
        mine = page.locator("chat-widget .msg.me", has_text="مرحبا")
        expect(mine).to_be_visible()
        contact = contact_of(server, int(mine.get_attribute("data-chat")))
        assert (contact["name"], contact["email"]) == ("ليلى", "layla@example.com")
        assert contact["attributes"] == {"seats": 3, "plan": "free", "consent": True}
    finally:
        context.close()
