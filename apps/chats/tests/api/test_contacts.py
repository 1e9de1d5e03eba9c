"""GET /v1/contacts, GET/PATCH /v1/contacts/{id}: list with `query`, read by guid, merge-safe update."""

import threading
import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.chats.models import Contact, ContactTag
from apps.chats.tests.factories import ContactFactory
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

CONTACTS = "/api/v1/contacts"


def idem():
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"key-{uuid.uuid4().hex}"}


def url(contact):
    return f"{CONTACTS}/{contact.guid}"


def patch(client, contact, body, **headers):
    return client.patch(url(contact), body, format="json", **{**idem(), **headers})


def tag(contact, name):
    return ContactTag.objects.create(widget=contact.widget, contact=contact, name=name)


# --- list ----------------------------------------------------------------------------------------


def test_list_returns_contacts_newest_first_in_the_envelope(api, widget):
    # given
    now = timezone.now()
    older = ContactFactory(widget=widget, created_at=now - timedelta(minutes=5))
    newer = ContactFactory(widget=widget, created_at=now)
    # when
    body = api(scopes=["contacts:read"]).get(CONTACTS).json()
    # then
    assert [row["id"] for row in body["data"]] == [newer.guid, older.guid]
    assert body["next_cursor"] is None


def test_list_shape(api, widget):
    # given
    contact = ContactFactory(
        widget=widget, name="Ann", email="ann@example.com", phone="+7 900 000-00-00", attributes={"plan": "pro"}
    )
    tag(contact, "vip")
    tag(contact, "b2b")
    # when
    row = api().get(CONTACTS).json()["data"][0]
    # then
    assert row == {
        "id": contact.guid,
        "name": "Ann",
        "email": "ann@example.com",
        "phone": "+7 900 000-00-00",
        "attributes": {"plan": "pro"},
        "tags": ["b2b", "vip"],
        "created_at": contact.created_at.isoformat(),
        "updated_at": contact.updated_at.isoformat(),
    }
    assert len(row["id"]) == 32


def test_list_never_shows_other_widgets(api, widget, other_widget):
    ContactFactory(widget=other_widget)
    assert api().get(CONTACTS).json()["data"] == []


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("aNN", ["Anna Smith"]),
        ("EXAMPLE.ORG", ["Bob"]),
        ("900 12", ["Cid"]),
        ("example", ["Anna Smith", "Bob", "Cid"]),
        ("zzz", []),
    ],
)
def test_query_matches_name_email_or_phone_case_insensitively(api, widget, query, expected):
    # given
    ContactFactory(widget=widget, name="Anna Smith", email="a@example.com", phone="")
    ContactFactory(widget=widget, name="Bob", email="bob@Example.org", phone="")
    ContactFactory(widget=widget, name="Cid", email="c@example.com", phone="+7 900 12 34")
    # when
    data = api().get(CONTACTS, {"query": query}).json()["data"]
    # then
    assert sorted(row["name"] for row in data) == expected


def test_cursor_pages_through_every_contact_once(api, widget):
    # given
    now = timezone.now()
    contacts = [ContactFactory(widget=widget, created_at=now - timedelta(seconds=i)) for i in range(5)]
    client = api()
    # when
    first = client.get(CONTACTS, {"limit": 2}).json()
    second = client.get(CONTACTS, {"limit": 2, "cursor": first["next_cursor"]}).json()
    third = client.get(CONTACTS, {"limit": 2, "cursor": second["next_cursor"]}).json()
    # then
    seen = [row["id"] for page in (first, second, third) for row in page["data"]]
    assert seen == [c.guid for c in contacts]
    assert third["next_cursor"] is None


@pytest.mark.parametrize(
    "params",
    [
        {"query": ""},
        {"query": "x" * 101},
        {"query": " " + "x" * 100},
        {"q": "ann"},
        {"limit": "0"},
        {"limit": "101"},
        {"cursor": "forged"},
    ],
)
def test_list_bad_parameters_are_422(api, widget, params):
    assert_problem(api().get(CONTACTS, params), 422, "validation_failed")


def test_repeated_query_parameter_is_422(api, widget):
    body = assert_problem(api().get(f"{CONTACTS}?query=a&query=b"), 422)
    assert "query" in body["errors"]


def test_list_without_token_is_401(client):
    assert_problem(client.get(CONTACTS), 401)


def test_list_without_scope_is_403(api):
    body = assert_problem(api(scopes=["contacts:write", "tags:read"]).get(CONTACTS), 403, "missing_scope")
    assert body["required_scopes"] == ["contacts:read"]


def test_list_queries_do_not_grow_with_contacts_or_tags(api, widget):
    # given
    client = api()
    for _ in range(2):
        tag(ContactFactory(widget=widget), "a")
    client.get(CONTACTS)  # warm per-token state
    with CaptureQueriesContext(connection) as few:
        assert len(client.get(CONTACTS).json()["data"]) == 2
    for i in range(10):
        contact = ContactFactory(widget=widget)
        tag(contact, "a")
        tag(contact, f"t{i}")
    # when
    with CaptureQueriesContext(connection) as many:
        assert len(client.get(CONTACTS).json()["data"]) == 12
    # then
    assert len(many.captured_queries) == len(few.captured_queries)


# --- retrieve ------------------------------------------------------------------------------------


def test_retrieve_by_guid(api, widget):
    contact = ContactFactory(widget=widget, name="Ann")
    tag(contact, "vip")
    body = api(scopes=["contacts:read"]).get(url(contact)).json()
    assert body["id"] == contact.guid and body["name"] == "Ann" and body["tags"] == ["vip"]


def test_retrieve_by_numeric_id_is_404(api, widget):
    contact = ContactFactory(widget=widget)
    assert_problem(api().get(f"{CONTACTS}/{contact.pk}"), 404, "not_found")


def test_foreign_contact_is_the_same_404_as_a_missing_one(api, widget, other_widget):
    foreign = ContactFactory(widget=other_widget)
    client = api()
    a = assert_problem(client.get(url(foreign)), 404, "not_found")
    b = assert_problem(client.get(f"{CONTACTS}/{uuid.uuid4().hex}"), 404, "not_found")
    a.pop("instance"), b.pop("instance")
    assert a == b


def test_retrieve_without_token_is_401(client, widget):
    assert_problem(client.get(url(ContactFactory(widget=widget))), 401)


def test_retrieve_without_scope_is_403(api, widget):
    assert_problem(api(scopes=["contacts:write"]).get(url(ContactFactory(widget=widget))), 403, "missing_scope")


# --- update --------------------------------------------------------------------------------------


def test_patch_changes_only_the_members_sent(api, widget):
    # given
    contact = ContactFactory(widget=widget, name="Ann", email="ann@example.com", phone="123")
    # when
    response = patch(api(scopes=["contacts:write"]), contact, {"email": "new@example.com"})
    # then
    assert response.status_code == 200
    body = response.json()
    assert (body["name"], body["email"], body["phone"]) == ("Ann", "new@example.com", "123")
    contact.refresh_from_db()
    assert contact.email == "new@example.com" and contact.name == "Ann"
    assert body["updated_at"] == contact.updated_at.isoformat()


def test_patch_emits_contact_updated_with_exactly_the_changed_fields(api, widget, captured_events):
    # given
    contact = ContactFactory(widget=widget, name="Ann", email="ann@example.com")
    # when: the name is sent unchanged, the e-mail and an attribute change
    patch(api(), contact, {"name": "Ann", "email": "x@example.com", "attributes": {"k": 1}})
    # then
    events = captured_events()
    assert [(t, d["client_id"], d["changed_fields"]) for t, d in events] == [
        ("contact.updated", contact.guid, ["email", "attributes"])
    ]


def test_patch_that_changes_nothing_emits_nothing(api, widget, captured_events):
    contact = ContactFactory(widget=widget, name="Ann", attributes={"k": 1})
    response = patch(api(), contact, {"name": "Ann", "attributes": {"k": 1, "gone": None}})
    assert response.status_code == 200
    assert captured_events() == []


def test_empty_patch_is_200_and_emits_nothing(api, widget, captured_events):
    contact = ContactFactory(widget=widget)
    assert patch(api(), contact, {}).status_code == 200
    assert captured_events() == []


def test_attributes_merge_key_by_key_and_null_removes_a_key(api, widget):
    # given
    contact = ContactFactory(widget=widget, attributes={"keep": 1, "drop": 2, "change": 3})
    # when
    body = patch(api(), contact, {"attributes": {"drop": None, "change": {"x": [1, 2]}, "add": "v"}}).json()
    # then
    assert body["attributes"] == {"keep": 1, "change": {"x": [1, 2]}, "add": "v"}
    contact.refresh_from_db()
    assert contact.attributes == body["attributes"]


@pytest.mark.parametrize(
    ("raw", "path", "message"),
    [
        ('{"note": "a\\u0000b"}', "attributes.note", "Null characters are not allowed."),
        ('{"deep": {"list": [1, "\\u0000"]}}', "attributes.deep.list.1", "Null characters are not allowed."),
        ('{"a\\u0000b": 1}', "attributes", "Null characters are not allowed."),
        ('{"note": "\\ud800"}', "attributes.note", "Surrogate characters are not allowed: U+D800."),
        ('{"\\udc00": 1}', "attributes", "Surrogate characters are not allowed: U+DC00."),
    ],
    ids=["nul", "nested-nul", "nul-key", "surrogate", "surrogate-key"],
)
def test_attributes_no_database_stores_are_422_and_change_nothing(api, widget, raw, path, message):
    # given
    contact = ContactFactory(widget=widget, attributes={"keep": 1})
    # when free-form attributes hold NUL (PostgreSQL refuses it in JSON) or a lone surrogate (no UTF-8)
    body = f'{{"attributes": {raw}}}'
    response = api().patch(url(contact), body, content_type="application/json", **idem())
    # then
    assert assert_problem(response, 422, "validation_failed")["errors"] == {path: [message]}
    contact.refresh_from_db()
    assert contact.attributes == {"keep": 1}


def test_two_patches_of_different_attribute_keys_both_survive(api, widget):
    contact = ContactFactory(widget=widget, attributes={})
    client = api()
    patch(client, contact, {"attributes": {"a": 1}})
    patch(client, contact, {"attributes": {"b": 2}})
    contact.refresh_from_db()
    assert contact.attributes == {"a": 1, "b": 2}


@pytest.mark.parametrize("field", ["name", "email", "phone"])
def test_null_clears_a_string_member(api, widget, captured_events, field):
    contact = ContactFactory(widget=widget, name="Ann", email="ann@example.com", phone="+1 555")
    body = patch(api(), contact, {field: None}).json()
    assert body[field] == ""
    assert captured_events()[0][1]["changed_fields"] == [field]


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"email": "not-an-email"}, "email"),
        ({"phone": "call me"}, "phone"),
        ({"phone": "+" + "1" * 33}, "phone"),
        ({"name": "x" * 256}, "name"),
        ({"name": " " + "x" * 255}, "name"),
        ({"name": 5}, "name"),
        ({"email": 5}, "email"),
        ({"phone": 12345}, "phone"),
        ({"phone": "123\n"}, "phone"),
        ({"attributes": [1, 2]}, "attributes"),
        ({"attributes": "text"}, "attributes"),
        ({"attributes": None}, "attributes"),
        ({"attributes": {"big": "x" * (16 * 1024)}}, "attributes"),
        ({"tags": ["a"]}, "tags"),
        ({"id": "abc"}, "id"),
        ({"created_at": "2020-01-01T00:00:00Z"}, "created_at"),
    ],
)
def test_patch_bad_input_is_422_at_the_member(api, widget, body, path, captured_events):
    # given
    contact = ContactFactory(widget=widget, name="Ann")
    # when
    problem = assert_problem(patch(api(), contact, body), 422, "validation_failed")
    # then nothing changed and nothing was emitted
    assert path in problem["errors"], problem
    contact.refresh_from_db()
    assert contact.name == "Ann"
    assert captured_events() == []


def test_body_that_is_not_an_object_is_422(api, widget):
    contact = ContactFactory(widget=widget)
    assert_problem(patch(api(), contact, ["name"]), 422)


def test_merged_attributes_over_16_kb_are_422_and_keep_the_stored_ones(api, widget):
    # given: each patch fits alone, together they do not
    contact = ContactFactory(widget=widget, attributes={"a": "x" * 9000})
    # when
    problem = assert_problem(patch(api(), contact, {"attributes": {"b": "y" * 9000}}), 422)
    # then
    assert "attributes" in problem["errors"]
    contact.refresh_from_db()
    assert contact.attributes == {"a": "x" * 9000}


def test_replacing_a_large_attribute_within_the_limit_is_accepted(api, widget):
    contact = ContactFactory(widget=widget, attributes={"a": "x" * 9000})
    assert patch(api(), contact, {"attributes": {"a": None, "b": "y" * 9000}}).status_code == 200


@pytest.mark.parametrize("phone", ["+7 (900) 000-00-00", "8900", "1", "+1" + "2" * 31])
def test_sane_phone_numbers_are_accepted(api, widget, phone):
    contact = ContactFactory(widget=widget)
    assert patch(api(), contact, {"phone": phone}).json()["phone"] == phone


def test_surrounding_whitespace_of_a_name_is_removed(api, widget):
    contact = ContactFactory(widget=widget)
    assert patch(api(), contact, {"name": "  Ann  "}).json()["name"] == "Ann"


def test_patch_without_idempotency_key_is_400(api, widget):
    contact = ContactFactory(widget=widget)
    response = api().patch(url(contact), {"name": "x"}, format="json")
    assert_problem(response, 400, "idempotency_key_missing")


def test_patch_with_a_reused_key_is_409(api, widget):
    contact = ContactFactory(widget=widget)
    client = api()
    key = {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": "same"}
    assert patch(client, contact, {"name": "a"}, **key).status_code == 200
    assert_problem(patch(client, contact, {"name": "b"}, **key), 409, "idempotency_key_reused")
    contact.refresh_from_db()
    assert contact.name == "a"


def test_put_is_not_served(api, widget):
    contact = ContactFactory(widget=widget)
    assert_problem(api().put(url(contact), {"name": "x"}, format="json", **idem()), 405)


def test_patch_without_token_is_401(client, widget):
    contact = ContactFactory(widget=widget)
    assert_problem(client.patch(url(contact), {}, content_type="application/json", **idem()), 401)


def test_patch_without_scope_is_403(api, widget):
    contact = ContactFactory(widget=widget)
    assert_problem(patch(api(scopes=["contacts:read", "tags:write"]), contact, {"name": "x"}), 403, "missing_scope")


def test_patch_of_a_foreign_contact_is_the_same_404_as_a_missing_one(api, widget, other_widget, captured_events):
    # given
    foreign = ContactFactory(widget=other_widget, name="Theirs")
    client = api()
    # when
    a = assert_problem(patch(client, foreign, {"name": "Mine"}), 404, "not_found")
    b = assert_problem(client.patch(f"{CONTACTS}/{uuid.uuid4().hex}", {"name": "Mine"}, format="json", **idem()), 404)
    # then
    a.pop("instance"), b.pop("instance")
    assert a == b
    foreign.refresh_from_db()
    assert foreign.name == "Theirs"
    assert captured_events() == []


# --- concurrency (PostgreSQL) ----------------------------------------------------------------------


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_patches_of_different_keys_both_survive(make_token, widget):
    from rest_framework.test import APIClient

    # given
    contact = ContactFactory(widget=widget, attributes={"base": 0})
    token = make_token(widget, ["contacts:write"])
    keys = [f"k{i}" for i in range(8)]
    barrier = threading.Barrier(len(keys))
    statuses = []
    lock = threading.Lock()

    def write(key):
        client = APIClient()
        client.raise_request_exception = False
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
        try:
            barrier.wait(timeout=30)
            status = patch(client, contact, {"attributes": {key: key}}).status_code
            with lock:
                statuses.append(status)
        finally:
            connection.close()

    # when
    threads = [threading.Thread(target=write, args=(key,)) for key in keys]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    # then
    assert not any(thread.is_alive() for thread in threads), "a writer hung"
    assert statuses == [200] * len(keys)
    assert Contact.objects.get(pk=contact.pk).attributes == {"base": 0, **{key: key for key in keys}}
