"""What is written into a chat: visitor and operator messages, ratings, typing, read receipts and
the offline form."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from apps.agents.models import Agent
from apps.core import events
from apps.core.models import Widget

from .. import selectors
from ..models import PROACTIVE_ORIGIN, Chat, Contact, Message, Rating
from .attribution import assigned_by, emit_accepted, emit_assigned, record_answer
from .locking import AGENT_MESSAGE_RELATED, AlreadyRated, ensure_not_spam, lock_chat
from .rooms import WIDGET_CHANNEL, get_or_create_room

TYPING_INTERVAL = timedelta(seconds=5)


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
    message.save(force_insert=True)
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


@dataclass(frozen=True)
class Opening:
    """What a proactive message said before the visitor's reply: its text and its sender (an agent,
    or None for the widget's name)."""

    body: str
    agent: Agent | None = None


def _store_opening(chat: Chat, opening: Opening) -> Message:
    """The proactive text as the room's first message, authored by its agent (`agent`, or `ai` for
    an AI operator) or, without one, as an operator message with no agent (the transcript's shape of
    a message whose agent is gone; the visitor sees the widget's name). `origin` is `proactive`. It
    is not an answer: the chat's first response and its owner stay as the visitor's message sets
    them."""
    agent = opening.agent
    kind = Message.Author.AI if agent is not None and agent.type == Agent.Type.AI else Message.Author.AGENT
    message, fields = _store_message(
        chat=chat,
        data=MessageInput(body=opening.body, origin=PROACTIVE_ORIGIN),
        author_kind=kind,
        agent=agent,
        now=timezone.now(),
    )
    chat.save(update_fields=fields)
    _emit_message(chat, message, source=PROACTIVE_ORIGIN)
    return message


@transaction.atomic
def post_client_message(
    *,
    widget: Widget,
    contact: Contact,
    data: MessageInput,
    channel: str = WIDGET_CHANNEL,
    source: str = "visitor",
    on_new_room: Callable[[Chat], None] | None = None,
    opening: Opening | None = None,
) -> Message:
    """A visitor writes: the first message makes the room (chat.created), an expired room reopens.
    `on_new_room(chat)` runs (inside the transaction, after the message) when there was no room.
    `opening` (a reply to a proactive message): when this message makes the room, the room's first
    message is the opening's text, stored as its sender's (see `_store_opening`), then the visitor's.

    An existing room is found and locked by one statement (every visitor message takes this path:
    finding it and then locking it by id read the chat twice)."""
    chat = selectors.locked_room(widget_id=widget.pk, contact_id=contact.pk, channel=channel)
    new_room = chat is None
    if new_room:
        chat = get_or_create_room(widget=widget, contact=contact, channel=channel, source=source)
        chat = lock_chat(widget=widget, chat=chat)
    ensure_not_spam(chat, detail="This conversation is closed.")
    if new_room and opening is not None:
        _store_opening(chat, opening)
    message, fields = _store_message(
        chat=chat, data=data, author_kind=Message.Author.CLIENT, agent=None, now=timezone.now()
    )
    chat.save(update_fields=fields)
    _emit_message(chat, message, source=source)
    if new_room and on_new_room is not None:
        on_new_room(chat)
    return message


def post_agent_message(
    *, widget: Widget, chat: Chat, agent: Agent | None, data: MessageInput, source: str = "api", locked: bool = False
) -> Message:
    """An operator writes into a chat (REST, console, compat). `agent` None means the chat's
    assigned agent. A message into an expired chat is stored there and reopens it; a spam chat
    refuses (409). A visible reply into an unclaimed room accepts it.

    `locked=True`: the caller took `chat` from `lock_chat(widget=widget, related=AGENT_MESSAGE_RELATED)`
    in the transaction this call runs in (the REST send and a support reply lock it before they
    validate against it), so the service writes under that lock, in that transaction: a savepoint
    of its own would add two statements to every send and undo nothing the caller's rollback does
    not, as the refusals come before the first write."""
    if locked:
        if not transaction.get_connection().in_atomic_block:
            raise AssertionError("locked=True needs the caller's transaction, the one that holds the lock")
        return _write_agent_message(chat=chat, agent=agent, data=data, source=source)
    with transaction.atomic():
        chat = lock_chat(widget=widget, chat=chat, related=AGENT_MESSAGE_RELATED)
        return _write_agent_message(chat=chat, agent=agent, data=data, source=source)


def _write_agent_message(*, chat: Chat, agent: Agent | None, data: MessageInput, source: str) -> Message:
    ensure_not_spam(chat, detail="A spam chat takes no messages; move it to active first.")
    author = agent or chat.agent
    if author is None:
        raise AssertionError("caller must resolve the author (agent_id required without an assigned agent)")
    now = timezone.now()
    kind = Message.Author.AI if author.type == Agent.Type.AI else Message.Author.AGENT
    message, fields = _store_message(chat=chat, data=data, author_kind=kind, agent=author, now=now)
    accepted = claimed = False
    if data.visibility == Message.Visibility.PUBLIC:
        answer = record_answer(chat=chat, agent=author, now=now)
        fields += answer.fields
        accepted, claimed = answer.accepted, answer.claimed
        if chat.first_agent_reply_at is None:
            chat.first_agent_reply_at = now
            fields.append("first_agent_reply_at")
    chat.save(update_fields=fields)
    if accepted:
        emit_accepted(chat=chat)
    if claimed:
        emit_assigned(chat=chat, by=assigned_by(source))
    _emit_message(chat, message, source=source)
    return message


@transaction.atomic
def post_unattributed_message(*, widget: Widget, chat: Chat, data: MessageInput, source: str) -> Message:
    """An operator message with no agent (an automation rule's or an API-run macro's text): the
    transcript's shape of the proactive opening, the visitor sees the widget's name. Not an answer:
    the chat's first response, acceptance and owner stay as people make them. A message into an
    expired chat reopens it; a spam chat refuses (409)."""
    chat = lock_chat(widget=widget, chat=chat, related=AGENT_MESSAGE_RELATED)
    ensure_not_spam(chat, detail="A spam chat takes no messages; move it to active first.")
    message, fields = _store_message(
        chat=chat, data=data, author_kind=Message.Author.AGENT, agent=None, now=timezone.now()
    )
    chat.save(update_fields=fields)
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
