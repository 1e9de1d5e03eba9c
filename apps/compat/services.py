"""Writes of the compat routes. They translate the legacy wire formats and call the services of
the apps below (chats, channels): a bot's message is an operator message like any other, a Chat
API message an inbound message of a custom channel, so every effect (events, webhooks, legacy
webhooks, statistics, websocket pushes) is the same as through the REST API.

Bot API: every visitor message of a web-widget chat the widget's compat bot serves is queued as a
CLIENT_MESSAGE (in the message's transaction, by the message.created handler) and posted after
commit: 3 s per attempt, 2 retries, then the chat goes to a person (a random online human
operator, else the queue) and the bot no longer serves it.
"""

from __future__ import annotations

import logging
import secrets
import time

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.agents.models import Agent
from apps.channels import services as channel_services
from apps.chats import services as chat_services
from apps.chats.models import Chat, Message
from apps.core import crypto, outbound, queueing
from apps.core.auth.tokens import hash_token
from apps.core.errors import AppError
from apps.core.models import Widget
from apps.webhooks import services as webhooks

from . import payloads, selectors
from .models import CompatBot, CompatBotDelivery, CompatBotHandoff

logger = logging.getLogger(__name__)

SOURCE = "compat"
BOT_TIMEOUT = 3.0  # seconds per attempt, the legacy platform's figure
BOT_ATTEMPTS = 3  # the first and 2 retries
RESPONSE_CAP = 64 * 1024


class ChatNotServed(AppError):
    """The bot does not serve this chat (a person handles it, or the bot handed it off)."""

    status, code, title = 403, "chat_not_served", "The bot does not serve this chat"


class BotDisabled(AppError):
    status, code, title = 403, "bot_disabled", "The bot is disabled"


class ChannelDisabled(AppError):
    status, code, title = 403, "channel_disabled", "The channel is disabled"


# --- set-up ---------------------------------------------------------------------------------------


@transaction.atomic
def create_compat_bot(*, widget: Widget, url: str, name: str = "Bot") -> tuple[CompatBot, str, str]:
    """A bot of the legacy Bot API with its own automated operator; returns the bot, its path token
    (shown once, stored as a lookup key and a SHA-256) and the secret its CLIENT_MESSAGE posts are
    signed with (shown once, stored encrypted under the webhooks' rotatable key set)."""
    webhooks.check_destination(url)
    key = secrets.token_hex(selectors.KEY_LENGTH // 2)
    token = key + secrets.token_hex(20)
    signing_secret = crypto.generate_secret()
    agent = Agent.objects.create(widget=widget, name=name, type=Agent.Type.AI, show_in_header=False)
    bot = CompatBot.objects.create(
        widget=widget,
        agent=agent,
        url=url,
        token_key=key,
        token_hash=hash_token(token),
        signing_secret_encrypted=crypto.encrypt_secret(signing_secret),
    )
    return bot, token, signing_secret


@transaction.atomic
def reset_bot_signing_secret(*, bot: CompatBot) -> str:
    """A new CLIENT_MESSAGE signing secret for the bot (the old one stops at once); shown once."""
    signing_secret = crypto.generate_secret()
    CompatBot.objects.filter(pk=bot.pk).update(signing_secret_encrypted=crypto.encrypt_secret(signing_secret))
    return signing_secret


@transaction.atomic
def rotate_bot_keys() -> int:
    """Re-encrypt every bot's CLIENT_MESSAGE signing secret under the newest WEBHOOK_SECRET_KEYS key
    (after a key was added in front). Returns the number of bots rewritten."""
    count = 0
    for bot in (
        CompatBot.objects.select_for_update()
        .exclude(signing_secret_encrypted="")
        .only("pk", "signing_secret_encrypted")
    ):
        CompatBot.objects.filter(pk=bot.pk).update(
            signing_secret_encrypted=crypto.rotate_token(bot.signing_secret_encrypted)
        )
        count += 1
    return count


def client_message_headers(*, bot: CompatBot, event_id: str, body: bytes) -> dict[str, str]:
    """The headers of one CLIENT_MESSAGE attempt: signed like our webhooks (authentication path 2:
    `X-Service-Signature: sha256=v1:<hex HMAC-SHA256 of the body>` and the Standard Webhooks
    `webhook-id` / `webhook-timestamp` / `webhook-signature`), keyed by the bot's signing secret.
    The legacy platform signs nothing; a legacy bot may ignore them, a migrated one should check."""
    headers = {
        "Content-Type": "application/json; charset=utf-8",
        "User-Agent": "ChatWidgetService-Compat/1",
        "X-Service-Event": "CLIENT_MESSAGE",
        "X-Service-Idempotency-Key": event_id,
    }
    secret = crypto.decrypt_secret(bot.signing_secret_encrypted) if bot.signing_secret_encrypted else None
    if secret:
        ts = int(time.time())
        headers |= {
            "X-Service-Signature": webhooks.service_signature(secret, body),
            "X-Service-Timestamp": str(ts),
            "webhook-id": event_id,
            "webhook-timestamp": str(ts),
            "webhook-signature": webhooks.standard_signature(secret, event_id, ts, body),
        }
    return headers


def create_compat_channel(*, widget: Widget, url: str) -> tuple[int, str]:
    """A legacy Chat API channel: a custom channel in the legacy wire format. (id, path secret)."""
    channel, secret = channel_services.create_legacy_chat_channel(widget=widget, url=url)
    return channel.pk, secret


# --- the bot's calls ------------------------------------------------------------------------------


def _served_chat(bot: CompatBot, chat_id: int | None) -> Chat:
    from apps.core.errors import NotFound

    if not bot.is_active:
        raise BotDisabled("This bot is disabled.")
    chat = (
        Chat.objects.select_related("widget", "contact").filter(pk=chat_id, widget_id=bot.widget_id).first()
        if chat_id is not None
        else None
    )
    if chat is None:
        raise NotFound("No such chat.")
    if not selectors.serves(bot, chat):
        raise ChatNotServed("A person handles this chat now, or the bot handed it off.")
    return chat


@transaction.atomic
def post_bot_message(*, bot: CompatBot, chat_id: int | None, data: chat_services.MessageInput) -> Message:
    """BOT_MESSAGE: the bot writes into a chat it serves, as its operator."""
    chat = _served_chat(bot, chat_id)
    return chat_services.post_agent_message(widget=chat.widget, chat=chat, agent=bot.agent, data=data, source=SOURCE)


@transaction.atomic
def request_rating(*, bot: CompatBot, chat_id: int | None) -> Message:
    """INIT_RATE: the visitor is asked to rate the chat."""
    chat = _served_chat(bot, chat_id)
    return chat_services.request_rating(widget=chat.widget, chat=chat)


def _record_handoff(bot: CompatBot, chat: Chat, reason: str) -> None:
    try:
        with transaction.atomic():
            CompatBotHandoff.objects.create(widget_id=bot.widget_id, bot=bot, chat=chat, reason=reason)
    except IntegrityError:
        pass  # already handed off


@transaction.atomic
def invite_agent(*, bot: CompatBot, chat_id: int | None) -> Agent | None:
    """INVITE_AGENT: the chat goes to a random online human operator and the bot stops serving
    it. None when nobody is online: nothing changes (the bot keeps the chat; not an error)."""
    chat = _served_chat(bot, chat_id)
    agent = selectors.random_online_human(chat.widget)
    if agent is None:
        return None
    _record_handoff(bot, chat, CompatBotHandoff.Reason.INVITED)
    chat_services.transfer_chat(widget=chat.widget, chat=chat, to_agent=agent, source=SOURCE)
    return agent


@transaction.atomic
def hand_off_unreachable(*, bot: CompatBot, chat: Chat) -> Agent | None:
    """The bot did not answer a CLIENT_MESSAGE: the chat goes to a person (a random online human,
    else it waits in the queue for one) and the bot no longer serves it."""
    _record_handoff(bot, chat, CompatBotHandoff.Reason.BOT_UNREACHABLE)
    agent = selectors.random_online_human(chat.widget)
    if agent is not None:
        chat_services.transfer_chat(widget=chat.widget, chat=chat, to_agent=agent, source=SOURCE)
    return agent


# --- CLIENT_MESSAGE -------------------------------------------------------------------------------


def queue_client_message(*, widget: Widget, chat: Chat, message: Message) -> CompatBotDelivery | None:
    """Inside the visitor message's transaction: a CLIENT_MESSAGE for the widget's compat bot when
    it serves the chat; posted after commit by a task."""
    if message.author_kind != Message.Author.CLIENT or chat.channel != selectors.WIDGET_CHANNEL:
        return None
    bot = selectors.active_bot(widget)
    if bot is None or not selectors.serves(bot, chat):
        return None
    delivery = CompatBotDelivery(widget=widget, bot=bot, chat=chat, message=message)
    delivery.body = payloads.client_message_body(
        event_id=str(delivery.event_id),
        widget=widget,
        chat=chat,
        message=message,
        agents_online=bool(selectors.online_humans(widget)),
    )
    delivery.save()

    def hand_over() -> None:
        try:
            queueing.task("apps.compat.tasks.send_client_message").delay(delivery.pk)
        except Exception:
            logger.warning("compat CLIENT_MESSAGE hand-off failed", extra={"delivery_id": delivery.pk})

    transaction.on_commit(hand_over)
    return delivery


def send_client_message(delivery_id: int) -> str:
    """Post one CLIENT_MESSAGE: up to 3 attempts of 3 s each (a non-2xx answer, a timeout or a
    transport error uses one). After the last failure the chat goes to a person."""
    delivery = CompatBotDelivery.objects.select_related("bot", "chat").filter(pk=delivery_id).first()
    if delivery is None or delivery.status != CompatBotDelivery.Status.PENDING:
        return "gone"
    body = delivery.body.encode()
    status_code, error = None, ""
    attempts = delivery.attempts
    with outbound.get_session() as session:
        while attempts < BOT_ATTEMPTS:
            attempts += 1
            try:
                response = session.send_bytes(
                    "POST",
                    delivery.bot.url,
                    body=body,
                    headers=client_message_headers(bot=delivery.bot, event_id=str(delivery.event_id), body=body),
                    timeout=(BOT_TIMEOUT, BOT_TIMEOUT),
                    max_bytes=RESPONSE_CAP,
                    deadline=BOT_TIMEOUT,
                )
                status_code = response.status_code
                error = "" if 200 <= status_code < 300 else f"http_{status_code}"
            except outbound.OutboundBlocked as exc:
                status_code, error = None, f"blocked:{exc.reason}"
                attempts = BOT_ATTEMPTS  # a refused address will not change within seconds
            except outbound.OutboundError as exc:
                status_code, error = None, exc.reason
            if not error:
                break
            if attempts < BOT_ATTEMPTS:
                time.sleep(0.2 * attempts)  # a short breath; the whole budget stays about 9 s
    status = CompatBotDelivery.Status.DELIVERED if not error else CompatBotDelivery.Status.FAILED
    CompatBotDelivery.objects.filter(pk=delivery.pk).update(
        status=status,
        attempts=attempts,
        last_status_code=status_code,
        last_error=error[:200],
        updated_at=timezone.now(),
    )
    if error:
        hand_off_unreachable(bot=delivery.bot, chat=delivery.chat)
    return status
