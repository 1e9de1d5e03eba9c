"""The visitor's place in the queue (product-decisions.md "Queue position"): the answer of the
`visitor_queue` port, which the visitor API's queue read and config ask, and the positions pushed
after every change of the queue.

After a chat joins or leaves a widget's queue (`routing.queue_changed`, after its commit) the whole
queue is read in one statement, each waiting chat's place and estimated wait computed, and compared
with what the visitors were last told (kept in the cache per widget): only the chats whose values
differ are announced, in one `routing.queue_positions` event, which apps.chats pushes to their
visitors' sockets. A chat that left the queue is announced with both values null. However long the
queue, a change costs a fixed number of statements; the cache holds one small map per widget with
a queue. A change of the routing settings (widget.config_changed) is announced the same way, so
turning `show_queue_position` off clears the line of everyone waiting and turning it on shows it.

Two changes announced at once by two processes may reach a visitor out of order; what was announced
last is what the cache holds, so the next change (or the widget's read on reconnect) sets it right.
"""

from __future__ import annotations

import logging

from django.core.cache import cache

from apps.chats.models import Chat
from apps.core import events, ports
from apps.core.models import Widget

from . import selectors

logger = logging.getLogger(__name__)

# What the visitors of a widget were last told: {chat_id: [position, estimated_wait_seconds]}.
TOLD_KEY = "routing:queue-told:{widget_id}"
# A widget whose queue stays unchanged this long is forgotten; its next change tells everyone again.
TOLD_TTL = 24 * 3600

Place = tuple[int | None, int | None]


class VisitorQueue:
    """The provider of ports.VISITOR_QUEUE."""

    def position(self, chat: Chat) -> Place:
        if not selectors.routing_settings(chat.widget).show_queue_position:
            return None, None
        return selectors.queue_position(chat)

    def shows(self, widget: Widget) -> bool:
        return selectors.routing_settings(widget).show_queue_position


def places(widget: Widget | int) -> dict[int, Place]:
    """{chat id: (position, estimated wait)} of every chat in the widget's queue, as
    selectors.queue_position answers for each (two statements for the whole queue)."""
    per_place = selectors.estimated_wait_per_place(widget)
    return {
        chat_id: (position, round(position * per_place) if per_place is not None else None)
        for position, (chat_id, _) in enumerate(selectors.queue(widget), start=1)
    }


def changed_places(*, before: dict[int, Place], after: dict[int, Place], changed_chat: int | None) -> list[list]:
    """[[chat_id, position, wait], ...]: every chat of `after` whose values differ from `before`,
    then every chat no longer waiting with nulls (`changed_chat`, the chat whose move caused this,
    is told even when `before` is lost)."""
    rows = [[chat_id, *place] for chat_id, place in after.items() if before.get(chat_id) != place]
    gone = [chat_id for chat_id in before if chat_id not in after]
    if changed_chat is not None and changed_chat not in after and changed_chat not in before:
        gone.append(changed_chat)
    rows.extend([chat_id, None, None] for chat_id in gone)
    return rows


def _told(widget_id: int) -> dict[int, Place]:
    try:
        stored = cache.get(TOLD_KEY.format(widget_id=widget_id)) or {}
    except Exception:  # noqa: BLE001 - the cache is down: everyone is told again
        logger.warning("queue positions of widget %s: cache unreadable", widget_id, exc_info=True)
        stored = {}
    return {int(chat_id): (place[0], place[1]) for chat_id, place in stored.items()}


def _remember(widget_id: int, told: dict[int, Place]) -> None:
    key = TOLD_KEY.format(widget_id=widget_id)
    try:
        if told:
            cache.set(key, {chat_id: list(place) for chat_id, place in told.items()}, TOLD_TTL)
        else:
            cache.delete(key)
    except Exception:  # noqa: BLE001 - the next change tells everyone again
        logger.warning("queue positions of widget %s: cache unwritable", widget_id, exc_info=True)


def announce(widget: Widget, *, changed_chat: int | None = None) -> list[list]:
    """Tell the visitors of the widget's queue whose place or wait changed (see the module's doc);
    returns what was announced. With `show_queue_position` off nobody is told anything new (the
    chat that left still hears that it no longer waits)."""
    shows = selectors.routing_settings(widget).show_queue_position
    before = _told(widget.pk)
    after = places(widget) if shows else {}
    rows = changed_places(before=before, after=after, changed_chat=changed_chat)
    _remember(widget.pk, after)
    if rows:
        events.emit(widget, events.QUEUE_POSITIONS, positions=rows)
    return rows


def queue_changed(event: events.Event) -> None:
    """After the commit of a chat joining or leaving the queue."""
    announce(event.widget, changed_chat=event.data["chat_id"])


def settings_changed(event: events.Event) -> None:
    """After a widget's config changed (the routing settings among others): whoever waits hears
    what the settings now show."""
    announce(event.widget)


def register() -> None:
    ports.provide(ports.VISITOR_QUEUE, VisitorQueue())
    events.subscribe(events.QUEUE_CHANGED, queue_changed, phase=events.ON_COMMIT)
    events.subscribe(events.WIDGET_CONFIG_CHANGED, settings_changed, phase=events.ON_COMMIT)
