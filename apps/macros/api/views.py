"""Macros of the token's widget, and running one on a chat.

A token stands for the widget's owner: it reads and writes every macro, shared and personal (each
personal one names its operator by `agent_id`); the console shows an operator only the shared ones
and their own (apps.macros.selectors)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import status
from rest_framework.response import Response

from apps.chats.models import Chat
from apps.core.api.query import query_data
from apps.core.api.views import WidgetScopedViewSet
from apps.core.errors import NotFound

from .. import services
from ..models import Macro
from ..selectors import macro_payload
from . import serializers as s


def _changes(data: dict) -> dict:
    changes = dict(data)
    if "agent_id" in changes:
        changes["agent"] = changes.pop("agent_id")
    return changes


@extend_schema_view(
    list=extend_schema(
        summary="List macros",
        description="Every macro of the widget, shared and personal, by name (then id). `visibility` and "
        "`agent_id` narrow the list.",
    ),
    create=extend_schema(
        summary="Create a macro",
        description="A shared (`all`) or a `personal` macro (`agent_id`: its operator, a human agent of this "
        "widget). 422 `validation_failed` for a fault in `actions` (keyed `actions.<i>.<member>`), an id of another "
        "widget or an unknown label name included.",
    ),
    retrieve=extend_schema(summary="Get a macro", description="Another widget's id is 404 like a missing one."),
    partial_update=extend_schema(
        summary="Change a macro",
        description="Merge-safe: members not sent keep their values; `actions` is replaced whole. Moving a macro "
        "to `all` drops its operator.",
    ),
    destroy=extend_schema(summary="Delete a macro", description="Deletes it for good (204)."),
)
class MacroViewSet(WidgetScopedViewSet):
    """Macros of the token's widget. Writes go through macros.services only."""

    queryset = Macro.objects.all()
    cursor_ordering = ("name", "id")
    route_scopes = {
        "list": ["macros:read"],
        "create": ["macros:write"],
        "retrieve": ["macros:read"],
        "partial_update": ["macros:write"],
        "destroy": ["macros:write"],
    }
    idempotency_required = {"create", "partial_update", "destroy"}

    @extend_schema(parameters=[s.MacroListQuery], responses={200: s.MacroDoc(many=True)})
    def list(self, request):
        query = self.validated(s.MacroListQuery, data=query_data(request))
        queryset = self.get_queryset()
        if "visibility" in query:
            queryset = queryset.filter(visibility=query["visibility"])
        if "agent_id" in query:
            queryset = queryset.filter(agent_id=query["agent_id"])
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response([macro_payload(row) for row in page])

    @extend_schema(request=s.MacroInput, responses={201: s.MacroDoc})
    def create(self, request):
        data = _changes(self.validated(s.MacroInput))
        row = services.create_macro(widget=request.widget, **data)
        return Response(macro_payload(row), status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: s.MacroDoc})
    def retrieve(self, request, pk=None):
        return Response(macro_payload(self.get_object()))

    @extend_schema(request=s.MacroPatchInput, responses={200: s.MacroDoc})
    def partial_update(self, request, pk=None):
        row = self.get_object()
        data = self.validated(s.MacroPatchInput, partial=True)
        row = services.update_macro(widget=request.widget, macro=row, changes=_changes(data))
        return Response(macro_payload(row))

    @extend_schema(responses={204: None})
    def destroy(self, request, pk=None):
        services.delete_macro(widget=request.widget, macro=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)


class MacroRunViewSet(WidgetScopedViewSet):
    """POST /v1/chats/{id}/macros/{macro_id}/run."""

    queryset = Chat.objects.all()
    # `create` is the run: the one action of this route (the base class knows its standard names)
    route_scopes = {"create": ["chats:write"]}
    idempotency_required = {"create"}

    def scope_queryset(self, queryset):
        return queryset.live()  # a contact under erasure reads as missing

    @extend_schema(
        operation_id="chats_macros_run",
        summary="Run a macro on a chat",
        parameters=[
            OpenApiParameter("id", OpenApiTypes.INT, OpenApiParameter.PATH, description="The chat id."),
            OpenApiParameter("macro_id", OpenApiTypes.INT, OpenApiParameter.PATH, description="The macro id."),
        ],
        request=None,
        description="Runs the macro's actions in order in one transaction: all or nothing. A refusal of any "
        "action is 422 `macro_action_refused` with `action_index` (from 0), `action_type` and `refusal` (the "
        "refusal's own `code` and `detail`), and nothing changed. Messages and notes are written as an operator "
        "message with no agent (the visitor sees the widget's name). Another widget's chat or macro is 404.",
        responses={200: s.MacroRunDoc},
    )
    def create(self, request, pk=None, macro_id=None):
        chat = self.get_object()
        self.validated(s.EmptyInput)
        macro = Macro.objects.filter(widget=request.widget, pk=macro_id).first()
        if macro is None:
            raise NotFound()
        ran = services.run_macro(widget=request.widget, chat=chat, macro=macro, actor=None)
        return Response({"chat_id": chat.pk, "actions_run": ran})
