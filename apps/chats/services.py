"""Writes on conversations. Every state change of a chat goes through here: the REST API, the
visitor channel, the operator console, compat routes and the lifecycle job call the same functions.

Locking: functions that change a chat lock its row (`lock_chat`) inside their transaction, so two
writers (a close and an incoming message, two closes) serialise and each emits its events once.
Each change calls `apps.core.events.emit` once and does nothing else: the statistics facts
(apps.stats.facts, in the transaction), the websocket pushes (apps.chats.realtime, after commit)
and the webhooks (the outbox) are handlers of those events.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.agents.models import Agent
from apps.agents.services import record_agent_event
from apps.core import events, statements
from apps.core.errors import Conflict, ValidationFailed
from apps.core.models import Widget
from apps.core.statements import ModelStatement, Slot
from apps.erasure import selectors as erasure
from apps.erasure.selectors import not_erasing

from .models import Chat, ChatTransfer, Contact, ContactTag, Message, Rating

WIDGET_CHANNEL = "widget"
IDLE_EXPIRY = timedelta(minutes=7)
ATTRIBUTES_MAX_BYTES = 16 * 1024
TYPING_INTERVAL = timedelta(seconds=5)


class ChatIsSpam(Conflict):
    """The chat is marked spam: only `state: active` moves it, and it takes no messages."""

    code, title = "chat_is_spam", "Chat is marked as spam"


class AlreadyRated(Conflict):
    """The visitor has already rated this chat."""

    code, title = "already_rated", "Chat already rated"


def ensure_not_spam(
    chat: Chat, *, detail: str = "A spam chat takes no messages, typing or receipts; move it to active first."
) -> None:
    """The spam rule of every write into a chat (messages, typing, receipts, ratings): 409."""
    if chat.status == Chat.Status.SPAM:
        raise ChatIsSpam(detail)


# What post_agent_message locks a chat with: a caller that takes the lock first (the REST send, a
# support reply) asks for the same rows, and the service's own lock_chat then reads nothing again.
AGENT_MESSAGE_RELATED = ("widget", "contact", "agent")


def lock_chat(*, widget: Widget, chat: Chat, related: tuple[str, ...] = ("widget", "contact")) -> Chat:
    """The chat row of `widget`, locked until the transaction ends (only the chat's own row:
    `of=self`), with `related` rows joined. The one way a writer takes a chat by id (a visitor's
    message takes its room by contact: `_locked_room`). Chat.DoesNotExist when `widget` has no
    such chat, or its contact's erasure was accepted (apps.erasure): nothing writes it back.

    A chat this function returned earlier in the same transaction, with `related` loaded, is
    returned as it is: the row is locked and read already (the caller holds it as it left it).
    `_lock_held` tells whether that transaction is still the current one."""
    if chat.widget_id == widget.pk and _lock_held(chat, related):
        return chat
    found = _LOCKED_CHAT.instances((related,), chat=chat.pk, widget=widget.pk)
    if not found:
        raise Chat.DoesNotExist("Chat matching query does not exist.")
    locked = found[0]
    locked._locked_in = transaction.get_connection().run_on_commit
    return locked


def _lock_held(chat: Chat, related: tuple[str, ...]) -> bool:
    """`chat` came from lock_chat in the current transaction (or savepoint) and has `related`
    loaded. Django replaces the connection's on-commit list at every commit, rollback and savepoint
    rollback (the test events._pending_hand_off makes too), so the list the lock was taken under is
    the current one only while the lock still stands."""
    taken_in = getattr(chat, "_locked_in", None)
    if taken_in is None:
        return False
    connection = transaction.get_connection()
    if not connection.in_atomic_block or taken_in is not connection.run_on_commit:
        return False
    return all(Chat._meta.get_field(name).is_cached(chat) for name in related)


# compiled once per `related`; prepared on PostgreSQL (a lookup by primary key: one plan fits all)
_LOCKED_CHAT = ModelStatement(
    lambda related: (
        Chat.objects.select_for_update(of=("self",))
        .select_related(*related)
        .filter(pk=Slot("chat", Chat._meta.pk), widget_id=Slot("widget", Widget._meta.pk))
        .filter(not_erasing())
    ),
    prepared=True,
)


# --- contacts -----------------------------------------------------------------------------------


@transaction.atomic
def create_contact(
    *, widget: Widget, name: str = "", email: str = "", phone: str = "", locale: str = "", attributes=None
) -> Contact:
    return Contact.objects.create(
        widget=widget, name=name, email=email, phone=phone, locale=locale, attributes=attributes or {}
    )


def attributes_size(attributes: dict) -> int:
    """Bytes of the attributes object as stored (compact UTF-8 JSON)."""
    return len(json.dumps(attributes, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


@transaction.atomic
def update_contact(*, widget: Widget, contact: Contact, changes: dict, source: str = "api") -> Contact:
    """Merge-safe PATCH: only the named members change; `attributes` merges key by key (a null
    value removes that key). Emits contact.updated with the fields that actually changed.

    The merged attributes may hold at most ATTRIBUTES_MAX_BYTES (422, nothing changed): checked
    under the row lock, so two patches cannot together grow the stored object past the limit."""
    contact = Contact.objects.select_for_update().get(pk=contact.pk, widget=widget)
    changed: list[str] = []
    for field in ("name", "email", "phone"):
        if field in changes:
            value = changes[field] or ""
            if getattr(contact, field) != value:
                setattr(contact, field, value)
                changed.append(field)
    if "attributes" in changes:
        merged = dict(contact.attributes)
        for key, value in (changes["attributes"] or {}).items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = value
        if attributes_size(merged) > ATTRIBUTES_MAX_BYTES:
            raise ValidationFailed(
                "One or more fields are invalid.",
                errors={"attributes": [f"The merged attributes would exceed {ATTRIBUTES_MAX_BYTES} bytes."]},
            )
        if merged != contact.attributes:
            contact.attributes = merged
            changed.append("attributes")
    if changed:
        contact.updated_at = timezone.now()
        contact.save(update_fields=[*changed, "updated_at"])
        events.emit(widget, events.CONTACT_UPDATED, client_id=contact.guid, changed_fields=changed)
    return contact


@transaction.atomic
def add_tags(*, widget: Widget, contact: Contact, names: list[str]) -> list[str]:
    """Attach tags; re-posting an existing tag is a no-op. Returns the contact's tags."""
    existing = set(ContactTag.objects.filter(contact=contact).values_list("name", flat=True))
    for name in dict.fromkeys(names):
        if name in existing:
            continue
        try:
            with transaction.atomic():
                ContactTag.objects.create(widget=widget, contact=contact, name=name)
        except IntegrityError:
            pass  # a concurrent request attached it: still a no-op
    return sorted(ContactTag.objects.filter(contact=contact).values_list("name", flat=True))


# --- rooms ------------------------------------------------------------------------------------------


def get_or_create_room(*, widget: Widget, contact: Contact, channel: str = WIDGET_CHANNEL, source: str) -> Chat:
    """The contact's room on `channel`; created (with chat.created) only the first time. A contact
    under erasure gets no room (Chat.DoesNotExist, as if it were gone already)."""
    chat = find_room(widget=widget, contact=contact, channel=channel)
    if chat is not None:
        return chat
    if erasure.is_erasing(contact.pk):
        raise Chat.DoesNotExist("The contact is being erased.")
    try:
        with transaction.atomic():
            chat = Chat.objects.create(widget=widget, contact=contact, channel=channel)
            events.emit(
                widget,
                events.CHAT_CREATED,
                objects={"chat": chat},
                chat_id=chat.pk,
                client_id=contact.guid,
                source=source,
            )
            return chat
    except IntegrityError:  # the same contact's concurrent first message created it
        return Chat.objects.get(widget=widget, contact=contact, channel=channel)


def find_room(*, widget: Widget, contact: Contact, channel: str = WIDGET_CHANNEL) -> Chat | None:
    """The contact's room on `channel`, or None. Every visitor message looks it up: compiled once,
    prepared on PostgreSQL."""
    found = _ROOM.instances(widget=widget.pk, contact=contact.pk, channel=channel)
    return found[0] if found else None


_ROOM = ModelStatement(
    lambda: Chat.objects.filter(
        widget_id=Slot("widget", Widget._meta.pk),
        contact_id=Slot("contact", Contact._meta.pk),
        channel=Slot("channel", Chat._meta.get_field("channel")),
    ).order_by("pk")[:1],
    prepared=True,
)


# --- attribution -----------------------------------------------------------------------------------

_NEXT_HANDLING = {
    # (current handling, operator type now answering) -> new handling
    (Chat.Handling.MISSED, "human"): Chat.Handling.HUMAN,
    (Chat.Handling.MISSED, "ai"): Chat.Handling.AI,
    (Chat.Handling.AI, "human"): Chat.Handling.AI_TO_HUMAN,
    (Chat.Handling.HUMAN_TO_AI, "human"): Chat.Handling.AI_TO_HUMAN,
    (Chat.Handling.HUMAN, "ai"): Chat.Handling.HUMAN_TO_AI,
    (Chat.Handling.AI_TO_HUMAN, "ai"): Chat.Handling.HUMAN_TO_AI,
}


def _operator_type(agent: Agent) -> str:
    # An external (webhook) operator is an external AI operator: a machine, attributed as `ai`.
    machine = agent.type in (Agent.Type.AI, Agent.Type.WEBHOOK)
    return Chat.OperatorType.AI if machine else Chat.OperatorType.HUMAN


@dataclass
class Answer:
    """What `record_answer` changed on the chat: the fields to save, and whether this was the
    chat's first acceptance (chat.accepted is emitted once the chat is saved)."""

    fields: list[str]
    accepted: bool


def record_answer(*, chat: Chat, agent: Agent, now: datetime) -> Answer:
    """An operator answered the (locked) chat: a person by explicit accept, assignment or a reply;
    the AI operator by a visitor-visible message. Updates accepted_by / handled_by / handling.
    The caller saves the fields and then calls `emit_accepted` when `accepted`."""
    kind = _operator_type(agent)
    changed = []
    accepted = not chat.accepted_by_type
    if accepted:
        chat.accepted_by, chat.accepted_by_type, chat.accepted_at = agent, kind, now
        changed += ["accepted_by", "accepted_by_type", "accepted_at"]
    handling = _NEXT_HANDLING.get((chat.handling, kind), chat.handling)
    if handling != chat.handling:
        chat.handling = handling
        changed.append("handling")
        if handling == Chat.Handling.AI_TO_HUMAN and not chat.went_ai_to_human:
            chat.went_ai_to_human = True
            changed.append("went_ai_to_human")
        elif handling == Chat.Handling.HUMAN_TO_AI and not chat.went_human_to_ai:
            chat.went_human_to_ai = True
            changed.append("went_human_to_ai")
    if chat.handled_by_id != agent.pk:
        chat.handled_by, chat.handled_by_type, chat.handled_at = agent, kind, now
        changed += ["handled_by", "handled_by_type", "handled_at"]
    # A person answering an unclaimed room claims it; the AI operator never becomes owner.
    if kind == Chat.OperatorType.HUMAN and chat.agent_id is None:
        chat.agent = agent
        changed.append("agent")
    # A person answering a chat handed to people ends the wait (a machine answering does not).
    if agent.type == Agent.Type.HUMAN and chat.awaiting_human_since is not None:
        chat.awaiting_human_since = None
        changed.append("awaiting_human_since")
    return Answer(fields=changed, accepted=accepted)


def emit_accepted(*, chat: Chat) -> None:
    """chat.accepted for a chat whose first acceptance was just saved."""
    events.emit(
        chat.widget,
        events.CHAT_ACCEPTED,
        objects={"chat": chat},
        chat_id=chat.pk,
        operator_id=chat.accepted_by_id,
        operator_type=chat.accepted_by_type,
        client_id=chat.contact.guid,
    )


@transaction.atomic
def await_human(*, widget: Widget, chat: Chat, reason: str, operator: Agent | None = None) -> Chat:
    """A machine operator (`operator`, when known) handed the chat to people: it waits for a person
    (no machine answers it) until one answers (`record_answer` clears the mark). Emits
    chat.awaiting_human once; a chat already waiting changes nothing and emits nothing."""
    chat = lock_chat(widget=widget, chat=chat)
    if chat.awaiting_human_since is not None:
        return chat
    chat.awaiting_human_since = chat.updated_at = timezone.now()
    chat.save(update_fields=["awaiting_human_since", "updated_at"])
    events.emit(
        widget,
        events.CHAT_AWAITING_HUMAN,
        objects={"chat": chat, "operator": operator},
        chat_id=chat.pk,
        reason=reason,
    )
    return chat


# --- state ------------------------------------------------------------------------------------------------


def _expire(chat: Chat, *, reason: str, now: datetime) -> None:
    """Move a locked chat into expired, save it and emit chat.closed (every move into expired emits,
    whoever makes it: POST /close, state `expired`, the console, the idle sweep)."""
    chat.status = Chat.Status.EXPIRED
    chat.closed_at = now
    chat.updated_at = now
    chat.save(update_fields=["status", "closed_at", "updated_at"])
    events.emit(chat.widget, events.CHAT_CLOSED, objects={"chat": chat}, chat_id=chat.pk, reason=reason or "expired")


@transaction.atomic
def close_chat(*, widget: Widget, chat: Chat, reason: str | None = None) -> Chat:
    """POST /close, state `expired` and the operator console: one implementation.

    Closing an already expired chat changes nothing and emits nothing; a spam chat refuses (409).
    """
    chat = lock_chat(widget=widget, chat=chat)
    if chat.status == Chat.Status.EXPIRED:
        return chat
    if chat.status == Chat.Status.SPAM:
        raise ChatIsSpam("A spam chat can only be moved back to active.")
    _expire(chat, reason=reason or "expired", now=timezone.now())
    return chat


def _move_status(chat: Chat, *, status: str, now: datetime, reopen: bool = False) -> None:
    """A locked chat takes a status other than expired: saved, chat.status_changed emitted.
    `reopen` also clears closed_at (the idle sweep's re-activation of a talked-in room)."""
    chat.status = status
    chat.updated_at = now
    fields = ["status", "updated_at"]
    if reopen:
        chat.closed_at = None
        fields.append("closed_at")
    chat.save(update_fields=fields)
    events.emit(chat.widget, events.CHAT_STATUS_CHANGED, objects={"chat": chat}, chat_id=chat.pk, status=status)


@transaction.atomic
def set_chat_state(*, widget: Widget, chat: Chat, state: str, reason: str | None = None) -> Chat:
    """The state table: `active` always (even from spam); from spam anything else is 409; `ready`
    is written and replaced at the next lifecycle tick; `expired` is close."""
    if state == Chat.Status.EXPIRED:
        return close_chat(widget=widget, chat=chat, reason=reason)
    chat = lock_chat(widget=widget, chat=chat)
    if chat.status == Chat.Status.SPAM and state != Chat.Status.ACTIVE:
        raise ChatIsSpam("A spam chat can only be moved back to active.")
    if chat.status != state:
        _move_status(chat, status=state, now=timezone.now())
    return chat


@transaction.atomic
def transfer_chat(*, widget: Widget, chat: Chat, to_agent: Agent, source: str = "api") -> Chat:
    """Hand the chat to another agent of this widget: routing owner and handler change, a transfer
    row is kept for statistics, chat.transferred is emitted. Assigning an unanswered chat accepts it."""
    chat = lock_chat(widget=widget, chat=chat)
    if chat.status == Chat.Status.SPAM:
        raise ChatIsSpam("A spam chat cannot be transferred.")
    if to_agent.widget_id != widget.pk:
        raise AssertionError("to_agent must belong to the widget")
    now = timezone.now()
    from_agent_id = chat.agent_id
    transfer = ChatTransfer.objects.create(widget=widget, chat=chat, from_agent_id=from_agent_id, to_agent=to_agent)
    if from_agent_id is not None and from_agent_id != to_agent.pk:
        record_agent_event(
            widget=widget,
            agent=from_agent_id,
            type="chat_transferred_out",
            extra={"chat_id": chat.pk, "to_agent_id": to_agent.pk},
        )
    record_agent_event(
        widget=widget,
        agent=to_agent,
        type="chat_transferred_in",
        extra={"chat_id": chat.pk, "from_agent_id": from_agent_id},
    )
    chat.agent = to_agent
    answer = record_answer(chat=chat, agent=to_agent, now=now)
    chat.updated_at = now
    chat.save(update_fields=sorted({"agent", "updated_at", *answer.fields}))
    if answer.accepted:
        emit_accepted(chat=chat)
    events.emit(
        widget,
        events.CHAT_TRANSFERRED,
        objects={"chat": chat, "transfer": transfer},
        chat_id=chat.pk,
        client_guid=chat.contact.guid,
        from_operator_id=from_agent_id,
        to_operator_id=to_agent.pk,
        author_type="OPERATOR",
        source=source,
    )
    return chat


@transaction.atomic
def accept_chat(*, widget: Widget, chat: Chat, agent: Agent) -> Chat:
    """Explicit accept from the operator console: chat.accepted the first time, chat.attributed
    when an accepted chat changes hands, nothing when this agent already handles it."""
    chat = lock_chat(widget=widget, chat=chat)
    answer = record_answer(chat=chat, agent=agent, now=timezone.now())
    if answer.fields:
        chat.save(update_fields=[*answer.fields, "updated_at"])
        record_agent_event(widget=widget, agent=agent, type="chat_accepted", extra={"chat_id": chat.pk})
        if answer.accepted:
            emit_accepted(chat=chat)
        else:
            events.emit(widget, events.CHAT_ATTRIBUTED, objects={"chat": chat}, chat_id=chat.pk, operator_id=agent.pk)
    return chat


# --- messages ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MessageInput:
    type: str = Message.Type.TEXT
    body: str = ""
    markdown: str = ""
    file_id: int | None = None
    coords: dict | None = None
    sticker: dict | None = None
    keyboard: dict | None = None
    origin: str = ""
    visibility: str = Message.Visibility.PUBLIC
    # [{title, url}] of an AI answer built on knowledge-base documents; None on every other message.
    sources: list[dict] | None = None


def _store_message(
    *, chat: Chat, data: MessageInput, author_kind: str, agent: Agent | None, now
) -> tuple[Message, list[str]]:
    message = Message(
        widget_id=chat.widget_id,
        chat=chat,
        type=data.type,
        body=data.body,
        markdown=data.markdown,
        file_id=data.file_id,
        coords=data.coords,
        sticker=data.sticker,
        keyboard=data.keyboard,
        origin=data.origin,
        sources=data.sources or None,
        author_kind=author_kind,
        agent=agent,
        visibility=data.visibility,
        created_at=now,
    )
    statements.insert(message)  # one prepared statement on PostgreSQL (every message)
    chat.last_message, chat.last_message_at = message, now
    fields = ["last_message", "last_message_at", "updated_at"]
    chat.updated_at = now
    if chat.status in (Chat.Status.EXPIRED, Chat.Status.READY):
        chat.status = Chat.Status.ACTIVE  # a message reopens the room (same chat)
        chat.closed_at = None
        fields += ["status", "closed_at"]
    if author_kind == Message.Author.CLIENT and not chat.has_client_messages:
        chat.has_client_messages = True
        fields.append("has_client_messages")
    return message, fields


def _emit_message(chat: Chat, message: Message, *, source: str) -> None:
    events.emit(
        chat.widget,
        events.MESSAGE_CREATED,
        objects={"chat": chat, "message": message},
        chat_id=chat.pk,
        message_id=message.pk,
        client_id=chat.contact.guid,
        author_type="USER" if message.author_kind == Message.Author.CLIENT else "OPERATOR",
        source=source,
    )


@transaction.atomic
def post_client_message(
    *,
    widget: Widget,
    contact: Contact,
    data: MessageInput,
    channel: str = WIDGET_CHANNEL,
    source: str = "visitor",
    on_new_room: Callable[[Chat], None] | None = None,
) -> Message:
    """A visitor writes: the first message makes the room (chat.created), an expired room reopens.
    `on_new_room(chat)` runs (inside the transaction, after the message) when there was no room.

    An existing room is found and locked by one statement (every visitor message takes this path:
    finding it and then locking it by id read the chat twice)."""
    chat = _locked_room(widget=widget, contact=contact, channel=channel)
    new_room = chat is None
    if new_room:
        chat = get_or_create_room(widget=widget, contact=contact, channel=channel, source=source)
        chat = lock_chat(widget=widget, chat=chat)
    ensure_not_spam(chat, detail="This conversation is closed.")
    message, fields = _store_message(
        chat=chat, data=data, author_kind=Message.Author.CLIENT, agent=None, now=timezone.now()
    )
    statements.update(chat, fields)
    _emit_message(chat, message, source=source)
    if new_room and on_new_room is not None:
        on_new_room(chat)
    return message


def _locked_room(*, widget: Widget, contact: Contact, channel: str) -> Chat | None:
    """The contact's room on `channel`, locked as lock_chat locks it (widget and contact joined), or
    None when there is none yet."""
    found = _LOCKED_ROOM.instances(widget=widget.pk, contact=contact.pk, channel=channel)
    return found[0] if found else None


_LOCKED_ROOM = ModelStatement(
    lambda: (
        Chat.objects.select_for_update(of=("self",))
        .select_related("widget", "contact")
        .filter(
            widget_id=Slot("widget", Widget._meta.pk),
            contact_id=Slot("contact", Contact._meta.pk),
            channel=Slot("channel", Chat._meta.get_field("channel")),
        )
        .filter(not_erasing())
        .order_by("pk")[:1]
    ),
    prepared=True,
)


@transaction.atomic
def post_agent_message(
    *, widget: Widget, chat: Chat, agent: Agent | None, data: MessageInput, source: str = "api"
) -> Message:
    """An operator writes into a chat (REST, console, compat). `agent` None means the chat's
    assigned agent. A message into an expired chat is stored there and reopens it; a spam chat
    refuses (409). A visible reply into an unclaimed room accepts it."""
    chat = lock_chat(widget=widget, chat=chat, related=AGENT_MESSAGE_RELATED)
    ensure_not_spam(chat, detail="A spam chat takes no messages; move it to active first.")
    author = agent or chat.agent
    if author is None:
        raise AssertionError("caller must resolve the author (agent_id required without an assigned agent)")
    now = timezone.now()
    kind = Message.Author.AI if author.type == Agent.Type.AI else Message.Author.AGENT
    message, fields = _store_message(chat=chat, data=data, author_kind=kind, agent=author, now=now)
    accepted = False
    if data.visibility == Message.Visibility.PUBLIC:
        answer = record_answer(chat=chat, agent=author, now=now)
        fields += answer.fields
        accepted = answer.accepted
        if chat.first_agent_reply_at is None:
            chat.first_agent_reply_at = now
            fields.append("first_agent_reply_at")
    statements.update(chat, fields)
    if accepted:
        emit_accepted(chat=chat)
    _emit_message(chat, message, source=source)
    return message


@transaction.atomic
def request_rating(*, widget: Widget, chat: Chat) -> Message:
    """Ask the visitor to rate the chat: a system message the widget draws as a rating form."""
    chat = lock_chat(widget=widget, chat=chat)
    ensure_not_spam(chat, detail="A spam chat cannot be rated.")
    if Rating.objects.filter(chat=chat).exists():
        raise AlreadyRated("The visitor has already rated this chat.")
    message, fields = _store_message(
        chat=chat,
        data=MessageInput(body="Please rate this conversation.", origin="rate_request"),
        author_kind=Message.Author.SYSTEM,
        agent=None,
        now=timezone.now(),
    )
    chat.save(update_fields=fields)
    events.emit(widget, events.RATING_REQUESTED, objects={"message": message}, chat_id=chat.pk, message_id=message.pk)
    return message


@transaction.atomic
def rate_chat(*, widget: Widget, chat: Chat, value: int, comment: str = "", source: str = "visitor") -> Rating:
    """A visitor rates; the rating is attributed to the agent handling the chat now. The first
    rating of a chat emits rating.created; later ones update it and emit rating.updated (no
    webhook). A spam chat takes no rating (409), whichever entry point asks."""
    chat = lock_chat(widget=widget, chat=chat)
    ensure_not_spam(chat)
    handler = chat.handled_by_id or chat.agent_id
    rating = Rating.objects.filter(chat=chat).first()
    if rating is not None:
        previous_value, previous_agent_id = rating.value, rating.agent_id
        rating.value, rating.comment, rating.agent_id = value, comment, handler
        rating.save(update_fields=["value", "comment", "agent"])
        events.emit(
            widget,
            events.RATING_UPDATED,
            objects={"chat": chat, "rating": rating},
            chat_id=chat.pk,
            previous_value=previous_value,
            previous_operator_id=previous_agent_id,
        )
        return rating
    rating = Rating.objects.create(widget=widget, chat=chat, value=value, comment=comment, agent_id=handler)
    events.emit(
        widget,
        events.RATING_CREATED,
        objects={"chat": chat, "rating": rating},
        chat_client_id=chat.contact.guid,
        operator_id=handler,
        author_type="USER",
        source=source,
    )
    return rating


def note_typing(*, widget: Widget, chat: Chat, state: str, by: str) -> bool:
    """Typing indicator, forwarded about once per 5 s per chat and side ("stop" always goes
    through; the visitor's typing never mutes the operator's). Returns whether it was forwarded.
    The throttle is an atomic conditional UPDATE. A spam chat refuses (409)."""
    ensure_not_spam(chat)
    now = timezone.now()
    if state == "start":
        field = "last_client_typing_at" if by == "client" else "last_typing_at"
        updated = (
            Chat.objects.filter(pk=chat.pk, widget=widget)
            .exclude(**{f"{field}__gt": now - TYPING_INTERVAL})
            .update(**{field: now})
        )
        if not updated:
            return False
    events.emit(widget, events.CHAT_TYPING, chat_id=chat.pk, state=state, by=by)
    return True


@transaction.atomic
def mark_seen(*, widget: Widget, chat: Chat, message: Message, by: str) -> int:
    """Read receipt: every message of the other side up to and including `message` is seen. A spam
    chat refuses (409)."""
    ensure_not_spam(chat)
    other = [Message.Author.CLIENT] if by == "agent" else [Message.Author.AGENT, Message.Author.AI]
    now = timezone.now()
    unseen = Message.objects.filter(chat=chat, widget=widget, author_kind__in=other, seen_at__isnull=True)
    count = unseen.filter(id__lte=message.pk).update(seen_at=now)
    events.emit(widget, events.MESSAGES_SEEN, chat_id=chat.pk, message_id=message.pk, by=by)
    return count


@transaction.atomic
def submit_offline_message(
    *,
    widget: Widget,
    contact: Contact,
    message: str,
    name: str = "",
    email: str = "",
    phone: str = "",
    on_new_room: Callable[[Chat], None] | None = None,
) -> Message:
    """The offline/callback form: stored as a visitor message of the room, plus its own event.
    `on_new_room` as for post_client_message."""
    changes = {k: v for k, v in {"name": name, "email": email, "phone": phone}.items() if v}
    if changes:
        Contact.objects.filter(pk=contact.pk).update(**changes, updated_at=timezone.now())
    stored = post_client_message(
        widget=widget,
        contact=contact,
        data=MessageInput(body=message, origin="offline_form"),
        source="visitor",
        on_new_room=on_new_room,
    )
    events.emit(
        widget,
        events.OFFLINE_MESSAGE_CREATED,
        chat_id=stored.chat_id,
        client_id=contact.guid,
        message_id=stored.pk,
        name=name,
        email=email,
        phone=phone,
    )
    return stored


# --- lifecycle -------------------------------------------------------------------------------------------------


def sweep_idle_chats(*, now: datetime | None = None, batch_size: int = 500) -> dict[str, int]:
    """The scheduled job (every 5 minutes): non-spam chats with messages whose last message is 7
    minutes old or more move to expired (chat.closed on every move, the same effects as a close);
    younger ones that are `ready` or `expired` become active again (chat.status_changed, so closing
    a chat just talked in reads back as active). Spam chats and chats without messages are left alone.

    Works in bounded batches, each its own transaction with `SKIP LOCKED` where the database has
    it, so two sweeps running at once never move one chat twice."""
    now = now or timezone.now()
    cutoff = now - IDLE_EXPIRY
    counts = {"expired": 0, "activated": 0}
    for key, status_in, window, move in (
        (
            "expired",
            [Chat.Status.ACTIVE, Chat.Status.READY],
            {"last_message_at__isnull": False, "last_message_at__lte": cutoff},
            lambda chat: _expire(chat, reason="expired", now=now),
        ),
        (
            "activated",
            [Chat.Status.READY, Chat.Status.EXPIRED],
            {"last_message_at__gt": cutoff},
            lambda chat: _move_status(chat, status=Chat.Status.ACTIVE, now=now, reopen=True),
        ),
    ):
        while True:
            with transaction.atomic():
                batch = list(
                    Chat.objects.select_for_update(skip_locked=True, of=("self",))
                    .select_related("widget")
                    .filter(status__in=status_in, **window)
                    .order_by("last_message_at")[:batch_size]
                )
                for chat in batch:
                    move(chat)
            counts[key] += len(batch)
            if len(batch) < batch_size:
                break
    return counts
