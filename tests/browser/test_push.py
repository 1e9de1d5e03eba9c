"""The operator's Notifications page in Chromium: reached from the account menu, the script finds the
console's service worker and offers to allow notifications, a device's choices saved from the
keyboard, clean under axe at 1280 and 390 px. The screenshot is the guide's
(docs/img/operators/notifications.png, docs/operators/notifications.md).

Chromium without a network has no push service to subscribe with, so the subscription a browser
posts is covered by apps/console/tests/test_push_notifications.py and the push itself by
apps/push/tests (a loopback RFC 8030 service that decrypts it)."""

from __future__ import annotations

from pathlib import Path

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from apps.push.management.commands.generate_vapid_keys import new_pair
from apps.push.tests.push_service import Device
from tests.browser.conftest import SERVER_ENV
from tests.browser.console_pages import EMAIL, WAIT, sign_in
from tests.live import manage, start_web

pytestmark = pytest.mark.browser

IMAGE = Path(__file__).resolve().parents[2] / "docs" / "img" / "operators" / "notifications.png"
PHONE = {"width": 390, "height": 844}

ADD_DEVICE = (
    "import json; from apps.agents.models import Agent; from apps.push import services; "
    "a = Agent.objects.get(user__email={email!r}); "
    "services.subscribe_device(agent=a, data=json.loads({data!r}), user_agent='Chrome on Android')"
)


@pytest.fixture(scope="module")
def server(live_template, tmp_path_factory):
    import json

    from tests.browser.console_pages import PASSWORD

    where = tmp_path_factory.mktemp("push-server")
    var_dir = live_template.copy(where)
    guid = live_template.seed["button_guid"]
    manage(var_dir, "create_agent", "--widget", guid, "--email", EMAIL, "--name", "Olga", "--password", PASSWORD)
    data = json.dumps(Device().subscription("https://push.example.net/send/olga-phone"))
    manage(var_dir, "shell", "-c", ADD_DEVICE.format(email=EMAIL, data=data))
    private, public = new_pair()
    env = {**SERVER_ENV, "VAPID_PRIVATE_KEY": private, "VAPID_PUBLIC_KEY": public}
    server = start_web(var_dir, live_template.seed, where / "web.log", **env)
    try:
        yield server
    finally:
        server.terminate()


def axe_clean(page) -> None:
    results = Axe().run(page)
    violations = [
        f"{v['id']} ({v['impact']}): {v['help']} — {[n['target'] for n in v['nodes']][:5]}"
        for v in results.response["violations"]
    ]
    assert violations == []


def test_an_operator_chooses_notifications_from_the_keyboard(browser, server):
    context = browser.new_context(viewport={"width": 1280, "height": 800}, locale="en-US")
    context.grant_permissions(["notifications"], origin=server.url("/").rstrip("/"))
    page = context.new_page()
    try:
        sign_in(page, server)
        # The account menu leads to the page
        page.locator("details.account summary").click()
        page.get_by_role("link", name="Notifications").click()
        expect(page.get_by_role("heading", name="Notifications", level=1)).to_be_visible()

        # The script found the service worker: this browser is offered notifications
        expect(page.locator("#push-state")).to_have_text("This device gets no notifications yet.", timeout=WAIT)
        expect(page.get_by_role("button", name="Allow notifications on this device")).to_be_visible()

        # The phone added earlier: its choices, changed from the keyboard
        queue = page.get_by_label("A visitor starts waiting in the queue")
        expect(queue).to_be_checked()
        queue.focus()
        page.keyboard.press("Space")
        page.keyboard.press("Tab")
        page.keyboard.press("Tab")
        page.keyboard.press("Tab")
        page.keyboard.press("Space")  # previews on
        page.get_by_role("button", name="Save").focus()
        page.keyboard.press("Enter")
        expect(page.locator(".flash")).to_contain_text("Saved.")
        expect(page.get_by_label("A visitor starts waiting in the queue")).not_to_be_checked()
        expect(page.get_by_label("Show the words of the message (previews)")).to_be_checked()
        axe_clean(page)
        page.screenshot(path=str(IMAGE), full_page=True)

        page.set_viewport_size(PHONE)
        page.reload()
        expect(page.locator("#push-state")).to_have_text("This device gets no notifications yet.", timeout=WAIT)
        axe_clean(page)
        page.screenshot(path=str(IMAGE.with_name("notifications-phone.png")), full_page=True)
    finally:
        context.close()
