"""THE one way an operator's devices are told something: `notify(agent, kind, chat, text=...)`.

Callers: a chat assigned to an operator (apps.push.handlers), a chat that starts waiting in the
queue (the same), a mention (apps.mentions.notify), an SLA clock about to breach
(apps.push.tasks.sla_warnings). Each device of the agent that chose `kind` gets ONE Celery task of
its own on the push queue, sent after the current transaction commits: a slow or dead push service
holds up only its own task, never the request or event that caused it, nor another device.

The payload the service worker shows (`push` handler in the console's sw.js) is JSON
`{"title", "body", "url", "tag"}`: `url` opens the chat when the notification is clicked, `tag`
folds repeated news about one chat into one notification. The message's words are in it only when
the device turned previews on; otherwise it says what happened, never what was written.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import transaction
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext as _

from apps.agents.models import Agent
from apps.chats.models import Chat, Message
from apps.core import queueing

from . import selectors
from .models import KINDS, PushSubscription

logger = logging.getLogger(__name__)

SEND_TASK = "apps.push.tasks.send_push"
PREVIEW_CHARS = 160


def configured() -> bool:
    """Both VAPID keys are set: without them there is no push at all."""
    return bool(settings.VAPID_PRIVATE_KEY and settings.VAPID_PUBLIC_KEY)


def _preview(text: str | None) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


def _latest_words(chat: Chat) -> str | None:
    """The chat's last public message, for previews when the caller gave no text."""
    message = chat.last_message if chat.last_message_id else None
    if message is None or message.visibility != Message.Visibility.PUBLIC:
        return None
    return message.body


def payload(subscription: PushSubscription, kind: str, chat: Chat, *, text: str | None) -> dict:
    """What one device is shown, in the language it subscribed in."""
    with translation.override(subscription.language or settings.LANGUAGE_CODE):
        titles = {
            "assigned": _("A chat was assigned to you"),
            "queue": _("A visitor is waiting in the queue"),
            "mention": _("You were mentioned in a note"),
            "sla": _("A chat is about to miss its response time"),
        }
        body = _preview(text) if subscription.previews and text else _("Open the console to read it.")
        return {
            "title": str(titles[kind]),
            "body": str(body),
            "url": reverse("console:chat", args=[chat.pk]),
            "tag": f"chat-{chat.pk}-{kind}",
        }


def notify(agent: Agent | int, kind: str, chat: Chat, *, text: str | None = None) -> int:
    """Tell one operator's devices that chose `kind` about `chat`. Returns how many pushes were
    queued (sent after the caller's transaction commits, at once outside one)."""
    return notify_agents([agent.pk if isinstance(agent, Agent) else agent], kind, chat, text=text)


def notify_agents(agent_ids: list[int], kind: str, chat: Chat, *, text: str | None = None) -> int:
    """`notify` for several operators at once (the queue's watchers): one read of their devices."""
    if kind not in KINDS:
        raise ValueError(f"unknown notification kind {kind!r}")
    if not configured() or not agent_ids:
        return 0
    devices = selectors.subscribers(chat.widget, agent_ids=agent_ids, kind=kind)
    # A chat under erasure says nothing more (apps.erasure): read through live().
    if not devices or not Chat.objects.live().filter(pk=chat.pk).exists():
        return 0
    if text is None and kind != "mention" and any(device.previews for device in devices):
        text = _latest_words(chat)
    for device in devices:
        _queue(device.pk, payload(device, kind, chat, text=text))
    return len(devices)


def _dispatch(subscription_id: int, body: dict) -> None:
    try:
        queueing.task(SEND_TASK).apply_async((subscription_id, body), queue=settings.PUSH_QUEUE)
    except Exception:  # noqa: BLE001 - the broker is down: a notification is best effort
        logger.warning("push to subscription %s not queued", subscription_id, exc_info=True)


def _queue(subscription_id: int, body: dict) -> None:
    transaction.on_commit(lambda: _dispatch(subscription_id, body))
