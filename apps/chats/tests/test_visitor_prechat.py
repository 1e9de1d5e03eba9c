"""POST /api/visitor/v1/{guid}/prechat: the visitor's answers to the widget's pre-chat form
(product-decisions.md, "Pre-chat form"): checked against the `prechat` setting (422 keyed
`fields.<key>`, nothing written), then into the contact's fields and attributes."""

import pytest

from apps.chats.models import Contact
from apps.chats.services.contacts import ATTRIBUTES_MAX_KEYS
from apps.chats.tests.test_visitor_api import post, start
from apps.widget import services as widget_services
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db


def _field(key, type="text", required=False, **extra):
    return {"key": key, "type": type, "label_i18n": {"en": key}, "required": required, **extra}


FORM = {
    "when": "always",
    "fields": [
        _field("name", required=True),
        _field("email", "email"),
        _field("phone", "phone"),
        _field("company"),
        _field("seats", "number"),
        _field(
            "plan",
            "select",
            required=True,
            options=[{"value": "free", "label_i18n": {"en": "Free"}}, {"value": "pro", "label_i18n": {"en": "Pro"}}],
        ),
        _field("newsletter", "checkbox"),
        _field("consent", "checkbox", required=True),
    ],
}
GOOD = {"name": "Anna", "plan": "pro", "consent": True}


@pytest.fixture
def form(widget):
    widget_services.update_settings(widget=widget, body={"prechat": FORM})
    return FORM


@pytest.fixture
def token(client, widget) -> str:
    return start(client, widget)["session_token"]


@pytest.fixture
def contact(client, widget, token) -> Contact:
    return Contact.objects.get(widget=widget)


def answer(client, widget, token, values):
    return post(client, widget, "prechat", {"values": values}, token)


def test_the_answers_fill_the_contacts_fields_and_attributes(client, widget, form, token, contact, captured_events):
    values = {
        "name": " Anna ",
        "email": "anna@example.com",
        "phone": "+7 900 123-45-67",
        "company": "Acme",
        "seats": 12,
        "plan": "pro",
        "newsletter": False,
        "consent": True,
    }
    response = answer(client, widget, token, values)
    assert response.status_code == 200, response.content
    contact.refresh_from_db()
    assert (contact.name, contact.email, contact.phone) == ("Anna", "anna@example.com", "+7 900 123-45-67")
    assert contact.attributes == {"company": "Acme", "seats": 12, "plan": "pro", "newsletter": False, "consent": True}
    assert response.json()["values"]["consent"] is True
    assert [kind for kind, _ in captured_events()].count("contact.updated") == 2  # fields, then attributes


def test_optional_answers_may_be_left_out(client, widget, form, token, contact):
    assert answer(client, widget, token, GOOD).status_code == 200
    contact.refresh_from_db()
    assert contact.attributes == {"plan": "pro", "consent": True}


@pytest.mark.parametrize(
    "values, key",
    [
        ({"plan": "pro", "consent": True}, "name"),
        ({**GOOD, "name": "   "}, "name"),
        ({**GOOD, "name": None}, "name"),
        ({"name": "Anna", "consent": True}, "plan"),
        ({"name": "Anna", "plan": "pro"}, "consent"),
        ({**GOOD, "consent": False}, "consent"),
        ({**GOOD, "consent": "yes"}, "consent"),
        ({**GOOD, "newsletter": 1}, "newsletter"),
        ({**GOOD, "email": "not-an-address"}, "email"),
        ({**GOOD, "email": 5}, "email"),
        ({**GOOD, "phone": "call me"}, "phone"),
        ({**GOOD, "seats": "12"}, "seats"),
        ({**GOOD, "seats": True}, "seats"),
        ({**GOOD, "plan": "enterprise"}, "plan"),
        ({**GOOD, "company": "x" * 501}, "company"),
        ({**GOOD, "company": ["Acme"]}, "company"),
        ({**GOOD, "company": "a\x07b"}, "company"),
        ({**GOOD, "nickname": "Ann"}, "nickname"),
    ],
)
def test_each_bad_answer_is_422_keyed_by_its_field_and_writes_nothing(
    client, widget, form, token, contact, captured_events, values, key
):
    before = captured_events()
    body = assert_problem(answer(client, widget, token, values), 422, "validation_failed")
    assert list(body["errors"]) == [f"fields.{key}"], body["errors"]
    contact.refresh_from_db()
    assert (contact.name, contact.email, contact.phone, contact.attributes) == ("", "", "", {})
    assert captured_events() == before


def test_every_bad_answer_is_named_at_once(client, widget, form, token):
    body = assert_problem(answer(client, widget, token, {"email": "x", "seats": "many"}), 422)
    assert set(body["errors"]) == {"fields.name", "fields.plan", "fields.consent", "fields.email", "fields.seats"}


def test_the_email_and_phone_messages_are_the_contact_rules_own(client, widget, form, token, api, contact):
    body = assert_problem(answer(client, widget, token, {**GOOD, "email": "nope", "phone": "call me"}), 422)
    contact_api = api().patch(
        f"/api/v1/contacts/{contact.guid}",
        {"email": "nope", "phone": "call me"},
        format="json",
        HTTP_X_SERVICE_IDEMPOTENCY_KEY="prechat-rules",
    )
    expected = assert_problem(contact_api, 422)["errors"]
    assert body["errors"]["fields.email"] == expected["email"]
    assert body["errors"]["fields.phone"] == expected["phone"]


def test_the_attribute_limit_per_contact_refuses_the_whole_form(client, widget, form, token, contact):
    Contact.objects.filter(pk=contact.pk).update(attributes={f"k{n}": n for n in range(ATTRIBUTES_MAX_KEYS - 1)})
    body = assert_problem(answer(client, widget, token, {**GOOD, "company": "Acme"}), 422)
    assert set(body["errors"]) == {"fields.plan", "fields.consent", "fields.company"}
    contact.refresh_from_db()
    assert (contact.name, len(contact.attributes)) == ("", ATTRIBUTES_MAX_KEYS - 1)


@pytest.mark.parametrize("body", [{}, {"values": []}, {"values": "name"}, {"values": {}, "extra": 1}])
def test_a_body_that_is_not_values_is_422(client, widget, form, token, body):
    response = post(client, widget, "prechat", body, token)
    assert_problem(response, 422)


def test_without_a_form_the_route_is_409_prechat_off(client, widget, token, contact):
    assert_problem(answer(client, widget, token, {"name": "Anna"}), 409, "prechat_off")
    contact.refresh_from_db()
    assert contact.name == ""


def test_a_session_is_required(client, widget, form):
    response = answer(client, widget, None, GOOD)
    assert_problem(response, 401)


def test_another_widgets_session_is_refused_and_its_contact_untouched(client, widget, other_widget, form):
    widget_services.update_settings(widget=other_widget, body={"prechat": FORM})
    foreign = start(client, other_widget)["session_token"]
    assert_problem(answer(client, widget, foreign, GOOD), 401)
    assert Contact.objects.get(widget=other_widget).attributes == {}


def test_the_form_is_read_fresh_after_the_owner_changes_it(client, widget, form, token, contact):
    widget_services.update_settings(widget=widget, body={"prechat": {"when": "always", "fields": [_field("city")]}})
    assert answer(client, widget, token, {"city": "Athens"}).status_code == 200
    contact.refresh_from_db()
    assert contact.attributes == {"city": "Athens"}
