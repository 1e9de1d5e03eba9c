"""Data protection in Django admin: contacts (names, e-mails, phones), their erasure and a widget's
retention are a tenant's data, so a staff user reaches only the widgets an API token could be issued
for (apps.core.services.issuable_widgets), and a retention row never moves to another widget."""

import pytest

from apps.chats.tests.factories import ContactFactory
from apps.erasure.models import PendingErasure
from apps.privacy.models import RetentionPolicy
from tests.support.admin import staff_client
from tests.support.factories import WidgetFactory

pytestmark = pytest.mark.django_db

CONTACTS = "/admin/chats/contact/"


def test_another_accounts_contacts_are_neither_listed_nor_erased(widget, other_widget):
    theirs = ContactFactory(widget=other_widget, email="victim@example.com")
    client = staff_client("chats", "view_contact", "change_contact", account_of=widget)
    assert "victim@example.com" not in client.get(CONTACTS).content.decode()
    assert client.get(f"{CONTACTS}{theirs.pk}/change/").status_code == 302
    client.post(CONTACTS, {"action": "erase", "_selected_action": [theirs.pk], "index": 0})
    assert not PendingErasure.objects.filter(contact_id=theirs.pk).exists()


def test_the_own_accounts_contacts_are_listed(widget):
    ContactFactory(widget=widget, email="mine@example.com")
    client = staff_client("chats", "view_contact", account_of=widget)
    assert "mine@example.com" in client.get(CONTACTS).content.decode()


def test_another_accounts_retention_is_neither_shown_nor_set(widget, other_widget):
    theirs = RetentionPolicy.objects.create(widget=other_widget, chats_days=365)
    client = staff_client(
        "privacy", "add_retentionpolicy", "change_retentionpolicy", "view_retentionpolicy", account_of=widget
    )
    assert client.get(f"/admin/privacy/retentionpolicy/{theirs.pk}/change/").status_code == 302
    client.post(f"/admin/privacy/retentionpolicy/{theirs.pk}/change/", {"widget": other_widget.pk, "chats_days": 30})
    client.post("/admin/privacy/retentionpolicy/add/", {"widget": other_widget.pk, "chats_days": 30})
    theirs.refresh_from_db()
    assert theirs.chats_days == 365


def test_a_retention_row_does_not_move_to_another_widget(widget):
    mine = RetentionPolicy.objects.create(widget=widget, chats_days=365)
    another_of_mine = WidgetFactory(account=widget.account)
    client = staff_client("privacy", "change_retentionpolicy", "view_retentionpolicy", account_of=widget)
    client.post(f"/admin/privacy/retentionpolicy/{mine.pk}/change/", {"widget": another_of_mine.pk, "chats_days": 30})
    mine.refresh_from_db()
    assert mine.widget_id == widget.pk
    assert not RetentionPolicy.objects.filter(widget=another_of_mine, chats_days=30).exists()


def test_another_accounts_pending_erasures_are_not_listed(widget, other_widget):
    theirs = ContactFactory(widget=other_widget)
    PendingErasure.objects.create(widget=other_widget, contact_id=theirs.pk, source=PendingErasure.Source.API)
    client = staff_client("erasure", "view_pendingerasure", account_of=widget)
    assert str(other_widget) not in client.get("/admin/erasure/pendingerasure/").content.decode()
