"""Webhook subscriptions of the token's widget, their delivery log, and the event catalogue."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_view
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


# What a subscription's payload is made of: the list reads these columns as rows (QuerySet.values()),
# never the secret and never model instances.
SUBSCRIPTION_ROW_FIELDS = ("id", "url", "events", "is_active", "is_legacy_compat", "created_at", "updated_at")


def subscription_row_payload(row: dict) -> dict:
    return {
        "id": row["id"],
        "url": row["url"],
        "events": list(row["events"]),
        "is_active": row["is_active"],
        "is_legacy_compat": row["is_legacy_compat"],
        "created_at": row["created_at"].isoformat(),
        "updated_at": row["updated_at"].isoformat(),
    }


def subscription_payload(sub: Subscription) -> dict:
    return subscription_row_payload({name: getattr(sub, name) for name in SUBSCRIPTION_ROW_FIELDS})


def _not_live(sub: Subscription) -> list[str]:
    return catalogue.not_live(list(sub.events), legacy=sub.is_legacy_compat)


@extend_schema_view(
    list=extend_schema(
        summary="List webhook subscriptions",
        description="Webhook subscriptions of the token's widget, newest first; the secret is never included.",
    ),
    create=extend_schema(
        summary="Create a webhook subscription",
        description=(
            "`{url, events, secret?, is_legacy_compat?}`: an https URL resolving to a public address, 1 to 20 event "
            "names (native, or the five legacy names with `is_legacy_compat`). The secret is generated (`whsec_...`) "
            "when omitted and answered once. `not_live_events` names the subscribed events that are `Wired`: "
            "accepted, but not delivered until enabled. Every event type but `message.created` and "
            "`contact.erased` starts `Wired` (emitted by the code, held back platform-wide until the deployment "
            "turns it on): the deployment's operator lists the types to deliver in the `WEBHOOK_LIVE_EVENTS` "
            "setting, or switches one on in Django admin (event switches). The subscription needs no change "
            "then. `GET /api/v1/webhook-events` shows each type's status."
        ),
    ),
    retrieve=extend_schema(
        summary="Get a webhook subscription",
        description="One subscription of the widget (never its secret). A foreign or unknown id is 404.",
    ),
    partial_update=extend_schema(
        summary="Update a webhook subscription",
        description=(
            "Merge-safe `{url?, events?, is_active?, is_legacy_compat?}`; `secret` is not patchable (422: use "
            "rotate-secret). The answer names the `not_live_events`, as on create."
        ),
    ),
    destroy=extend_schema(
        summary="Delete a webhook subscription",
        description="Deletes the subscription; its queued deliveries are dropped silently.",
    ),
    redeliver=extend_schema(
        summary="Redeliver a delivery",
        description=(
            "`{delivery_id}` from the delivery log: the stored event is sent again with a new `X-Service-Delivery` "
            "and the same idempotency key, in the envelope the subscription uses now (named in the 202 answer). "
            "Pending rows and legacy-envelope rows are not redeliverable (422)."
        ),
    ),
    deliveries=extend_schema(
        summary="List a subscription's deliveries",
        description=(
            "The delivery log, newest first: status, the masked payload, every attempt (time, outcome, HTTP status, "
            "duration, the first bytes of the answer) and when the next attempt is due. Filters `status` and "
            "`event_type`. The only source of `delivery_id`. A settled row (delivered, failed, skipped) is kept for "
            "the deployment's `WEBHOOK_DELIVERY_RETENTION_DAYS` (30 by default) after its last change; a pending one "
            "until it settles."
        ),
    ),
    rotate_secret=extend_schema(
        summary="Rotate a subscription's secret",
        description=(
            "`{secret?}` (16 to 256 characters; generated when omitted). The new secret is answered once and replaces "
            "the old one at once, also for queued retries (no overlap)."
        ),
    ),
)
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
        page = self.paginate_queryset(self.get_queryset().values(*SUBSCRIPTION_ROW_FIELDS))
        return self.get_paginated_response([subscription_row_payload(row) for row in page])

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


@extend_schema_view(
    get=extend_schema(
        summary="List webhook events",
        description=(
            "Every subscribable event name, native and legacy, with its `vocabulary`, whether it is `enabled` "
            "(`Live`) or `Wired` (accepted, not delivered yet), what triggers it and its data members."
        ),
    ),
)
class EventCatalogueView(ScopedAPIView):
    """Every subscribable event name, native and legacy, with `vocabulary`, `enabled`, `triggered_by`."""

    route_scopes = {"get": ["webhooks:read"]}

    @extend_schema(responses={200: s.EventCatalogueDoc})
    def get(self, request):
        return Response({"data": catalogue.listing()})
