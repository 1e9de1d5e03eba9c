"""The variables of a text: what is accepted on write is exactly what renders."""

import pytest

from apps.canned import variables
from apps.canned.models import LANGUAGES
from apps.widget.settings_vocabulary import LANGUAGES as WIDGET_LANGUAGES

FULL = {"contact.name": "Ann", "contact.email": "ann@example.com", "agent.name": "Bob", "widget.name": "Shop"}
EMPTY = dict.fromkeys(FULL)


def test_the_seven_languages_are_the_widgets():
    assert LANGUAGES == WIDGET_LANGUAGES


@pytest.mark.parametrize("name", variables.NAMES)
def test_each_variable_renders_its_value(name):
    assert variables.render(f"<{{{{{name}}}}}>", FULL) == f"<{FULL[name]}>"


@pytest.mark.parametrize("name", variables.NAMES)
def test_each_variable_takes_its_fallback_when_missing(name):
    assert variables.render(f"<{{{{{name}|fallback text}}}}>", EMPTY) == "<fallback text>"
    assert variables.render(f"<{{{{{name}|fallback text}}}}>", {**EMPTY, name: ""}) == "<fallback text>"


@pytest.mark.parametrize("name", variables.NAMES)
def test_each_variable_without_fallback_is_empty_when_missing(name):
    assert variables.render(f"<{{{{{name}}}}}>", EMPTY) == "<>"


def test_a_value_wins_over_the_fallback():
    assert variables.render("Hi {{contact.name|there}}", FULL) == "Hi Ann"


def test_spaces_around_the_name_are_ignored():
    assert variables.render("Hi {{ contact.name | there }}", EMPTY) == "Hi there"
    assert variables.unknown_variables("{{ agent.name }}") == []


def test_text_without_variables_is_unchanged():
    assert variables.render("Just text { not } {x}", FULL) == "Just text { not } {x}"


@pytest.mark.parametrize(
    "text",
    ["{{contact.phone}}", "{{Contact.Name}}", "{{CONTACT.NAME|x}}", "{{}}", "{{|x}}", "{{agent}}", "{{widget.name.x}}"],
)
def test_other_variables_are_unknown(text):
    assert variables.unknown_variables(f"Hi {text} and {{{{contact.name}}}}") == [text]


@pytest.mark.parametrize("text", ["{{agent.name|{{x}}}}", "{{widget.name|{{}}", "{{contact.name|a {{contact.email}}}}"])
def test_a_fallback_holding_another_variable_is_unknown(text):
    # `{{...}}` inside a fallback would come out of a render as written, a variable nobody fills
    assert variables.unknown_variables(text) != []


def test_every_known_variable_is_accepted():
    text = " ".join(f"{{{{{n}}}}} {{{{{n}|fb}}}}" for n in variables.NAMES)
    assert variables.unknown_variables(text) == []
