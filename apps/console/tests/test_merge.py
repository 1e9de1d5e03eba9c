""" "Merge with…" in the chat's context panel: search the widget's other contacts, confirm naming
both, merge through the API's service; the refusals in the API's words."""

import uuid

import pytest
from django.utils import timezone

from apps.audit.models import AuditEntry
from apps.chats.models import Chat, Contact
from apps.chats.tests.factories import ContactFactory

pytestmark = pytest.mark.django_db


def url(chat, action: str) -> str:
    return f"/console/chats/{chat.pk}/contact/merge/{action}"


def search(client, chat, q):
    return client.get(url(chat, "search/"), {"q": q})


def test_the_panel_offers_merge_with(console, chat):
    html = console.get(f"/console/chats/{chat.pk}/").content.decode()
    assert "Merge with…" in html and 'id="merge-q"' in html


def test_search_finds_other_contacts_by_name_email_phone_and_external_id(htmx, widget, chat, other_widget):
    by_name = ContactFactory(widget=widget, name="Zelda Fitz")
    by_email = ContactFactory(widget=widget, name="", email="zelda@mail.example")
    by_phone = ContactFactory(widget=widget, name="P", phone="+7 999 111")
    by_id = ContactFactory(widget=widget, name="Q", external_id="crm-zelda")
    ContactFactory(widget=other_widget, name="Zelda Foreign")
    Contact.objects.filter(pk=chat.contact_id).update(name="Zelda herself")

    html = search(htmx, chat, "zelda").content.decode()

    for found in (by_name, by_email, by_id):
        assert f'value="{found.guid}"' in html
    assert "Zelda Foreign" not in html and f'value="{chat.contact.guid}"' not in html
    assert f'value="{by_phone.guid}"' in search(htmx, chat, "999 111").content.decode()
    assert 'type="radio"' in html and "<legend>" in html


def test_an_empty_search_is_a_422_and_no_match_says_so(htmx, chat):
    assert search(htmx, chat, "  ").status_code == 422
    response = search(htmx, chat, "nobody-like-this")
    assert response.status_code == 200 and "No other contact matches." in response.content.decode()


def test_choosing_asks_for_a_confirmation_naming_both_and_changes_nothing(htmx, widget, chat, captured_events):
    Contact.objects.filter(pk=chat.contact_id).update(name="Ann One")
    target = ContactFactory(widget=widget, name="Ann Two", email="two@mail.example")

    html = htmx.post(url(chat, ""), {"into": target.guid}).content.decode()

    assert "Ann One" in html and "Ann Two (two@mail.example)" in html and 'name="confirm" value="1"' in html
    assert Contact.objects.filter(pk=chat.contact_id).exists() and not captured_events()


def test_confirming_merges_and_the_panel_shows_the_target(htmx, widget, chat, operator, captured_events):
    source_guid = chat.contact.guid
    target = ContactFactory(widget=widget, name="Ann Two", attributes={"plan": "pro"})

    response = htmx.post(url(chat, ""), {"into": target.guid, "confirm": "1"})

    assert response.status_code == 200
    html = response.content.decode()
    assert html.strip().startswith('<section id="context"') and 'value="Ann Two"' in html
    assert "Merged into Ann Two." in html
    assert "console:panel" in response["HX-Trigger"]
    assert Chat.objects.get(pk=chat.pk).contact_id == target.pk
    assert not Contact.objects.filter(guid=source_guid).exists()
    assert [kind for kind, _ in captured_events()] == ["contact.merged"]
    row = AuditEntry.objects.get(action="contact.merged")
    assert (row.actor_type, row.actor_id) == ("agent", str(operator.pk))


def test_a_plain_post_redirects_back_to_the_chat(console, widget, chat):
    target = ContactFactory(widget=widget)
    response = console.post(url(chat, ""), {"into": target.guid, "confirm": "1"})
    assert response.status_code == 303 and response["Location"] == f"/console/chats/{chat.pk}/"


def test_a_foreign_missing_or_erased_contact_is_a_404_and_changes_nothing(
    htmx, widget, other_widget, chat, captured_events
):
    from apps.privacy import services as privacy

    foreign = ContactFactory(widget=other_widget)
    erased = ContactFactory(widget=widget)
    privacy.request_contact_erasure(widget=widget, contact=erased)
    before = len(captured_events())
    for guid in (foreign.guid, erased.guid, uuid.uuid4().hex):
        response = htmx.post(url(chat, ""), {"into": guid, "confirm": "1"})
        assert response.status_code == 404 and "That contact no longer exists." in response.content.decode()
    assert Contact.objects.filter(pk=chat.contact_id).exists() and len(captured_events()) == before


def test_refusals_are_the_apis(api, htmx, widget, chat):
    Contact.objects.filter(pk=chat.contact_id).update(external_id="u1", verified_at=timezone.now())
    other = ContactFactory(widget=widget, external_id="u2", verified_at=timezone.now())

    response = htmx.post(url(chat, ""), {"into": other.guid, "confirm": "1"})

    assert response.status_code == 409
    assert "verified as different people" in response.content.decode()
    headers = {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": uuid.uuid4().hex}
    answer = api().post(f"/api/v1/contacts/{chat.contact.guid}/merge", {"into": other.guid}, format="json", **headers)
    assert answer.status_code == 409 and answer.json()["code"] == "merge_identity_conflict"
    assert htmx.post(url(chat, ""), {"into": chat.contact.guid, "confirm": "1"}).status_code == 409


def test_too_many_attributes_together_shows_the_apis_message(htmx, widget, chat):
    Contact.objects.filter(pk=chat.contact_id).update(attributes={f"a{i}": i for i in range(30)})
    other = ContactFactory(widget=widget, attributes={f"b{i}": i for i in range(30)})

    response = htmx.post(url(chat, ""), {"into": other.guid, "confirm": "1"})

    assert response.status_code == 422
    assert "a contact holds at most 50." in response.content.decode()


def test_a_foreign_chat_is_a_404(htmx, foreign_chat, widget):
    target = ContactFactory(widget=widget)
    assert search(htmx, foreign_chat, "x").status_code == 404
    assert htmx.post(url(foreign_chat, ""), {"into": target.guid, "confirm": "1"}).status_code == 404
