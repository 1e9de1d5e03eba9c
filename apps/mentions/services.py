"""Writes of mentions: recording them from a note, and reading one."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from apps.chats.models import Message
from apps.core import events
from apps.core.models import Widget

from . import selectors
from .models import Mention
from .parsing import find_mentions


def record_mentions(*, widget: Widget, message: Message) -> list[Mention]:
    """The mentions a private note's text makes (apps.mentions.parsing), stored and each announced
    by `mention.created`. Only a note a human operator wrote mentions anyone (whatever wrote it
    for them: the console, a macro, a rule); its author is never mentioned by their own note. A
    machine's note (an AI summary, a shadow-mode answer) carries the visitor's or a model's words
    and mentions nobody, nor does any other message. Runs in the transaction that stored the note
    (the message.created handler), so a note and its mentions commit together."""
    if (
        message.visibility != Message.Visibility.NOTE
        or message.author_kind != Message.Author.AGENT
        or "@" not in message.body
    ):
        return []
    ids = [pk for pk in find_mentions(message.body, selectors.operator_names(widget)) if pk != message.agent_id]
    if not ids:
        return []
    rows = [
        Mention(
            widget=widget,
            chat_id=message.chat_id,
            message=message,
            agent_id=agent_id,
            by_agent_id=message.agent_id,
            created_at=message.created_at,
        )
        for agent_id in ids
    ]
    for row in rows:
        row.save(force_insert=True)
        events.emit(
            widget,
            events.MENTION_CREATED,
            objects={"mention": row, "message": message},
            mention_id=row.pk,
            chat_id=row.chat_id,
            agent_id=row.agent_id,
        )
    return rows


@transaction.atomic
def mark_mention_read(*, widget: Widget, mention: Mention) -> Mention:
    """The mention read now; one already read keeps its first `read_at` (idempotent)."""
    now = timezone.now()
    if Mention.objects.filter(pk=mention.pk, widget=widget, read_at__isnull=True).update(read_at=now):
        mention.read_at = now
    else:
        mention.read_at = Mention.objects.values_list("read_at", flat=True).get(pk=mention.pk, widget=widget)
    return mention
