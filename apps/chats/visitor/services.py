"""The visitor channel's writes and the reads it serves. Chat writes go through apps.chats.services;
this module adds what only the visitor side needs: sessions, the contact's on-site room, and the
notice that tells the contact's sockets a room was just made.

The tenant is always explicit: every function takes the widget and the session's contact and
refuses a contact of another widget.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import transaction

from apps.agents import selectors as agent_selectors
from apps.agents.models import Agent
from apps.core import ports
from apps.core.errors import AppError, Conflict, NotFound, ValidationFailed
from apps.core.files import check_upload_size, store_file
from apps.core.models import Widget
from apps.platform.realtime import group_send, push, widget_group
from apps.proactive import selectors as proactive_selectors
from apps.proactive import services as proactive_services
from apps.proactive.models import ProactiveMessage
from apps.widget import selectors as widget_selectors

from .. import services as chat_services
from ..models import Chat, Contact, File, Message, Rating, VisitorSession, VisitorUpload
from . import auth

logger = logging.getLogger(__name__)

MESSAGES_PER_CALL = 200
# Product decision ("Typing preview"): a draft reaches the operators cut to this many characters.
DRAFT_MAX = 500


class NoConversation(Conflict):
    """The visitor has not written yet, so there is no conversation to rate."""

    code, title = "no_conversation", "No conversation yet"


class RatingOff(Conflict):
    """The widget's `rating_mode` is `off`: it takes no ratings."""

    code, title = "rating_off", "Ratings are off"


class IdentityUnverified(AppError):
    """The widget requires identity verification and the page's `hash` does not prove the `id`
    (wrong, made with another or an expired secret, or missing). The session has ended: start a
    new one (anonymous, or with a right hash)."""

    status, code, title = 401, "identity_unverified", "Identity not verified"
    headers = {"WWW-Authenticate": 'Visitor realm="visitor", error="identity_unverified"'}


def contact_group(guid: str) -> str:
    """Channel-layer group of every socket of one contact (room notices only, never messages)."""
    return f"contact.{guid}"


def _own(widget: Widget, contact: Contact) -> None:
    if contact.widget_id != widget.pk:
        raise AssertionError("contact must belong to the widget")


# --- sessions ----------------------------------------------------------------------------------------


@transaction.atomic
def start_session(
    *, widget: Widget, name: str = "", email: str = "", phone: str = "", locale: str = "", page_url: str = ""
) -> tuple[VisitorSession, str]:
    """A new contact and its session. Returns the session and the plaintext token, which is
    shown once and stored only as its SHA-256."""
    contact = chat_services.create_contact(widget=widget, name=name, email=email, phone=phone, locale=locale)
    token = auth.new_session_token()
    session = VisitorSession.objects.create(
        widget=widget, contact=contact, token_hash=auth.hash_token(token), page_url=page_url
    )
    return session, token


def set_user(
    *,
    widget: Widget,
    session: VisitorSession,
    external_id: str,
    hash: str | None = None,  # noqa: A002 - the member's documented name
    details: dict | None = None,
    attributes: dict | None = None,
) -> chat_services.Identified:
    """POST identity (`ChatWidget.setUser`). The hash is checked only while the widget's
    `identity_verification` is `optional` or `required` (under `off` the id is an unverified detail).
    Under `required` a hash that does not prove the id ends the session and raises 401
    `identity_unverified`, nothing else changed; otherwise the session is identified
    (chats.services.identify_session)."""
    _own(widget, session.contact)
    mode = widget_selectors.identity_verification(widget)
    verified = mode != "off" and widget_selectors.identity_hash_valid(
        widget=widget, external_id=external_id, hash=hash or ""
    )
    if mode == "required" and not verified:
        chat_services.end_session(widget=widget, session=session)
        raise IdentityUnverified("The hash does not prove this id; the session has ended.")
    return chat_services.identify_session(
        widget=widget,
        session=session,
        external_id=external_id,
        verified=verified,
        details=details or {},
        attributes=attributes,
    )


def set_visitor_attributes(*, widget: Widget, contact: Contact, values: object) -> dict:
    """PATCH attributes (`ChatWidget.setAttributes`): merged by chats.services.set_attributes. Under
    `required` only a verified person's session writes (else 401 `identity_unverified`, nothing
    changed; the session stays). Returns the contact's attributes."""
    _own(widget, contact)
    if widget_selectors.identity_verification(widget) == "required" and contact.verified_at is None:
        raise IdentityUnverified("Only a verified person's session may set attributes on this widget.")
    contact = chat_services.set_attributes(widget=widget, contact=contact, values=values, source="visitor")
    return contact.attributes


def end_session(*, widget: Widget, session: VisitorSession) -> None:
    """DELETE sessions (`ChatWidget.reset()`): the session ends, the contact and its chat stay."""
    _own(widget, session.contact)
    chat_services.end_session(widget=widget, session=session)


# --- reads ----------------------------------------------------------------------------------------------


def get_room(*, widget: Widget, contact: Contact) -> Chat | None:
    """The contact's on-site room, or None before the first message."""
    _own(widget, contact)
    return chat_services.find_room(widget=widget, contact=contact)


def queue_place(*, widget: Widget, contact: Contact) -> dict:
    """GET queue: the visitor's room's place in the routing queue, `{position, estimated_wait_seconds}`,
    both null when there is no room, it does not wait, or the widget does not show the position
    (the `visitor_queue` port; without routing nobody waits)."""
    room = get_room(widget=widget, contact=contact)
    position, wait = ports.lookup(ports.VISITOR_QUEUE).position(room) if room is not None else (None, None)
    return {"position": position, "estimated_wait_seconds": wait}


def shows_queue_position(widget: Widget) -> bool:
    """The visitor config's `show_queue_position` (cached with the config)."""
    return bool(ports.lookup(ports.VISITOR_QUEUE).shows(widget))


def list_visible_messages(
    *, widget: Widget, chat_id: int, after_id: int = 0, limit: int = MESSAGES_PER_CALL
) -> list[Message]:
    """Public messages of the room with id > after_id, oldest first (never notes, operator-only
    e-mails or operator-to-operator messages)."""
    return list(
        Message.objects.filter(widget=widget, chat_id=chat_id, visibility=Message.Visibility.PUBLIC, id__gt=after_id)
        .select_related("file", "agent", "chat__contact", "chat__widget")
        .order_by("id")[:limit]
    )


# --- who answers a visitor: live presence, or a machine ---------------------------------------------------

# How old the cached answerers may be. Agent, AI settings, assistant and AI operator changes purge the
# config cache at once; what purges nothing (an external operator's lifecycle, an AI credential)
# reaches visitors within this.
ANSWERERS_TTL = 30


def _build_answerers(widget: Widget) -> dict:
    machines = {}
    for kind, check in ports.providers(ports.MACHINE_ANSWERER).items():
        try:
            machines[kind] = bool(check(widget))
        except Exception:  # noqa: BLE001 - a broken check must not take the config down
            logger.exception("machine answerer check %s failed for widget %s", kind, widget.pk)
            machines[kind] = False
    humans = Agent.objects.filter(widget=widget, type=Agent.Type.HUMAN, status=Agent.Status.ACTIVE)
    return {"humans": sorted(humans.values_list("pk", flat=True)), "machines": machines}


def answerers(widget: Widget) -> dict:
    """Who may answer the widget's visitors, cached with the public config (at most ANSWERERS_TTL
    seconds old): `humans`, the ids of its active human agents (whether one is online is read live
    per request), and `machines`, `{kind: answers}` of the registered machine answerers."""
    return widget_selectors.cached_for_config(
        widget=widget, name="answerers", build=lambda: _build_answerers(widget), ttl=ANSWERERS_TTL
    )


def is_online(*, answering: dict, connected: set[int]) -> bool:
    """The config's `online`: a machine answers, or an active human agent has a live console socket
    (the presence store). Reads no database: `answering` comes from `answerers`, `connected` from
    the presence store."""
    return any(answering["machines"].values()) or people_online(answering=answering, connected=connected)


def people_online(*, answering: dict, connected: set[int]) -> bool:
    """An active human agent has a live console socket: someone can take a chat a machine handed
    to people. Reads no database, as `is_online`."""
    return any(agent_id in connected for agent_id in answering["humans"])


def live_presence(widget: Widget) -> tuple[bool, set[int]]:
    """(`online`, the ids of the connected agents) of the widget now, for callers outside the
    config view (the console, tests)."""
    connected = agent_selectors.online_agent_ids(widget)
    return is_online(answering=answerers(widget), connected=connected), connected


# The header lists at most this many operators (the widget draws three and counts the rest).
HEADER_OPERATORS_MAX = 10
_PRESENCE_ORDER = {"online": 0, "away": 1, "offline": 2}


def header_roster(widget: Widget, *, absolute: Callable[[str], str] | None = None) -> list[dict]:
    """The cached half of the config's `operators`: every header-visible operator with what a
    visitor may see (name, avatar URL, kind) plus the id, type and stored status that the per-request
    half (`header_operators`) needs and never passes on. Built once per config cache generation."""
    roster = []
    for agent in agent_selectors.list_header_operators(widget):
        avatar = agent.avatar.url if agent.avatar else None
        if avatar and absolute is not None and avatar.startswith("/"):
            avatar = absolute(avatar)
        roster.append(
            {"id": agent.pk, "name": agent.name, "avatar_url": avatar, "type": agent.type, "status": agent.status}
        )
    return roster


def header_operators(
    widget: Widget, *, roster: list[dict], mode: str, connected: set[int], ai_answers: bool
) -> list[dict]:
    """The config's `operators`, per request: the cached roster with live presence (`connected`,
    from the presence store: no database query), chosen by `operators_display_mode`: `hidden` none,
    `online` those online, `all` every one (online first, then away, then offline), `single` one
    representative (the first online, else the first away, else the first). An AI operator is online
    only while the built-in AI answers (`ai_answers`), so the list agrees with the config's `online`.
    Items are `{name, avatar_url, kind, presence}`."""
    if mode == "hidden" or not roster:
        return []
    rows = []
    for entry in roster:
        presence = agent_selectors.header_presence(
            type=entry["type"], status=entry["status"], connected=entry["id"] in connected
        )
        if entry["type"] == Agent.Type.AI and presence == "online" and not ai_answers:
            presence = "offline"  # active, but the AI switch is off (or it has nothing to answer with)
        rows.append(
            {
                "name": entry["name"],
                "avatar_url": entry["avatar_url"],
                "kind": "ai" if entry["type"] == Agent.Type.AI else "human",
                "presence": presence,
            }
        )
    rows.sort(key=lambda row: _PRESENCE_ORDER[row["presence"]])  # stable: oldest first within a group
    if mode == "online":
        rows = [row for row in rows if row["presence"] == "online"]
    elif mode == "single":
        rows = rows[:1]
    return rows[:HEADER_OPERATORS_MAX]


def attachable_file(*, widget: Widget, contact: Contact, file_id: int) -> File | None:
    """A file this contact uploaded through the visitor API (POST files); any other file of the
    widget (staff uploads, another visitor's) answers like an unknown one."""
    _own(widget, contact)
    return File.objects.filter(pk=file_id, widget=widget, visitor_upload__contact=contact).first()


# --- writes ---------------------------------------------------------------------------------------------


@transaction.atomic
def upload_file(*, widget: Widget, contact: Contact, upload) -> File:
    """The visitor uploads a file to send with a file or image message; the file is recorded as
    this contact's upload (the only files it may attach)."""
    _own(widget, contact)
    check_upload_size(upload)
    file = store_file(
        widget=widget,
        content=upload,
        original_name=upload.name,
        content_type=upload.content_type,
        size=upload.size,
    )
    VisitorUpload.objects.create(file=file, widget=widget, contact=contact)
    return file


def send_message(
    *, widget: Widget, contact: Contact, data: chat_services.MessageInput, proactive: ProactiveMessage | None = None
) -> Message:
    """The visitor writes. The first message makes the room (chat.created); a spam room is 409.
    `proactive` (an enabled message of the widget the visitor answers): when this message makes the
    room, the proactive text in the visitor's language opens it and the message counts `replied`.
    Everything written is written by post_client_message's one transaction (the new room's
    announcement and count run in it)."""
    _own(widget, contact)
    opening = None
    if proactive is not None:
        assert proactive.widget_id == widget.pk
        language = widget_selectors.effective_settings(widget).get("widget_default_language") or ""
        found = proactive_selectors.opening(proactive, locale=contact.locale, default_language=language)
        opening = chat_services.Opening(body=found.body, agent=found.agent)

    def new_room(chat: Chat) -> None:
        _announce_room(contact=contact, chat_id=chat.pk)
        if proactive is not None:
            proactive_services.count(widget=widget, message_id=proactive.pk, kind="replied")

    return chat_services.post_client_message(
        widget=widget, contact=contact, data=data, source="visitor", on_new_room=new_room, opening=opening
    )


def note_proactive(*, widget: Widget, message_id: int, kind: str) -> None:
    """The widget showed (`shown`) or the visitor opened (`opened`) a proactive message: counted for
    its statistics. An unknown, disabled or other widget's message is 404."""
    if proactive_selectors.get_enabled(widget=widget, message_id=message_id) is None:
        raise NotFound("No such proactive message.")
    proactive_services.count(widget=widget, message_id=message_id, kind=kind)


def submit_offline_message(
    *, widget: Widget, contact: Contact, message: str, name: str = "", email: str = "", phone: str = ""
) -> Message:
    """The offline/callback form (emits offline_message.created); it may make the room too."""
    _own(widget, contact)
    return chat_services.submit_offline_message(
        widget=widget,
        contact=contact,
        message=message,
        name=name,
        email=email,
        phone=phone,
        on_new_room=lambda chat: _announce_room(contact=contact, chat_id=chat.pk),
    )


def rate(*, widget: Widget, contact: Contact, value: int, comment: str = "") -> Rating:
    """Rate the conversation: 409 before the first message or in a spam room. The first rating
    emits rating.created; a later one replaces it silently. 409 `rating_off` while the widget's
    `rating_mode` is `off`; 422 for 2..4 while its `rating_scale` is `thumbs`."""
    values = widget_selectors.effective_settings(widget)
    if values["rating_mode"] == "off":
        raise RatingOff("This widget does not take ratings.")
    if values["rating_scale"] == "thumbs" and value not in (1, 5):
        raise ValidationFailed(errors={"value": ["With rating_scale thumbs: 1 (thumbs down) or 5 (thumbs up)."]})
    chat = get_room(widget=widget, contact=contact)
    if chat is None:
        raise NoConversation("Write a message before rating the conversation.")
    return chat_services.rate_chat(widget=widget, chat=chat, value=value, comment=comment, source="visitor")


def note_typing(*, widget: Widget, contact: Contact, state: str, draft: str | None = None) -> bool:
    """Forward the visitor's typing to the operators (about once per 5 s per chat). Nothing is
    forwarded before the room exists or from a spam room. Returns whether it was forwarded.

    `draft` (the visitor socket's typing preview, already throttled per socket by the caller) goes
    to the operator consoles only while the widget's `typing_preview` is on, cut to DRAFT_MAX
    characters. SECURITY (privacy): a draft is pushed and forgotten: never stored, emitted (so never
    in the outbox or a webhook) or logged."""
    chat = get_room(widget=widget, contact=contact)
    if chat is None or chat.status == Chat.Status.SPAM:
        return False
    forwarded = chat_services.note_typing(widget=widget, chat=chat, state=state, by="client")
    if draft is not None and state == "start" and widget_selectors.typing_preview_enabled(widget):
        frame = {"event": "typing", "chat_id": chat.pk, "state": "start", "by": "client", "draft": draft[:DRAFT_MAX]}
        push([widget_group(widget.pk)], frame)
    return forwarded


def mark_seen(*, widget: Widget, contact: Contact, message_id: int) -> int:
    """The visitor has seen operator messages up to `message_id`, a visible message of their own
    room (anything else is 404)."""
    chat = get_room(widget=widget, contact=contact)
    message = None
    if chat is not None:
        message = Message.objects.filter(
            pk=message_id, chat=chat, widget=widget, visibility=Message.Visibility.PUBLIC
        ).first()
    if message is None:
        raise NotFound("No such message in this conversation.")
    return chat_services.mark_seen(widget=widget, chat=chat, message=message, by="client")


def _announce_room(*, contact: Contact, chat_id: int) -> None:
    """After commit, tell the contact's sockets to join the new room's group. They replay the
    room's visible messages from the database on joining, so the first message's own push (sent
    to the room group before anyone listened) is not lost."""

    def send() -> None:  # best effort: the socket also finds the room on reconnect
        group_send([contact_group(contact.guid)], {"type": "visitor.room", "chat_id": chat_id})

    transaction.on_commit(send)
