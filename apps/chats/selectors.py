"""Reads on conversations, tenant first."""

from __future__ import annotations

from datetime import datetime

from django.db import connection, transaction
from django.db.models import Count, Exists, F, Lookup, OuterRef, Prefetch, Q, QuerySet, Subquery, TextField, Value
from django.db.models.functions import Coalesce

from apps.core import keyset
from apps.core.models import Widget
from apps.erasure.models import PendingErasure
from apps.platform.statements import ModelStatement, Slot, Statement
from apps.widget.models import WidgetIcon

from . import payloads
from .models import Chat, ChatLabel, Contact, ContactTag, File, Label, Message, VisitorSession, VisitorUpload
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


TRIGRAM = 3


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
    label_ids: list[int] | None = None,
) -> QuerySet[Chat]:
    """The chat list: every state unless `status` names one; `from`/`to` bound the creation date
    (`to` exclusive); `q` matches visible message text (trigram index on PostgreSQL); `label_ids`
    keeps the chats carrying every one of these labels."""
    for label_id in label_ids or ():
        queryset = queryset.filter(Exists(ChatLabel.objects.filter(chat_id=OuterRef("pk"), label_id=label_id)))
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
        # The trigram index cannot narrow a pattern shorter than a trigram: such a search walks the
        # chats in list order at once.
        trigrams = connection.vendor == "postgresql" and len(q) >= TRIGRAM
        ids = _rare_word_chat_ids(widget, q) if trigrams else None
        if ids is not None:
            queryset = queryset.filter(pk__in=ids)
        else:
            # A scalar subquery, not EXISTS: PostgreSQL turns an EXISTS into a semi-join and, for a
            # pattern the index cannot narrow, plans it as a hash join over every visible message of
            # the widget. A scalar subquery stays a probe of each chat's own messages, so the list
            # walks the chats in its order and stops at its page.
            matching = visible_messages(widget).filter(chat_id=OuterRef("pk"), body__ilike=like_pattern(q))
            queryset = queryset.alias(matched_message=Subquery(matching.values("pk")[:1])).filter(
                matched_message__isnull=False
            )
    return queryset


# --- the chat list (GET /api/v1/chats) ------------------------------------------------------------

# The order of the list's pages (the cursor holds these values of a page's last row).
CHAT_LIST_ORDERING = keyset.NEWEST_FIRST
# The list's filters that are values in its SQL (each a slot of the compiled page), with their field.
_CHAT_LIST_SLOTS = {"status": "status", "channel": "channel", "start": "created_at", "end": "created_at"}


def list_chats(
    *,
    widget: Widget,
    limit: int,
    after: list | None = None,
    status: str | None = None,
    channel: str | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
    has_client_messages: str | None = None,
    q: str | None = None,
    label_ids: list[int] | None = None,
) -> list[dict]:
    """At most `limit` chats of the list (`filter_chats`' filters), as `values()` rows of
    `payloads.CHAT_ROW_FIELDS`, in CHAT_LIST_ORDERING, strictly after `after` (the ordering's values
    of the last row served; None: from the newest). A contact under erasure reads as missing.

    A search (`q`) is built by the ORM on every call (its SQL depends on its words); every other
    page runs a statement compiled once per combination of filters (apps.platform.statements: through
    the ORM, building the page's query is about half of a list request's CPU). A new filter is a
    keyword here and in `filter_chats`, and an entry of `_CHAT_LIST_SLOTS` when it is a value."""
    if q or label_ids:
        # A label filter, like a search, is built by the ORM: its SQL depends on how many labels.
        queryset = filter_chats(
            _listed_chats(widget),
            widget=widget,
            status=status,
            channel=channel,
            start=start,
            end=end,
            has_client_messages=has_client_messages,
            q=q,
            label_ids=label_ids,
        )
        return list(_keyset_page(queryset.values(*payloads.CHAT_ROW_FIELDS), after, limit))
    shape, values = _chat_list_bindings(
        limit, after, has_client_messages, status=status, channel=channel, start=start, end=end
    )
    return _CHAT_LIST_PAGE.rows(shape, widget=widget.pk, **values)


def chat_list_sql(*, widget: Widget, limit: int, after: list | None = None, **filters) -> tuple[str, list]:
    """The SQL and parameters `list_chats` runs for these arguments (no `q`): for the bench's
    floor, which runs the very same statement."""
    shape, values = _chat_list_bindings(
        limit, after, filters.pop("has_client_messages", None), **{name: filters.get(name) for name in _CHAT_LIST_SLOTS}
    )
    return _CHAT_LIST_PAGE.sql(shape, widget=widget.pk, **values)


def _chat_list_bindings(limit: int, after, has_client_messages, **given) -> tuple[tuple, dict]:
    """The compiled page's shape (what changes its SQL: which filters are given, the limit, whether
    there is a cursor) and its slots' values."""
    present = frozenset(name for name, value in given.items() if value is not None)
    values = {name: given[name] for name in present}
    values.update({f"after_{i}": value for i, value in enumerate(after or ())})
    return (present, has_client_messages, limit, after is not None), values


def _listed_chats(widget) -> QuerySet[Chat]:
    return Chat.objects.live().filter(widget=widget)


def _keyset_page(queryset: QuerySet, after, limit: int) -> QuerySet:
    queryset = queryset.order_by(*CHAT_LIST_ORDERING)
    if after is not None:
        queryset = queryset.filter(keyset.after(CHAT_LIST_ORDERING, after))
    return queryset[:limit]


def _chat_list_query(slots: frozenset, has_client_messages, limit: int, has_cursor: bool) -> QuerySet:
    """The page of `list_chats` with a slot for the widget, each given filter and the cursor."""
    queryset = filter_chats(
        _listed_chats(Slot("widget", Widget._meta.pk)),
        widget=None,  # read by `q` only
        has_client_messages=has_client_messages,
        **{name: Slot(name, Chat._meta.get_field(_CHAT_LIST_SLOTS[name])) for name in slots},
    ).values(*payloads.CHAT_ROW_FIELDS)
    position = None
    if has_cursor:
        field = Chat._meta.get_field
        position = [Slot(f"after_{i}", field(name.lstrip("-"))) for i, name in enumerate(CHAT_LIST_ORDERING)]
    return _keyset_page(queryset, position, limit)


_CHAT_LIST_PAGE = Statement(_chat_list_query)


def filter_messages(*, chat: Chat, start: datetime | None = None, end: datetime | None = None) -> QuerySet[Message]:
    queryset = Message.objects.filter(chat=chat, widget_id=chat.widget_id).select_related("file")
    if start is not None:
        queryset = queryset.filter(created_at__gte=start)
    if end is not None:
        queryset = queryset.filter(created_at__lt=end)
    return queryset


# --- the visitor's lookups (every visitor call and message makes them: compiled once) --------------


_VISITOR_SESSION = ModelStatement(
    lambda: (
        VisitorSession.objects.select_related("contact")
        .filter(
            token_hash=Slot("token_hash", VisitorSession._meta.get_field("token_hash")),
            widget_id=Slot("widget", Widget._meta.pk),
            contact__widget_id=Slot("widget", Widget._meta.pk),
            last_seen_at__gte=Slot("cutoff", VisitorSession._meta.get_field("last_seen_at")),
        )
        .order_by("pk")[:1]
    ),
)


def get_visitor_session(*, token_hash: str, widget: Widget, cutoff: datetime) -> VisitorSession | None:
    """The session with this token hash, of `widget` and its contact, last seen since `cutoff`."""
    found = _VISITOR_SESSION.instances(token_hash=token_hash, widget=widget.pk, cutoff=cutoff)
    return found[0] if found else None


_ROOM = ModelStatement(
    lambda: (
        Chat.objects.filter(
            widget_id=Slot("widget", Widget._meta.pk),
            contact_id=Slot("contact", Contact._meta.pk),
            channel=Slot("channel", Chat._meta.get_field("channel")),
        )
        .live()
        .order_by(F("last_message_at").desc(nulls_last=True), "-pk")[:1]
    ),
)


def get_room(*, widget: Widget, contact: Contact, channel: str) -> Chat | None:
    """The contact's room on `channel`, or None (also once the contact's erasure is accepted, so a
    socket opened before it can neither type nor mark seen into the room). A merged contact may
    hold several chats on a channel: its room is the one with the latest message."""
    found = _ROOM.instances(widget=widget.pk, contact=contact.pk, channel=channel)
    return found[0] if found else None


def _locked_chat(related: tuple[str, ...]):
    rows = Chat.objects.select_for_update(of=("self",))
    # select_related() without names would join every non-null foreign key (the widget's account
    # and user, the contact's widget, ...): an empty `related` joins nothing.
    if related:
        rows = rows.select_related(*related)
    return rows.filter(pk=Slot("chat", Chat._meta.pk), widget_id=Slot("widget", Widget._meta.pk)).live()


# Every chat writer takes its chat through it (apps.chats.services.lock_chat), routing's decisions
# among them: compiled once per set of related rows.
_LOCKED_CHAT = ModelStatement(_locked_chat)


def locked_chat(*, widget_id: int, chat_id: int, related: tuple[str, ...]) -> Chat | None:
    """The chat row of the widget, locked until the transaction ends (only the chat's own row),
    with `related` rows joined; None when the widget has no such chat or its contact's erasure was
    accepted. Raises TransactionManagementError outside a transaction, as the ORM does."""
    low, high = connection.ops.integer_field_range(Chat._meta.pk.get_internal_type())
    if (low is not None and chat_id < low) or (high is not None and chat_id > high):
        return None  # outside the column: the ORM finds nothing, the bound statement would fail
    found = _LOCKED_CHAT.instances((tuple(related),), widget=widget_id, chat=chat_id)
    return found[0] if found else None


def _locked_room():
    return (
        Chat.objects.select_for_update(of=("self",))
        .select_related("widget", "contact")
        .filter(
            widget_id=Slot("widget", Widget._meta.pk),
            contact_id=Slot("contact", Contact._meta.pk),
            channel=Slot("channel", Chat._meta.get_field("channel")),
        )
        .live()
        .order_by(F("last_message_at").desc(nulls_last=True), "-pk")[:1]
    )


# Every visitor message finds and locks its room with it: compiled once.
_LOCKED_ROOM = ModelStatement(_locked_room)


def locked_room(*, widget_id: int, contact_id: int, channel: str) -> Chat | None:
    """The contact's room on `channel`, locked until the transaction ends (only the chat's own row),
    with its widget and contact joined; None when there is none yet or the contact's erasure was
    accepted. A merged contact may have several: the one with the latest message."""
    found = _LOCKED_ROOM.instances(widget=widget_id, contact=contact_id, channel=channel)
    return found[0] if found else None


def _previous_message_at():
    at = Slot("at", Message._meta.get_field("created_at"))
    earlier = Q(created_at__lt=at) | Q(created_at=at, id__lt=Slot("message", Message._meta.pk))
    return (
        Message.objects.filter(earlier, chat_id=Slot("chat", Chat._meta.pk))
        .order_by("-created_at", "-id")
        .values("created_at")[:1]
    )


# read on every visitor message (the statistics' conversation count): compiled once
_PREVIOUS_MESSAGE_AT = Statement(_previous_message_at)


def get_previous_message_at(*, chat_id: int, before: Message) -> datetime | None:
    """When the message of chat `chat_id` just before `before` (creation time, then id) was
    written, or None when `before` is the first."""
    rows = _PREVIOUS_MESSAGE_AT.rows(chat=chat_id, at=before.created_at, message=before.pk)
    return rows[0]["created_at"] if rows else None


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


# --- contacts --------------------------------------------------------------------------------------------

CONTACT_LIST_ORDERING = keyset.NEWEST_FIRST


def match_contacts(queryset: QuerySet[Contact], *, query: str | None) -> QuerySet[Contact]:
    """The contact list's search (GET /v1/contacts?query=, the owner's contact list): `query` in the
    name, the e-mail or the phone, case-insensitively. No query keeps every contact."""
    if not query:
        return queryset
    return queryset.filter(Q(name__icontains=query) | Q(email__icontains=query) | Q(phone__icontains=query))


def contact_identity(contact: Contact) -> dict:
    """A contact's identity as GET /v1/contacts/{guid}/identity shows it (and the export):
    `{external_id, verified, verified_at}`, `external_id` null when the page never named one."""
    return {
        "external_id": contact.external_id or None,
        "verified": contact.verified_at is not None,
        "verified_at": contact.verified_at.isoformat() if contact.verified_at else None,
    }


def get_verified_contact(queryset: QuerySet[Contact], *, external_id: str) -> Contact | None:
    """The contact of `queryset` (already the tenant's live contacts) whose external id was verified
    (GET /v1/contacts/by-external-id/{external_id}); an id kept only unverified is no match."""
    return queryset.filter(external_id=external_id, verified_at__isnull=False).first()


def list_contacts(*, widget: Widget, query: str | None = None, after: list | None = None, limit: int) -> list[Contact]:
    """A page of the widget's live contacts, newest first (CONTACT_LIST_ORDERING), strictly after
    `after`, each with its tags (prefetched, sorted), `chat_count` and `last_seen_at` (its latest
    visitor session's activity, else its latest chat message): two queries whatever the page size."""
    chats = Chat.objects.filter(contact_id=OuterRef("pk"), widget_id=widget.pk)
    chat_count = chats.order_by().values("contact_id").annotate(n=Count("pk")).values("n")
    session_seen = (
        VisitorSession.objects.filter(contact_id=OuterRef("pk"), widget_id=widget.pk)
        .order_by("-last_seen_at")
        .values("last_seen_at")[:1]
    )
    chat_seen = chats.filter(last_message_at__isnull=False).order_by("-last_message_at").values("last_message_at")[:1]
    queryset = match_contacts(Contact.objects.filter(widget=widget).live(), query=query)
    if after is not None:
        queryset = queryset.filter(keyset.after(CONTACT_LIST_ORDERING, after))
    queryset = (
        queryset.annotate(
            chat_count=Coalesce(Subquery(chat_count), Value(0)),
            last_seen_at=Coalesce(Subquery(session_seen), Subquery(chat_seen)),
        )
        .prefetch_related(Prefetch("tags", queryset=ContactTag.objects.order_by("name")))
        .order_by(*CONTACT_LIST_ORDERING)
    )
    return list(queryset[:limit])


def get_live_contact(*, widget: Widget, guid: str) -> Contact | None:
    """The widget's contact by guid, None when missing, foreign or being erased."""
    return Contact.objects.filter(widget=widget, guid=guid).live().first()


def list_contact_chats(*, widget: Widget, contact: Contact) -> QuerySet[Chat]:
    """The contact's chats, newest activity first."""
    return (
        Chat.objects.filter(widget=widget, contact=contact)
        .live()
        .order_by(F("last_message_at").desc(nulls_last=True), "-id")
    )


MERGE_CANDIDATES = 8


def find_merge_candidates(*, widget: Widget, exclude: Contact, query: str) -> list[Contact]:
    """The widget's other live contacts a contact may merge into (the console's "Merge with…"):
    `query` in the name, e-mail, phone or external id, case-insensitively; newest first, at most
    MERGE_CANDIDATES."""
    matches = Q(name__icontains=query) | Q(email__icontains=query) | Q(phone__icontains=query)
    queryset = Contact.objects.filter(widget=widget).live().exclude(pk=exclude.pk)
    queryset = queryset.filter(matches | Q(external_id__icontains=query))
    return list(queryset.order_by("-created_at", "-id")[:MERGE_CANDIDATES])


# --- labels ---------------------------------------------------------------------------------------


def list_labels(*, widget: Widget) -> QuerySet[Label]:
    """The widget's labels, by name without regard to case."""
    return Label.objects.filter(widget=widget).order_by("key", "id")


def get_labels_by_key(*, widget: Widget, keys: set[str]) -> dict[str, Label]:
    """The widget's labels whose `key` (apps.chats.services.label_key) is among `keys`."""
    return {label.key: label for label in Label.objects.filter(widget=widget, key__in=keys)}


def get_chat_label_names(*, chat: Chat) -> list[str]:
    """The chat's label names, sorted without regard to case (as the services return them)."""
    rows = ChatLabel.objects.filter(chat=chat, widget_id=chat.widget_id).values_list("label__key", "label__name")
    return [name for _, name in sorted(rows)]


def prefetch_chat_labels(chats: list[Chat]) -> None:
    """Set `label_list` ([Label], sorted without regard to case) on each of `chats` in one statement."""
    by_chat: dict[int, list[Label]] = {chat.pk: [] for chat in chats}
    rows = (
        ChatLabel.objects.filter(chat_id__in=list(by_chat)).select_related("label").order_by("label__key", "label_id")
    )
    for row in rows:
        by_chat[row.chat_id].append(row.label)
    for chat in chats:
        chat.label_list = by_chat[chat.pk]
