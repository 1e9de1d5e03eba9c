"""Canned responses of the token's widget: the searchable list, the writes, and the rendering of
one for a chat."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.response import Response

from apps.core.api.query import query_data
from apps.core.api.views import WidgetScopedViewSet
from apps.core.auth.permissions import demand_scopes
from apps.core.errors import NotFound

from .. import selectors, services
from ..models import CannedResponse
from . import serializers as s


def canned_payload(row: CannedResponse) -> dict:
    return {
        "id": row.pk,
        "shortcut": row.shortcut,
        "title": row.title,
        "text": row.text,
        "language": row.language,
        "created_at": row.created_at.isoformat(),
        "updated_at": row.updated_at.isoformat(),
    }


@extend_schema_view(
    list=extend_schema(
        summary="List canned responses",
        description="By shortcut (then id). `q` finds a substring of shortcut, title or text (any case); "
        "`language` keeps rows of that language and rows for any language.",
    ),
    create=extend_schema(
        summary="Create a canned response",
        description="409 `shortcut_taken` when the widget has the shortcut already; 422 `unknown_variable` for "
        "a `{{...}}` that is not a known variable.",
    ),
    retrieve=extend_schema(
        summary="Get a canned response",
        description="One canned response, its text as written; another widget's id is 404 like a missing one.",
    ),
    partial_update=extend_schema(
        summary="Change a canned response",
        description="Merge-safe: members not sent keep their values. Same rules (409, 422) as creating.",
    ),
    destroy=extend_schema(
        summary="Delete a canned response",
        description="Deletes it for good (204); its shortcut is free again. Another widget's id is 404.",
    ),
    render=extend_schema(
        summary="Render a canned response for a chat",
        description="Needs `canned:read` and `chats:read` (403 `missing_scope` without either). "
        "`{{contact.name}}` and `{{contact.email}}` are the chat's contact's when the token also holds "
        "`contacts:read`; without it they have no value. `{{agent.name}}` is the chat's assigned human "
        "agent's, `{{widget.name}}` the `widget_name` setting; a missing value takes its fallback, else an "
        "empty string. A chat of another widget is 404 like a missing one.",
    ),
)
class CannedResponseViewSet(WidgetScopedViewSet):
    """Canned responses of the token's widget. Writes go through canned.services only."""

    queryset = CannedResponse.objects.all()
    cursor_ordering = ("shortcut", "id")
    route_scopes = {
        "list": ["canned:read"],
        "create": ["canned:write"],
        "retrieve": ["canned:read"],
        "partial_update": ["canned:write"],
        "destroy": ["canned:write"],
        # chats:read is needed too: checked in the action (a route's scopes are alternatives)
        "render": ["canned:read"],
    }
    idempotency_required = {"create", "partial_update", "destroy"}
    problem_statuses = {"create": [409], "partial_update": [409]}

    @extend_schema(parameters=[s.CannedListQuery], responses={200: s.CannedResponseDoc(many=True)})
    def list(self, request):
        query = self.validated(s.CannedListQuery, data=query_data(request))
        queryset = selectors.list_canned_responses(
            self.get_queryset(), q=(query.get("q") or "").strip() or None, language=query.get("language")
        )
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response([canned_payload(row) for row in page])

    @extend_schema(request=s.CannedResponseInput, responses={201: s.CannedResponseDoc})
    def create(self, request):
        data = self.validated(s.CannedResponseInput)
        row = services.create_canned_response(widget=request.widget, **data)
        return Response(canned_payload(row), status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: s.CannedResponseDoc})
    def retrieve(self, request, pk=None):
        return Response(canned_payload(self.get_object()))

    @extend_schema(request=s.CannedResponsePatchInput, responses={200: s.CannedResponseDoc})
    def partial_update(self, request, pk=None):
        row = self.get_object()
        data = self.validated(s.CannedResponsePatchInput, partial=True)
        row = services.update_canned_response(widget=request.widget, canned=row, changes=dict(data))
        return Response(canned_payload(row))

    @extend_schema(responses={204: None})
    def destroy(self, request, pk=None):
        services.delete_canned_response(widget=request.widget, canned=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(parameters=[s.RenderQuery], responses={200: s.RenderDoc})
    @action(detail=True, methods=["get"])
    def render(self, request, pk=None):
        demand_scopes(request.user.scopes, "chats:read", detail="Rendering for a chat needs chats:read too.")
        row = self.get_object()
        query = self.validated(s.RenderQuery, data=query_data(request))
        chat = selectors.get_chat(widget=request.widget, chat_id=query["chat_id"])
        if chat is None:
            raise NotFound()
        # SECURITY: the contact's name and e-mail are contact data: filled only for a token that may read contacts
        contacts = "contacts:read" in request.user.scopes
        text = selectors.render_for_chat(widget=request.widget, canned=row, chat=chat, contacts=contacts)
        return Response({"text": text})
