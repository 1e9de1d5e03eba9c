"""Assistants of the token's widget."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status
from rest_framework.response import Response

from apps.core.api.query import query_data
from apps.core.api.views import WidgetScopedViewSet

from ... import selectors, services
from ...models import Assistant
from .. import serializers as s
from .schema_notes import MERGE_NOTE


class AssistantViewSet(
    WidgetScopedViewSet,
    mixins.ListModelMixin,
    mixins.CreateModelMixin,
    mixins.RetrieveModelMixin,
    mixins.DestroyModelMixin,
):
    """AI assistants (the brain) of the token's widget."""

    queryset = Assistant.objects.all()
    cursor_ordering = ("-created_at", "-id")
    route_scopes = {
        "list": ["ai:read"],
        "retrieve": ["ai:read"],
        "create": ["ai:write"],
        "partial_update": ["ai:write"],
        "destroy": ["ai:write"],
    }
    idempotency_required = {"create", "partial_update"}
    problem_statuses = {"create": [409], "partial_update": [409], "destroy": [409]}

    @extend_schema(summary="List assistants", description="Newest first.", responses={200: s.AssistantDoc(many=True)})
    def list(self, request):
        self.validated(s.EmptyQuery, data=query_data(request))
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response([selectors.assistant_payload(a) for a in page])

    @extend_schema(
        summary="Create an assistant",
        description="`name` is required. `is_default: true` clears the flag on the others (one default). "
        "`provider` names the driver whose widget-wide credential the assistant uses when it has none of its own.",
        request=s.AssistantInput,
        responses={201: s.AssistantDoc},
    )
    def create(self, request):
        data = self.validated(s.AssistantInput)
        assistant = services.create_assistant(widget=request.widget, fields=dict(data))
        return Response(selectors.assistant_payload(assistant), status=status.HTTP_201_CREATED)

    @extend_schema(summary="Read an assistant", description="One assistant.", responses={200: s.AssistantDoc})
    def retrieve(self, request, pk=None):
        return Response(selectors.assistant_payload(self.get_object()))

    @extend_schema(
        summary="Update an assistant",
        description="Any subset of the create fields; `name` cannot be cleared. " + MERGE_NOTE,
        request=s.AssistantInput,
        responses={200: s.AssistantDoc},
    )
    def partial_update(self, request, pk=None):
        assistant = self.get_object()
        data = self.validated(s.AssistantInput, partial=True)
        assistant = services.update_assistant(widget=request.widget, assistant=assistant, changes=dict(data))
        return Response(selectors.assistant_payload(assistant))

    @extend_schema(
        summary="Delete an assistant",
        description="Refused with 409 `assistant_in_use` while an AI operator that is not retired runs it; the "
        "problem's `operators` names them (`{id, name}`).",
        request=None,
        responses={204: None},
    )
    def destroy(self, request, pk=None):
        services.delete_assistant(widget=request.widget, assistant=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)
