"""The support configuration in Django admin: its allowed tokens and IP allowlist decide who answers a
widget's chats as support, so a staff user reaches only the widgets an API token could be issued for
(apps.core.services.issuable_widgets), and a configuration never moves to another widget."""

import pytest

from apps.agents.tests.factories import AgentFactory
from apps.core.testing.admin import staff_client
from apps.core.testing.factories import WidgetFactory
from apps.support.models import SupportConfig

pytestmark = pytest.mark.django_db

PAGES = "/admin/support/supportconfig/"
PERMS = ("add_supportconfig", "change_supportconfig", "view_supportconfig")


def staff(account_of):
    return staff_client("support", *PERMS, account_of=account_of)


def form(widget, **overrides) -> dict:
    return {
        "widget": widget.pk,
        "operator": AgentFactory(widget=widget).pk,
        "enabled": "on",
        "allowed_tokens": '["cwt_AbCdEf12"]',
        "ip_allowlist": '["203.0.113.7/32"]',
        "link_hosts": "[]",
        "exact_links": "[]",
        "ipv4_literals": "[]",
        "messenger_handles": "[]",
        "emails": "[]",
        "channels": '["widget"]',
        "room_reply_limit": '{"count": 3, "window_sec": 1800}',
        "token_reply_limit": '{"per_10_min": 20, "per_day": 300}',
        **overrides,
    }


def test_another_accounts_configuration_is_neither_listed_nor_changed(widget, other_widget):
    theirs = SupportConfig.objects.create(widget=other_widget, ip_allowlist=["198.51.100.9/32"])
    client = staff(account_of=widget)
    assert "198.51.100.9" not in client.get(f"{PAGES}{theirs.pk}/change/").content.decode()
    assert f"{PAGES}{theirs.pk}/change/" not in client.get(PAGES).content.decode()
    response = client.post(f"{PAGES}{theirs.pk}/change/", form(other_widget))
    assert response.status_code == 302 and response["Location"] == "/admin/"  # "does not exist"
    theirs.refresh_from_db()
    assert not theirs.enabled and theirs.ip_allowlist == ["198.51.100.9/32"]


def test_a_configuration_is_not_added_for_another_accounts_widget(widget, other_widget):
    response = staff(account_of=widget).post(f"{PAGES}add/", form(other_widget))
    assert response.status_code == 200 and not SupportConfig.objects.filter(widget=other_widget).exists()


def test_a_configuration_does_not_move_to_another_widget(widget):
    mine = SupportConfig.objects.create(widget=widget)
    another_of_mine = WidgetFactory(account=widget.account)
    response = staff(account_of=widget).post(f"{PAGES}{mine.pk}/change/", form(another_of_mine))
    mine.refresh_from_db()
    assert mine.widget_id == widget.pk
    assert not SupportConfig.objects.filter(widget=another_of_mine).exists()
    assert response.status_code in (200, 302)


def test_a_change_is_checked_against_the_configurations_own_widget(widget):
    mine = SupportConfig.objects.create(widget=widget)
    response = staff(account_of=widget).post(f"{PAGES}{mine.pk}/change/", form(widget, ip_allowlist="[]"))
    assert response.status_code == 200 and "an IP allowlist" in response.content.decode()
    mine.refresh_from_db()
    assert not mine.enabled


# --- the support log and leases ---------------------------------------------------------------------


def action(widget, reason):
    from apps.support.models import SupportAction

    return SupportAction.objects.create(
        widget=widget, token_prefix="cwt_AbCd", kind="reply", method="POST", path="/x", reason=reason
    )


def test_another_accounts_support_log_is_not_listed(widget, other_widget):
    action(other_widget, "theirs_reason")
    client = staff_client("support", "view_supportaction", account_of=widget)
    assert "theirs_reason" not in client.get("/admin/support/supportaction/").content.decode()


def test_the_support_log_is_not_deleted_in_admin(widget):
    from apps.support.models import SupportAction

    row = action(widget, "mine_reason")
    client = staff_client("support", "view_supportaction", "delete_supportaction", account_of=widget)
    client.post(f"/admin/support/supportaction/{row.pk}/delete/", {"post": "yes"})
    assert SupportAction.objects.filter(pk=row.pk).exists()


def test_a_support_lease_is_not_written_in_admin(widget):
    from apps.chats.tests.factories import ChatFactory, ContactFactory
    from apps.core.services import issue_token
    from apps.support.models import SupportClaim

    chat = ChatFactory(contact=ContactFactory(widget=widget))
    client = staff_client("support", "add_supportclaim", "view_supportclaim", account_of=widget)
    response = client.post(
        "/admin/support/supportclaim/add/",
        {
            "widget": widget.pk,
            "chat": chat.pk,
            "token": issue_token(widget=widget, scopes=["chats:read"]).token.pk,
            "claim_id": "c1",
            "service_agent": "me",
            "claimed_at_0": "2026-01-01",
            "claimed_at_1": "00:00:00",
            "expires_at_0": "2099-01-01",
            "expires_at_1": "00:00:00",
        },
    )
    assert response.status_code == 403 and not SupportClaim.objects.exists()
