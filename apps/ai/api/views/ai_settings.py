"""The widget's AI settings, the legacy settings' migration and the AI phrases."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from apps.core.api.query import query_data
from apps.core.api.serializers import refuse_body, refuse_query
from apps.core.api.views import ScopedAPIView
from apps.core.errors import ValidationFailed

from ... import selectors, services
from ...models import Assistant
from .. import serializers as s
from .schema_notes import MERGE_NOTE


class AiSettingsView(ScopedAPIView):
    """GET and PATCH /v1/ai/settings."""

    route_scopes = {"get": ["ai:read"], "patch": ["ai:write"]}
    idempotency_required = {"patch"}
    problem_statuses = {"patch": [409]}

    @extend_schema(
        summary="AI settings",
        description="The widget's AI switches, plus `offline_outcome_mode` (`handover_offline` when presence is read, "
        "else `handover_unknown`), `effective_assistant` (`{id, name}` of the enabled default assistant, else the "
        "newest enabled one, or null), `legacy_persona` (the pre-assistant persona or null) and `learning_target` "
        "(the assistant learning follows: `assistant_id` when given, else the effective one). An `assistant_id` "
        "that is not one of the widget's assistants is 422.",
        parameters=[s.SettingsQuery],
        responses={200: s.SettingsDoc},
    )
    def get(self, request):
        query = self.validated(s.SettingsQuery, data=query_data(request, skip=()))
        assistant = None
        if "assistant_id" in query:
            assistant = Assistant.objects.filter(widget=request.widget, pk=query["assistant_id"]).first()
            if assistant is None:
                raise ValidationFailed(errors={"assistant_id": ["Unknown id."]})
        return Response(selectors.settings_payload(request.widget, assistant=assistant))

    @extend_schema(
        summary="Update AI settings",
        description="Any subset of `enabled`, `rag_enabled`, `shadow_mode`, `autonomous_tuning_enabled`, "
        "`presence_context_enabled`, `takeover_timeout_sec` (30 to 86400), `handover_summary` (a private note of the "
        "AI operator summarising the chat when it hands it to people). " + MERGE_NOTE,
        request=s.SettingsPatchInput,
        responses={200: s.SettingsDoc},
    )
    def patch(self, request):
        data = self.validated(s.SettingsPatchInput)
        services.update_settings(widget=request.widget, changes=dict(data))
        return Response(selectors.settings_payload(request.widget))


class AiSettingsMigrateView(ScopedAPIView):
    """POST /v1/ai/settings/migrate."""

    route_scopes = {"post": ["ai:write"]}
    idempotency_required = {"post"}
    problem_statuses = {"post": [409]}

    @extend_schema(
        summary="Seed an assistant from the legacy settings",
        description="No body. Creates an assistant from the legacy persona, system prompt and greeting (the default "
        "when the widget has none). Additive (no existing assistant changes) and repeatable: while an assistant "
        "seeded from the same legacy values exists it is returned with `created: false`. 409 `nothing_to_migrate` "
        "when there are no legacy settings.",
        request=None,
        responses={200: s.AssistantCreatedDoc},
    )
    def post(self, request):
        refuse_body(request)
        assistant, created = services.migrate_legacy_settings(widget=request.widget)
        return Response({"assistant": selectors.assistant_payload(assistant), "created": created})


class AiMessagesView(ScopedAPIView):
    """GET, PATCH and PUT /v1/ai/messages."""

    route_scopes = {"get": ["ai:read"], "patch": ["ai:write"], "put": ["ai:write"]}
    idempotency_required = {"patch", "put"}
    problem_statuses = {"get": [422], "patch": [409], "put": [409]}

    RULES = (
        "Keys: `handoff_to_human`, `handover_notice`, `handover_offline`, `handover_unknown`, `social_reply`, "
        "`handoff_to_ai`, `pii_restore_fallback`, `outside_hours` (`{opens_at}` becomes the next opening as `HH:MM "
        "DD.MM`, or is removed); languages `ru`, `en`, `el`, `de`, `es`, `ar`, `zh`. An override is "
        "plain text up to 500 characters: tags and control characters are stripped and a value empty after that is "
        "422."
    )

    @extend_schema(
        summary="AI phrases",
        description="Every phrase per language: `{key: {lang: {text, source (override or default), default}}}`.",
        responses={200: s.PhrasesDoc},
    )
    def get(self, request):
        refuse_query(request)
        return Response(selectors.phrases_payload(request.widget))

    @extend_schema(
        summary="Update AI phrases",
        description="Merge-safe: a text sets one override, `{key: {lang: null}}` resets one language, `{key: null}` "
        "every language of the key; what is not named is kept. " + RULES,
        request=s.PhrasesInput,
        responses={200: s.PhrasesDoc},
    )
    def patch(self, request):
        data = self.validated(s.PhrasesInput)
        services.patch_phrases(widget=request.widget, body=_plain(data))
        return Response(selectors.phrases_payload(request.widget))

    @extend_schema(
        summary="Replace AI phrases",
        description="The complete override set: omitted keys and languages are reset to the default; `{}` resets "
        "all. " + RULES,
        request=s.PhrasesInput,
        responses={200: s.PhrasesDoc},
    )
    def put(self, request):
        data = self.validated(s.PhrasesInput)
        services.replace_phrases(widget=request.widget, body=_plain(data))
        return Response(selectors.phrases_payload(request.widget))


def _plain(data) -> dict:
    return {key: (None if langs is None else dict(langs)) for key, langs in data.items()}
