"""The operator console in Russian and Arabic in Chromium: the operator switches the language in the
header, the page (and the script's live words) follow, Arabic is laid out right to left, and the
choice survives a reload. Screenshots of both go to the test's temporary directory."""

from __future__ import annotations

import pytest
import requests
from playwright.sync_api import expect

from tests.browser.console_pages import connected, sign_in, start_console_server

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def console_server(live_template, tmp_path_factory):
    with start_console_server(live_template, tmp_path_factory) as server:
        yield server


def visitor_writes(server, name: str, body: str) -> None:
    token = server.visitor_session(name=name)
    response = requests.post(
        server.url(f"/api/visitor/v1/{server.seed['button_guid']}/messages"),
        json={"type": "text", "body": body},
        headers={"Authorization": f"Visitor {token}"},
        timeout=10,
    )
    assert response.status_code == 201, response.text


def switch_language(page, name: str) -> None:
    # In the console the switcher sits in the operator's menu (its name in the header); on the
    # sign-in page it is on the page
    account = page.locator("details.account")
    if account.count() and not account.evaluate("el => el.open"):
        account.locator("summary").click()
    page.locator("#language-switch").select_option(label=name)
    page.locator("#language-form button[type=submit]").click()


def test_the_operator_switches_to_russian_and_to_arabic(page, console_server, tmp_path):
    # Given a signed-in operator (an English browser) with a visitor's chat open
    visitor_writes(console_server, "Marina", "Здравствуйте! Где мой заказ?")
    sign_in(page, console_server)
    row = page.locator(".chat-row", has_text="Marina").first
    row.locator("a").click()
    expect(page.locator("#chat-panel")).to_be_visible()
    connected(page)
    expect(page.locator("html")).to_have_attribute("lang", "en")

    # When the operator chooses Russian in the header
    switch_language(page, "Русский")

    # Then the page and the script's own words are Russian, left to right
    expect(page.locator("html")).to_have_attribute("lang", "ru")
    expect(page.locator("html")).to_have_attribute("dir", "ltr")
    expect(page.locator(".brand")).to_have_text("Консоль оператора")
    expect(page.locator("#chat-panel")).to_contain_text("Закрыть чат")
    expect(page.locator("#connection")).to_have_text("Подключено")
    page.locator("#reply_body").fill("Добрый день! Проверяю ваш заказ.")
    page.locator("#reply_body").press("Enter")
    expect(page.locator("#messages")).to_contain_text("Проверяю ваш заказ")
    page.screenshot(path=str(tmp_path / "console-ru.png"), full_page=True)

    # When the operator chooses Arabic
    switch_language(page, "العربية")

    # Then the page is Arabic and right to left: the chat list moves to the right-hand side
    expect(page.locator("html")).to_have_attribute("lang", "ar")
    expect(page.locator("html")).to_have_attribute("dir", "rtl")
    expect(page.locator(".brand")).to_have_text("لوحة الموظف")
    expect(page.locator("#connection")).to_have_text("متصل")
    sidebar, main = page.locator(".pane-list").bounding_box(), page.locator("#main").bounding_box()
    assert sidebar["x"] > main["x"]
    # The operator's own messages keep to the inline end, which is the left under rtl
    mine = page.locator("#messages .msg.by-agent").last.bounding_box()
    theirs = page.locator("#messages .msg.by-client").first.bounding_box()
    assert mine["x"] < theirs["x"]
    page.screenshot(path=str(tmp_path / "console-ar.png"), full_page=True)

    # And the choice is remembered: a reload (the browser still says English) stays Arabic
    page.reload()
    expect(page.locator("html")).to_have_attribute("dir", "rtl")
    connected(page)
    expect(page.locator("#connection")).to_have_text("متصل")
    print(f"screenshots: {tmp_path}")


def test_the_sign_in_page_in_arabic_from_the_browser(browser, console_server, tmp_path):
    # Given a browser that asks for Arabic and no choice made yet
    context = browser.new_context(viewport={"width": 1280, "height": 800}, locale="ar")
    try:
        page = context.new_page()
        # When it opens the console
        page.goto(console_server.url("/console/login/"))
        # Then the sign-in page is Arabic, right to left
        expect(page.locator("html")).to_have_attribute("dir", "rtl")
        expect(page.locator("h1")).to_have_text("لوحة الموظف")
        expect(page.get_by_role("button", name="تسجيل الدخول")).to_be_visible()
        page.screenshot(path=str(tmp_path / "login-ar.png"), full_page=True)
    finally:
        context.close()
