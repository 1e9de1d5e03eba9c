"""The compat admin mints path secrets (a bot token, a legacy channel secret) that read and write a
widget's chats, so it reaches the widgets an API token could be issued for: the staff user's own
account's, or every widget with `core.issue_for_any_widget` (apps.core.admin)."""

import pytest

from apps.channels.models import CustomChannel
from apps.compat import services
from apps.compat.models import CompatBot
from tests.support.admin import staff_client

pytestmark = pytest.mark.django_db

URL = "https://127.0.0.1:9/hook"


@pytest.fixture(autouse=True)
def loopback(settings):
    settings.OUTBOUND_ALLOW_LOOPBACK = True


BOT = ("add_compatbot", "change_compatbot", "view_compatbot")
CHANNEL = ("add_legacychatchannel", "change_legacychatchannel", "view_legacychatchannel")


def test_a_bot_for_another_accounts_widget_is_refused(widget):
    client = staff_client("compat", *BOT)
    response = client.post("/admin/compat/compatbot/add/", {"widget": widget.pk, "url": URL, "is_active": "on"})
    assert response.status_code == 200 and "Select a valid choice" in response.content.decode()
    assert not CompatBot.objects.exists()


def test_a_bot_for_the_own_accounts_widget_is_created(widget):
    client = staff_client("compat", *BOT, account_of=widget)
    response = client.post("/admin/compat/compatbot/add/", {"widget": widget.pk, "url": URL, "is_active": "on"})
    assert response.status_code == 302
    assert CompatBot.objects.get().widget_id == widget.pk


def test_issue_for_any_widget_reaches_every_widget(widget):
    client = staff_client("compat", *BOT, "core.issue_for_any_widget")
    response = client.post("/admin/compat/compatbot/add/", {"widget": widget.pk, "url": URL, "is_active": "on"})
    assert response.status_code == 302


def test_another_accounts_bots_are_neither_listed_nor_changed(widget, other_widget):
    bot, _, _ = services.create_compat_bot(widget=other_widget, url=URL)
    client = staff_client("compat", *BOT, account_of=widget)
    assert f"/admin/compat/compatbot/{bot.pk}/change/" not in client.get("/admin/compat/compatbot/").content.decode()
    response = client.post(f"/admin/compat/compatbot/{bot.pk}/change/", {"url": URL + "/moved", "is_active": ""})
    assert response.status_code == 302 and response["Location"] == "/admin/"  # "does not exist"
    bot.refresh_from_db()
    assert bot.url == URL and bot.is_active


def test_a_channel_for_another_accounts_widget_is_refused(widget):
    client = staff_client("compat", *CHANNEL)
    response = client.post("/admin/compat/legacychatchannel/add/", {"widget": widget.pk, "url": URL, "is_active": "on"})
    assert response.status_code == 200 and "Select a valid choice" in response.content.decode()
    assert not CustomChannel.objects.exists()


def test_another_accounts_channels_are_not_listed(widget, other_widget):
    channel_id, _ = services.create_compat_channel(widget=other_widget, url=URL)
    client = staff_client("compat", *CHANNEL, account_of=widget)
    listing = client.get("/admin/compat/legacychatchannel/").content.decode()
    assert f"/admin/compat/legacychatchannel/{channel_id}/change/" not in listing
    assert client.get(f"/admin/compat/legacychatchannel/{channel_id}/change/").status_code == 302
