"""Custom channels of the token's widget: registration, read, status and inbound delivery."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status
from rest_framework.decorators import action
from rest_framework.response import Response

from apps.core.api.views import WidgetScopedViewSet

from .. import selectors, services
from ..models import CustomChannel
from . import serializers as s


def channel_payload(channel: CustomChannel) -> dict:
    return {
        "id": channel.pk,
        "name": channel.name,
        "url": channel.url,
        "is_active": channel.is_active,
        "created_at": channel.created_at.isoformat(),
    }


class CustomChannelViewSet(WidgetScopedViewSet, mixins.CreateModelMixin, mixins.RetrieveModelMixin):
    """Custom channels: anything else a visitor writes from. Inbound messages arrive at
    `POST /v1/channels/{id}/messages`; every operator message of a `ch{id}` chat is posted to the
    channel's url, signed like a webhook, as `{id, type: "message.created", data: {chat_id,
    external_client_id, external_channel_id, message: {text, buttons?}}}`."""

    queryset = CustomChannel.objects.all()
    route_scopes = {
        "create": ["channels:register"],
        "retrieve": ["channels:read"],
        "status": ["channels:read"],
        "messages": ["channels:write"],
    }
    idempotency_required = {"create", "messages"}
    problem_statuses = {"messages": [409]}

    @extend_schema(
        summary="Register a custom channel",
        description=(
            "Registers a channel (installed apps only, scope `channels:register`). The answer carries the "
            "signing secret once: outbound posts are signed with it exactly like webhook deliveries "
            "(`X-Service-Signature`, Standard Webhooks headers). The url must be https and public."
        ),
        request=s.ChannelCreateInput,
        responses={201: s.ChannelCreatedDoc},
    )
    def create(self, request):
        data = self.validated(s.ChannelCreateInput)
        channel, secret = services.register_custom_channel(widget=request.widget, **data)
        return Response({**channel_payload(channel), "secret": secret}, status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Read a custom channel",
        description="`is_active` false means the channel is disabled; 404 means it is gone.",
        responses={200: s.ChannelDoc},
    )
    def retrieve(self, request, pk=None):
        return Response(channel_payload(self.get_object()))

    @extend_schema(
        summary="Custom channel status",
        description="`{online: 1}` while the channel is active and an operator of the widget answers now.",
        responses={200: s.ChannelStatusDoc},
    )
    @action(detail=True, methods=["get"])
    def status(self, request, pk=None):
        channel = self.get_object()
        return Response({"online": int(selectors.is_online(request.widget, channel))})

    @extend_schema(
        summary="Deliver an inbound message",
        description=(
            "A message an external client wrote on the channel. The first message of an "
            "`external_client_id` creates the contact and its `ch{id}` chat; operator replies go to "
            "`external_channel_id` (the latest one given). A disabled channel answers 409 `channel_disabled`."
        ),
        request=s.InboundMessageInput,
        responses={202: s.InboundAcceptedDoc},
    )
    @action(detail=True, methods=["post"])
    def messages(self, request, pk=None):
        channel = self.get_object()
        data = self.validated(s.InboundMessageInput)
        message = services.receive_custom_message(
            widget=request.widget,
            channel=channel,
            external_client_id=data["external_client_id"],
            external_channel_id=data["external_channel_id"],
            text=data["message"]["text"],
        )
        body = {"message_id": message.pk, "chat_id": message.chat_id, "client_id": message.chat.contact.guid}
        return Response(body, status=status.HTTP_202_ACCEPTED)
