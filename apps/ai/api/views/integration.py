"""The application-assistant integration: the binding whose token alone signs the signed assistant
endpoints, and its secret."""

from __future__ import annotations

from django.conf import settings as django_settings
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.response import Response

from apps.core.api.serializers import refuse_query
from apps.core.api.views import ScopedAPIView
from apps.core.errors import NotFound

from ... import selectors, services
from .. import serializers as s


def turn_endpoint(request) -> str:
    base = getattr(django_settings, "PUBLIC_BASE_URL", "") or request.build_absolute_uri("/")
    return base.rstrip("/") + "/api/v1/ai/assistant/turn"


class IntegrationView(ScopedAPIView):
    """GET, POST and DELETE /v1/ai/assistant/integration."""

    route_scopes = {"get": ["ai:read"], "post": ["ai:credentials:write"], "delete": ["ai:credentials:write"]}
    idempotency_required = {"post"}
    problem_statuses = {"get": [422], "post": [409], "delete": [404]}

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
