"""Browser tests: pytest-playwright driving Debian's Chromium against the real web process.

- The server is the Procfile's `web` command (tests/live.py) on a free loopback port, on a copy of a
  migrated VAR_DIR with the seeded demo widget (`manage.py seed_demo`). It runs on the embedded
  default, where the channel layer lives inside the web process: a REST write and the visitor's
  websocket meet there, so the worker is not needed for anything the widget shows (it delivers
  webhooks and runs sweeps). Tests that need it call `start_process("worker")` (tests/conftest.py).
- The browser is /usr/bin/chromium (Debian's package; `.ci/run` installs it with apt), passed to
  Playwright as `executable_path`. Playwright's own browser download (`playwright install`) is never
  used: it cannot reach its download host here. Without the binary every `browser` test is skipped
  with the reason.
- `shot(page)` saves `var/screenshots/<test name>.png` (var/ is gitignored; CI keeps it as
  artifacts).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import requests

from tests.live import ROOT, WebServer, start_web

CHROMIUM = Path(os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"))
SCREENSHOTS = ROOT / "var" / "screenshots"
# Many short tests start sessions from 127.0.0.1: the per-address visitor budgets are for abuse.
SERVER_ENV = {
    "VISITOR_SESSIONS_PER_ADDRESS_PER_HOUR": "0",
    "VISITOR_MESSAGES_PER_ADDRESS_PER_MINUTE": "0",
    "API_RATE_LIMIT_PER_MINUTE": "100000",
}


def chromium_missing() -> str | None:
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is missing (apt-get install chromium; .ci/run does it)"
    return None


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    # trylast: after pytest-django's reordering (database tests first), which would otherwise put
    # browser tests that use the database before the rest. Browser tests run last: Playwright's sync API keeps an event loop running in the test thread
    # until the session ends and the session fixture below allows async-unsafe calls; tests that run
    # after them (asyncio.run, check --deploy in a subprocess that inherits the environment) must
    # not see either.
    here = Path(__file__).parent
    unmarked = [item.nodeid for item in items if here in item.path.parents and not item.get_closest_marker("browser")]
    if unmarked:
        # This directory's session fixture allows async-unsafe calls: an unmarked test here would
        # run among the others and turn that on for the rest of the session.
        raise pytest.UsageError(f"tests/browser needs `pytestmark = pytest.mark.browser` in: {unmarked}")
    browser = [item for item in items if item.get_closest_marker("browser") is not None]
    if browser:
        others = [item for item in items if item.get_closest_marker("browser") is None]
        items[:] = others + browser
    reason = chromium_missing()
    if reason is None:
        return
    for item in browser:
        item.add_marker(pytest.mark.skip(reason=f"browser test: {reason}"))


@pytest.fixture(autouse=True, scope="session")
def _sync_playwright_beside_django():
    """Playwright's sync API keeps an asyncio loop running in the test thread, which Django's
    async-safety check takes for async code when pytest-django's fixtures touch the test database
    around a browser test. These tests never share a connection with the browser: allow it here,
    for the browser tests only (an autouse fixture of this directory)."""
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    yield
    if previous is None:
        os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    else:
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture(autouse=True, scope="session")
def _patient_expectations():
    """Assertions wait up to 15 s (Playwright's default is 5 s): CI shares two cores with the rest
    of the suite, and a live reply crosses the web process, the channel layer and a websocket."""
    from playwright.sync_api import expect

    expect.set_options(timeout=15_000)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """pytest-playwright's launch options plus Debian's Chromium binary (never a downloaded build)."""
    args = list(browser_type_launch_args.get("args", []))
    # Containers often run as root without a usable /dev/shm size.
    args += ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"]
    return {**browser_type_launch_args, "executable_path": str(CHROMIUM), "args": args}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": {"width": 1280, "height": 800}, "locale": "en-US"}


@pytest.fixture(scope="session")
def web_server(live_template, tmp_path_factory, browser) -> WebServer:
    """One web process for the browser tests of the session (each test uses its own browser context,
    so its own visitor session). An operator's console stays open in a browser context of its own
    for the whole session, so the widget is online and offers the chat (the config's `online` is
    live presence); without one it shows the offline form. Separate servers: `start_server`
    (tests/conftest.py)."""
    from tests.browser.console_pages import add_operator, console_open

    where = tmp_path_factory.mktemp("browser-server")
    var_dir = live_template.copy(where)
    add_operator(var_dir, live_template.seed["button_guid"])
    server = start_web(var_dir, live_template.seed, where / "web.log", **SERVER_ENV)
    try:
        with console_open(browser, server):
            yield server
    finally:
        server.terminate()


def api_client(server: WebServer):
    """call(method, path, **requests kwargs) against `server` with its seeded token (every scope)."""

    def call(method: str, path: str, **kwargs) -> requests.Response:
        headers = {"Authorization": f"Bearer {server.seed['token']}", **kwargs.pop("headers", {})}
        return requests.request(method, server.url(path), headers=headers, timeout=15, **kwargs)

    return call


@pytest.fixture
def api(web_server):
    """requests against the session's web server with the seeded token (every scope)."""
    return api_client(web_server)


@pytest.fixture
def host_pages():
    """Pages on another loopback origin (a customer's site): `host_pages.add(path, html, headers)`."""
    from tests.browser.widget_pages import HostPages

    pages = HostPages()
    yield pages
    pages.close()


@pytest.fixture
def shot(request):
    """shot(page, suffix="") -> Path: a full-page screenshot under var/screenshots/<test>[-suffix].png."""

    def save(page, suffix: str = "") -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
        path = SCREENSHOTS / f"{name}{'-' + suffix if suffix else ''}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return save
