"""Messengers of the token's widget: reads, connect (PUT), verify, disconnect (DELETE); and the
inbound provider hooks (/api/hooks/{provider}/{hook_id}/, outside the REST API)."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.core.api.parsers import loads
from apps.core.api.views import ScopedAPIView
from apps.core.errors import InvalidJSON, NotFound, ValidationFailed

from .. import messengers
from . import serializers as s

PROVIDER_PARAM = OpenApiParameter(
    "provider", OpenApiTypes.STR, OpenApiParameter.PATH, enum=list(messengers.PROVIDERS), description="Provider code."
)


def _base_url(request) -> str:
    return settings.PUBLIC_BASE_URL or request.build_absolute_uri("/")


class MessengerListView(ScopedAPIView):
    route_scopes = {"get": ["messengers:read"]}

    @extend_schema(
        operation_id="messengers_list",
        summary="Messenger providers",
        description="All eleven providers with `connected`, `writable`, `has_token` (`has_sid` for `wa`, `apple`). "
        "Never a credential or a hook URL.",
        responses={200: s.MessengerListDoc},
    )
    def get(self, request):
        return Response({"data": messengers.list_rows(request.widget), "next_cursor": None})


class MessengerDetailView(ScopedAPIView):
    route_scopes = {"get": ["messengers:read"], "put": ["messengers:write"], "delete": ["messengers:write"]}
    idempotency_required = {"put"}
    idempotency_deferred = {"put"}
    problem_statuses = {"put": [409, 429], "delete": [429]}

    @extend_schema(summary="One messenger provider", parameters=[PROVIDER_PARAM], responses={200: s.MessengerDoc})
    def get(self, request, provider: str):
        return Response(messengers.get_row(request.widget, provider))

    @extend_schema(
        summary="Connect a messenger",
        description=(
            "Replaces the stored credential whole. Order: the read-only probe (`tg`: getMe; a real rejection is "
            "422 `credential_rejected` and stores nothing), the local write, then the provider webhook "
            "registration, whose failure leaves the credential saved and inbound not live (retry with verify). "
            "`vk` and `custom` are 422 `not_writable`; without a paid plan 409 `plan_required`; providers this "
            "deployment cannot connect yet 409 `provider_unavailable`. 10 provider calls per minute per widget."
        ),
        parameters=[PROVIDER_PARAM],
        request=s.TelegramTokenInput,
        responses={200: s.MessengerWriteDoc},
    )
    def put(self, request, provider: str):
        messengers._writable(request.widget, provider)
        data = self.validated(s.TelegramTokenInput)
        row, outcome = messengers.connect(
            widget=request.widget,
            provider=provider,
            data=data,
            base_url=_base_url(request),
            claim=self.idempotency_claim,
        )
        return Response({**row, "webhook": outcome.as_dict()})

    @extend_schema(
        summary="Disconnect a messenger",
        description="Provider-side removal first (`tg`: deleteWebhook), never blocking; then the stored credential "
        "is gone. `custom` deactivates every custom channel. No paid plan needed.",
        parameters=[PROVIDER_PARAM],
        responses={204: None},
    )
    def delete(self, request, provider: str):
        messengers.disconnect(widget=request.widget, provider=provider)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MessengerVerifyView(ScopedAPIView):
    route_scopes = {"post": ["messengers:write"]}
    idempotency_required = {"post"}
    idempotency_deferred = {"post"}
    problem_statuses = {"post": [409, 429]}

    @extend_schema(
        summary="Verify a messenger",
        description="Re-registers the stored credential with the provider (409 `not_connected` when nothing is "
        "stored, 409 `plan_required` without a paid plan). No body.",
        parameters=[PROVIDER_PARAM],
        request=None,
        responses={200: s.MessengerWriteDoc},
    )
    def post(self, request, provider: str):
        if request.data:
            raise ValidationFailed("No body is taken.", errors={"body": ["Send no body."]})
        row, outcome = messengers.verify(
            widget=request.widget, provider=provider, base_url=_base_url(request), claim=self.idempotency_claim
        )
        return Response({**row, "webhook": outcome.as_dict()})


class ProviderHookView(APIView):
    """Inbound provider webhooks. SECURITY: no bearer token; each provider's own mechanism
    authenticates the call (Telegram: X-Telegram-Bot-Api-Secret-Token, compared in constant time).
    An unknown hook is 404."""

    authentication_classes = ()
    permission_classes = ()
    parser_classes = ()
    schema = None

    def post(self, request, provider: str, hook_id: str):
        conn = messengers.find_hook(provider, hook_id)
        if conn is None or provider != "tg":
            raise NotFound()
        messengers.check_telegram_secret(conn, request.headers.get("X-Telegram-Bot-Api-Secret-Token"))
        try:
            update = loads(request.body or b"")
        except InvalidJSON as exc:
            raise ValidationFailed("Not a Telegram update.", errors={"body": [exc.detail]}) from None
        if not isinstance(update, dict):
            raise ValidationFailed("Not a Telegram update.", errors={"body": ["Expected a JSON object."]})
        messengers.receive_telegram_update(conn=conn, update=update)
        return Response({"ok": True})
