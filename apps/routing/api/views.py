"""Routing routes: the widget's routing settings and a chat's routing read."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response

from apps.chats.models import Chat
from apps.core.api.views import ScopedAPIView, WidgetScopedViewSet

from .. import selectors, services
from . import serializers as s


class RoutingSettingsView(ScopedAPIView):
    """GET and PUT /v1/routing."""

    route_scopes = {"get": ["routing:read"], "put": ["routing:write"]}
    idempotency_required = {"put"}

    @extend_schema(
        summary="Routing settings",
        description="How chats reach operators. Before the first PUT: `manual`, capacity 3, no re-routing, queue "
        "position shown.",
        responses={200: s.RoutingSettingsEnvelope},
    )
    def get(self, request):
        return Response({"data": selectors.settings_payload(selectors.routing_settings(request.widget))})

    @extend_schema(
        summary="Replace the routing settings",
        description="The whole resource: every member is required (a missing one is 422) and nothing else is "
        "accepted. An **eligible** operator is a human agent with status `active`, online in the console, below "
        "their capacity, inside business hours, and in an open department listing the chat's channel when any "
        "department lists it. Turning a routing mode on serves the chats already waiting.",
        request=s.RoutingSettingsInput,
        responses={200: s.RoutingSettingsEnvelope},
    )
    def put(self, request):
        data = self.validated(s.RoutingSettingsInput)
        row = services.put_settings(widget=request.widget, data=data)
        return Response({"data": selectors.settings_payload(row)})


class ChatRoutingViewSet(WidgetScopedViewSet):
    """GET /v1/chats/{id}/routing."""

    queryset = Chat.objects.all()
    route_scopes = {"retrieve": ["chats:read"]}

    def scope_queryset(self, queryset):
        return queryset.live()  # a contact under erasure reads as missing

    @extend_schema(
        operation_id="chats_routing_retrieve",
        summary="A chat's routing",
        parameters=[OpenApiParameter("id", OpenApiTypes.INT, OpenApiParameter.PATH, description="The chat id.")],
        description="When the chat began to wait, when and by whom it was assigned, how often re-routing moved "
        "it, and its SLA clocks. Another widget's chat is 404 like a missing one.",
        responses={200: s.ChatRoutingEnvelope},
    )
    def retrieve(self, request, pk=None):
        return Response({"data": selectors.routing_payload(self.get_object())})
