"""The widget's rating settings in Chromium: `on_request` asks (with stars) only after an operator's
rate request, `after_close` asks when the chat closes (here with thumbs, stored as 1 and 5) using the
prompt of the visitor's language, `off` never asks. The widget runs on the demo page of a server of
this module; the operator side speaks the REST API."""

from __future__ import annotations

import json
import secrets

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import SERVER_ENV, api_client
from tests.browser.widget_pages import open_widget, operator_reply, send_text
from tests.live import start_web

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def rating_server(live_template, tmp_path_factory):
    where = tmp_path_factory.mktemp("rating-server")
    server = start_web(live_template.copy(where), live_template.seed, where / "web.log", **SERVER_ENV)
    try:
        yield server
    finally:
        server.terminate()


def configure(server, **values) -> None:
    # No operator console is open on this server: the chat stays open while nobody is online.
    body = {"widget_offline_mode": "chat", "widget_supported_languages": ["ru", "en", "de"], **values}
    response = call(server, "PATCH", "/api/v1/widget/settings", json=body)
    assert response.status_code == 200, response.text


def call(server, method: str, path: str, **kwargs):
    headers = {"X-Service-Idempotency-Key": secrets.token_hex(8)} if method != "GET" else {}
    return api_client(server)(method, path, headers=headers, **kwargs)


def reply(server, chat_id: int, text: str) -> None:
    operator_reply(api_client(server), server, chat_id, {"type": "text", "body": text})


def closed_seen(page, chat_id: int) -> None:
    """Wait until the widget has taken the room's close frame (it remembers the closed room)."""
    page.wait_for_function(
        """(id) => Object.keys(localStorage).some(
             (k) => k.startsWith("chatwidget:") && JSON.parse(localStorage.getItem(k)).closed === id)""",
        arg=chat_id,
    )


def test_on_request_asks_with_stars_only_after_a_rate_request(page, rating_server, shot):
    # Given the default mode and scale
    configure(rating_server, rating_mode="on_request", rating_scale="five", rating_prompt_i18n={})
    page.goto(rating_server.url("/demo/"))
    open_widget(page)
    chat_id = send_text(page, "Where is my order?")

    # When an operator answers, nothing asks for a rating yet
    reply(rating_server, chat_id, "On its way")
    expect(page.locator("chat-widget .msg", has_text="On its way")).to_be_visible()
    expect(page.get_by_role("group", name="Rate this chat")).to_have_count(0)

    # When the operator requests a rating
    assert call(rating_server, "POST", f"/api/v1/chats/{chat_id}/rate-request").status_code == 202

    # Then five stars ask, and a star rates
    stars = page.get_by_role("group", name="Rate this chat")
    expect(stars).to_be_visible()
    expect(stars.get_by_role("button")).to_have_count(5)
    shot(page, "stars")
    with page.expect_response(lambda r: r.url.endswith("/rating") and r.request.method == "POST") as rated:
        stars.get_by_role("button", name="4 of 5").click()
    assert rated.value.status == 201
    assert json.loads(rated.value.request.post_data) == {"value": 4}
    expect(page.get_by_text("Thank you for your rating!")).to_be_visible()
    expect(stars).to_have_count(0)


def test_after_close_asks_with_thumbs_in_the_visitors_language(page, rating_server, shot):
    # Given after_close with thumbs, a German prompt and a widget that starts in German
    configure(
        rating_server,
        rating_mode="after_close",
        rating_scale="thumbs",
        rating_prompt_i18n={"de": "Wie war das Gespräch?", "ru": "Как вам разговор?"},
        widget_default_language="de",
    )
    page.goto(rating_server.url("/demo/"))
    open_widget(page)
    chat_id = send_text(page, "Hallo", name="Nachricht eingeben…")
    reply(rating_server, chat_id, "Guten Tag")
    expect(page.locator("chat-widget .msg", has_text="Guten Tag")).to_be_visible()
    prompt = page.get_by_role("group", name="Wie war das Gespräch?")
    expect(prompt).to_have_count(0)

    # When the operator closes the chat
    assert call(rating_server, "POST", f"/api/v1/chats/{chat_id}/close").status_code == 200

    # Then the widget asks in German with two thumbs; thumbs up is stored as 5
    expect(prompt).to_be_visible()
    expect(prompt.get_by_role("button")).to_have_count(2)
    expect(prompt.get_by_role("button", name="Daumen runter")).to_be_visible()
    shot(page, "thumbs")
    with page.expect_response(lambda r: r.url.endswith("/rating") and r.request.method == "POST") as rated:
        prompt.get_by_role("button", name="Daumen hoch").click()
    assert rated.value.status == 201
    assert json.loads(rated.value.request.post_data) == {"value": 5}
    expect(prompt).to_have_count(0)


def test_a_language_without_a_prompt_shows_the_default_phrase(page, rating_server):
    configure(
        rating_server,
        rating_mode="after_close",
        rating_scale="thumbs",
        rating_prompt_i18n={"de": "Wie war das Gespräch?"},
        widget_default_language="en",
    )
    page.goto(rating_server.url("/demo/"))
    open_widget(page)
    chat_id = send_text(page, "Hello")
    assert call(rating_server, "POST", f"/api/v1/chats/{chat_id}/close").status_code == 200
    thumbs = page.get_by_role("group", name="Rate this chat")
    expect(thumbs).to_be_visible()
    with page.expect_response(lambda r: r.url.endswith("/rating") and r.request.method == "POST") as rated:
        thumbs.get_by_role("button", name="Thumbs down").click()
    assert json.loads(rated.value.request.post_data) == {"value": 1}


def test_off_never_asks(page, rating_server, shot):
    configure(
        rating_server, rating_mode="off", rating_scale="five", rating_prompt_i18n={}, widget_default_language="en"
    )
    page.goto(rating_server.url("/demo/"))
    open_widget(page)
    chat_id = send_text(page, "Hello there")
    reply(rating_server, chat_id, "Hi, how can I help?")
    expect(page.locator("chat-widget .msg", has_text="Hi, how can I help?")).to_be_visible()

    # When the operator requests a rating (its message reaches the widget before the next one)
    assert call(rating_server, "POST", f"/api/v1/chats/{chat_id}/rate-request").status_code == 202
    reply(rating_server, chat_id, "One more thing")
    expect(page.locator("chat-widget .msg", has_text="One more thing")).to_be_visible()
    # And closes the chat
    assert call(rating_server, "POST", f"/api/v1/chats/{chat_id}/close").status_code == 200
    closed_seen(page, chat_id)

    # Then nothing asks for a rating, the request's message included
    expect(page.get_by_role("group", name="Rate this chat")).to_have_count(0)
    expect(page.locator("chat-widget .msg.sys")).to_have_count(0)
    shot(page, "off")
