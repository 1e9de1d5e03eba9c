"""Proactive messages of the token's widget: the list, the writes and the statistics of one."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.response import Response

from apps.core.api.query import query_data
from apps.core.api.views import WidgetScopedViewSet

from .. import selectors, services
from ..models import ProactiveMessage
from . import serializers as s


@extend_schema_view(
    list=extend_schema(
        summary="List proactive messages",
        description="The widget's proactive messages, oldest first; enabled ones reach the widget in its config.",
    ),
    create=extend_schema(
        summary="Create a proactive message",
        description="409 `name_taken` when the widget has the name already; an agent of another widget is 422 at "
        "`agent_id` like a missing one. The widget's config is purged: visitors get it with their next config read.",
    ),
    retrieve=extend_schema(
        summary="Get a proactive message",
        description="One proactive message; another widget's id is 404 like a missing one.",
    ),
    partial_update=extend_schema(
        summary="Change a proactive message",
        description="Merge-safe: members not sent keep their values (`rules` and `text_i18n` are replaced whole). "
        "Same refusals (409, 422) as creating.",
    ),
    destroy=extend_schema(
        summary="Delete a proactive message",
        description="Deletes it and its statistics for good (204). Another widget's id is 404.",
    ),
)
class ProactiveMessageViewSet(WidgetScopedViewSet):
    """Proactive messages of the token's widget. Writes go through proactive.services only."""

    queryset = ProactiveMessage.objects.all()
    cursor_ordering = ("id",)
    route_scopes = {
        "list": ["campaigns:read"],
        "create": ["campaigns:write"],
        "retrieve": ["campaigns:read"],
        "partial_update": ["campaigns:write"],
        "destroy": ["campaigns:write"],
        "stats": ["campaigns:read"],
    }
    idempotency_required = {"create", "partial_update", "destroy"}
    problem_statuses = {"create": [409], "partial_update": [409]}

    @extend_schema(responses={200: s.ProactiveMessageDoc(many=True)})
    def list(self, request):
        self.validated(s.ProactiveListQuery, data=query_data(request))
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response([selectors.message_payload(row) for row in page])

    @extend_schema(request=s.ProactiveMessageInput, responses={201: s.ProactiveMessageDoc})
    def create(self, request):
        data = self.validated(s.ProactiveMessageInput)
        row = services.create_message(widget=request.widget, data=dict(data))
        return Response(selectors.message_payload(row), status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: s.ProactiveMessageDoc})
    def retrieve(self, request, pk=None):
        return Response(selectors.message_payload(self.get_object()))

    @extend_schema(request=s.ProactiveMessagePatchInput, responses={200: s.ProactiveMessageDoc})
    def partial_update(self, request, pk=None):
        row = self.get_object()
        data = self.validated(s.ProactiveMessagePatchInput, partial=True)
        row = services.update_message(widget=request.widget, message=row, changes=dict(data))
        return Response(selectors.message_payload(row))

    @extend_schema(responses={204: None})
    def destroy(self, request, pk=None):
        services.delete_message(widget=request.widget, message=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        summary="Statistics of a proactive message",
        description="`{shown, opened, replied}` over the days of the window (the business time zone), read from "
        "per-day counts: `shown` the bubble was shown, `opened` a visitor clicked it, `replied` a visitor's reply "
        "to it started a chat. `from`/`to` are read like the statistics' filters (default: the last 30 days, "
        "today included); another widget's id is 404.",
        parameters=[
            OpenApiParameter("from", str, description="Date or date-time; inclusive (a day counts from its midnight)."),
            OpenApiParameter("to", str, description="Date or date-time; exclusive."),
        ],
        responses={200: s.ProactiveStatsDoc},
    )
    @action(detail=True, methods=["get"])
    def stats(self, request, pk=None):
        row = self.get_object()
        query = self.validated(s.ProactiveStatsQuery, data=query_data(request, skip=()))
        figures = selectors.message_stats(
            widget=request.widget, message=row, start=query.get("from"), end=query.get("to"), now=timezone.now()
        )
        return Response(figures)
