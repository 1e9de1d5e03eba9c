"""Webhook subscriptions of the token's widget, their delivery log, and the event catalogue."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status
from rest_framework.decorators import action
from rest_framework.response import Response

from apps.core.api.query import query_data
from apps.core.api.views import ScopedAPIView, WidgetScopedViewSet

from .. import catalogue, services
from ..models import Subscription
from . import serializers as s

LEGACY_ENVELOPE_DOC = (
    "Deliveries are POSTs of `{id, type, data}` (native) signed with `X-Service-Signature: sha256=v1:<hex>` "
    "and the Standard Webhooks headers. Subscriptions with `is_legacy_compat` receive instead the legacy "
    "body keyed by `event_name`: `{event_name, id, widget_id (button guid), chat_id, visitor: {id, name, "
    "email, phone}, agent: {id, name, email}, previous_agent (chat_updated), reason (chat_finished), "
    "offline_message_id and message (offline_message), client_id and changed_fields (client_updated)}`."
)


def subscription_payload(sub: Subscription) -> dict:
    return {
        "id": sub.pk,
        "url": sub.url,
        "events": list(sub.events),
        "is_active": sub.is_active,
        "is_legacy_compat": sub.is_legacy_compat,
        "created_at": sub.created_at.isoformat(),
        "updated_at": sub.updated_at.isoformat(),
    }


def _not_live(sub: Subscription) -> list[str]:
    return catalogue.not_live(list(sub.events), legacy=sub.is_legacy_compat)


class SubscriptionViewSet(
    WidgetScopedViewSet,
    mixins.ListModelMixin,
    mixins.CreateModelMixin,
    mixins.RetrieveModelMixin,
    mixins.DestroyModelMixin,
):
    __doc__ = "Webhook subscriptions of the token's widget. " + LEGACY_ENVELOPE_DOC

    queryset = Subscription.objects.all()
    route_scopes = {
        "list": ["webhooks:read"],
        "retrieve": ["webhooks:read"],
        "create": ["webhooks:write"],
        "partial_update": ["webhooks:write"],
        "destroy": ["webhooks:write"],
        "redeliver": ["webhooks:write"],
        "deliveries": ["webhooks:read"],
        "rotate_secret": ["webhooks:write"],
    }
    idempotency_required = {"create", "partial_update", "redeliver", "rotate_secret"}
    problem_statuses = {"create": [409], "partial_update": [409], "redeliver": [409], "rotate_secret": [409]}

    @extend_schema(responses={200: s.SubscriptionDoc(many=True)})
    def list(self, request):
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response([subscription_payload(sub) for sub in page])

    @extend_schema(request=s.SubscriptionCreateInput, responses={201: s.SubscriptionCreatedDoc})
    def create(self, request):
        data = self.validated(s.SubscriptionCreateInput)
        sub, secret = services.create_subscription(widget=request.widget, **data)
        return Response(
            {**subscription_payload(sub), "not_live_events": _not_live(sub), "secret": secret},
            status=status.HTTP_201_CREATED,
        )

    @extend_schema(responses={200: s.SubscriptionDoc})
    def retrieve(self, request, pk=None):
        return Response(subscription_payload(self.get_object()))

    @extend_schema(request=s.SubscriptionPatchInput, responses={200: s.SubscriptionWrittenDoc})
    def partial_update(self, request, pk=None):
        sub = self.get_object()
        data = self.validated(s.SubscriptionPatchInput, partial=True)
        sub = services.update_subscription(widget=request.widget, subscription=sub, changes=dict(data))
        return Response({**subscription_payload(sub), "not_live_events": _not_live(sub)})

    @extend_schema(responses={204: None})
    def destroy(self, request, pk=None):
        services.delete_subscription(widget=request.widget, subscription=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=s.RedeliverInput, responses={202: s.RedeliveryDoc})
    @action(detail=True, methods=["post"])
    def redeliver(self, request, pk=None):
        sub = self.get_object()
        data = self.validated(s.RedeliverInput)
        copy = services.redeliver(widget=request.widget, subscription=sub, delivery_id=data["delivery_id"])
        return Response({"delivery_id": str(copy.delivery_id), "envelope": copy.envelope}, status=202)

    @extend_schema(
        parameters=[s.DeliveryListQuery],
        responses={200: s.DeliveryDoc(many=True)},
    )
    @action(detail=True, methods=["get"])
    def deliveries(self, request, pk=None):
        sub = self.get_object()
        query = self.validated(s.DeliveryListQuery, data=query_data(request))
        rows = services.log_rows(sub)
        if query.get("status"):
            rows = rows.filter(status=query["status"])
        if query.get("event_type"):
            rows = rows.filter(event_type=query["event_type"])
        page = self.paginate_queryset(rows)
        return self.get_paginated_response([services.log_row(d, sub) for d in page])

    @extend_schema(request=s.RotateSecretInput, responses={200: s.SecretDoc})
    @action(detail=True, methods=["post"], url_path="rotate-secret")
    def rotate_secret(self, request, pk=None):
        sub = self.get_object()
        data = self.validated(s.RotateSecretInput)
        secret = services.rotate_secret(widget=request.widget, subscription=sub, secret=data.get("secret"))
        return Response({"id": sub.pk, "secret": secret})


class EventCatalogueView(ScopedAPIView):
    """Every subscribable event name, native and legacy, with `vocabulary`, `enabled`, `triggered_by`."""

    route_scopes = {"get": ["webhooks:read"]}

    @extend_schema(responses={200: s.EventCatalogueDoc})
    def get(self, request):
        return Response({"data": catalogue.listing()})
