"""POST /v1/contacts/{id}/tags and GET /v1/tags (distinct names across the account)."""

import uuid

import pytest

from apps.chats.models import ContactTag
from apps.chats.tests.factories import ContactFactory
from tests.support.factories import WidgetFactory
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

TAGS = "/api/v1/tags"


def idem():
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"key-{uuid.uuid4().hex}"}


def tags_url(contact):
    return f"/api/v1/contacts/{contact.guid}/tags"


def post_tags(client, contact, body, **headers):
    return client.post(tags_url(contact), body, format="json", **{**idem(), **headers})


def names(contact):
    return sorted(ContactTag.objects.filter(contact=contact).values_list("name", flat=True))


# --- POST /v1/contacts/{id}/tags -----------------------------------------------------------------


def test_post_tags_attaches_them_and_returns_every_tag_of_the_contact(api, widget):
    # given
    contact = ContactFactory(widget=widget)
    ContactTag.objects.create(widget=widget, contact=contact, name="old")
    # when
    response = post_tags(api(scopes=["tags:write"]), contact, {"tags": ["vip", "b2b"]})
    # then
    assert response.status_code == 200
    assert response.json() == {"id": contact.guid, "tags": ["b2b", "old", "vip"]}
    assert names(contact) == ["b2b", "old", "vip"]
    assert set(ContactTag.objects.filter(contact=contact).values_list("widget_id", flat=True)) == {widget.pk}


def test_reposting_an_existing_tag_is_a_no_op(api, widget):
    contact = ContactFactory(widget=widget)
    client = api()
    post_tags(client, contact, {"tags": ["vip"]})
    response = post_tags(client, contact, {"tags": ["vip", "vip"]})
    assert response.status_code == 200 and response.json()["tags"] == ["vip"]
    assert ContactTag.objects.filter(contact=contact).count() == 1


def test_names_are_trimmed(api, widget):
    contact = ContactFactory(widget=widget)
    assert post_tags(api(), contact, {"tags": ["  vip  "]}).json()["tags"] == ["vip"]


def test_posting_tags_emits_no_contact_event(api, widget, captured_events):
    contact = ContactFactory(widget=widget)
    post_tags(api(), contact, {"tags": ["vip"]})
    assert captured_events() == []


def test_fifty_tags_of_64_characters_are_accepted(api, widget):
    contact = ContactFactory(widget=widget)
    tags = [f"{i:02d}" + "x" * 62 for i in range(50)]
    assert post_tags(api(), contact, {"tags": tags}).json()["tags"] == sorted(tags)


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"tags": []}, "tags"),
        ({"tags": ["x" * 65]}, "tags.0"),
        ({"tags": [" " + "x" * 64]}, "tags.0"),
        ({"tags": ["ok", ""]}, "tags.1"),
        ({"tags": ["   "]}, "tags.0"),
        ({"tags": [5]}, "tags.0"),
        ({"tags": [None]}, "tags.0"),
        ({"tags": ["a\nb"]}, "tags.0"),
        ({"tags": [f"t{i}" for i in range(51)]}, "tags"),
        ({"tags": "vip"}, "tags"),
        ({}, "tags"),
        ({"tags": ["a"], "name": "x"}, "name"),
    ],
)
def test_bad_tags_are_422_and_attach_nothing(api, widget, body, path):
    contact = ContactFactory(widget=widget)
    problem = assert_problem(post_tags(api(), contact, body), 422, "validation_failed")
    assert path in problem["errors"], problem
    assert names(contact) == []


def test_post_tags_without_idempotency_key_is_400(api, widget):
    contact = ContactFactory(widget=widget)
    assert_problem(api().post(tags_url(contact), {"tags": ["a"]}, format="json"), 400, "idempotency_key_missing")
    assert names(contact) == []


def test_post_tags_with_a_reused_key_is_409(api, widget):
    contact = ContactFactory(widget=widget)
    client = api()
    key = {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": "same"}
    assert post_tags(client, contact, {"tags": ["a"]}, **key).status_code == 200
    assert_problem(post_tags(client, contact, {"tags": ["b"]}, **key), 409, "idempotency_key_reused")
    assert names(contact) == ["a"]


def test_post_tags_without_token_is_401(client, widget):
    contact = ContactFactory(widget=widget)
    assert_problem(client.post(tags_url(contact), {"tags": ["a"]}, content_type="application/json", **idem()), 401)


def test_post_tags_without_scope_is_403(api, widget):
    contact = ContactFactory(widget=widget)
    body = assert_problem(post_tags(api(scopes=["contacts:write", "tags:read"]), contact, {"tags": ["a"]}), 403)
    assert body["required_scopes"] == ["tags:write"]


def test_post_tags_on_a_foreign_contact_is_the_same_404_as_a_missing_one(api, widget, other_widget):
    # given
    foreign = ContactFactory(widget=other_widget)
    client = api()
    # when
    a = assert_problem(post_tags(client, foreign, {"tags": ["a"]}), 404, "not_found")
    missing = f"/api/v1/contacts/{uuid.uuid4().hex}/tags"
    b = assert_problem(client.post(missing, {"tags": ["a"]}, format="json", **idem()), 404, "not_found")
    # then
    a.pop("instance"), b.pop("instance")
    assert a == b
    assert names(foreign) == []


# --- GET /v1/tags --------------------------------------------------------------------------------


def test_tag_list_is_distinct_sorted_and_account_wide(api, widget):
    # given: two widgets of one account share names
    sibling = WidgetFactory(account=widget.account)
    for w, tag_names in ((widget, ["vip", "b2b"]), (sibling, ["vip", "alpha"])):
        contact = ContactFactory(widget=w)
        for name in tag_names:
            ContactTag.objects.create(widget=w, contact=contact, name=name)
    ContactTag.objects.create(widget=widget, contact=ContactFactory(widget=widget), name="vip")
    # when
    response = api(scopes=["tags:read"]).get(TAGS)
    # then
    assert response.status_code == 200
    assert response.json() == {"data": ["alpha", "b2b", "vip"]}


def test_tag_list_never_shows_another_accounts_tags(api, widget, other_widget):
    contact = ContactFactory(widget=other_widget)
    ContactTag.objects.create(widget=other_widget, contact=contact, name="theirs")
    assert api().get(TAGS).json() == {"data": []}


def test_posted_tags_show_in_the_tag_list(api, widget):
    client = api()
    post_tags(client, ContactFactory(widget=widget), {"tags": ["new"]})
    assert client.get(TAGS).json()["data"] == ["new"]


def test_tag_list_with_unknown_parameters_is_422(api, widget):
    body = assert_problem(api().get(TAGS, {"query": "x"}), 422, "validation_failed")
    assert "query" in body["errors"]


def test_tag_list_without_token_is_401(client):
    assert_problem(client.get(TAGS), 401)


def test_tag_list_without_scope_is_403(api):
    body = assert_problem(api(scopes=["tags:write", "contacts:read"]).get(TAGS), 403, "missing_scope")
    assert body["required_scopes"] == ["tags:read"]
