"""Contacts of a widget, their tags and the attributes a page sets (`set_attributes`)."""

from __future__ import annotations

import logging
import math
import re

from django.db import IntegrityError, transaction
from django.utils import timezone
from rest_framework.exceptions import ValidationError

from apps.core import events
from apps.core.api.serializers import validate_input
from apps.core.errors import ValidationFailed, flatten_errors
from apps.core.models import Widget

from ..contact_input import ATTRIBUTES_MAX_BYTES, ContactPatchInput, TagsInput, attributes_size
from ..models import Contact, ContactTag

logger = logging.getLogger(__name__)


@transaction.atomic
def create_contact(
    *, widget: Widget, name: str = "", email: str = "", phone: str = "", locale: str = "", attributes=None
) -> Contact:
    return Contact.objects.create(
        widget=widget, name=name, email=email, phone=phone, locale=locale, attributes=attributes or {}
    )


def _checked(serializer_class, data: dict) -> dict:
    try:
        return validate_input(serializer_class, data)
    except ValidationError as exc:
        raise ValidationFailed("One or more fields are invalid.", errors=flatten_errors(exc.detail)) from None


def check_contact_changes(data: dict) -> dict:
    """`data` (the members of PATCH /v1/contacts/{id}: name, email, phone, attributes) read by that
    route's rules, for callers outside the REST API (the operator console). A bad value raises the
    API's 422, ValidationFailed with its messages by field."""
    return _checked(ContactPatchInput, data)


def check_tag_names(names: list) -> list[str]:
    """Tag names read by the rules of POST /v1/contacts/{id}/tags (1 to 50 names of 1 to 64
    characters, trimmed); a bad one raises the API's 422 with its messages by field (`tags.0`)."""
    return _checked(TagsInput, {"tags": names})["tags"]


@transaction.atomic
def update_contact(*, widget: Widget, contact: Contact, changes: dict, source: str = "api") -> Contact:
    """Merge-safe PATCH: only the named members change; `attributes` merges key by key (a null
    value removes that key). Emits contact.updated with the fields that actually changed.

    The merged attributes may hold at most ATTRIBUTES_MAX_BYTES (422, nothing changed): checked
    under the row lock, so two patches cannot together grow the stored object past the limit."""
    contact = Contact.objects.select_for_update().get(pk=contact.pk, widget=widget)
    changed: list[str] = []
    for field in ("name", "email", "phone"):
        if field in changes:
            value = changes[field] or ""
            if getattr(contact, field) != value:
                setattr(contact, field, value)
                changed.append(field)
    if "attributes" in changes:
        merged = dict(contact.attributes)
        for key, value in (changes["attributes"] or {}).items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = value
        if attributes_size(merged) > ATTRIBUTES_MAX_BYTES:
            raise ValidationFailed(
                "One or more fields are invalid.",
                errors={"attributes": [f"The merged attributes would exceed {ATTRIBUTES_MAX_BYTES} bytes."]},
            )
        if merged != contact.attributes:
            contact.attributes = merged
            changed.append("attributes")
    if changed:
        contact.updated_at = timezone.now()
        contact.save(update_fields=[*changed, "updated_at"])
        events.emit(widget, events.CONTACT_UPDATED, client_id=contact.guid, changed_fields=changed)
    return contact


@transaction.atomic
def add_tags(*, widget: Widget, contact: Contact, names: list[str]) -> list[str]:
    """Attach tags; re-posting an existing tag is a no-op. Returns the contact's tags."""
    existing = set(ContactTag.objects.filter(contact=contact).values_list("name", flat=True))
    for name in dict.fromkeys(names):
        if name in existing:
            continue
        try:
            with transaction.atomic():
                ContactTag.objects.create(widget=widget, contact=contact, name=name)
        except IntegrityError:
            pass  # a concurrent request attached it: still a no-op
    return sorted(ContactTag.objects.filter(contact=contact).values_list("name", flat=True))


@transaction.atomic
def remove_tag(*, widget: Widget, contact: Contact, name: str) -> list[str]:
    """Detach one tag; a tag the contact does not carry is a no-op. Returns the contact's tags."""
    ContactTag.objects.filter(widget=widget, contact=contact, name=name).delete()
    return sorted(ContactTag.objects.filter(contact=contact).values_list("name", flat=True))


# --- attributes a page sets (ChatWidget.setAttributes, setUser's attributes, the pre-chat form) ---------

# Product decision ("JavaScript API"): keys `[a-z0-9_]{1,40}`, values a string, a number or a
# boolean, at most 50 keys per contact and 500 characters a value.
ATTRIBUTE_KEY_RE = re.compile(r"[a-z0-9_]{1,40}")
ATTRIBUTES_MAX_KEYS = 50
ATTRIBUTE_VALUE_MAX_CHARS = 500


def _attribute_errors(values: dict) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    for key, value in values.items():
        problems = []
        if not isinstance(key, str) or not ATTRIBUTE_KEY_RE.fullmatch(key):
            problems.append("Keys are 1 to 40 characters of a-z, 0-9 and _.")
        if isinstance(value, str):
            if len(value) > ATTRIBUTE_VALUE_MAX_CHARS:
                problems.append(f"At most {ATTRIBUTE_VALUE_MAX_CHARS} characters.")
        elif isinstance(value, float):
            if not math.isfinite(value):
                problems.append("Must be a string, a number or a boolean.")
        elif not isinstance(value, bool | int):
            problems.append("Must be a string, a number or a boolean.")
        if problems:
            errors[str(key)] = problems
    return errors


def check_attributes(values: object) -> dict:
    """The rules of `set_attributes` that need no stored row: a JSON object whose keys and values
    are allowed. Raises the 422 (errors keyed by the attribute's key) or returns `values`."""
    if not isinstance(values, dict):
        raise ValidationFailed("One or more attributes are invalid.", errors={"attributes": ["Must be a JSON object."]})
    errors = _attribute_errors(values)
    if errors:
        raise ValidationFailed("One or more attributes are invalid.", errors=errors)
    return values


@transaction.atomic
def set_attributes(*, widget: Widget, contact: Contact, values: dict, source: str) -> Contact:
    """Merge `values` into the contact's attributes: the one rule set of every visitor-side write of
    attributes (`setAttributes`, `setUser`'s attributes, the pre-chat form's own fields; the REST
    API's PATCH keeps its wider rules). A call past a limit is refused whole (422, errors keyed by
    the attribute's key, nothing written): a bad key or value, more than ATTRIBUTES_MAX_KEYS keys on
    the contact after the merge (counted under the row lock, so two calls cannot together pass
    it), or more than ATTRIBUTES_MAX_BYTES stored. Emits contact.updated when something changed.
    `source` names the caller for the log (never the values: they are the visitor's data)."""
    check_attributes(values)
    contact = Contact.objects.select_for_update().get(pk=contact.pk, widget=widget)
    merged = {**contact.attributes, **values}
    added = [key for key in values if key not in contact.attributes]
    if len(merged) > ATTRIBUTES_MAX_KEYS:
        message = f"A contact holds at most {ATTRIBUTES_MAX_KEYS} attributes."
        raise ValidationFailed("One or more attributes are invalid.", errors={key: [message] for key in added})
    if attributes_size(merged) > ATTRIBUTES_MAX_BYTES:
        message = f"The merged attributes would exceed {ATTRIBUTES_MAX_BYTES} bytes."
        raise ValidationFailed("One or more attributes are invalid.", errors={key: [message] for key in values})
    if merged != contact.attributes:
        contact.attributes = merged
        contact.updated_at = timezone.now()
        contact.save(update_fields=["attributes", "updated_at"])
        events.emit(widget, events.CONTACT_UPDATED, client_id=contact.guid, changed_fields=["attributes"])
        logger.info("contact attributes set", extra={"widget_id": widget.pk, "source": source, "keys": len(values)})
    return contact
