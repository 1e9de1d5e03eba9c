"""Mentions of the token's widget: the list (unread first, then newest) and marking one read."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework.decorators import action
from rest_framework.response import Response

from apps.core.api.query import query_data
from apps.core.api.views import WidgetScopedViewSet

from .. import selectors, services
from ..models import Mention
from ..notify import excerpt
from . import serializers as s


def mention_payload(row: Mention) -> dict:
    return {
        "id": row.pk,
        "chat_id": row.chat_id,
        "message_id": row.message_id,
        "agent_id": row.agent_id,
        "by_agent_id": row.by_agent_id,
        "text": excerpt(row.message.body),
        "created_at": row.created_at.isoformat(),
        "read_at": row.read_at.isoformat() if row.read_at else None,
    }


@extend_schema_view(
    list=extend_schema(
        summary="List mentions",
        description="Operators named with `@` in private notes: unread first, then newest. `agent_id` keeps "
        "one operator's (another widget's or an unknown id: an empty list), `unread` the unread or read ones.",
    ),
    read=extend_schema(
        summary="Mark a mention read",
        description="200 with the mention; one already read keeps its first `read_at`. Another widget's id "
        "is 404 like a missing one.",
    ),
)
class MentionViewSet(WidgetScopedViewSet):
    """Mentions of the token's widget. They are written by the notes that make them
    (apps.mentions.services.record_mentions); this reads them and marks them read."""

    queryset = Mention.objects.all()
    cursor_ordering = selectors.ORDERING
    route_scopes = {"list": ["chats:read"], "read": ["chats:write"]}
    # Marking read takes no idempotency key: a repeat changes nothing and answers the same 200.

    def scope_queryset(self, queryset):
        return queryset.live().select_related("message")

    @extend_schema(parameters=[s.MentionListQuery], responses={200: s.MentionDoc(many=True)})
    def list(self, request):
        query = self.validated(s.MentionListQuery, data=query_data(request))
        unread = query.get("unread")
        queryset = selectors.list_mentions(
            request.widget,
            agent_id=query["agent_id"] if "agent_id" in query else None,
            unread=None if unread is None else unread == "true",
        )
        if "agent_id" in query and query["agent_id"] is None:  # past the id range: nobody's
            queryset = queryset.none()
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response([mention_payload(row) for row in page])

    @extend_schema(request=None, responses={200: s.MentionDoc})
    @action(detail=True, methods=["post"])
    def read(self, request, pk=None):
        mention = services.mark_mention_read(widget=request.widget, mention=self.get_object())
        return Response(mention_payload(mention))
