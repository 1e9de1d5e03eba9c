"""Inputs and documented shapes of the proactive-message routes. The ranges are the resource's rules
(docs/integrating/widget.md "Proactive messages" lists them):

- `name` 1..100 characters, unique per widget; `text_i18n` one to seven of the widget's languages,
  each 1..1000 characters;
- `rules.url_patterns` at most 20 globs of 1..500 characters (`*` any run of characters, `?` one);
  `time_on_page_seconds` 0..86400; `visits_at_least` 1..1000; `attributes` at most 20 keys
  `[a-z0-9_]{1,40}`, each a string (at most 500 characters), a number or a boolean;
- `priority` -1000..1000 (larger wins; among equals the older message)."""

from __future__ import annotations

import re

from rest_framework import serializers

from apps.agents.models import Agent
from apps.core.api.query import MomentField
from apps.core.api.serializers import (
    InputSerializer,
    LabelField,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    TenantPrimaryKeyField,
)

from ..models import LANGUAGES, ProactiveMessage

TEXT_MAX = 1000
PATTERNS_MAX, PATTERN_MAX = 20, 500
SECONDS_RANGE = (0, 86400)
VISITS_RANGE = (1, 1000)
ATTRIBUTES_MAX, ATTRIBUTE_VALUE_MAX = 20, 500
PRIORITY_RANGE = (-1000, 1000)
KEY = re.compile(r"^[a-z0-9_]{1,40}$")
AGENT_HELP = (
    "The agent shown as the sender (name and avatar) and as the author of the opening message of a chat the "
    "visitor's reply starts; null: the widget's name. An agent of another widget is 422 like a missing one."
)


def _not_blank(value: str) -> None:
    if not value.strip():
        raise serializers.ValidationError("Must contain a visible character.")


class TextsField(serializers.DictField):
    """`{language: text}`: one to seven of the widget's languages."""

    child = StrictCharField(max_length=TEXT_MAX, trim_whitespace=False, validators=[_not_blank])

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            self.fail("not_a_dict", input_type=type(data).__name__)
        unknown = sorted(set(data) - set(LANGUAGES))
        if unknown:
            raise serializers.ValidationError(f"Unknown language {', '.join(unknown)}; one of {', '.join(LANGUAGES)}.")
        if not data:
            raise serializers.ValidationError("At least one language.")
        return super().to_internal_value(data)


class AttributesField(serializers.DictField):
    """`{key: value}` the contact's attributes (set by the page's `setAttributes`) must equal."""

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            self.fail("not_a_dict", input_type=type(data).__name__)
        if len(data) > ATTRIBUTES_MAX:
            raise serializers.ValidationError(f"At most {ATTRIBUTES_MAX} attributes.")
        errors = {}
        for key, value in data.items():
            if not KEY.match(key):
                errors[key] = ["Keys are 1 to 40 of a-z, 0-9 and _."]
            elif isinstance(value, str):
                if len(value) > ATTRIBUTE_VALUE_MAX:
                    errors[key] = [f"At most {ATTRIBUTE_VALUE_MAX} characters."]
            elif not isinstance(value, bool | int | float) or value != value or value in (float("inf"), float("-inf")):
                errors[key] = ["Must be a string, a number or a boolean."]
        if errors:
            raise serializers.ValidationError(errors)
        return dict(data)


class ProactiveRulesInput(InputSerializer):
    url_patterns = serializers.ListField(
        child=StrictCharField(max_length=PATTERN_MAX, validators=[_not_blank]),
        max_length=PATTERNS_MAX,
        required=False,
        default=list,
        help_text=f"Globs matched against the page's full URL (`*` any characters, `?` one); any one must match. "
        f"At most {PATTERNS_MAX}, each up to {PATTERN_MAX} characters; empty: every page.",
    )
    time_on_page_seconds = StrictIntegerField(
        min_value=SECONDS_RANGE[0],
        max_value=SECONDS_RANGE[1],
        required=False,
        default=0,
        help_text=f"Seconds the visitor has been on the page, {SECONDS_RANGE[0]}..{SECONDS_RANGE[1]}.",
    )
    visits_at_least = StrictIntegerField(
        min_value=VISITS_RANGE[0],
        max_value=VISITS_RANGE[1],
        required=False,
        default=1,
        help_text=f"The visitor's visits to the site counted in the browser, the current one included, "
        f"{VISITS_RANGE[0]}..{VISITS_RANGE[1]}.",
    )
    attributes = AttributesField(
        required=False,
        default=dict,
        help_text=f"`{{key: value}}` the visitor's attributes (the page's `setAttributes`) must equal; at most "
        f"{ATTRIBUTES_MAX}.",
    )
    only_when_open = StrictBooleanField(
        required=False, default=False, help_text="Only inside the widget's business hours."
    )


class ProactiveRulesDoc(serializers.Serializer):
    url_patterns = serializers.ListField(child=serializers.CharField(), help_text="Globs against the page's URL.")
    time_on_page_seconds = serializers.IntegerField(help_text="Seconds on the page.")
    visits_at_least = serializers.IntegerField(help_text="Visits, the current one included.")
    attributes = serializers.DictField(help_text="Attributes the visitor must have.")
    only_when_open = serializers.BooleanField(help_text="Only inside business hours.")


class ProactiveMessageInput(InputSerializer):
    name = LabelField(
        max_length=100,
        validators=[_not_blank],
        help_text="1 to 100 characters, unique in the widget (409 `name_taken`); the page's `trigger(name)` uses it.",
    )
    enabled = StrictBooleanField(required=False, default=True, help_text="Only enabled messages reach the widget.")
    text_i18n = TextsField(
        help_text=f"`{{language: text}}`, one to seven of {', '.join(LANGUAGES)}, each 1 to {TEXT_MAX} characters. "
        "The visitor sees their language's, else English, else the first."
    )
    agent_id = TenantPrimaryKeyField(
        queryset=Agent.objects.all(), missing="422", allow_null=True, required=False, default=None, help_text=AGENT_HELP
    )
    rules = ProactiveRulesInput(required=False, help_text="When the widget shows it; every rule given must hold.")
    frequency = serializers.ChoiceField(
        choices=ProactiveMessage.Frequency.choices,
        required=False,
        default=ProactiveMessage.Frequency.ONCE,
        help_text="`once` per browser, `once_per_session` per browser tab session, `always` on every page it matches.",
    )
    priority = StrictIntegerField(
        min_value=PRIORITY_RANGE[0],
        max_value=PRIORITY_RANGE[1],
        required=False,
        default=0,
        help_text=f"{PRIORITY_RANGE[0]}..{PRIORITY_RANGE[1]}; of the messages that match, the largest shows.",
    )

    def validate(self, attrs):
        if "rules" not in attrs and not self.partial:
            attrs["rules"] = ProactiveRulesInput(data={}).run_validation({})
        return attrs


class ProactiveMessagePatchInput(ProactiveMessageInput):
    """Any subset of the members; the others keep their values (`rules` and `text_i18n` are replaced
    whole)."""


class ProactiveMessageDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The message's id.")
    name = serializers.CharField(help_text="Unique in the widget.")
    enabled = serializers.BooleanField(help_text="Whether the widget gets it.")
    text_i18n = serializers.DictField(child=serializers.CharField(), help_text="`{language: text}`.")
    agent_id = serializers.IntegerField(allow_null=True, help_text=AGENT_HELP)
    rules = ProactiveRulesDoc(help_text="When the widget shows it.")
    frequency = serializers.ChoiceField(choices=ProactiveMessage.Frequency.choices, help_text="How often.")
    priority = serializers.IntegerField(help_text="Larger wins.")
    created_at = serializers.DateTimeField(help_text="When it was created.")
    updated_at = serializers.DateTimeField(help_text="When it last changed.")


class ProactiveListQuery(InputSerializer):
    """The list takes only the pagination's `cursor` and `limit`."""

    empty_is_valid = True


class ProactiveStatsDoc(serializers.Serializer):
    shown = serializers.IntegerField(help_text="Times the bubble was shown.")
    opened = serializers.IntegerField(help_text="Times a visitor clicked the bubble (opening the widget from it).")
    replied = serializers.IntegerField(help_text="Chats a visitor's reply to it started.")


class ProactiveStatsQuery(InputSerializer):
    """`from`/`to` read like the statistics' filters (apps.core.api.query.MomentField)."""

    empty_is_valid = True
    from_ = MomentField(
        required=False,
        help_text="Date or date-time, Europe/Moscow unless an offset is given; a bare date is midnight. Inclusive: "
        "a day counts when its midnight is in [from, to). Default: 30 days before `to`.",
    )
    to = MomentField(
        required=False,
        help_text="Like `from`; exclusive (send the next day to include a whole day). Default: today included.",
    )

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = fields.pop("from_")
        return fields

    def validate(self, attrs):
        if attrs.get("from") and attrs.get("to") and attrs["from"] >= attrs["to"]:
            raise serializers.ValidationError({"to": ["Must be after `from`."]})
        return attrs
