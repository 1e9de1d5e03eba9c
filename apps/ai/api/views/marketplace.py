"""The assistant template marketplace: list, detail, apply."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response

from apps.core.api.query import query_data
from apps.core.api.serializers import refuse_body
from apps.core.api.views import ScopedAPIView
from apps.core.errors import NotFound, ValidationFailed

from ... import marketplace, selectors, services
from .. import serializers as s

SLUG_HELP = {"slug": "The template's `slug`, as the template list gives it; an unknown one is 404."}


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
    path_parameter_help = SLUG_HELP

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
    path_parameter_help = SLUG_HELP
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
