"""Writes of the compat routes. They translate the legacy wire formats and call the services of
the apps below (chats, channels): a bot's message is an operator message like any other, a Chat
API message an inbound message of a custom channel, so every effect (events, webhooks, legacy
webhooks, statistics, websocket pushes) is the same as through the REST API.

Bot API: every visitor message of a web-widget chat the widget's compat bot serves is queued as a
CLIENT_MESSAGE (in the message's transaction, by the message.created handler): a delivery of the
webhook engine to the bot's endpoint, posted after commit with the engine's lease, signatures, log
and sweeper, under the bot's own policy (`ClientMessages`): 3 s per attempt, 2 retries after a
short wait, then the chat goes to a person (a random online human operator, else the queue) and
the bot no longer serves it.
"""

from __future__ import annotations

import logging
import secrets
import uuid
from types import MappingProxyType

from django.db import IntegrityError, transaction

from apps.agents.models import Agent
from apps.channels import services as channel_services
from apps.chats import services as chat_services
from apps.chats.models import Chat, Message
from apps.core import crypto
from apps.core.auth.tokens import hash_token
from apps.core.errors import AppError
from apps.core.models import Widget
from apps.webhooks import services as webhooks

from . import payloads, selectors
from .models import ClientMessage, CompatBot, CompatBotHandoff

logger = logging.getLogger(__name__)

SOURCE = "compat"
ENDPOINT_OWNER = "compat_bot"  # the bots' endpoints in the webhook engine (Endpoint.owner)
BOT_TIMEOUT = 3.0  # seconds per attempt, the legacy platform's figure
BOT_ATTEMPTS = 3  # the first and 2 retries


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
    endpoint = webhooks.create_endpoint(
        widget=widget, owner=ENDPOINT_OWNER, owner_id=0, url=url, secret_encrypted=crypto.encrypt_secret(signing_secret)
    )
    bot = CompatBot.objects.create(
        widget=widget, agent=agent, endpoint=endpoint, url=url, token_key=key, token_hash=hash_token(token)
    )
    webhooks.set_endpoint_owner(endpoint=endpoint, owner_id=bot.pk)
    return bot, token, signing_secret


@transaction.atomic
def update_compat_bot(*, bot: CompatBot) -> CompatBot:
    """Save the bot's URL and switch (Django admin); the next CLIENT_MESSAGE attempt, retries
    included, goes to the URL saved now."""
    webhooks.check_destination(bot.url)
    bot.save(update_fields=["url", "is_active"])
    webhooks.set_endpoint_url(endpoint=bot.endpoint, url=bot.url)
    return bot


@transaction.atomic
def reset_bot_signing_secret(*, bot: CompatBot) -> str:
    """A new CLIENT_MESSAGE signing secret for the bot (the old one stops at once); shown once."""
    signing_secret = crypto.generate_secret()
    webhooks.replace_endpoint_secret(endpoint=bot.endpoint, secret=signing_secret)
    return signing_secret


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
        Chat.objects.select_related("widget", "contact").filter(pk=chat_id, widget_id=bot.widget_id).live().first()
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


def queue_client_message(*, widget: Widget, chat: Chat, message: Message) -> ClientMessage | None:
    """Inside the visitor message's transaction: a CLIENT_MESSAGE for the widget's compat bot when
    it serves the chat, a delivery of the bot's endpoint sent once the transaction commits."""
    if message.author_kind != Message.Author.CLIENT or chat.channel != selectors.WIDGET_CHANNEL:
        return None
    bot = selectors.active_bot(widget)
    if bot is None or not selectors.serves(bot, chat):
        return None
    key = uuid.uuid4()
    body = payloads.client_message_body(
        event_id=str(key),
        widget=widget,
        chat=chat,
        message=message,
        agents_online=bool(selectors.online_humans(widget)),
    )
    delivery = webhooks.enqueue_call(
        endpoint=bot.endpoint, event_type="CLIENT_MESSAGE", body=body.encode(), key=key, message_id=message.pk
    )
    return ClientMessage.objects.create(widget=widget, bot=bot, chat=chat, message=message, delivery=delivery)


class ClientMessages(webhooks.EndpointKind):
    """How the engine posts CLIENT_MESSAGEs: the legacy platform's 3 s an attempt and 2 retries
    (a non-2xx answer, a timeout or a transport error uses one), a short wait between them so the
    whole budget stays about 10 s; after the last failure the chat goes to a person."""

    headers = MappingProxyType(
        {"Content-Type": "application/json; charset=utf-8", "User-Agent": "ChatWidgetService-Compat/1"}
    )
    max_attempts = BOT_ATTEMPTS
    timeout = (BOT_TIMEOUT, BOT_TIMEOUT)
    deadline = BOT_TIMEOUT

    def retry_wait(self, failed_attempt: int) -> float:
        return 0.5 * failed_attempt

    def failed(self, rows) -> None:
        """The bots did not take these CLIENT_MESSAGEs: their chats go to a person."""
        for sent in ClientMessage.objects.filter(delivery__in=[row.pk for row in rows]).select_related("bot", "chat"):
            hand_off_unreachable(bot=sent.bot, chat=sent.chat)
