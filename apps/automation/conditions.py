"""A rule's conditions: what each field and operator means, their validation (the API's words) and
their compiled form (what the workers evaluate).

Every condition is `{field, op, value}`; a rule's conditions must all hold. Text is compared without
regard to case (both sides case-folded) except by `matches`, whose regular expression is run as
written (`(?i)` makes it ignore case) with the `regex` package's time limit: a pattern that
backtracks catastrophically stops at MATCH_TIMEOUT and the run is logged `failed`. The field
`labels` is a list: an operator holds when it holds for one of the chat's labels, except
`not_equals`, which holds when none of them equals the value.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import regex

from apps.core.errors import ValidationFailed

OPS = ("equals", "not_equals", "contains", "starts_with", "in", "matches")
TEXT_FIELDS = ("channel", "language", "page_url", "message.text")
FIELDS = (*TEXT_FIELDS, "department_id", "labels", "contact.attributes.<key>", "business_hours.open")
ATTRIBUTE_PREFIX = "contact.attributes."
# the contacts' own attribute keys (apps.chats.services.contacts)
ATTRIBUTE_KEY = re.compile(r"[a-z0-9_]{1,40}")
OPS_OF = {
    "department_id": ("equals", "not_equals", "in"),
    "business_hours.open": ("equals", "not_equals"),
}
MAX_CONDITIONS = 20
MAX_VALUE = 500
MAX_CHOICES = 50
# A visitor's message is at most a few thousand characters: a sane pattern answers in microseconds,
# so a tenth of a second only ever stops a pattern that backtracks without end.
MATCH_TIMEOUT = 0.1


class MatchTimedOut(Exception):
    """A `matches` condition ran out of time: the run is logged `failed` with this detail."""


def field_kind(field: str) -> str | None:
    """The field's kind (text, department, labels, attribute, hours), or None for an unknown field."""
    if field in TEXT_FIELDS:
        return "text"
    if field == "department_id":
        return "department"
    if field == "labels":
        return "labels"
    if field == "business_hours.open":
        return "hours"
    if field.startswith(ATTRIBUTE_PREFIX) and ATTRIBUTE_KEY.fullmatch(field[len(ATTRIBUTE_PREFIX) :]):
        return "attribute"
    return None


# --- validation -------------------------------------------------------------------------------------


def validate_conditions(conditions: Any) -> list[dict]:
    """The normalised conditions, or ValidationFailed keyed `conditions.<index>.<member>`."""
    if not isinstance(conditions, list):
        raise ValidationFailed(errors={"conditions": ["Must be a list of {field, op, value}."]})
    if len(conditions) > MAX_CONDITIONS:
        raise ValidationFailed(errors={"conditions": [f"At most {MAX_CONDITIONS} conditions."]})
    errors: dict[str, list[str]] = {}
    normalised = []
    for index, condition in enumerate(conditions):
        at = f"conditions.{index}"
        if not isinstance(condition, dict):
            errors[at] = ["Must be an object {field, op, value}."]
            continue
        extra = sorted(set(condition) - {"field", "op", "value"})
        if extra:
            errors[at] = [f"Unknown member: {', '.join(extra)}."]
            continue
        field, op = condition.get("field"), condition.get("op")
        kind = field_kind(field) if isinstance(field, str) else None
        if kind is None:
            errors[f"{at}.field"] = [
                "One of: channel, department_id, language, page_url, message.text, labels, "
                "contact.attributes.<key> (a key of a-z, 0-9, _), business_hours.open."
            ]
            continue
        allowed = OPS_OF.get(field, OPS)
        if op not in allowed:
            errors[f"{at}.op"] = [f"One of: {', '.join(allowed)}."]
            continue
        if "value" not in condition:
            errors[f"{at}.value"] = ["This field is required."]
            continue
        try:
            value = _value(kind, op, condition["value"])
        except ValueError as exc:
            errors[f"{at}.value"] = [str(exc)]
            continue
        normalised.append({"field": field, "op": op, "value": value})
    if errors:
        raise ValidationFailed(errors=errors)
    return normalised


def _value(kind: str, op: str, value: Any) -> Any:
    if kind == "hours":
        if not isinstance(value, bool):
            raise ValueError("Must be true or false.")
        return value
    if kind == "department":
        if op == "in":
            if not isinstance(value, list) or not 1 <= len(value) <= MAX_CHOICES:
                raise ValueError(f"Must be a list of 1 to {MAX_CHOICES} department ids.")
            if not all(_is_id(item) for item in value):
                raise ValueError("Each must be a department id (a positive integer).")
            return list(dict.fromkeys(value))
        if not _is_id(value):
            raise ValueError("Must be a department id (a positive integer).")
        return value
    if op == "in":
        if not isinstance(value, list) or not 1 <= len(value) <= MAX_CHOICES:
            raise ValueError(f"Must be a list of 1 to {MAX_CHOICES} texts.")
        if not all(isinstance(item, str) and len(item) <= MAX_VALUE for item in value):
            raise ValueError(f"Each must be a text of at most {MAX_VALUE} characters.")
        return list(dict.fromkeys(value))
    if not isinstance(value, str) or len(value) > MAX_VALUE:
        raise ValueError(f"Must be a text of at most {MAX_VALUE} characters.")
    if op == "matches":
        try:
            regex.compile(value)
        except (regex.error, OverflowError, RecursionError) as exc:
            raise ValueError(f"Not a valid regular expression: {exc}.") from None
    return value


def _is_id(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value < 2**63


# --- compiled form ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Facts:
    """What the conditions of one event read; the runtime fills only what its rules need."""

    channel: str = ""
    department_id: int | None = None
    language: str = ""
    page_url: str = ""
    message_text: str = ""
    labels: tuple[str, ...] = ()
    attributes: dict | None = None
    business_hours_open: bool = False

    def value(self, field: str) -> Any:
        return _getter(field)(self)


# the facts' attribute of each field (the compiled conditions read them directly)
_ATTRIBUTES = {
    "channel": "channel",
    "department_id": "department_id",
    "language": "language",
    "page_url": "page_url",
    "message.text": "message_text",
    "labels": "labels",
    "business_hours.open": "business_hours_open",
}


def _getter(field: str) -> Callable[[Facts], Any]:
    if field.startswith(ATTRIBUTE_PREFIX):
        key = field[len(ATTRIBUTE_PREFIX) :]
        return lambda facts: _as_text((facts.attributes or {}).get(key))
    return attrgetter(_ATTRIBUTES[field])


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


Test = Callable[[Facts], bool]


def compile_condition(condition: dict) -> Test:
    """A function of the facts, built once per rule-set version (patterns compiled, values folded)."""
    field, op, value = condition["field"], condition["op"], condition["value"]
    one = _compile_op(op, value, numeric=field == "department_id" or field == "business_hours.open")
    if field == "labels":
        if op == "not_equals":
            equal = _compile_op("equals", value, numeric=False)
            return lambda facts: not any(equal(label) for label in facts.labels)
        return lambda facts: any(one(label) for label in facts.labels)
    get = _getter(field)
    return lambda facts: one(get(facts))


def _compile_op(op: str, value: Any, *, numeric: bool) -> Callable[[Any], bool]:
    if numeric:
        if op == "equals":
            return lambda actual: actual == value
        if op == "not_equals":
            return lambda actual: actual != value
        choices = frozenset(value)
        return lambda actual: actual in choices
    if op == "matches":
        pattern = regex.compile(value)

        def matches(actual: str) -> bool:
            try:
                return pattern.search(actual, timeout=MATCH_TIMEOUT) is not None
            except TimeoutError:
                raise MatchTimedOut(f"The regular expression {value!r} ran out of time.") from None

        return matches
    if op == "in":
        choices = frozenset(item.casefold() for item in value)
        return lambda actual: actual.casefold() in choices
    folded = value.casefold()
    if op == "equals":
        return lambda actual: actual.casefold() == folded
    if op == "not_equals":
        return lambda actual: actual.casefold() != folded
    if op == "contains":
        return lambda actual: folded in actual.casefold()
    return lambda actual: actual.casefold().startswith(folded)


def needs(conditions: list[dict]) -> set[str]:
    """The facts these conditions read beyond the chat row (what costs the runtime a statement)."""
    wanted = set()
    for condition in conditions:
        field = condition["field"]
        if field == "labels":
            wanted.add("labels")
        elif field == "page_url":
            wanted.add("page_url")
        elif field == "message.text":
            wanted.add("message_text")
        elif field == "business_hours.open":
            wanted.add("business_hours")
    return wanted
