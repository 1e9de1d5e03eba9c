"""AI operators of the token's widget."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status
from rest_framework.response import Response

from apps.agents.models import Agent
from apps.core.api.query import query_data
from apps.core.api.views import WidgetScopedViewSet

from ... import selectors, services
from .. import serializers as s
from .schema_notes import MERGE_NOTE


class OperatorViewSet(
    WidgetScopedViewSet,
    mixins.ListModelMixin,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
):
    """AI operators: `ai`-type agents bound to an assistant (also listed among the agents as type `ai`)."""

    queryset = Agent.objects.filter(type=Agent.Type.AI)
    cursor_ordering = ("-created_at", "-id")
    route_scopes = {
        "list": ["ai:read"],
        "create": ["ai:write"],
        "partial_update": ["ai:write"],
        "destroy": ["ai:write"],
    }
    idempotency_required = {"create", "partial_update"}
    problem_statuses = {"create": [409], "partial_update": [409]}

    @extend_schema(
        summary="List AI operators",
        description="AI operators only, retired included, newest first.",
        responses={200: s.OperatorDoc(many=True)},
    )
    def list(self, request):
        self.validated(s.EmptyQuery, data=query_data(request))
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response([selectors.operator_payload(a) for a in page])

    @extend_schema(
        summary="Create an AI operator",
        description="`assistant_id` is required (one of the widget's assistants, else 422); `name` defaults to the "
        "assistant's; `status` is `active` (default), `paused` or `retired`.",
        request=s.OperatorInput,
        responses={201: s.OperatorDoc},
    )
    def create(self, request):
        data = self.validated(s.OperatorInput)
        operator = services.create_operator(widget=request.widget, **data)
        return Response(selectors.operator_payload(operator), status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Update an AI operator",
        description="Rebind (`assistant_id`), rename, `show_in_header`, `status` (`active` revives a retired "
        "operator). " + MERGE_NOTE,
        request=s.OperatorInput,
        responses={200: s.OperatorDoc},
    )
    def partial_update(self, request, pk=None):
        operator = self.get_object()
        data = self.validated(s.OperatorInput, partial=True)
        operator = services.update_operator(widget=request.widget, operator=operator, changes=dict(data))
        return Response(selectors.operator_payload(operator))

    @extend_schema(
        summary="Retire an AI operator",
        description="The operator becomes `retired` (it stops answering); PATCH `status: active` brings it back.",
        request=None,
        responses={204: None},
    )
    def destroy(self, request, pk=None):
        services.retire_operator(widget=request.widget, operator=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)
