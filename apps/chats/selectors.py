"""Reads on conversations, tenant first."""

from __future__ import annotations

from datetime import datetime

from django.db.models import QuerySet

from apps.core.models import Widget

from .models import Chat, Message


def visible_messages(widget: Widget) -> QuerySet[Message]:
    return Message.objects.filter(widget=widget, visibility=Message.Visibility.PUBLIC)


def filter_chats(
    queryset: QuerySet[Chat],
    *,
    widget: Widget,
    status: str | None = None,
    channel: str | None = None,
    has_client_messages: str | None = None,
    q: str | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
) -> QuerySet[Chat]:
    """The chat list: every state unless `status` names one; `from`/`to` bound the creation date
    (`to` exclusive); `q` matches visible message text (trigram index on PostgreSQL)."""
    if status:
        queryset = queryset.filter(status=status)
    if channel:
        queryset = queryset.filter(channel=channel)
    if has_client_messages == "1":
        queryset = queryset.filter(has_client_messages=True)
    elif has_client_messages == "0":
        queryset = queryset.filter(has_client_messages=False)
    if start is not None:
        queryset = queryset.filter(created_at__gte=start)
    if end is not None:
        queryset = queryset.filter(created_at__lt=end)
    if q:
        matching = visible_messages(widget).filter(body__icontains=q).values("chat_id")
        queryset = queryset.filter(pk__in=matching)
    return queryset


def filter_messages(*, chat: Chat, start: datetime | None = None, end: datetime | None = None) -> QuerySet[Message]:
    queryset = Message.objects.filter(chat=chat, widget_id=chat.widget_id).select_related("file")
    if start is not None:
        queryset = queryset.filter(created_at__gte=start)
    if end is not None:
        queryset = queryset.filter(created_at__lt=end)
    return queryset
