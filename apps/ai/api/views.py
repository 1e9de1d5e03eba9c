"""AI configuration routes: settings, phrases, assistants, AI operators, credentials, alerts,
demand signals, the marketplace and the integration binding. Thin: parse, call one service or
selector, serialize. The detached assistant test lives in `apps.ai.api.detached_views`."""

from __future__ import annotations

from django.conf import settings as django_settings
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, status
from rest_framework.decorators import action
from rest_framework.response import Response

from apps.agents.models import Agent
from apps.core.api.pagination import parse_limit
from apps.core.api.query import query_data
from apps.core.api.serializers import refuse_body, refuse_query
from apps.core.api.views import ScopedAPIView, WidgetScopedViewSet
from apps.core.errors import NotFound, ValidationFailed
from apps.widget import selectors as widget_selectors

from .. import marketplace, models_list, selectors, services, translations
from ..models import Alert, Assistant, Credential, DemandSignal
from . import serializers as s

MERGE_NOTE = "PATCH is merge-safe: members not sent keep their values."


# --- settings ---------------------------------------------------------------------------------------------


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
    problem_statuses = {"patch": [409], "put": [409]}

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


# --- assistants -------------------------------------------------------------------------------------------


class AssistantViewSet(
    WidgetScopedViewSet,
    mixins.ListModelMixin,
    mixins.CreateModelMixin,
    mixins.RetrieveModelMixin,
    mixins.DestroyModelMixin,
):
    """AI assistants (the brain) of the token's widget."""

    queryset = Assistant.objects.all()
    cursor_ordering = ("-created_at", "-id")
    route_scopes = {
        "list": ["ai:read"],
        "retrieve": ["ai:read"],
        "create": ["ai:write"],
        "partial_update": ["ai:write"],
        "destroy": ["ai:write"],
    }
    idempotency_required = {"create", "partial_update"}
    problem_statuses = {"create": [409], "partial_update": [409], "destroy": [409]}

    @extend_schema(summary="List assistants", description="Newest first.", responses={200: s.AssistantDoc(many=True)})
    def list(self, request):
        self.validated(s.EmptyQuery, data=query_data(request))
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response([selectors.assistant_payload(a) for a in page])

    @extend_schema(
        summary="Create an assistant",
        description="`name` is required. `is_default: true` clears the flag on the others (one default). "
        "`provider` names the driver whose widget-wide credential the assistant uses when it has none of its own.",
        request=s.AssistantInput,
        responses={201: s.AssistantDoc},
    )
    def create(self, request):
        data = self.validated(s.AssistantInput)
        assistant = services.create_assistant(widget=request.widget, fields=dict(data))
        return Response(selectors.assistant_payload(assistant), status=status.HTTP_201_CREATED)

    @extend_schema(summary="Read an assistant", description="One assistant.", responses={200: s.AssistantDoc})
    def retrieve(self, request, pk=None):
        return Response(selectors.assistant_payload(self.get_object()))

    @extend_schema(
        summary="Update an assistant",
        description="Any subset of the create fields; `name` cannot be cleared. " + MERGE_NOTE,
        request=s.AssistantInput,
        responses={200: s.AssistantDoc},
    )
    def partial_update(self, request, pk=None):
        assistant = self.get_object()
        data = self.validated(s.AssistantInput, partial=True)
        assistant = services.update_assistant(widget=request.widget, assistant=assistant, changes=dict(data))
        return Response(selectors.assistant_payload(assistant))

    @extend_schema(
        summary="Delete an assistant",
        description="Refused with 409 `assistant_in_use` while an AI operator that is not retired runs it; the "
        "problem's `operators` names them (`{id, name}`).",
        request=None,
        responses={204: None},
    )
    def destroy(self, request, pk=None):
        services.delete_assistant(widget=request.widget, assistant=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)


# --- AI operators -----------------------------------------------------------------------------------------


class OperatorViewSet(
    WidgetScopedViewSet,
    mixins.ListModelMixin,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
):
    """AI operators: `ai`-type agents bound to an assistant (also listed among the agents as type `ai`)."""

    queryset = Agent.objects.filter(type=Agent.Type.AI)
    cursor_ordering = ("-created_at", "-id")
    route_scopes = {
        "list": ["ai:read"],
        "create": ["ai:write"],
        "partial_update": ["ai:write"],
        "destroy": ["ai:write"],
    }
    idempotency_required = {"create", "partial_update"}
    problem_statuses = {"create": [409], "partial_update": [409]}

    @extend_schema(
        summary="List AI operators",
        description="AI operators only, retired included, newest first.",
        responses={200: s.OperatorDoc(many=True)},
    )
    def list(self, request):
        self.validated(s.EmptyQuery, data=query_data(request))
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response([selectors.operator_payload(a) for a in page])

    @extend_schema(
        summary="Create an AI operator",
        description="`assistant_id` is required (one of the widget's assistants, else 422); `name` defaults to the "
        "assistant's; `status` is `active` (default), `paused` or `retired`.",
        request=s.OperatorInput,
        responses={201: s.OperatorDoc},
    )
    def create(self, request):
        data = self.validated(s.OperatorInput)
        operator = services.create_operator(widget=request.widget, **data)
        return Response(selectors.operator_payload(operator), status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Update an AI operator",
        description="Rebind (`assistant_id`), rename, `show_in_header`, `status` (`active` revives a retired "
        "operator). " + MERGE_NOTE,
        request=s.OperatorInput,
        responses={200: s.OperatorDoc},
    )
    def partial_update(self, request, pk=None):
        operator = self.get_object()
        data = self.validated(s.OperatorInput, partial=True)
        operator = services.update_operator(widget=request.widget, operator=operator, changes=dict(data))
        return Response(selectors.operator_payload(operator))

    @extend_schema(
        summary="Retire an AI operator",
        description="The operator becomes `retired` (it stops answering); PATCH `status: active` brings it back.",
        request=None,
        responses={204: None},
    )
    def destroy(self, request, pk=None):
        services.retire_operator(widget=request.widget, operator=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)


# --- credentials ------------------------------------------------------------------------------------------


class CredentialViewSet(WidgetScopedViewSet, mixins.ListModelMixin, mixins.CreateModelMixin):
    """Provider credentials (bring your own LLM key). Keys and signing secrets are write-only."""

    queryset = Credential.objects.all()
    cursor_ordering = ("-created_at", "-id")
    route_scopes = {
        "list": ["ai:read"],
        "create": ["ai:credentials:write"],
        "partial_update": ["ai:credentials:write"],
        "models": ["ai:read"],
    }
    idempotency_required = {"create", "partial_update"}
    problem_statuses = {"create": [409], "partial_update": [409], "models": [422, 502]}

    RULES = (
        "`provider` is a driver: `openai`, `anthropic`, `gigachat` or `openai_compatible` (needs `base_url`); it is "
        "immutable. `base_url` must be https without user:pass and resolve to public addresses only (checked at "
        "save time). `assistant_id` or `operator_id` (an AI operator) binds the credential; neither makes it "
        "widget-wide (at most one active widget-wide credential per driver, else 409 `credential_conflict`). "
        "`backup_credential_id` is tried next on a provider failure; a cycle is 422. `api_key` and "
        "`signing_secret` are never returned: reads show `has_api_key`, `has_signing_secret`."
    )

    @extend_schema(
        summary="List credentials",
        description="Newest first, with `scope` (widget, assistant, operator) and the resolved `backup_chain`.",
        responses={200: s.CredentialDoc(many=True)},
    )
    def list(self, request):
        self.validated(s.EmptyQuery, data=query_data(request))
        page = self.paginate_queryset(self.get_queryset())
        by_id = selectors.credential_map(request.widget)
        return self.get_paginated_response([selectors.credential_payload(c, by_id) for c in page])

    @extend_schema(
        summary="Store a credential", description=RULES, request=s.CredentialInput, responses={201: s.CredentialDoc}
    )
    def create(self, request):
        data = self.validated(s.CredentialInput)
        credential = services.create_credential(widget=request.widget, data=dict(data))
        return Response(
            selectors.credential_payload(credential, selectors.credential_map(request.widget)),
            status=status.HTTP_201_CREATED,
        )

    @extend_schema(
        summary="Update a credential",
        description="Rotate `api_key` (or `signing_secret`), retire with `is_active: false`, repoint `base_url`, "
        "`model`, the binding or the backup. `provider` is refused by name. " + RULES,
        request=s.CredentialPatchInput,
        responses={200: s.CredentialDoc},
    )
    def partial_update(self, request, pk=None):
        credential = self.get_object()
        data = self.validated(s.CredentialPatchInput, partial=True, context={"credential": credential})
        credential = services.update_credential(widget=request.widget, credential=credential, changes=dict(data))
        return Response(selectors.credential_payload(credential, selectors.credential_map(request.widget)))

    @extend_schema(
        summary="List the provider's models",
        description="A live call to the provider with this credential (20 per hour per widget, else 429 with "
        "`Retry-After`). No body and no query. A retired credential is 422 `credential_inactive`; a provider "
        "failure is 502 `provider_failure`.",
        request=None,
        responses={200: s.ModelListDoc},
    )
    @action(detail=True, methods=["get"])
    def models(self, request, pk=None):
        credential = self.get_object()
        refuse_query(request)
        refuse_body(request)
        return Response({"data": models_list.list_models(widget=request.widget, credential=credential)})


# --- alerts and demand signals ----------------------------------------------------------------------------


class AlertViewSet(WidgetScopedViewSet, mixins.ListModelMixin):
    """AI alerts of the token's widget."""

    queryset = Alert.objects.all()
    cursor_ordering = ("-created_at", "-id")
    route_scopes = {"list": ["ai:read"], "acknowledge": ["ai:write"]}
    idempotency_required = {"acknowledge"}
    problem_statuses = {"acknowledge": [409]}

    @extend_schema(
        summary="List AI alerts",
        description="`state`: `unacknowledged`, `acknowledged` or `all` (default). Newest first.",
        parameters=[s.AlertQuery],
        responses={200: s.AlertDoc(many=True)},
    )
    def list(self, request):
        query = self.validated(s.AlertQuery, data=query_data(request))
        rows = self.get_queryset()
        state = query.get("state", "all")
        if state == "unacknowledged":
            rows = rows.filter(acknowledged_at__isnull=True)
        elif state == "acknowledged":
            rows = rows.filter(acknowledged_at__isnull=False)
        page = self.paginate_queryset(rows)
        return self.get_paginated_response([s.alert_payload(a) for a in page])

    @extend_schema(
        summary="Acknowledge AI alerts",
        description="`ids` (up to 100 of the widget's alerts; an unknown one is 422 and nothing changes) or, "
        "omitted, every outstanding alert. Answers the ids acknowledged by this call.",
        request=s.AcknowledgeInput,
        responses={200: s.AcknowledgedDoc},
    )
    @action(detail=False, methods=["post"])
    def acknowledge(self, request):
        data = self.validated(s.AcknowledgeInput)
        ids = services.acknowledge_alerts(widget=request.widget, ids=data.get("ids"))
        return Response({"acknowledged": len(ids), "ids": ids})


class DemandSignalView(ScopedAPIView):
    """GET /v1/ai/demand-signals."""

    route_scopes = {"get": ["ai:read"]}

    @extend_schema(
        summary="Demand signals",
        description="What visitors asked for that the assistant could not serve, newest first: `from`, `to` "
        "(Europe/Moscow unless an offset is given), `category`, `limit` (1 to 100, default 20).",
        parameters=[s.DemandQuery],
        responses={200: s.DemandListDoc},
    )
    def get(self, request):
        query = self.validated(s.DemandQuery, data=query_data(request, skip=("limit",)))
        limit = parse_limit(request.query_params.get("limit"))
        if len(request.query_params.getlist("limit")) > 1:
            raise ValidationFailed(errors={"limit": ["Give this parameter once."]})
        rows = DemandSignal.objects.filter(widget=request.widget)
        if query.get("from") is not None:
            rows = rows.filter(occurred_at__gte=query["from"])
        if query.get("to") is not None:
            rows = rows.filter(occurred_at__lt=query["to"])
        if query.get("category"):
            rows = rows.filter(category=query["category"])
        rows = rows.order_by("-occurred_at", "-id")[:limit]
        return Response({"data": [s.demand_payload(r) for r in rows]})


# --- marketplace ------------------------------------------------------------------------------------------


def _locale(query: dict) -> str:
    return query.get("locale") or "ru"


class TemplateListView(ScopedAPIView):
    """GET /v1/ai/marketplace/templates."""

    route_scopes = {"get": ["ai:read"]}

    @extend_schema(
        operation_id="ai_marketplace_templates_list",
        summary="Marketplace templates",
        description="Paged by `page` (from 1) and `limit` (1 to 100, default 20): `{data, page, limit, has_more}`. "
        "`category` filters; `locale` is `ru` (default) or `en`.",
        parameters=[s.TemplateListQuery],
        responses={200: s.TemplatePageDoc},
    )
    def get(self, request):
        query = self.validated(s.TemplateListQuery, data=query_data(request, skip=()))
        page = int(query.get("page", 1))
        limit = int(query.get("limit", 20))
        if limit > 100:
            raise ValidationFailed(errors={"limit": ["Must be an integer from 1 to 100."]})
        rows = marketplace.listing(category=query.get("category"), locale=_locale(query))
        start = (page - 1) * limit
        return Response(
            {"data": rows[start : start + limit], "page": page, "limit": limit, "has_more": len(rows) > start + limit}
        )


class TemplateDetailView(ScopedAPIView):
    """GET /v1/ai/marketplace/templates/{slug}."""

    route_scopes = {"get": ["ai:read"]}

    @extend_schema(
        summary="Read a marketplace template",
        description="Its prompt, persona, greeting, quick phrases, triggers and `effective_escalation_triggers` "
        "(its triggers plus the service's base triggers of the locale: what an applied assistant starts with).",
        parameters=[s.TemplateQuery],
        responses={200: s.TemplateDoc},
    )
    def get(self, request, slug: str):
        template = marketplace.BY_SLUG.get(slug)
        if template is None:
            raise NotFound()
        query = self.validated(s.TemplateQuery, data=query_data(request, skip=()))
        return Response(marketplace.detail(template, _locale(query)))


class TemplateApplyView(ScopedAPIView):
    """POST /v1/ai/marketplace/templates/{slug}/apply."""

    route_scopes = {"post": ["ai:write"]}
    idempotency_required = {"post"}
    problem_statuses = {"post": [409]}

    @extend_schema(
        summary="Apply a marketplace template",
        description="No body. Adds a NEW assistant from the template in `locale` (`ru` default, or `en`), never the "
        "default and never changing another. 5 per hour per widget (429 with `Retry-After`).",
        parameters=[s.TemplateQuery],
        request=None,
        responses={201: s.AssistantDoc},
    )
    def post(self, request, slug: str):
        if slug not in marketplace.BY_SLUG:
            raise NotFound()
        query = self.validated(s.TemplateQuery, data=query_data(request, skip=()))
        refuse_body(request)
        assistant = services.apply_template(widget=request.widget, slug=slug, locale=_locale(query))
        return Response(selectors.assistant_payload(assistant), status=status.HTTP_201_CREATED)


# --- the integration binding ------------------------------------------------------------------------------


def turn_endpoint(request) -> str:
    base = getattr(django_settings, "PUBLIC_BASE_URL", "") or request.build_absolute_uri("/")
    return base.rstrip("/") + "/api/v1/ai/assistant/turn"


class IntegrationView(ScopedAPIView):
    """GET, POST and DELETE /v1/ai/assistant/integration."""

    route_scopes = {"get": ["ai:read"], "post": ["ai:credentials:write"], "delete": ["ai:credentials:write"]}
    idempotency_required = {"post"}
    problem_statuses = {"post": [409], "delete": [404]}

    @extend_schema(
        summary="The application-assistant integration",
        description="`{data: {provider, api_token_id, assistant_id, turn_endpoint, has_secret}}`, or `{data: null}` "
        "without a binding. The secret is never returned here.",
        responses={200: s.IntegrationEnvelope},
    )
    def get(self, request):
        refuse_query(request)
        binding = selectors.get_binding(request.widget)
        payload = selectors.binding_payload(binding, turn_endpoint=turn_endpoint(request)) if binding else None
        return Response({"data": payload})

    @extend_schema(
        summary="Bind the application-assistant integration",
        description="The calling token (which must also hold `ai:write`, else 403) becomes the only signer of the "
        "signed application-assistant endpoints. Needs an active credential of `provider`: the assistant's when "
        "`assistant_id` is given, else an unowned (widget-wide) one (409 `credential_unavailable`). One binding per "
        "widget (409 `integration_exists`); rotate by DELETE then POST. The 48-character `signing_secret` is "
        "returned once, here.",
        request=s.IntegrationInput,
        responses={201: s.IntegrationCreatedEnvelope},
    )
    def post(self, request):
        data = self.validated(s.IntegrationInput)
        binding, secret = services.bind_integration(
            widget=request.widget, token=request.auth, provider=data["provider"], assistant=data.get("assistant")
        )
        payload = selectors.binding_payload(binding, turn_endpoint=turn_endpoint(request))
        return Response({"data": {**payload, "signing_secret": secret}}, status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Revoke the integration",
        description="Removes the binding and its secret at once (404 when there is none).",
        request=None,
        responses={204: OpenApiResponse(description="Revoked.")},
    )
    def delete(self, request):
        if not services.unbind_integration(widget=request.widget):
            raise NotFound("The widget has no integration binding.")
        return Response(status=status.HTTP_204_NO_CONTENT)


# --- widget translations ----------------------------------------------------------------------------------


class WidgetTranslationsView(ScopedAPIView):
    """GET /v1/widget/translations."""

    route_scopes = {"get": ["widget:read"]}

    @extend_schema(
        summary="Widget text translations",
        description="The translation status object (`{available, enabled, reason, revision, total, counts}`; "
        "`schema_unavailable` when the store cannot be read, `credential_missing` while auto-translation is on "
        "without an active widget-wide credential), the revision, and one item per translatable text and enabled "
        "locale with its state (`ready`, `stale`, `pending`, `failed`); the translated text itself is redacted "
        "(`has_text`).",
        responses={200: s.TranslationsEnvelope},
    )
    def get(self, request):
        refuse_query(request)
        return Response({"data": widget_selectors.translations_payload(request.widget)})


class WidgetTranslationsRegenerateView(ScopedAPIView):
    """POST /v1/widget/translations/regenerate."""

    route_scopes = {"post": ["widget:write"]}
    idempotency_required = {"post"}
    problem_statuses = {"post": [409, 503]}

    @extend_schema(
        summary="Regenerate widget text translations",
        description="`{fields: [widget_name, widget_signature, widget_greeting], locales: [...]}` (enabled locales "
        "other than the content source language; fields with a source text). Asynchronous (202): each text is "
        "marked `pending` and translated by a worker through the widget-wide credential; the last validated "
        "translation stays served while it is pending or if it fails. Reserves one provider job per field and "
        "locale in the widget's budget of 42 per hour, all or none (429 `widget_translation_rate_limited` with "
        "`Retry-After`); a budget store that is down fails closed (503 `widget_translation_budget_unavailable`), "
        "as does the translation store (503 `widget_translation_store_unavailable`). No widget-wide credential: "
        "409 `credential_unavailable`. A request refused with 422, 429 or 503 releases its idempotency key.",
        request=s.RegenerateInput,
        responses={202: s.RegenerateEnvelope},
    )
    def post(self, request):
        data = self.validated(s.RegenerateInput)
        result = translations.regenerate(widget=request.widget, fields=data["fields"], locales=data["locales"])
        return Response({"data": result}, status=status.HTTP_202_ACCEPTED)
