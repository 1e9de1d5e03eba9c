"""Conditions: every field and operator, their validation in the API's words, the time limit of
`matches` (product-decisions.md "Team work", automation rules)."""

import pytest

from apps.automation.conditions import (
    MAX_CONDITIONS,
    Facts,
    MatchTimedOut,
    compile_condition,
    validate_conditions,
)
from apps.core.errors import ValidationFailed

FACTS = Facts(
    channel="telegram",
    department_id=7,
    language="de",
    page_url="https://shop.example/refunds/form",
    message_text="I want a REFUND for order 42",
    labels=("VIP", "Billing"),
    attributes={"plan": "gold", "seats": 5, "trial": False},
    business_hours_open=True,
)


def holds(field, op, value, facts=FACTS) -> bool:
    [condition] = validate_conditions([{"field": field, "op": op, "value": value}])
    return compile_condition(condition)(facts)


def errors_of(conditions) -> dict:
    with pytest.raises(ValidationFailed) as caught:
        validate_conditions(conditions)
    return caught.value.errors


# --- every text field with every operator -----------------------------------------------------------

TEXT_CASES = {
    "channel": ("Telegram", "tele", "http"),
    "language": ("DE", "d", "e"),
    "page_url": ("https://shop.example/refunds/form", "/refunds/", "ftp:"),
    "message.text": ("i want a refund for order 42", "refund", "You"),
    "contact.attributes.plan": ("GOLD", "ol", "x"),
}


@pytest.mark.parametrize("field", TEXT_CASES)
def test_every_text_field_with_equals_not_equals_contains_starts_with_in_matches(field):
    equal, inside, absent = TEXT_CASES[field]
    actual = FACTS.value(field)
    assert holds(field, "equals", equal) and not holds(field, "equals", absent)
    assert holds(field, "not_equals", absent) and not holds(field, "not_equals", equal)
    assert holds(field, "contains", inside) and not holds(field, "contains", absent + "zz")
    assert holds(field, "starts_with", actual[:2].upper()) and not holds(field, "starts_with", "zz" + actual)
    assert holds(field, "in", ["nothing", equal]) and not holds(field, "in", ["nothing"])
    assert holds(field, "matches", "^" + actual[:1]) and not holds(field, "matches", "^zz")


def test_matches_is_case_sensitive_unless_the_pattern_says_otherwise():
    assert not holds("message.text", "matches", r"\brefund\b")
    assert holds("message.text", "matches", r"(?i)\brefund\b")


def test_a_missing_attribute_reads_as_empty_and_other_values_as_text():
    assert holds("contact.attributes.unknown", "equals", "")
    assert holds("contact.attributes.unknown", "not_equals", "gold")
    assert holds("contact.attributes.seats", "equals", "5")
    assert holds("contact.attributes.trial", "equals", "false")


def test_department_id_equals_not_equals_in():
    assert holds("department_id", "equals", 7) and not holds("department_id", "equals", 8)
    assert holds("department_id", "not_equals", 8) and not holds("department_id", "not_equals", 7)
    assert holds("department_id", "in", [1, 7]) and not holds("department_id", "in", [1, 2])
    assert holds("department_id", "not_equals", 7, Facts(department_id=None))


def test_labels_hold_for_one_of_the_chats_labels_and_not_equals_for_none():
    assert holds("labels", "equals", "vip") and not holds("labels", "equals", "spam")
    assert holds("labels", "not_equals", "spam") and not holds("labels", "not_equals", "billing")
    assert holds("labels", "contains", "ill") and holds("labels", "starts_with", "bi")
    assert holds("labels", "in", ["spam", "VIP"]) and not holds("labels", "in", ["spam"])
    assert holds("labels", "matches", "^V") and not holds("labels", "matches", "^v")
    assert not holds("labels", "equals", "vip", Facts(labels=()))
    assert holds("labels", "not_equals", "vip", Facts(labels=()))


def test_business_hours_open_equals_and_not_equals_a_boolean():
    assert holds("business_hours.open", "equals", True)
    assert not holds("business_hours.open", "equals", True, Facts(business_hours_open=False))
    assert holds("business_hours.open", "not_equals", True, Facts(business_hours_open=False))


# --- validation ---------------------------------------------------------------------------------------


def test_an_invalid_regular_expression_is_refused_at_its_value():
    errors = errors_of([{"field": "message.text", "op": "matches", "value": "(unclosed"}])
    assert list(errors) == ["conditions.0.value"]
    assert errors["conditions.0.value"][0].startswith("Not a valid regular expression")


@pytest.mark.parametrize(
    ("condition", "path"),
    [
        ({"field": "country", "op": "equals", "value": "x"}, "conditions.0.field"),
        ({"field": "contact.attributes.Bad-Key", "op": "equals", "value": "x"}, "conditions.0.field"),
        ({"field": "channel", "op": "greater_than", "value": "x"}, "conditions.0.op"),
        ({"field": "department_id", "op": "contains", "value": 1}, "conditions.0.op"),
        ({"field": "business_hours.open", "op": "in", "value": [True]}, "conditions.0.op"),
        ({"field": "business_hours.open", "op": "equals", "value": "yes"}, "conditions.0.value"),
        ({"field": "department_id", "op": "equals", "value": "7"}, "conditions.0.value"),
        ({"field": "department_id", "op": "in", "value": []}, "conditions.0.value"),
        ({"field": "channel", "op": "in", "value": "telegram"}, "conditions.0.value"),
        ({"field": "channel", "op": "equals", "value": 5}, "conditions.0.value"),
        ({"field": "channel", "op": "equals", "value": "x" * 501}, "conditions.0.value"),
        ({"field": "channel", "op": "equals"}, "conditions.0.value"),
        ({"field": "channel", "op": "equals", "value": "x", "extra": 1}, "conditions.0"),
        ("channel", "conditions.0"),
    ],
)
def test_each_bad_condition_is_named_by_its_member(condition, path):
    assert list(errors_of([condition])) == [path]


def test_conditions_must_be_a_list_of_at_most_twenty():
    assert list(errors_of({"field": "channel"})) == ["conditions"]
    many = [{"field": "channel", "op": "equals", "value": "x"}] * (MAX_CONDITIONS + 1)
    assert list(errors_of(many)) == ["conditions"]


def test_in_drops_repeated_choices():
    assert validate_conditions([{"field": "channel", "op": "in", "value": ["a", "a", "b"]}])[0]["value"] == ["a", "b"]


# --- the time limit -------------------------------------------------------------------------------------


def test_a_catastrophic_pattern_is_stopped_by_the_time_limit():
    [condition] = validate_conditions([{"field": "message.text", "op": "matches", "value": "^(a|aa)+$"}])
    test = compile_condition(condition)
    with pytest.raises(MatchTimedOut, match="ran out of time"):
        test(Facts(message_text="a" * 40 + "b"))
