"""The support configuration in Django admin: its allowed tokens and IP allowlist decide who answers a
widget's chats as support, so a staff user reaches only the widgets an API token could be issued for
(apps.core.services.issuable_widgets), and a configuration never moves to another widget."""

import pytest

from apps.agents.tests.factories import AgentFactory
from apps.support.models import SupportConfig
from tests.support.admin import staff_client
from tests.support.factories import WidgetFactory

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


# --- tickets: state changes through the support API's services --------------------------------------


TICKET_PERMS = ("view_ticket", "change_ticket", "add_ticket", "delete_ticket")


def ticket(widget, number=1, *, user="u1", state="open", closed_ago=None):
    from datetime import timedelta

    from django.utils import timezone

    from apps.chats.tests.factories import ChatFactory, ContactFactory
    from apps.support.models import Ticket

    closed_at = timezone.now() - closed_ago if closed_ago is not None else None
    if state == "closed" and closed_at is None:
        closed_at = timezone.now() - timedelta(hours=1)
    return Ticket.objects.create(
        widget=widget,
        number=number,
        chat=ChatFactory(contact=ContactFactory(widget=widget)),
        app_user_id=user,
        state=state,
        reason="resolved" if state == "closed" else "",
        held_for_owner=state == "open",
        closed_at=closed_at,
    )


def change(client, row, **data):
    body = {"state": row.state, "reason": row.reason, "duplicate_of": "", "note": "", **data}
    return client.post(f"/admin/support/ticket/{row.pk}/change/", body)


def test_closing_a_ticket_in_admin_goes_through_the_close_service(widget):
    from apps.audit.models import AuditEntry

    row = ticket(widget)
    client = staff_client("support", *TICKET_PERMS, account_of=widget)
    response = change(client, row, state="closed", reason="resolved", note="done by phone")
    assert response.status_code == 302, response.context["adminform"].form.errors
    row.refresh_from_db()
    assert (row.state, row.reason, row.held_for_owner) == ("closed", "resolved", False)
    assert row.closed_at is not None
    assert [(n["action"], n["note"]) for n in row.agent_notes] == [("close", "done by phone")]
    entry = AuditEntry.objects.get(widget=widget, action="support_ticket.changed")
    assert entry.actor_type == "staff" and entry.changes["state"] == {"from": "open", "to": "closed"}


@pytest.mark.parametrize("reason", ["", "answered"])
def test_closing_takes_one_of_the_four_reasons_of_the_api(widget, reason):
    row = ticket(widget)
    client = staff_client("support", *TICKET_PERMS, account_of=widget)
    response = change(client, row, state="closed", reason=reason)
    assert response.status_code == 200 and "reason" in response.context["adminform"].form.errors
    row.refresh_from_db()
    assert row.state == "open" and row.closed_at is None


def test_a_duplicate_names_another_ticket_of_the_widget(widget, other_widget):
    row = ticket(widget)
    ticket(other_widget, number=7)
    client = staff_client("support", *TICKET_PERMS, account_of=widget)
    response = change(client, row, state="closed", reason="duplicate", duplicate_of="7")
    assert response.status_code == 200 and "duplicate_of" in response.context["adminform"].form.errors
    row.refresh_from_db()
    assert row.state == "open"


def test_reopening_in_admin_goes_through_the_reopen_service(widget):
    row = ticket(widget, state="closed")
    client = staff_client("support", *TICKET_PERMS, account_of=widget)
    assert change(client, row, state="open").status_code == 302
    row.refresh_from_db()
    assert (row.state, row.reason, row.closed_at) == ("open", "", None)


def test_a_ticket_is_not_reopened_past_the_window(widget):
    from datetime import timedelta

    row = ticket(widget, state="closed", closed_ago=timedelta(days=8))
    client = staff_client("support", *TICKET_PERMS, account_of=widget)
    response = change(client, row, state="open")
    assert response.status_code == 200 and "7 days" in response.content.decode()
    row.refresh_from_db()
    assert row.state == "closed"


def test_a_ticket_is_not_reopened_while_its_account_has_an_open_one(widget):
    row = ticket(widget, state="closed")
    ticket(widget, number=2)
    client = staff_client("support", *TICKET_PERMS, account_of=widget)
    response = change(client, row, state="open")
    assert response.status_code == 200 and "already has an open ticket" in response.content.decode()
    row.refresh_from_db()
    assert row.state == "closed"


def test_the_reason_changes_only_with_the_state(widget):
    row = ticket(widget, state="closed")
    client = staff_client("support", *TICKET_PERMS, account_of=widget)
    response = change(client, row, reason="false_positive")
    assert response.status_code == 200 and "reason" in response.context["adminform"].form.errors
    row.refresh_from_db()
    assert row.reason == "resolved"


def test_only_the_state_is_changed_in_admin(widget):
    row = ticket(widget)
    client = staff_client("support", *TICKET_PERMS, account_of=widget)
    form = client.get(f"/admin/support/ticket/{row.pk}/change/").context["adminform"].form
    assert set(form.fields) == {"state", "reason", "duplicate_of", "note"}
    change(client, row, priority="high", held_for_owner="", app_user_id="u2")
    row.refresh_from_db()
    assert (row.priority, row.held_for_owner, row.app_user_id) == ("normal", True, "u1")


def test_admin_adds_no_ticket(widget):
    from apps.chats.tests.factories import ChatFactory, ContactFactory
    from apps.support.models import Ticket

    client = staff_client("support", *TICKET_PERMS, account_of=widget)
    chat = ChatFactory(contact=ContactFactory(widget=widget))
    response = client.post(
        "/admin/support/ticket/add/",
        {"widget": widget.pk, "number": 1, "chat": chat.pk, "app_user_id": "u1", "state": "open"},
    )
    assert response.status_code == 403 and not Ticket.objects.exists()


def test_another_accounts_ticket_is_not_shown_or_changed(widget, other_widget):
    theirs = ticket(other_widget)
    client = staff_client("support", *TICKET_PERMS, account_of=widget)
    response = change(client, theirs, state="closed", reason="resolved")
    assert response.status_code == 302 and response["Location"] == "/admin/"
    theirs.refresh_from_db()
    assert theirs.state == "open"


def test_the_ticket_of_a_contact_under_erasure_reads_as_missing(widget):
    from apps.erasure.models import PendingErasure

    row = ticket(widget)
    PendingErasure.objects.create(widget=widget, contact_id=row.chat.contact_id)
    client = staff_client("support", *TICKET_PERMS, account_of=widget)
    response = change(client, row, state="closed", reason="resolved")
    assert response.status_code == 302 and response["Location"] == "/admin/"
    row.refresh_from_db()
    assert row.state == "open"
