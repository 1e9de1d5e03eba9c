"""GET /v1/contacts/{guid}/identity and GET /v1/contacts/by-external-id/{external_id}: the identity
a page gave with `setUser`, and the one contact of a verified id. Foreign is 404 like missing."""

import pytest
from django.utils import timezone

from apps.chats.tests.factories import ContactFactory
from apps.privacy import services as privacy
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db


def verified(widget, external_id: str, **kwargs):
    return ContactFactory(widget=widget, external_id=external_id, verified_at=timezone.now(), **kwargs)


def test_identity_of_a_verified_contact(api, widget):
    contact = verified(widget, "user-42")
    body = api(scopes=["contacts:read"]).get(f"/api/v1/contacts/{contact.guid}/identity").json()
    assert body == {"external_id": "user-42", "verified": True, "verified_at": contact.verified_at.isoformat()}


def test_identity_of_an_unverified_and_of_an_anonymous_contact(api, widget):
    claimed = ContactFactory(widget=widget, external_id="user-42")
    anonymous = ContactFactory(widget=widget)
    client = api(scopes=["contacts:read"])
    assert client.get(f"/api/v1/contacts/{claimed.guid}/identity").json() == {
        "external_id": "user-42",
        "verified": False,
        "verified_at": None,
    }
    assert client.get(f"/api/v1/contacts/{anonymous.guid}/identity").json()["external_id"] is None


def test_by_external_id_answers_the_verified_contact_only(api, widget):
    ContactFactory(widget=widget, external_id="user-42")  # claimed, never proven
    contact = verified(widget, "user-42", name="Ann")
    client = api(scopes=["contacts:read"])
    body = client.get("/api/v1/contacts/by-external-id/user-42").json()
    assert (body["id"], body["name"]) == (contact.guid, "Ann")
    assert body == client.get(f"/api/v1/contacts/{contact.guid}").json()


def test_an_unverified_id_is_not_found(api, widget):
    ContactFactory(widget=widget, external_id="user-42")
    assert_problem(api().get("/api/v1/contacts/by-external-id/user-42"), 404, "not_found")


def test_lookups_never_cross_widgets(api, widget, other_widget):
    foreign = verified(other_widget, "user-42")
    client = api(scopes=["contacts:read"])
    assert_problem(client.get("/api/v1/contacts/by-external-id/user-42"), 404, "not_found")
    assert_problem(client.get(f"/api/v1/contacts/{foreign.guid}/identity"), 404, "not_found")
    assert_problem(client.get(f"/api/v1/contacts/{'f' * 32}/identity"), 404, "not_found")


def test_both_widgets_may_verify_the_same_id(api, widget, other_widget):
    ours, theirs = verified(widget, "user-42"), verified(other_widget, "user-42")
    assert api().get("/api/v1/contacts/by-external-id/user-42").json()["id"] == ours.guid
    assert api(w=other_widget).get("/api/v1/contacts/by-external-id/user-42").json()["id"] == theirs.guid


def test_lookups_need_contacts_read(api, widget):
    contact = verified(widget, "user-42")
    client = api(scopes=["chats:read"])
    assert_problem(client.get(f"/api/v1/contacts/{contact.guid}/identity"), 403, "missing_scope")
    assert_problem(client.get("/api/v1/contacts/by-external-id/user-42"), 403, "missing_scope")


def test_an_id_with_unusual_characters_is_found_url_encoded(api, widget):
    contact = verified(widget, "ann@example.com #7/ü?")
    body = api().get("/api/v1/contacts/by-external-id/ann%40example.com%20%237%2F%C3%BC%3F").json()
    assert body["id"] == contact.guid
    assert api().get("/api/v1/contacts/by-external-id/ann%40example.com%20%237%2F%C3%BC%3F/").json() == body


def test_an_erasure_lets_the_verified_id_go_at_once(api, widget):
    contact = verified(widget, "user-42")
    privacy.request_contact_erasure(widget=widget, contact=contact)
    assert_problem(api().get("/api/v1/contacts/by-external-id/user-42"), 404, "not_found")
    again = verified(widget, "user-42")  # the person's next verified login makes a new contact
    assert api().get("/api/v1/contacts/by-external-id/user-42").json()["id"] == again.guid
