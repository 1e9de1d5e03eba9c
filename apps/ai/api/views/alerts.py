"""AI alerts and demand signals of the token's widget."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins
from rest_framework.decorators import action
from rest_framework.response import Response

from apps.core.api.pagination import LIMIT_SCHEMA, parse_limit
from apps.core.api.query import query_data
from apps.core.api.views import ScopedAPIView, WidgetScopedViewSet
from apps.core.errors import ValidationFailed

from ... import services
from ...models import Alert, DemandSignal
from .. import serializers as s


class AlertViewSet(WidgetScopedViewSet, mixins.ListModelMixin):
    """AI alerts of the token's widget."""

    queryset = Alert.objects.all()
    cursor_ordering = ("-created_at", "-id")
    route_scopes = {"list": ["ai:read"], "acknowledge": ["ai:write"]}
    idempotency_required = {"acknowledge"}
    problem_statuses = {"acknowledge": [409]}

    @extend_schema(
        summary="List AI alerts",
        description="`state`: `unacknowledged`, `acknowledged` or `all` (default). Newest first.",
        parameters=[s.AlertQuery],
        responses={200: s.AlertDoc(many=True)},
    )
    def list(self, request):
        query = self.validated(s.AlertQuery, data=query_data(request))
        rows = self.get_queryset()
        state = query.get("state", "all")
        if state == "unacknowledged":
            rows = rows.filter(acknowledged_at__isnull=True)
        elif state == "acknowledged":
            rows = rows.filter(acknowledged_at__isnull=False)
        page = self.paginate_queryset(rows)
        return self.get_paginated_response([s.alert_payload(a) for a in page])

    @extend_schema(
        summary="Acknowledge AI alerts",
        description="`ids` (up to 100 of the widget's alerts; an unknown one is 422 and nothing changes) or, "
        "omitted, every outstanding alert. Answers the ids acknowledged by this call.",
        request=s.AcknowledgeInput,
        responses={200: s.AcknowledgedDoc},
    )
    @action(detail=False, methods=["post"])
    def acknowledge(self, request):
        data = self.validated(s.AcknowledgeInput)
        ids = services.acknowledge_alerts(widget=request.widget, ids=data.get("ids"))
        return Response({"acknowledged": len(ids), "ids": ids})


class DemandSignalView(ScopedAPIView):
    """GET /v1/ai/demand-signals."""

    route_scopes = {"get": ["ai:read"]}

    @extend_schema(
        summary="Demand signals",
        description="What visitors asked for that the assistant could not serve, newest first: `from`, `to` "
        "(Europe/Moscow unless an offset is given), `category`, `limit` (1 to 100, default 20).",
        parameters=[
            s.DemandQuery,
            OpenApiParameter(
                "limit",
                LIMIT_SCHEMA,
                OpenApiParameter.QUERY,
                description="At most this many signals, 1 to 100 (default 20); else 422.",
            ),
        ],
        responses={200: s.DemandListDoc},
    )
    def get(self, request):
        query = self.validated(s.DemandQuery, data=query_data(request, skip=("limit",)))
        limit = parse_limit(request.query_params.get("limit"))
        if len(request.query_params.getlist("limit")) > 1:
            raise ValidationFailed(errors={"limit": ["Give this parameter once."]})
        rows = DemandSignal.objects.filter(widget=request.widget)
        if query.get("from") is not None:
            rows = rows.filter(occurred_at__gte=query["from"])
        if query.get("to") is not None:
            rows = rows.filter(occurred_at__lt=query["to"])
        if query.get("category"):
            rows = rows.filter(category=query["category"])
        rows = rows.order_by("-occurred_at", "-id")[:limit]
        return Response({"data": [s.demand_payload(r) for r in rows]})
