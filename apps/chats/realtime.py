"""Live pushes of conversations: on-commit handlers of the event bus, registered in
ChatsConfig.ready(). Every path of a transition (REST, visitor API, console, the idle sweep) emits the
same event and so pushes the same frame.

Frames carry only what the receiving side may see; the visitor group (`chat.<id>`) never receives
private notes, operator-only e-mails or operator-to-operator messages; operator consoles listen on
`widget.<id>`.
"""

from __future__ import annotations

from apps.core import events
from apps.platform.realtime import chat_group, group_send, push, push_each, widget_group

from .models import Chat, Message
from .payloads import visitor_chat_frame, visitor_message_frame
from .visitor.services import contact_group


def message_stored(event: events.Event) -> None:
    """message.created and rating.requested: the message frame to the console, and to the room
    when the visitor may see it."""
    message = event.obj("message")
    if message is None:  # emitted by hand (tests, benchmarks): no stored message to show
        return
    groups = [widget_group(message.widget_id)]
    if message.visibility == Message.Visibility.PUBLIC:
        groups.append(chat_group(message.chat_id))
    push(groups, {"event": "message", "chat_id": message.chat_id, "message": visitor_message_frame(message)})


def chat_status(event: events.Event) -> None:
    """The chat's status as the console shows it, after a close, a state move, a transfer, an
    acceptance, an operator taking an accepted chat (the other consoles re-read who handles it), a
    machine's hand-over to people (the consoles show the chat waiting for a person) or a change of
    its labels (the consoles re-read the chips)."""
    if event.type == events.CHAT_CLOSED:
        status = Chat.Status.EXPIRED
    elif event.type == events.CHAT_STATUS_CHANGED:
        status = event.data["status"]
    else:
        chat = event.obj("chat")
        if chat is None:  # emitted by hand (tests, benchmarks)
            return
        status = chat.status
    groups = [widget_group(event.widget.pk)]
    if event.type == events.CHAT_CLOSED:  # the visitor's widget too: it says the conversation ended
        groups.append(chat_group(event.data["chat_id"]))
    push(groups, {"event": "chat", "chat_id": event.data["chat_id"], "status": status})
    if event.type == events.CHAT_AWAITING_HUMAN:
        # The visitor's widget offers its offline form when nobody is online to take the hand-over.
        frame = visitor_chat_frame(event.obj("chat"))
        if frame is not None:
            push([chat_group(event.data["chat_id"])], frame)


def typing(event: events.Event) -> None:
    chat_id, by = event.data["chat_id"], event.data["by"]
    groups = [widget_group(event.widget.pk)] if by == "client" else [chat_group(chat_id), widget_group(event.widget.pk)]
    push(groups, {"event": "typing", "chat_id": chat_id, "state": event.data["state"], "by": by})


def seen(event: events.Event) -> None:
    chat_id = event.data["chat_id"]
    push(
        [chat_group(chat_id), widget_group(event.widget.pk)],
        {"event": "seen", "chat_id": chat_id, "message_id": event.data["message_id"], "by": event.data["by"]},
    )


def queue_frame(chat_id: int, position: int | None, wait: int | None) -> dict:
    """The visitor's place in the routing queue (both null: not waiting); `event` like every server
    frame, `type` as product-decisions.md names it."""
    return {
        "event": "queue",
        "type": "queue",
        "chat_id": chat_id,
        "position": position,
        "estimated_wait_seconds": wait,
    }


def queue_positions(event: events.Event) -> None:
    """routing.queue_positions: each visitor whose place or estimated wait changed hears theirs, all
    in one hop to the channel layer."""
    push_each(
        [
            ([chat_group(chat_id)], queue_frame(chat_id, position, wait))
            for chat_id, position, wait in event.data["positions"]
        ]
    )


def erasure_accepted(event: events.Event) -> None:
    """The contact's sockets close as a socket whose session ended does (4401): the sessions are gone
    and the contact reads as missing, so a socket opened before must not stay subscribed."""
    group_send([contact_group(event.data["contact_guid"])], {"type": "visitor.gone"})


def contact_merged(event: events.Event) -> None:
    """The source's sockets close (4409) and the widget reconnects with the same session, which now
    speaks for the target: the socket joins the target's room (the one with the latest message)."""
    group_send([contact_group(event.data["from"])], {"type": "visitor.moved"})


def register() -> None:
    on_commit = events.ON_COMMIT
    events.subscribe(events.CONTACT_MERGED, contact_merged, phase=on_commit)
    events.subscribe([events.MESSAGE_CREATED, events.RATING_REQUESTED], message_stored, phase=on_commit)
    events.subscribe(
        [
            events.CHAT_CLOSED,
            events.CHAT_STATUS_CHANGED,
            events.CHAT_TRANSFERRED,
            events.CHAT_ACCEPTED,
            events.CHAT_ATTRIBUTED,
            events.CHAT_AWAITING_HUMAN,
            events.CHAT_LABELS_CHANGED,
        ],
        chat_status,
        phase=on_commit,
    )
    # Typing stores nothing (only a throttle stamp, written at once): it is pushed as it is emitted.
    events.subscribe(events.CHAT_TYPING, typing, phase=events.IN_TRANSACTION)
    events.subscribe(events.MESSAGES_SEEN, seen, phase=on_commit)
    events.subscribe(events.CONTACT_ERASURE_ACCEPTED, erasure_accepted, phase=on_commit)
    events.subscribe(events.QUEUE_POSITIONS, queue_positions, phase=on_commit)
