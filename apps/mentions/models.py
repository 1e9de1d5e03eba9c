"""Mentions: an operator named with `@` in a private note, kept until the chat is erased (a note is
never edited or deleted on its own, so neither is its mention)."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from apps.agents.models import Agent
from apps.chats.models import Chat, Message
from apps.core.models import Widget
from apps.erasure.selectors import LiveQuerySet


class MentionQuerySet(LiveQuerySet):
    # A mention shows its note: under a contact's erasure it reads as missing with the chat.
    contact_path = "chat__contact_id"


class Mention(models.Model):
    """`agent` was mentioned by `by_agent` (the note's author; null once that agent is deleted) in
    the note `message` of `chat`. `read_at` null: unread. One row per note and mentioned agent."""

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+")
    chat = models.ForeignKey(Chat, on_delete=models.CASCADE, related_name="+")
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    by_agent = models.ForeignKey(Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    read_at = models.DateTimeField(null=True, blank=True)

    objects = MentionQuerySet.as_manager()

    class Meta:
        indexes = [
            # An operator's mentions, unread first then newest (the console's view and its count).
            models.Index(fields=["widget", "agent", "read_at", "created_at"], name="mention_widget_agent_read"),
            models.Index(fields=["widget", "-created_at", "-id"], name="mention_widget_created"),
        ]
        constraints = [models.UniqueConstraint(fields=["message", "agent"], name="mention_one_per_note_and_agent")]

    def __str__(self) -> str:
        return f"mention of agent {self.agent_id} in message {self.message_id}"
