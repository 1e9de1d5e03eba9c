"""Reads on conversations, tenant first."""

from __future__ import annotations

from datetime import datetime

from django.db import connection, transaction
from django.db.models import Exists, Lookup, OuterRef, Q, QuerySet, TextField

from apps.core.models import Widget
from apps.erasure.models import PendingErasure
from apps.widget.models import WidgetIcon

from . import payloads
from .models import Chat, Contact, File, Message, VisitorUpload
from .payloads import signed_file_url as _signed_file_url


@TextField.register_lookup
class ILike(Lookup):
    """`body__ilike`: ILIKE with the pattern as given (PostgreSQL's trigram index serves it;
    Django's icontains compiles to UPPER(...) LIKE UPPER(...), which it cannot)."""

    lookup_name = "ilike"

    def as_sql(self, compiler, conn):
        lhs, lhs_params = self.process_lhs(compiler, conn)
        rhs, rhs_params = self.process_rhs(compiler, conn)
        return f"{lhs} ILIKE {rhs}", [*lhs_params, *rhs_params]

    def as_sqlite(self, compiler, conn):
        # unicode_lower is registered on every SQLite connection (apps.chats.apps).
        lhs, lhs_params = self.process_lhs(compiler, conn)
        rhs, rhs_params = self.process_rhs(compiler, conn)
        return f"unicode_lower({lhs}) LIKE unicode_lower({rhs}) ESCAPE '\\'", [*lhs_params, *rhs_params]


# A word matching more visible messages than this is "common": instead of collecting every match,
# the list walks the newest chats and stops at the page size.
RARE_MATCH_CAP = 2000


def like_pattern(q: str) -> str:
    escaped = q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _rare_word_chat_ids(widget: Widget, q: str) -> list[int] | None:
    """Chats of this widget whose visible messages contain `q`, from the tenant-first trigram index
    alone, or None when the word is common. Plain index scans are switched off for this one query
    so the planner cannot trade the (widget_id, body) GIN index for a walk of the whole tenant."""
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute("SET LOCAL enable_indexscan = off")
        cur.execute(
            "SELECT chat_id FROM chats_message WHERE widget_id = %s::bigint AND visibility = 'public' "
            "AND body ILIKE %s LIMIT %s",
            [widget.pk, like_pattern(q), RARE_MATCH_CAP + 1],
        )
        rows = cur.fetchall()
    if len(rows) > RARE_MATCH_CAP:
        return None
    return sorted({row[0] for row in rows})


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
        ids = _rare_word_chat_ids(widget, q) if connection.vendor == "postgresql" else None
        if ids is not None:
            queryset = queryset.filter(pk__in=ids)
        else:
            matching = visible_messages(widget).filter(chat_id=OuterRef("pk"), body__ilike=like_pattern(q))
            queryset = queryset.filter(Exists(matching))
    return queryset


def filter_messages(*, chat: Chat, start: datetime | None = None, end: datetime | None = None) -> QuerySet[Message]:
    queryset = Message.objects.filter(chat=chat, widget_id=chat.widget_id).select_related("file")
    if start is not None:
        queryset = queryset.filter(created_at__gte=start)
    if end is not None:
        queryset = queryset.filter(created_at__lt=end)
    return queryset


# --- single rows by public or internal id (webhook payloads, compat) ------------------------------------


def get_contact_by_guid(*, widget_id: int, guid: str | None) -> Contact | None:
    return Contact.objects.filter(widget_id=widget_id, guid=guid).first() if guid else None


def get_chat(*, widget_id: int, chat_id: int | None) -> Chat | None:
    """The chat with its contact, or None."""
    if chat_id is None:
        return None
    return Chat.objects.filter(widget_id=widget_id, pk=chat_id).select_related("contact").first()


def get_message(*, widget_id: int, message_id: int | None) -> Message | None:
    return Message.objects.filter(widget_id=widget_id, pk=message_id).first() if message_id else None


def not_erasing_file(file_field: str = "pk") -> Q:
    """A filter keeping files (the column `file_field` holds the file's id) that are not a contact's
    under erasure: one it uploaded, or one shown only in its chats (the files the erasure deletes, by
    the same rules: a file another chat shows or a launcher icon stays). Every route that serves or
    hands out a file takes it, so from the moment an erasure commits, the contact's files read as
    missing, as its contact and chats do (`.live()`, apps.erasure.selectors.LiveQuerySet)."""
    erasing = PendingErasure.objects.values("contact_id")
    uploaded = VisitorUpload.objects.filter(file_id=OuterRef(file_field), contact_id__in=erasing)
    shown = Message.objects.filter(file_id=OuterRef(file_field))
    in_erased_chats = shown.filter(chat__contact_id__in=erasing)
    elsewhere = shown.exclude(chat__contact_id__in=erasing)
    icon = WidgetIcon.objects.filter(file_id=OuterRef(file_field))
    return ~Exists(uploaded) & ~(Exists(in_erased_chats) & ~Exists(elsewhere) & ~Exists(icon))


def file_url(file: File) -> str:
    """A short-lived download URL of a stored file (the operator console draws files and images
    with it, as the REST API's `url`)."""
    return _signed_file_url(file)


def chat_payload(chat: Chat) -> dict:
    """A chat as the REST API shows it (the contact's export)."""
    return payloads.chat_payload(chat)


def message_payload(message: Message, *, url_max_age: int = payloads.FILE_URL_MAX_AGE) -> dict:
    """A message as the REST API shows it, its file URL signed for `url_max_age` seconds."""
    return payloads.message_payload(message, url_max_age=url_max_age)


def file_payload(file: File, *, url_max_age: int = payloads.FILE_URL_MAX_AGE) -> dict:
    """A file's metadata with a download URL signed for `url_max_age` seconds."""
    return {**payloads.file_payload(file), "url": _signed_file_url(file, max_age=url_max_age)}


def client_address(request) -> str:
    """The caller's address by the one rule of the visitor API (REMOTE_ADDR, or TRUSTED_PROXY_HOPS),
    for other apps (the support gate's IP allowlist)."""
    from .visitor.auth import client_address as address_of_request

    return address_of_request(request)
