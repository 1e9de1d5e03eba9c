"""The mentions' event-bus handlers, registered in MentionsConfig.ready().

- message.created, in the transaction: a private note's mentions are recorded with the note.
- mention.created, after the commit: the mentioned operator is told (apps.mentions.notify).
"""

from __future__ import annotations

from apps.core import events

from . import notify, services


def note_stored(event: events.Event) -> None:
    message = event.obj("message")
    if message is None:  # emitted by hand (tests, benchmarks): no stored note to read
        return
    services.record_mentions(widget=event.widget, message=message)


def mention_created(event: events.Event) -> None:
    mention = event.obj("mention")
    if mention is None:
        return
    notify.notify_mention(mention)


def register() -> None:
    events.subscribe(events.MESSAGE_CREATED, note_stored, phase=events.IN_TRANSACTION)
    events.subscribe(events.MENTION_CREATED, mention_created, phase=events.ON_COMMIT)
