"""The strict scalar fields of the AI configuration API, and the choices they offer."""

from __future__ import annotations

from rest_framework import serializers

from apps.core.api.serializers import (
    LabelField,
    StrictCharField,
)

from ... import phrases
from ...models import DemandSignal

LOCALE_CHOICES = phrases.LANGUAGES
# What apps.learning.demand records: the schema's enum and the filter accept exactly these.
DEMAND_CATEGORIES = tuple(DemandSignal.Category.values)


class TextField(StrictCharField):
    """Free text (persona, prompt, greeting): a JSON string, may be empty, no NUL."""

    def __init__(self, *, max_length: int, **kwargs):
        super().__init__(max_length=max_length, allow_blank=True, trim_whitespace=False, **kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if "\x00" in value:
            raise serializers.ValidationError("Must not contain NUL characters.")
        return value


class PhraseListField(serializers.ListField):
    def __init__(self, **kwargs):
        super().__init__(child=LabelField(max_length=200), max_length=20, **kwargs)


class LocaleMapField(serializers.DictField):
    """{locale: value} with locales among the seven."""

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        unknown = sorted(set(value) - set(LOCALE_CHOICES))
        if unknown:
            raise serializers.ValidationError(f"Unknown locales: {', '.join(unknown)}.")
        return value
