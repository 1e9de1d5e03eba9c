"""Routing's handlers of the event bus (registered by RoutingConfig.ready()).

In the change's transaction: a chat that needs a person joins the queue, the routing row follows
every change of owner, the re-route timer stops when the operator answers, a closed chat leaves the
queue, an operator going offline is noted. After the commit: the queue is served whenever a slot or
an operator may have become free, and the timers of the assignment and the absence are set.
"""

from __future__ import annotations

import logging

from apps.agents.models import Agent
from apps.chats.models import Chat, Message
from apps.core import events, queueing

from . import selectors, services
from .models import ChatRouting

logger = logging.getLogger(__name__)


def celery_runs_eagerly() -> bool:
    """Celery runs tasks in place (the tests): a countdown would not wait, so the beat pass serves."""
    from celery import current_app

    return bool(current_app.conf.task_always_eager)


def _later(name: str, args: tuple, *, seconds: float) -> None:
    if celery_runs_eagerly():
        return
    try:
        queueing.task(name).apply_async(args, countdown=max(seconds, 0.0) + 0.5)
    except Exception:  # noqa: BLE001 - the broker is down: the beat pass finds the due row
        logger.warning("routing timer %s not enqueued", name, exc_info=True)


def _serve(widget) -> None:
    try:
        services.serve(widget)
    except Exception:  # noqa: BLE001 - the change is committed; the beat pass serves the queue
        logger.exception("routing could not serve the queue of widget %s", widget.pk)


# --- in the change's transaction --------------------------------------------------------------------------


def message_created(event: events.Event) -> None:
    chat, message = event.obj("chat"), event.obj("message")
    if chat is None or message is None:
        return
    if message.author_kind == Message.Author.CLIENT:
        if chat.agent_id is None:
            if services.needs_person(chat):
                services.enqueue(chat=chat, now=message.created_at)
        else:
            services.requeue_unattended(chat=chat, now=message.created_at)
    elif (
        message.author_kind == Message.Author.AGENT
        and message.visibility == Message.Visibility.PUBLIC
        and message.agent_id is not None
        and message.agent_id == chat.agent_id
    ):
        services.record_answered(chat=chat)


def awaiting_human(event: events.Event) -> None:
    chat = event.obj("chat")
    if chat is not None and services.needs_person(chat, handed_over=True):
        services.enqueue(chat=chat)


def chat_assigned(event: events.Event) -> None:
    chat = event.obj("chat")
    if chat is not None:
        services.record_assignment(chat=chat, agent_id=event.data["agent_id"], by=event.data["by"])


def chat_left(event: events.Event) -> None:
    """chat.closed, or a status move away from active (spam, ready): it no longer waits."""
    chat = event.obj("chat")
    if chat is None:
        return
    if event.type == events.CHAT_STATUS_CHANGED and event.data.get("status") == Chat.Status.ACTIVE:
        return
    services.leave_queue(chat=chat, reason="closed")
    ChatRouting.objects.filter(chat_id=chat.pk, reroute_due_at__isnull=False).update(reroute_due_at=None)


def agent_offline(event: events.Event) -> None:
    services.operator_offline(widget=event.widget, agent_id=event.data["operator_id"])


def agent_online(event: events.Event) -> None:
    services.operator_online(widget=event.widget, agent_id=event.data["operator_id"])


# --- after the commit --------------------------------------------------------------------------------------


def serve_after(event: events.Event) -> None:
    """A slot, an operator or a queued chat may have appeared: serve the widget's queue."""
    _serve(event.widget)


def assigned_after(event: events.Event) -> None:
    """An automatic assignment starts the re-route timer (the decision loop that made it goes on
    serving by itself); any other change of owner may have freed the previous owner's slot."""
    if event.data["by"] == ChatRouting.By.ROUTING and event.data["agent_id"] is not None:
        after = selectors.cached_settings(event.widget)["reroute_after_seconds"]
        if after:
            _later("apps.routing.tasks.reroute_chat", (event.widget.pk, event.data["chat_id"]), seconds=after)
        return
    _serve(event.widget)


def offline_after(event: events.Event) -> None:
    _later(
        "apps.routing.tasks.settle_operator",
        (event.widget.pk, event.data["operator_id"]),
        seconds=services.OFFLINE_GRACE.total_seconds(),
    )


def profile_after(event: events.Event) -> None:
    """A suspended or deleted operator's chats go back to the queue at once; a restored or active one
    may take queued chats."""
    status = Agent.objects.filter(pk=event.data["operator_id"]).values_list("status", flat=True).first()
    try:
        if status == Agent.Status.BANNED:
            services.release_operator(widget=event.widget, agent_id=event.data["operator_id"])
    except Exception:  # noqa: BLE001 - the change is committed; the operator's chats wait for the beat pass
        logger.exception("routing could not release the chats of agent %s", event.data["operator_id"])
    _serve(event.widget)


def queue_after(event: events.Event) -> None:
    if event.data["change"] == "joined":
        _serve(event.widget)


def register() -> None:
    tx, commit = events.IN_TRANSACTION, events.ON_COMMIT
    events.subscribe(events.MESSAGE_CREATED, message_created, phase=tx)
    events.subscribe(events.CHAT_AWAITING_HUMAN, awaiting_human, phase=tx)
    events.subscribe(events.CHAT_ASSIGNED, chat_assigned, phase=tx)
    events.subscribe((events.CHAT_CLOSED, events.CHAT_STATUS_CHANGED), chat_left, phase=tx)
    events.subscribe(events.AGENT_OFFLINE, agent_offline, phase=tx)
    events.subscribe(events.AGENT_ONLINE, agent_online, phase=tx)
    events.subscribe(events.CHAT_ASSIGNED, assigned_after, phase=commit)
    events.subscribe(
        (events.CHAT_CLOSED, events.CHAT_STATUS_CHANGED, events.AGENT_ONLINE, events.WIDGET_CONFIG_CHANGED),
        serve_after,
        phase=commit,
    )
    events.subscribe(events.AGENT_OFFLINE, offline_after, phase=commit)
    events.subscribe(events.AGENT_PROFILE_CHANGED, profile_after, phase=commit)
    events.subscribe(events.QUEUE_CHANGED, queue_after, phase=commit)
