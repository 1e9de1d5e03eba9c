"""Provider credentials of the token's widget."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status
from rest_framework.decorators import action
from rest_framework.response import Response

from apps.core.api.query import query_data
from apps.core.api.serializers import refuse_body, refuse_query
from apps.core.api.views import WidgetScopedViewSet

from ... import provider_models, selectors, services
from ...models import Credential
from .. import serializers as s


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
        return Response({"data": provider_models.list_models(widget=request.widget, credential=credential)})
