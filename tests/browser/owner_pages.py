"""Helpers of the owner's settings pages' browser tests: a web process where the demo widget's owner
(role `owner`, the row `seed_demo` makes) has a console password, and signing in as that owner."""

from __future__ import annotations

from contextlib import contextmanager

from tests.browser.conftest import SERVER_ENV
from tests.browser.console_pages import sign_in
from tests.live import manage, start_web

OWNER_EMAIL = "demo@example.com"  # apps.widget.selectors.DEMO_OWNER_EMAIL
OWNER_PASSWORD = "Owner-Browser-Test-76"
WAIT = 10_000  # ms

SET_PASSWORD = (
    "from apps.agents.models import Agent; "
    "a = Agent.objects.get(widget__button_guid={guid!r}, role='owner', user__email={email!r}); "
    "a.user.set_password({password!r}); a.user.save()"
)


@contextmanager
def start_owner_server(live_template, tmp_path_factory, **env):
    """The web process on a copy of the seeded VAR_DIR, the demo owner with a console password."""
    where = tmp_path_factory.mktemp("owner-server")
    var_dir = live_template.copy(where)
    guid = live_template.seed["button_guid"]
    manage(var_dir, "shell", "-c", SET_PASSWORD.format(guid=guid, email=OWNER_EMAIL, password=OWNER_PASSWORD))
    server = start_web(var_dir, live_template.seed, where / "web.log", **{**SERVER_ENV, **env})
    server.var_dir = var_dir
    try:
        yield server
    finally:
        server.terminate()


def sign_in_owner(page, server) -> None:
    sign_in(page, server, email=OWNER_EMAIL, password=OWNER_PASSWORD)
