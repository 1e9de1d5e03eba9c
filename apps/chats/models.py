"""Conversations: contacts (the spec's clients), chats (rooms), messages, files, ratings.

Facts that lists filter or sort on (last message, whether the visitor wrote) are kept on the chat
by the services that write messages, so no list ever scans messages. Indexes start with the tenant.
"""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from apps.agents.models import Agent, Department
from apps.core.models import File, Widget
from apps.erasure.selectors import LiveQuerySet


def new_guid() -> str:
    return uuid.uuid4().hex


# Reads that serve a person's data go through `.live()`: a contact under erasure reads as missing.
class ContactQuerySet(LiveQuerySet):
    contact_path = "pk"


class ChatQuerySet(LiveQuerySet):
    contact_path = "contact_id"


class MessageQuerySet(LiveQuerySet):
    contact_path = "chat__contact_id"


class RatingQuerySet(LiveQuerySet):
    contact_path = "chat__contact_id"


class Contact(models.Model):
    """A visitor of one widget, addressed by a 32-character guid (never the numeric id)."""

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="contacts")
    guid = models.CharField(max_length=32, unique=True, default=new_guid, editable=False)
    name = models.CharField(max_length=255, blank=True, default="")
    email = models.CharField(max_length=255, blank=True, default="")
    phone = models.CharField(max_length=64, blank=True, default="")
    attributes = models.JSONField(default=dict, blank=True)
    locale = models.CharField(max_length=16, blank=True, default="")
    # The page's own id of the person (`setUser`): with `verified_at` set, the HMAC proved it and it
    # names this one contact of the widget (sessions join it); without, it is a detail the page
    # claimed, like a name, and joins nothing.
    # db_default too: rows written by raw SQL (bulk loads, the benchmarks) need no external id.
    external_id = models.CharField(max_length=128, blank=True, default="", db_default="")
    verified_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    objects = ContactQuerySet.as_manager()

    class Meta:
        indexes = [models.Index(fields=["widget", "-created_at", "-id"], name="contact_widget_created")]
        constraints = [
            # One verified person, one contact per widget; also the index of the by-external-id lookup.
            models.UniqueConstraint(
                fields=["widget", "external_id"],
                condition=models.Q(verified_at__isnull=False),
                name="contact_verified_external_id",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name or self.guid} (widget {self.widget_id})"


class ContactTag(models.Model):
    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    contact = models.ForeignKey(Contact, on_delete=models.CASCADE, related_name="tags")
    name = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["contact", "name"], name="contact_tag_unique")]
        indexes = [models.Index(fields=["widget", "name"], name="contact_tag_widget_name")]


class VisitorUpload(models.Model):
    """A file a contact uploaded through the visitor API. A visitor may attach only its own uploads;
    staff uploads (REST, console) have no row here. Deleting the contact forgets the ownership."""

    file = models.OneToOneField(File, primary_key=True, on_delete=models.CASCADE, related_name="visitor_upload")
    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    contact = models.ForeignKey("Contact", on_delete=models.CASCADE, related_name="uploads")

    class Meta:
        indexes = [models.Index(fields=["widget", "contact"], name="visitor_upload_contact")]


class Chat(models.Model):
    """The room of one contact on one channel of one widget."""

    class Status(models.TextChoices):
        ACTIVE = "active"
        READY = "ready"
        EXPIRED = "expired"
        SPAM = "spam"

    class Handling(models.TextChoices):
        MISSED = "missed"
        HUMAN = "human"
        AI = "ai"
        AI_TO_HUMAN = "ai_to_human"
        HUMAN_TO_AI = "human_to_ai"

    class OperatorType(models.TextChoices):
        HUMAN = "human"
        AI = "ai"

    # No index of its own: the (widget, ...) indexes of Meta serve every read of a widget's chats,
    # and a widget-only index let PostgreSQL walk all of a widget's chats to keep the few that a
    # partial (widget, status, ...) index holds.
    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="chats", db_index=False)
    contact = models.ForeignKey(Contact, on_delete=models.CASCADE, related_name="chats")
    channel = models.CharField(max_length=64, default="widget")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    # Routing owner; the AI operator never becomes owner.
    agent = models.ForeignKey(Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="owned_chats")
    department = models.ForeignKey(Department, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    is_internal = models.BooleanField(default=False)

    accepted_by = models.ForeignKey(Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    accepted_by_type = models.CharField(max_length=8, choices=OperatorType.choices, blank=True, default="")
    accepted_at = models.DateTimeField(null=True, blank=True)
    handled_by = models.ForeignKey(Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    handled_by_type = models.CharField(max_length=8, choices=OperatorType.choices, blank=True, default="")
    handled_at = models.DateTimeField(null=True, blank=True)
    handling = models.CharField(max_length=16, choices=Handling.choices, default=Handling.MISSED)
    # Each escalation the chat ever went through, kept when `handling` moves on: a chat that went AI
    # to a person and back to the AI counts in both statistics counters.
    went_ai_to_human = models.BooleanField(default=False)
    went_human_to_ai = models.BooleanField(default=False)
    # Set when a machine (the AI operator, an external operator) handed the chat to people; cleared
    # when a person answers. While set, no machine answers the chat.
    awaiting_human_since = models.DateTimeField(null=True, blank=True)

    last_message = models.ForeignKey(
        "Message", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_constraint=False
    )
    last_message_at = models.DateTimeField(null=True, blank=True)
    has_client_messages = models.BooleanField(default=False)
    first_agent_reply_at = models.DateTimeField(null=True, blank=True)
    # The typing throttle, one per side, so that one side typing never mutes the other.
    last_typing_at = models.DateTimeField(null=True, blank=True)
    last_client_typing_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    closed_at = models.DateTimeField(null=True, blank=True)
    # The guid of the contact this chat came from by a merge (apps.chats.services.merge); empty for
    # a room made by its contact's first message. Merged chats stay separate chats, so the one-room
    # rule (and the race it settles between two first messages) holds for the made rooms only.
    merged_from = models.CharField(max_length=32, blank=True, default="", db_default="")

    objects = ChatQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["widget", "contact", "channel"],
                name="chat_one_room_per_contact_channel",
                condition=models.Q(merged_from=""),
            ),
        ]
        indexes = [
            # A contact's rooms on a channel (several once contacts were merged).
            models.Index(fields=["widget", "contact", "channel"], name="chat_contact_channel"),
            models.Index(fields=["widget", "-created_at", "-id"], name="chat_widget_created"),
            models.Index(fields=["widget", "status", "-created_at", "-id"], name="chat_widget_status"),
            models.Index(fields=["widget", "channel", "-created_at", "-id"], name="chat_widget_channel"),
            # The console's list: chats with messages, newest activity first, under a status or across
            # every state.
            models.Index(
                fields=["widget", "status", "-last_message_at", "-id"],
                name="chat_widget_status_activity",
                condition=models.Q(last_message_at__isnull=False),
            ),
            models.Index(
                fields=["widget", "-last_message_at", "-id"],
                name="chat_widget_activity",
                condition=models.Q(last_message_at__isnull=False),
            ),
            models.Index(
                fields=["widget", "-created_at", "-id"],
                name="chat_widget_client_wrote",
                condition=models.Q(has_client_messages=True),
            ),
            # Routing's load of each operator: their open chats, counted from the index alone.
            models.Index(
                fields=["widget", "agent"],
                name="chat_widget_agent_open",
                condition=models.Q(status="active", agent__isnull=False),
            ),
            # The lifecycle job: rooms with messages that are not spam, by last message time.
            models.Index(
                fields=["last_message_at"],
                name="chat_lifecycle",
                condition=models.Q(last_message_at__isnull=False) & ~models.Q(status="spam"),
            ),
        ]

    def __str__(self) -> str:
        return f"chat {self.pk} ({self.status}, widget {self.widget_id})"


# `Message.origin` of a proactive message's text that opens the room a visitor's reply to it starts.
PROACTIVE_ORIGIN = "proactive"


class Message(models.Model):
    class Type(models.TextChoices):
        TEXT = "text"
        IMAGE = "image"
        FILE = "file"
        LOCATION = "location"
        STICKER = "sticker"
        KEYBOARD = "keyboard"

    class Author(models.TextChoices):
        CLIENT = "client"
        AGENT = "agent"
        AI = "ai"
        SYSTEM = "system"

    class Visibility(models.TextChoices):
        PUBLIC = "public"
        NOTE = "note"  # private operator note
        EMAIL = "email"  # operator-only e-mail
        INTERNAL = "internal"  # operator-to-operator

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    chat = models.ForeignKey(Chat, on_delete=models.CASCADE, related_name="messages")
    type = models.CharField(max_length=16, choices=Type.choices, default=Type.TEXT)
    body = models.TextField(blank=True, default="")
    markdown = models.TextField(blank=True, default="")
    file = models.ForeignKey(File, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    coords = models.JSONField(null=True, blank=True)
    sticker = models.JSONField(null=True, blank=True)
    keyboard = models.JSONField(null=True, blank=True)
    origin = models.CharField(max_length=64, blank=True, default="")
    # [{title, url}]: the knowledge-base documents an AI answer was built on (its assistant's
    # `cite_sources`); null on every other message.
    sources = models.JSONField(null=True, blank=True)
    author_kind = models.CharField(max_length=16, choices=Author.choices)
    agent = models.ForeignKey(Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="messages")
    visibility = models.CharField(max_length=16, choices=Visibility.choices, default=Visibility.PUBLIC)
    seen_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    objects = MessageQuerySet.as_manager()

    class Meta:
        indexes = [
            models.Index(fields=["chat", "-created_at", "-id"], name="message_chat_created"),
            models.Index(fields=["widget", "-created_at"], name="message_widget_created"),
            # The console's unread counts: the visitor's messages no operator has seen.
            models.Index(
                fields=["widget", "chat"],
                name="message_unseen_client",
                condition=models.Q(author_kind="client", seen_at__isnull=True),
            ),
        ]


class ChatTransfer(models.Model):
    """One hand-over of a chat between agents (statistics count transfers in and out)."""

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    chat = models.ForeignKey(Chat, on_delete=models.CASCADE, related_name="transfers")
    from_agent = models.ForeignKey(Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    to_agent = models.ForeignKey(Agent, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["widget", "-created_at"], name="transfer_widget_created")]


class Rating(models.Model):
    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    chat = models.ForeignKey(Chat, on_delete=models.CASCADE, related_name="ratings")
    value = models.PositiveSmallIntegerField()
    comment = models.TextField(blank=True, default="")
    # The agent handling the chat at rating time.
    agent = models.ForeignKey(Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="ratings")
    created_at = models.DateTimeField(default=timezone.now)

    objects = RatingQuerySet.as_manager()

    class Meta:
        indexes = [models.Index(fields=["widget", "-created_at"], name="rating_widget_created")]
        constraints = [
            models.CheckConstraint(condition=models.Q(value__gte=1, value__lte=5), name="rating_value_1_5"),
        ]


class VisitorSession(models.Model):
    """An opaque visitor session token bound to one contact of one widget (stored hashed)."""

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    contact = models.ForeignKey(Contact, on_delete=models.CASCADE, related_name="sessions")
    token_hash = models.CharField(max_length=64, unique=True)
    page_url = models.CharField(max_length=2000, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    # Written at most once a minute (visitor.auth); a session idle VISITOR_SESSION_IDLE_DAYS is dead.
    last_seen_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["last_seen_at"], name="visitor_session_last_seen")]


class Label(models.Model):
    """A label operators put on chats (`refund`, `vip`). Names are unique per widget without regard
    to case: `key` is the name in NFC, case-folded, and carries the uniqueness (SQLite's lower()
    folds ASCII only, so the rule lives in a stored column rather than an expression index)."""

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="labels")
    name = models.CharField(max_length=50)
    key = models.CharField(max_length=200, editable=False)
    # `#rrggbb`, or empty: the console draws a neutral dot.
    color = models.CharField(max_length=7, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["widget", "key"], name="label_widget_key")]

    def __str__(self) -> str:
        return self.name


class ChatLabel(models.Model):
    """One label on one chat. Deleting the label or the chat removes the row."""

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    chat = models.ForeignKey(Chat, on_delete=models.CASCADE, related_name="chat_labels")
    label = models.ForeignKey(Label, on_delete=models.CASCADE, related_name="chat_labels")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["chat", "label"], name="chat_label_unique")]
        # The list's `label=` filter: the chats carrying a label, within the tenant.
        indexes = [models.Index(fields=["widget", "label", "chat"], name="chat_label_widget_label")]
