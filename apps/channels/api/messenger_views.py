"""Messengers of the token's widget: reads, connect (PUT), verify, disconnect (DELETE); and the
inbound provider hooks (/api/hooks/{provider}/{hook_id}/, outside the REST API)."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.core.api.views import ScopedAPIView, WidgetScopedViewSet
from apps.core.errors import NotFound, ValidationFailed

from .. import cabinets, communities, messengers
from ..models import AdCabinet, VkCommunity
from ..providers.base import HookRequest
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

    @extend_schema(
        summary="One messenger provider",
        description="One provider's row: `connected` (a credential is stored), `writable` (replies can be sent), "
        "`has_token` (`has_sid` for `wa`, `apple`). Never a secret or the hook URL.",
        parameters=[PROVIDER_PARAM],
        responses={200: s.MessengerDoc},
    )
    def get(self, request, provider: str):
        return Response(messengers.get_row(request.widget, provider))

    @extend_schema(
        summary="Connect a messenger",
        description=(
            "Replaces the stored credential whole. Order: the read-only probe (`tg`: getMe; a real rejection is "
            "422 `credential_rejected` and stores nothing), the local write, then the provider webhook "
            "registration, whose failure leaves the credential saved and inbound not live (retry with verify). "
            "Bodies: `{token}` for `tg`, `vb`, `fb`, `ok`, `mx`, `cian`, `ali`; `{token, sid}` for `wa`; "
            "`{token, sid, url}` for `apple` (`url` https, public); any other member is 422. Registration: `tg` "
            "setWebhook, `vb` set_webhook, `ok` subscribe, `mx` subscription, `cian` subscribe (registered or "
            "failed); `ali` an unverified subscribe (`unconfirmed_provider_api`); `wa`, `fb`, `apple` have no "
            "webhook mechanism (`attempted: false`, `not_supported`). "
            "`vk` and `custom` are 422 `not_writable`; without a paid plan 409 `plan_required`. "
            "10 provider calls per minute per widget."
        ),
        parameters=[PROVIDER_PARAM],
        request=s.MessengerCredentialDoc,
        responses={200: s.MessengerWriteDoc},
    )
    def put(self, request, provider: str):
        found = messengers.writable(request.widget, provider)
        data = self.validated(s.MessengerCredentialInput, context={"provider": found})
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
        description="Provider-side removal first (`tg`: deleteWebhook, `cian`: unsubscribe; the others have no "
        "unregister call and an inert webhook may remain), never blocking; then the stored credential is gone. "
        "`custom` deactivates every custom channel. No paid plan needed.",
        parameters=[PROVIDER_PARAM],
        responses={204: None},
    )
    def delete(self, request, provider: str):
        messengers.disconnect(widget=request.widget, provider=provider, base_url=_base_url(request))
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
    authenticates the call, compared in constant time (Telegram: X-Telegram-Bot-Api-Secret-Token;
    VK: the event's secret; Viber: X-Viber-Content-Signature; Meta: X-Hub-Signature-256 with the
    app secret; Max: X-Max-Bot-Api-Secret; Apple: the gateway's HS256 JWT; OK.ru, Cian,
    AliExpress: our secret in the registered URL). An unknown hook, and one taking no calls (inbound
    not live, long-poll mode), is 404; each connection's calls are budgeted (429 before the body is
    read)."""

    authentication_classes = ()
    permission_classes = ()
    parser_classes = ()
    schema = None

    def get(self, request, provider: str, hook_id: str):
        """Meta's verification of the callback URL (`hub.challenge` echoed); 404 for any other."""
        conn = messengers.find_hook(provider, hook_id)
        if conn is None:
            raise NotFound()
        challenge = messengers.provider_handshake(conn=conn, query={k: v for k, v in request.GET.items()})
        return HttpResponse(challenge.encode(), content_type="text/plain; charset=utf-8")

    def post(self, request, provider: str, hook_id: str):
        conn = messengers.find_hook(provider, hook_id)
        if conn is None:
            raise NotFound()
        content_type, body = messengers.receive_provider_hook(
            conn=conn,
            request=HookRequest(
                body=request.body or b"",
                headers={k.lower(): v for k, v in request.headers.items()},
                query={k: v for k, v in request.GET.items()},
            ),
        )
        return HttpResponse(body, content_type=content_type)


class VkCommunityViewSet(WidgetScopedViewSet):
    """VK communities of the token's widget (the `vk` provider is connected through them)."""

    queryset = VkCommunity.objects.all()
    route_scopes = {
        "list": ["messengers:read"],
        "create": ["messengers:write"],
        "primary": ["messengers:write"],
        "destroy": ["messengers:write"],
    }
    idempotency_required = {"create", "primary"}
    idempotency_deferred = {"create"}
    problem_statuses = {"create": [409, 429, 502], "primary": [409], "destroy": [429, 502]}

    @extend_schema(
        summary="VK communities",
        description="The VK communities connected to the widget, the primary one first marked `primary`.",
        responses={200: s.VkCommunityDoc(many=True)},
    )
    def list(self, request):
        page = self.paginate_queryset(self.get_queryset().order_by("-created_at", "-id"))
        return self.get_paginated_response([communities.community_payload(c) for c in page])

    @extend_schema(
        summary="Connect a VK community",
        description="The community is resolved through VK (`groups.getById`; a rejection is 422, no answer 502, "
        "nothing stored), stored (the first is primary), then our Callback API server is registered; the answer's "
        "`webhook` tells whether that worked. Needs a paid plan; 10 provider calls per minute per widget.",
        request=s.VkCommunityInput,
        responses={201: s.VkCommunityCreatedDoc},
    )
    def create(self, request):
        data = self.validated(s.VkCommunityInput)
        community, outcome = communities.connect_community(
            widget=request.widget,
            token=data["token"],
            community=data["community"],
            base_url=_base_url(request),
            claim=self.idempotency_claim,
        )
        body = {**communities.community_payload(community), "webhook": outcome.as_dict()}
        return Response(body, status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Make a VK community primary",
        description="The community becomes the primary one (replies of `vk` chats go out through it); the "
        "previous primary one stays connected.",
        request=None,
        responses={200: s.VkCommunityDoc},
    )
    @action(detail=True, methods=["post"])
    def primary(self, request, pk=None):
        community = self.get_object()
        if request.data:
            raise ValidationFailed("No body is taken.", errors={"body": ["Send no body."]})
        community = communities.set_primary_community(widget=request.widget, community=community)
        return Response(communities.community_payload(community))

    @extend_schema(
        summary="Disconnect a VK community",
        description="Our callback server is removed at VK first; when VK does not confirm, the record is kept and "
        "the answer is 502 (try again).",
        responses={204: None},
    )
    def destroy(self, request, pk=None):
        communities.delete_community(widget=request.widget, community=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)


class AdCabinetViewSet(WidgetScopedViewSet):
    """Ad-marketplace cabinets of the token's widget. There is no API to create one (the
    interactive cabinet flow does); DELETE is permanent."""

    queryset = AdCabinet.objects.all()
    route_scopes = {
        "list": ["messengers:read"],
        "retrieve": ["messengers:read"],
        "partial_update": ["messengers:write"],
        "destroy": ["messengers:write"],
    }
    idempotency_required = {"partial_update"}
    problem_statuses = {"partial_update": [409]}

    @extend_schema(
        summary="Ad cabinets",
        description="The widget's ad-marketplace cabinets (`channel` `av__<id>`); they are created by the "
        "cabinet flow (`create_ad_cabinet`), not through the API.",
        responses={200: s.AdCabinetDoc(many=True)},
    )
    def list(self, request):
        page = self.paginate_queryset(self.get_queryset().order_by("-created_at", "-id"))
        return self.get_paginated_response([cabinets.cabinet_payload(c) for c in page])

    @extend_schema(
        summary="One ad cabinet",
        description="One cabinet with its `status` (`enabled`, `disabled`, or `suspended_by_billing`, which only "
        "billing sets).",
        responses={200: s.AdCabinetDoc},
    )
    def retrieve(self, request, pk=None):
        return Response(cabinets.cabinet_payload(self.get_object()))

    @extend_schema(
        summary="Enable or disable an ad cabinet",
        description="`enabled` needs a paid plan (409 `plan_required`) and a free slot of the plan (409 "
        "`cabinet_slots_exhausted`); `suspended_by_billing` is system-owned (422 to set it, 409 "
        "`cabinet_suspended` while it holds).",
        request=s.AdCabinetPatchInput,
        responses={200: s.AdCabinetDoc},
    )
    def partial_update(self, request, pk=None):
        cabinet = self.get_object()
        data = self.validated(s.AdCabinetPatchInput)
        cabinet = cabinets.set_cabinet_status(widget=request.widget, cabinet=cabinet, status=data["status"])
        return Response(cabinets.cabinet_payload(cabinet))

    @extend_schema(summary="Delete an ad cabinet", description="Permanent.", responses={204: None})
    def destroy(self, request, pk=None):
        cabinets.delete_cabinet(widget=request.widget, cabinet=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)
