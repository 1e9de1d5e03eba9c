"""The marketplace's assistant templates: queries and documented shapes."""

from __future__ import annotations

from rest_framework import serializers

from apps.core.api.serializers import InputSerializer

from ... import marketplace


class TemplateListQuery(InputSerializer):
    category = serializers.ChoiceField(
        choices=marketplace.CATEGORIES, required=False, help_text="Only templates of this category."
    )
    locale = serializers.ChoiceField(
        choices=marketplace.LOCALES,
        required=False,
        help_text="The language of the templates' texts: `ru` (default) or `en`.",
    )
    page = serializers.RegexField(r"^[1-9][0-9]{0,5}$", required=False, help_text="Page number, from 1 (default 1).")
    limit = serializers.RegexField(
        r"^[1-9][0-9]{0,2}$", required=False, help_text="Page size, 1 to 100 (default 20); else 422."
    )


class TemplateQuery(InputSerializer):
    locale = serializers.ChoiceField(
        choices=marketplace.LOCALES,
        required=False,
        help_text="The language of the template's texts: `ru` (default) or `en`.",
    )


class TemplateSummaryDoc(serializers.Serializer):
    slug = serializers.CharField(help_text="The template's slug: what the template routes take.")
    category = serializers.ChoiceField(choices=marketplace.CATEGORIES, help_text="The template's category.")
    locale = serializers.ChoiceField(choices=marketplace.LOCALES, help_text="The template's language: `ru` or `en`.")
    name = serializers.CharField(help_text="The template's name.")
    description = serializers.CharField(help_text="What the template is for.")


class TemplatePageDoc(serializers.Serializer):
    data = TemplateSummaryDoc(many=True, help_text="The page's templates.")
    page = serializers.IntegerField(help_text="The page number, from 1.")
    limit = serializers.IntegerField(help_text="The page size.")
    has_more = serializers.BooleanField(help_text="True when a next page exists.")


class TemplateDoc(TemplateSummaryDoc):
    persona = serializers.CharField(help_text="The persona an applied assistant starts with.")
    system_prompt = serializers.CharField(help_text="The system prompt an applied assistant starts with.")
    greeting = serializers.CharField(help_text="The greeting an applied assistant starts with.")
    quick_phrases = serializers.ListField(
        child=serializers.CharField(), help_text="The quick phrases an applied assistant starts with."
    )
    temperature = serializers.FloatField(help_text="The sampling temperature an applied assistant starts with.")
    escalation_triggers = serializers.ListField(
        child=serializers.CharField(), help_text="The template's own escalation triggers."
    )
    effective_escalation_triggers = serializers.ListField(
        child=serializers.CharField(),
        help_text=(
            "Its triggers plus the service's base triggers of the locale: what an applied assistant starts with."
        ),
    )
