"""The widget's text translations and their regeneration."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response

from apps.core.api.serializers import refuse_query
from apps.core.api.views import ScopedAPIView
from apps.widget import selectors as widget_selectors

from ... import translations
from .. import serializers as s


class WidgetTranslationsView(ScopedAPIView):
    """GET /v1/widget/translations."""

    route_scopes = {"get": ["widget:read"]}
    problem_statuses = {"get": [422]}

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
