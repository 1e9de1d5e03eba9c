"""The visitor's answers to the widget's pre-chat form (`POST prechat`): checked against the form the
owner wrote (the `prechat` setting), then written: `name`, `email` and `phone` into the contact's own
fields through the contact update service (so they pass the rules of PATCH /v1/contacts/{id}), every
other answer into the contact's attributes through `set_attributes`.

Every refusal is one 422 with `errors` keyed `fields.<key>`, and nothing is written."""

from __future__ import annotations

import math
import re
from typing import Any

from django.db import transaction

from apps.core.errors import Conflict, ValidationFailed
from apps.core.models import Widget
from apps.widget import selectors as widget_selectors

from .. import services as chat_services
from ..models import Contact
from ..services.contacts import ATTRIBUTE_VALUE_MAX_CHARS

CONTACT_FIELDS = ("name", "email", "phone")
TEXT_MAX = ATTRIBUTE_VALUE_MAX_CHARS
_CONTROL = re.compile(r"[\x00-\x08\x0B\x0C\x0E-\x1F\x7F]")


class PrechatOff(Conflict):
    """The widget's pre-chat form is off (`prechat.when` is `never`): there is nothing to answer."""

    code, title = "prechat_off", "No pre-chat form"


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _answer(field: dict, value: Any) -> Any:
    """One answer as stored, or a ValueError naming what is wrong with it."""
    kind = field["type"]
    if kind == "checkbox":
        if not isinstance(value, bool):
            raise ValueError("Must be true or false.")
        if field.get("required") and value is not True:
            raise ValueError("Must be checked to continue.")
        return value
    if kind == "number":
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ValueError("Must be a number.")
        return value
    if not isinstance(value, str):
        raise ValueError("Must be a string.")
    value = value.strip()
    if kind == "select":
        if value not in {option["value"] for option in field.get("options") or []}:
            raise ValueError("Must be one of the offered options.")
        return value
    if len(value) > TEXT_MAX:
        raise ValueError(f"At most {TEXT_MAX} characters.")
    if _CONTROL.search(value):
        raise ValueError("Must not contain control characters.")
    return value


def check_answers(form: dict, values: dict) -> tuple[dict, dict]:
    """(contact field changes, attributes) from the visitor's `values`, or ValidationFailed keyed
    `fields.<key>` naming every problem at once."""
    fields = {field["key"]: field for field in form.get("fields") or []}
    errors: dict[str, list[str]] = {}
    for key in values:
        if key not in fields:
            errors[f"fields.{key}"] = ["Not a field of this form."]
    answers: dict[str, Any] = {}
    for key, field in fields.items():
        value = values.get(key)
        missing = value is None if field["type"] == "checkbox" else _blank(value)
        if missing:
            if field.get("required"):
                errors[f"fields.{key}"] = ["Required."]
            continue
        try:
            answers[key] = _answer(field, value)
        except ValueError as exc:
            errors[f"fields.{key}"] = [str(exc)]
    contact = {key: answers.pop(key) for key in CONTACT_FIELDS if key in answers}
    if contact:
        try:
            contact = chat_services.check_contact_changes(contact)
        except ValidationFailed as exc:  # the contact's own rules, with their messages
            for name, messages in (exc.errors or {}).items():
                errors[f"fields.{name.split('.')[0]}"] = messages
    if errors:
        raise ValidationFailed("One or more answers are invalid.", errors=errors)
    return contact, answers


@transaction.atomic
def submit_prechat(*, widget: Widget, contact: Contact, values: dict) -> dict:
    """Check the answers against the widget's form and write them. Returns what was stored, by key."""
    if contact.widget_id != widget.pk:
        raise AssertionError("contact must belong to the widget")
    form = widget_selectors.prechat_form(widget)
    if form.get("when", "never") == "never":
        raise PrechatOff("This widget has no pre-chat form.")
    changes, attributes = check_answers(form, values)
    if changes:
        contact = chat_services.update_contact(widget=widget, contact=contact, changes=changes, source="prechat")
    if attributes:
        try:
            chat_services.set_attributes(widget=widget, contact=contact, values=attributes, source="prechat")
        except ValidationFailed as exc:  # the per-contact limits: named at the answers that passed them
            errors = {f"fields.{key.split('.')[-1]}": messages for key, messages in (exc.errors or {}).items()}
            raise ValidationFailed("One or more answers are invalid.", errors=errors) from None
    return {**changes, **attributes}
