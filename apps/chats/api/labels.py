"""Labels of the token's widget (`/labels`) and the labels of one chat (`/chats/{id}/labels`).
Writes go through apps.chats.services only; a chat's labels are its own sub-resource, never a
member of the chat object (product-decisions.md, "Wave 4")."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import status
from rest_framework.response import Response

from apps.core.api.query import query_data
from apps.core.api.views import WidgetScopedViewSet
from apps.core.errors import NotFound

from .. import selectors, services
from ..models import Chat, Label
from . import label_serializers as s

CHAT_ID = OpenApiParameter("id", OpenApiTypes.INT, OpenApiParameter.PATH, description="The chat id.")


@extend_schema_view(
    list=extend_schema(
        summary="List labels",
        description="The widget's chat labels, by name without regard to case.",
    ),
    create=extend_schema(
        summary="Create a label",
        description="`name` 1 to 50 characters, unique in the widget without regard to case (409 `label_taken`); "
        "`color` `#rrggbb` or null.",
    ),
    partial_update=extend_schema(
        summary="Rename or recolour a label",
        description="Merge-safe: members not sent keep their values. Chats carrying the label show the new name; a "
        "rename emits no `chat.labels_changed`. Same rules (409, 422) as creating.",
    ),
    destroy=extend_schema(
        summary="Delete a label",
        description="Deletes it (204) and takes it off every chat; each chat that carried it emits "
        "`chat.labels_changed` with its remaining labels. Another widget's id is 404.",
    ),
)
class LabelViewSet(WidgetScopedViewSet):
    """Chat labels of the token's widget."""

    queryset = Label.objects.all()
    cursor_ordering = ("key", "id")
    route_scopes = {
        "list": ["labels:read"],
        "create": ["labels:write"],
        "partial_update": ["labels:write"],
        "destroy": ["labels:write"],
    }
    idempotency_required = {"create", "partial_update", "destroy"}
    problem_statuses = {"create": [409], "partial_update": [409]}

    @extend_schema(responses={200: s.LabelDoc(many=True)})
    def list(self, request):
        self.validated(s.LabelListQuery, data=query_data(request))
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response([s.label_payload(label) for label in page])

    @extend_schema(request=s.LabelInput, responses={201: s.LabelDoc})
    def create(self, request):
        data = self.validated(s.LabelInput)
        label = services.create_label(widget=request.widget, name=data["name"], color=data.get("color") or "")
        return Response(s.label_payload(label), status=status.HTTP_201_CREATED)

    @extend_schema(request=s.LabelPatchInput, responses={200: s.LabelDoc})
    def partial_update(self, request, pk=None):
        label = self.get_object()
        data = self.validated(s.LabelPatchInput, partial=True)
        label = services.update_label(widget=request.widget, label=label, changes=dict(data))
        return Response(s.label_payload(label))

    @extend_schema(responses={204: None})
    def destroy(self, request, pk=None):
        services.delete_label(widget=request.widget, label=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)


class ChatLabelsViewSet(WidgetScopedViewSet):
    """GET and PUT /v1/chats/{id}/labels."""

    queryset = Chat.objects.all()
    route_scopes = {"retrieve": ["chats:read"], "update": ["chats:write"]}
    idempotency_required = {"update"}

    def scope_queryset(self, queryset):
        return queryset.live()  # a contact under erasure reads as missing

    @extend_schema(
        operation_id="chats_labels_retrieve",
        summary="A chat's labels",
        parameters=[CHAT_ID],
        description="The names of the labels the chat carries, sorted without regard to case. Another widget's chat "
        "is 404 like a missing one.",
        responses={200: s.ChatLabelsDoc},
    )
    def retrieve(self, request, pk=None):
        return Response({"labels": selectors.get_chat_label_names(chat=self.get_object())})

    @extend_schema(
        operation_id="chats_labels_update",
        summary="Replace a chat's labels",
        parameters=[CHAT_ID],
        description="`{labels: [name]}` replaces the chat's labels whole (names of the widget's labels, any case, at "
        "most 20; a name the widget has no label for is 422 and changes nothing). Emits `chat.labels_changed` "
        "when the set changed. Answers the chat's labels after the change.",
        request=s.ChatLabelsInput,
        responses={200: s.ChatLabelsDoc},
    )
    def update(self, request, pk=None):
        chat = self.get_object()
        data = self.validated(s.ChatLabelsInput)
        try:
            labels = services.set_chat_labels(widget=request.widget, chat=chat, names=data["labels"], by="api")
        except Chat.DoesNotExist:  # its contact's erasure was accepted meanwhile
            raise NotFound() from None
        return Response({"labels": labels})
