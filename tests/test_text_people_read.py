"""Names and tags people read, on every route that takes one: stored in NFC (two values that
differ only in normalisation are one value), and zero-width, bidirectional-control and other
invisible characters are 422 (product-decisions.md, "Text that people read")."""

import json
import uuid

import pytest

from apps.agents.models import Department
from apps.chats.models import Contact, ContactTag
from apps.chats.tests.factories import ContactFactory
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

DECOMPOSED, COMPOSED = "Cafe\u0301", "Café"
INVISIBLE = ["VIP\u200b", "V\u200dIP", "\u202eVIP", "\u2066VIP\u2069", "VIP\u200e", "\ufeffVIP", "VI\u00adP"]


def idem():
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": uuid.uuid4().hex}


@pytest.fixture
def contact(widget):
    return ContactFactory(widget=widget)


def tag(client, contact, names):
    return client.post(f"/api/v1/contacts/{contact.guid}/tags", {"tags": names}, format="json", **idem())


# --- tags ----------------------------------------------------------------------------------------------


def test_tags_that_differ_only_in_normalisation_are_one_tag(api, contact):
    client = api()
    assert tag(client, contact, [DECOMPOSED]).json()["tags"] == [COMPOSED]
    assert tag(client, contact, [COMPOSED, DECOMPOSED]).json()["tags"] == [COMPOSED]
    assert list(ContactTag.objects.filter(contact=contact).values_list("name", flat=True)) == [COMPOSED]
    assert api().get("/api/v1/tags").json()["data"] == [COMPOSED]


@pytest.mark.parametrize("name", INVISIBLE)
def test_a_tag_with_an_invisible_character_is_422(api, contact, name):
    body = assert_problem(tag(api(), contact, ["ok", name]), 422, "validation_failed")
    assert list(body["errors"]) == ["tags.1"]
    assert not ContactTag.objects.exists()


# --- contact, visitor, department, account and legal entity names ---------------------------------------


def test_a_contact_name_is_stored_composed(api, contact):
    response = api().patch(f"/api/v1/contacts/{contact.guid}", {"name": DECOMPOSED}, format="json", **idem())
    assert response.status_code == 200, response.content
    contact.refresh_from_db()
    assert contact.name == COMPOSED


@pytest.mark.parametrize("name", INVISIBLE)
def test_a_contact_name_with_an_invisible_character_is_422(api, contact, name):
    response = api().patch(f"/api/v1/contacts/{contact.guid}", {"name": name}, format="json", **idem())
    assert list(assert_problem(response, 422)["errors"]) == ["name"]


def visitor_session(client, widget, body):
    return client.post(
        f"/api/visitor/v1/{widget.button_guid}/sessions", json.dumps(body), content_type="application/json"
    )


def test_a_visitor_name_is_stored_composed(client, widget):
    response = visitor_session(client, widget, {"name": DECOMPOSED})
    assert response.status_code == 201, response.content
    assert Contact.objects.get(guid=response.json()["client_id"]).name == COMPOSED


@pytest.mark.parametrize("name", INVISIBLE)
def test_a_visitor_name_with_an_invisible_character_is_422(client, widget, name):
    assert list(assert_problem(visitor_session(client, widget, {"name": name}), 422)["errors"]) == ["name"]
    assert not Contact.objects.exists()


def test_a_department_name_is_stored_composed(api, widget):
    response = api().post("/api/v1/departments", {"name": DECOMPOSED}, format="json", **idem())
    assert response.status_code == 201, response.content
    assert Department.objects.get(widget=widget).name == COMPOSED


@pytest.mark.parametrize("name", INVISIBLE)
def test_a_department_name_with_an_invisible_character_is_422(api, widget, name):
    response = api().post("/api/v1/departments", {"name": name}, format="json", **idem())
    assert list(assert_problem(response, 422)["errors"]) == ["name"]


@pytest.mark.parametrize("member", ["name", "surname"])
def test_account_names_are_stored_composed_and_refuse_invisible_characters(api, widget, member):
    client = api(scopes=["account:read", "account:write"])
    assert client.patch("/api/v1/account", {member: DECOMPOSED}, format="json", **idem()).json()[member] == COMPOSED
    response = client.patch("/api/v1/account", {member: "Ann\u200b"}, format="json", **idem())
    assert list(assert_problem(response, 422)["errors"]) == [member]


@pytest.mark.parametrize("member", ["short_name", "full_name", "representative", "contact_person", "bank_name"])
def test_legal_entity_names_refuse_invisible_characters(api, widget, member):
    from apps.billing.tests.factories import ENTITY_FIELDS

    client = api(scopes=["billing:read", "billing:write"])
    response = client.post(
        "/api/v1/billing/entities", {**ENTITY_FIELDS, member: "ООО\u202e Ромашка"}, format="json", **idem()
    )
    assert list(assert_problem(response, 422)["errors"]) == [member]
    created = client.post("/api/v1/billing/entities", {**ENTITY_FIELDS, member: DECOMPOSED}, format="json", **idem())
    assert created.status_code == 201, created.content
    assert created.json()[member] == COMPOSED


def test_an_operator_name_from_the_invitation_page_is_composed_and_refuses_invisible_characters(widget):
    from apps.agents.tests.factories import InvitationFactory
    from apps.console.invite import NewOperatorForm

    invitation = InvitationFactory(widget=widget)
    data = {"password1": "a-Long-unusual-passphrase-42", "password2": "a-Long-unusual-passphrase-42"}
    form = NewOperatorForm({**data, "name": DECOMPOSED, "surname": "Zoe\u0308"}, invitation=invitation)
    assert form.is_valid(), form.errors
    assert (form.cleaned_data["name"], form.cleaned_data["surname"]) == (COMPOSED, "Zoë")
    refused = NewOperatorForm({**data, "name": "Anna\u202e", "surname": ""}, invitation=invitation)
    assert not refused.is_valid()
    assert list(refused.errors) == ["name"]


def test_tags_stored_before_normalisation_are_merged_into_their_composed_form(widget):
    import importlib

    from django.apps import apps

    migration = importlib.import_module("apps.chats.migrations.0008_tag_names_in_nfc")
    both, alone = ContactFactory(widget=widget), ContactFactory(widget=widget)
    ContactTag.objects.create(widget=widget, contact=both, name=DECOMPOSED)
    ContactTag.objects.create(widget=widget, contact=both, name=COMPOSED)
    ContactTag.objects.create(widget=widget, contact=alone, name=DECOMPOSED)
    ContactTag.objects.create(widget=widget, contact=alone, name="plain")
    migration.tags_to_nfc(apps, None)
    assert sorted(both.tags.values_list("name", flat=True)) == [COMPOSED]
    assert sorted(alone.tags.values_list("name", flat=True)) == [COMPOSED, "plain"]
