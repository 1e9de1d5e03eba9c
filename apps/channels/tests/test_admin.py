"""The custom channel admin: a channel's url receives its widget's operator messages, so a staff user
reaches only the widgets an API token could be issued for (apps.core.services.issuable_widgets), and
a url passes the webhook destination rule, as the API's registration does."""

import pytest

from apps.channels.models import CustomChannel
from apps.core.testing.admin import staff_client

pytestmark = pytest.mark.django_db

PERMS = ("change_customchannel", "view_customchannel")


def staff(account_of):
    return staff_client("apps_channels", *PERMS, account_of=account_of)


def channel(widget, url="https://hooks.example.com/channel") -> CustomChannel:
    return CustomChannel.objects.create(widget=widget, name="App", url=url, secret_encrypted="")


def test_another_accounts_channels_are_neither_listed_nor_changed(widget, other_widget):
    theirs = channel(other_widget)
    client = staff(account_of=widget)
    assert "hooks.example.com/channel" not in client.get("/admin/apps_channels/customchannel/").content.decode()
    response = client.post(
        f"/admin/apps_channels/customchannel/{theirs.pk}/change/",
        {"name": "App", "url": "https://attacker.example/x", "is_active": "on"},
    )
    assert response.status_code == 302 and response["Location"] == "/admin/"  # "does not exist"
    theirs.refresh_from_db()
    assert theirs.url == "https://hooks.example.com/channel"


def test_the_own_accounts_channels_are_listed(widget):
    channel(widget)
    client = staff(account_of=widget)
    assert "hooks.example.com/channel" in client.get("/admin/apps_channels/customchannel/").content.decode()


@pytest.mark.parametrize("url", ["http://hooks.example.com/x", "https://169.254.169.254/latest", "https://10.0.0.1/"])
def test_a_url_the_destination_rule_refuses_is_a_form_error(widget, url):
    mine = channel(widget)
    client = staff(account_of=widget)
    response = client.post(
        f"/admin/apps_channels/customchannel/{mine.pk}/change/", {"name": "App", "url": url, "is_active": "on"}
    )
    page = response.content.decode()
    assert response.status_code == 200 and ("Refused destination" in page or "public address" in page)
    mine.refresh_from_db()
    assert mine.url == "https://hooks.example.com/channel"
