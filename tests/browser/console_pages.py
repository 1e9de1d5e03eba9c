"""Helpers of the console's browser tests: a web process with operators who have console passwords,
signing in, and waiting for the console's socket."""

from __future__ import annotations

from contextlib import contextmanager

from playwright.sync_api import expect

from tests.browser.conftest import SERVER_ENV
from tests.live import manage, start_web

EMAIL = "console-operator@example.com"
PASSWORD = "Console-Browser-Test-71"
COLLEAGUE_EMAIL = "console-colleague@example.com"
COLLEAGUE_PASSWORD = "Console-Browser-Test-72"
WAIT = 10_000  # ms


@contextmanager
def start_console_server(live_template, tmp_path_factory):
    """The web process on a copy of the seeded VAR_DIR with two operators of the demo widget, both
    with a console password (`create_agent --password`, as docs/console.md says)."""
    where = tmp_path_factory.mktemp("console-server")
    var_dir = live_template.copy(where)
    guid = live_template.seed["button_guid"]
    manage(var_dir, "create_agent", "--widget", guid, "--email", EMAIL, "--name", "Olga", "--password", PASSWORD)
    manage(
        var_dir,
        "create_agent",
        "--widget",
        guid,
        "--email",
        COLLEAGUE_EMAIL,
        "--name",
        "Pavel",
        "--password",
        COLLEAGUE_PASSWORD,
    )
    server = start_web(var_dir, live_template.seed, where / "web.log", **SERVER_ENV)
    try:
        yield server
    finally:
        server.terminate()


def add_operator(var_dir, guid: str, *, email: str = EMAIL, name: str = "Olga", password: str = PASSWORD) -> None:
    """An operator of the widget with a console password (`create_agent --password`); the server
    may already run (they share the VAR_DIR's database)."""
    manage(var_dir, "create_agent", "--widget", guid, "--email", email, "--name", name, "--password", password)


@contextmanager
def console_open(browser, server, *, email: str = EMAIL, password: str = PASSWORD):
    """An operator's console signed in and connected in its own browser context for the block: the
    operator is online (live presence), so the widget offers the chat, as in production."""
    context = browser.new_context(viewport={"width": 1280, "height": 800}, locale="en-US")
    page = context.new_page()
    try:
        sign_in(page, server, email=email, password=password)
        yield page
    finally:
        context.close()


def sign_in(page, server, *, email: str = EMAIL, password: str = PASSWORD) -> None:
    page.goto(server.url("/console/login/"))
    page.get_by_label("E-mail").fill(email)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(server.url("/console/"))
    connected(page)


def connected(page) -> None:
    expect(page.locator("#connection")).to_have_attribute("data-state", "open", timeout=WAIT)


def open_chat(page, chat_id: int) -> None:
    page.locator(f'.chat-row[data-chat-id="{chat_id}"] a').click()
    expect(page.locator("#chat-panel")).to_be_visible()
    connected(page)


def wait_for(predicate, page, timeout_ms: int = WAIT) -> None:
    """Poll a Python predicate while the browser keeps running."""
    for _ in range(timeout_ms // 100):
        if predicate():
            return
        page.wait_for_timeout(100)
    assert predicate()
