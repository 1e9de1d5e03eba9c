"""The owner's identity verification page (Developers): the mode written through the settings
service (a refusal in the API's words), a new identity secret shown once and audited with the owner
as the actor; and the "verified" / "not verified" mark beside a contact's name in the chat view."""

from __future__ import annotations

import re
import uuid

import pytest
from django.utils import timezone

from apps.audit.models import AuditEntry
from apps.chats.models import Contact
from apps.widget import selectors as widget_selectors
from apps.widget import services as widget_services
from apps.widget.models import IdentitySecret
from tests.support.plugin import assert_problem

from .conftest import make_chat

pytestmark = pytest.mark.django_db

PAGE = "/console/settings/developers/identity/"


def shown_secret(html: str) -> str | None:
    found = re.search(r'id="new-identity-secret"[^>]*value="([^"]+)"', html)
    return found.group(1) if found else None


def by_owner(owner, action: str) -> AuditEntry:
    entry = AuditEntry.objects.filter(action=action).latest("id")
    assert (entry.actor_type, entry.actor_id) == (AuditEntry.ActorType.AGENT, str(owner.pk)), entry
    return entry


def test_the_page_renders_for_the_owner(owner_console):
    response = owner_console.get(PAGE)
    assert response.status_code == 200
    html = response.content.decode()
    assert "Identity verification" in html and "No secret yet" in html
    assert 'value="off" selected' in html
    assert "Set up identity verification" in owner_console.get("/console/settings/developers/").content.decode()


def test_the_mode_is_saved_through_the_settings_service_and_audited(owner_console, owner, widget):
    response = owner_console.post(f"{PAGE}mode/", {"identity_verification": "required"})
    assert response.status_code == 303
    assert widget_selectors.effective_settings(widget)["identity_verification"] == "required"
    by_owner(owner, "widget_settings.changed")
    assert 'value="required" selected' in owner_console.get(PAGE).content.decode()


def test_a_bad_mode_shows_the_apis_message_and_stores_nothing(owner_console, widget, api):
    response = owner_console.post(f"{PAGE}mode/", {"identity_verification": "always"})
    assert response.status_code == 422
    answer = api().patch(
        "/api/v1/widget/settings",
        {"identity_verification": "always"},
        format="json",
        HTTP_X_SERVICE_IDEMPOTENCY_KEY=str(uuid.uuid4()),
    )
    problem = assert_problem(answer, 422)
    for message in problem["errors"]["identity_verification"]:
        assert message in response.content.decode().replace("&#x27;", "'").replace("&quot;", '"')
    assert widget_selectors.effective_settings(widget)["identity_verification"] == "off"


def test_a_new_secret_is_shown_once_and_audited_without_it(owner_console, owner, widget):
    response = owner_console.post(f"{PAGE}secret/")
    assert response.status_code == 200
    secret = shown_secret(response.content.decode())
    assert secret and secret.startswith("idsec_")
    assert widget_selectors.identity_hash_valid(
        widget=widget, external_id="u", hash=widget_selectors.identity_hash(secret, "u")
    )
    entry = by_owner(owner, "identity_secret.rotated")
    assert secret not in str(entry.changes)
    again = owner_console.get(PAGE).content.decode()
    assert shown_secret(again) is None and secret not in again
    assert "Current secret made" in again


def test_a_second_secret_keeps_the_first_for_24_hours(owner_console, widget):
    first = shown_secret(owner_console.post(f"{PAGE}secret/").content.decode())
    html = owner_console.post(f"{PAGE}secret/").content.decode()
    assert "Previous secret works until" in html
    assert widget_selectors.identity_hash_valid(
        widget=widget, external_id="u", hash=widget_selectors.identity_hash(first, "u")
    )


def test_the_secret_belongs_to_the_owners_widget_only(owner_console, widget, other_widget):
    widget_services.rotate_identity_secret(widget=other_widget)
    assert "No secret yet" in owner_console.get(PAGE).content.decode()
    owner_console.post(f"{PAGE}secret/")
    assert IdentitySecret.objects.filter(widget=widget).exists()


def test_an_operator_is_refused(console):
    assert console.get(PAGE).status_code == 403
    assert console.post(f"{PAGE}secret/").status_code == 403
    assert not IdentitySecret.objects.exists()


# --- the mark beside the contact's name ----------------------------------------------------------------


def mark(console, chat) -> str | None:
    html = console.get(f"/console/chats/{chat.pk}/").content.decode()
    found = re.search(r'id="contact-identity"[^>]*>([^<]+)<', html)
    return found.group(1) if found else None


def test_a_verified_contact_is_marked_verified(console, widget):
    chat = make_chat(widget)
    Contact.objects.filter(pk=chat.contact_id).update(external_id="user-42", verified_at=timezone.now())
    assert mark(console, chat) == "verified"


def test_an_unverified_id_is_marked_not_verified(console, widget):
    chat = make_chat(widget)
    Contact.objects.filter(pk=chat.contact_id).update(external_id="user-42")
    assert mark(console, chat) == "not verified"


def test_an_anonymous_contact_has_no_mark(console, widget):
    assert mark(console, make_chat(widget)) is None
