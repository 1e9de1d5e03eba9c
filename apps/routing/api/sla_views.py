"""SLA policies of the token's widget: the list and the writes (apps.routing.sla)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import status
from rest_framework.response import Response

from apps.core.api.query import query_data
from apps.core.api.views import WidgetScopedViewSet

from .. import selectors, sla
from ..models import SlaPolicy
from . import sla_serializers as s


@extend_schema_view(
    list=extend_schema(
        summary="List SLA policies",
        description="The widget's SLA policies, oldest first. A chat takes its department's policy, else the "
        "default (`department_id` null); with neither, its clocks do not run.",
    ),
    create=extend_schema(
        summary="Create an SLA policy",
        description="409 `sla_default_exists` for a second default, 409 `sla_department_taken` for a second "
        "policy of a department; a department of another widget is 422 at `department_id` like a missing one. "
        "Clocks start with the chats' next events; due times are computed when a clock starts.",
    ),
    retrieve=extend_schema(
        summary="Get an SLA policy",
        description="One SLA policy; another widget's id is 404 like a missing one.",
    ),
    partial_update=extend_schema(
        summary="Change an SLA policy",
        description="Merge-safe: members not sent keep their values. Same refusals (409, 422) as creating. "
        "Running clocks keep the due times they started with.",
    ),
    destroy=extend_schema(
        summary="Delete an SLA policy",
        description="Deletes it for good (204); its running clocks stop without counting as met or breached. "
        "Another widget's id is 404.",
    ),
)
class SlaPolicyViewSet(WidgetScopedViewSet):
    """SLA policies of the token's widget. Writes go through routing.sla only."""

    queryset = SlaPolicy.objects.all()
    cursor_ordering = ("id",)
    route_scopes = {
        "list": ["sla:read"],
        "create": ["sla:write"],
        "retrieve": ["sla:read"],
        "partial_update": ["sla:write"],
        "destroy": ["sla:write"],
    }
    idempotency_required = {"create", "partial_update", "destroy"}
    problem_statuses = {"create": [409], "partial_update": [409]}

    @extend_schema(responses={200: s.SlaPolicyDoc(many=True)})
    def list(self, request):
        self.validated(s.SlaListQuery, data=query_data(request))
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response([selectors.policy_payload(row) for row in page])

    @extend_schema(request=s.SlaPolicyInput, responses={201: s.SlaPolicyDoc})
    def create(self, request):
        data = self.validated(s.SlaPolicyInput)
        row = sla.create_policy(widget=request.widget, data=dict(data))
        return Response(selectors.policy_payload(row), status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: s.SlaPolicyDoc})
    def retrieve(self, request, pk=None):
        return Response(selectors.policy_payload(self.get_object()))

    @extend_schema(request=s.SlaPolicyPatchInput, responses={200: s.SlaPolicyDoc})
    def partial_update(self, request, pk=None):
        row = self.get_object()
        data = self.validated(s.SlaPolicyPatchInput, partial=True)
        row = sla.update_policy(widget=request.widget, policy=row, changes=dict(data))
        return Response(selectors.policy_payload(row))

    @extend_schema(responses={204: None})
    def destroy(self, request, pk=None):
        sla.delete_policy(widget=request.widget, policy=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)
