"""The compat routes (authentication path 4: a secret in the path, no bearer token). Thin: parse
the legacy body, find the bot or channel by its path secret (constant-time comparison), call one
service, answer in the legacy shape. A 4xx is final for the legacy senders (they never retry it);
malformed or non-JSON bodies are 422."""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiResponse
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.channels import selectors as channel_selectors
from apps.channels import services as channel_services
from apps.chats import services as chat_services
from apps.chats.models import Message
from apps.core.api.negotiation import AcceptNegotiation
from apps.core.api.parsers import loads
from apps.core.api.serializers import validate_input
from apps.core.errors import AppError, InvalidJSON, NotAuthenticated, NotFound, ValidationFailed
from apps.core.ratelimit import client_address

from .. import selectors, services, throttle
from . import serializers as s
from .schema import CompatAutoSchema, compat_schema


class InvalidBotToken(NotAuthenticated):
    code, title = "invalid_bot_token", "Unknown bot token"


def _body(request) -> object:
    """The raw body as JSON (the one JSON reader); anything else is 422 for the legacy senders."""
    try:
        return loads(request.body or b"")
    except InvalidJSON as exc:
        raise ValidationFailed("The body is not a JSON object.", errors={"body": [exc.detail]}) from None


def _object(data) -> dict:
    if not isinstance(data, dict):
        raise ValidationFailed("The body is not a JSON object.", errors={"body": ["Expected a JSON object."]})
    return data


THROTTLE_RESPONSES = {
    429: OpenApiResponse(
        description="This address sent too many unknown secrets (`COMPAT_UNKNOWN_SECRETS_PER_ADDRESS_PER_HOUR`, "
        "30 by default): every compat request from it is refused until the hour frees up (`Retry-After`)."
    ),
    503: OpenApiResponse(
        description="Over `COMPAT_REQUESTS_PER_ADDRESS_PER_MINUTE` (600 by default) from one address: retry after "
        "`Retry-After` (a 5xx, which the legacy senders retry; a 4xx would be final for them)."
    ),
}


class CompatView(APIView):
    """No bearer token (the secret is in the path), no DRF parsing (the body is read raw)."""

    authentication_classes = ()
    permission_classes = ()
    parser_classes = ()
    content_negotiation_class = AcceptNegotiation
    schema = CompatAutoSchema()

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        throttle.admit(client_address(request))  # per-address budgets, before any secret lookup


def _bot_message_input(message: dict) -> chat_services.MessageInput:
    """A legacy BOT_MESSAGE as our message: TEXT as text, MARKDOWN as text with its markdown,
    BUTTONS as a keyboard message when every button is a link (https), else as its text followed
    by one line per button (reply buttons the widget cannot send back)."""
    kind, text = message["type"], message.get("text") or ""
    if kind == "MARKDOWN":
        return chat_services.MessageInput(body=text, markdown=text)
    if kind == "BUTTONS":
        buttons = message["buttons"]
        heading = "\n".join(part for part in (message.get("title"), text) if part)
        if all(b.get("url") for b in buttons):
            keyboard = {"buttons": [{"label": b["text"], "url": b["url"], "style": "primary"} for b in buttons]}
            return chat_services.MessageInput(
                type=Message.Type.KEYBOARD, body=heading or buttons[0]["text"], keyboard=keyboard
            )
        lines = [heading] if heading else []
        lines += [f"{b['text']}: {b['url']}" if b.get("url") else f"• {b['text']}" for b in buttons]
        return chat_services.MessageInput(body="\n".join(lines))
    return chat_services.MessageInput(body=text)


class BotView(CompatView):
    path_parameter_help = {"token": "The compat bot's token, as issued; an unknown one is 401."}

    @compat_schema(
        operation_id="compat_bot_event",
        summary="Legacy Bot API: a bot's call",
        description=(
            "The bot answers CLIENT_MESSAGE events here. `event` (or `message_type`): `BOT_MESSAGE` writes "
            "`message` (`TEXT`, `MARKDOWN` or `BUTTONS`) into the chat as the bot's operator; `INVITE_AGENT` "
            "hands the chat to a random online human operator (200 `no_agents_online` when nobody is online, "
            "and the bot keeps the chat); `INIT_RATE` asks the visitor for a rating. `chat_id` is our numeric "
            "chat id, as a string or a number; `timestamp` in seconds or milliseconds. Unknown token 401, "
            "disabled bot or a chat a person handles 403, unknown chat 404, malformed body 422."
        ),
        request=s.BotEventInput,
        responses={
            200: s.BotAnswerDoc,
            401: OpenApiResponse(description="Unknown bot token"),
            403: OpenApiResponse(description="Bot disabled, or the chat is not the bot's"),
            404: OpenApiResponse(description="No such chat"),
            422: OpenApiResponse(description="Malformed or non-JSON body"),
            **THROTTLE_RESPONSES,
        },
    )
    def post(self, request, token: str):
        bot = selectors.find_bot(token)
        if bot is None:
            throttle.unknown_secret(client_address(request))
            raise InvalidBotToken("Unknown bot token.")
        data = validate_input(s.BotEventInput, _object(_body(request)))
        kind, chat_id = data["kind"], data["chat_id"]
        if kind == "BOT_MESSAGE":
            message = services.post_bot_message(bot=bot, chat_id=chat_id, data=_bot_message_input(data["message"]))
            return Response({"status": "ok", "message_id": message.pk})
        if kind == "INVITE_AGENT":
            agent = services.invite_agent(bot=bot, chat_id=chat_id)
            if agent is None:
                return Response({"status": "no_agents_online"})
            return Response({"status": "agent_invited", "agent_id": agent.pk})
        message = services.request_rating(bot=bot, chat_id=chat_id)
        return Response({"status": "rating_requested", "message_id": message.pk})


def _chat_channel(request, secret: str):
    channel = channel_selectors.find_legacy_chat_channel(secret)
    if channel is None:
        throttle.unknown_secret(client_address(request))
        raise NotFound("No such channel.")
    if not channel.is_active:
        raise services.ChannelDisabled("This channel is disabled.")
    return channel


class ChatView(CompatView):
    path_parameter_help = {"secret": "The legacy Chat API channel's secret, as issued; an unknown one is 404."}

    @compat_schema(
        operation_id="compat_chat_message",
        summary="Legacy Chat API: a client's message",
        description=(
            '`{sender: {id, name?}, recipient: {id}, message: {type: "text", text, id?}}`: text only. The first '
            "message of a `sender.id` creates the contact and its chat; operator replies are posted to the "
            'channel\'s url as `{sender: {id, name}, recipient: {id}, message: {type: "text", text, id}}` '
            "(keyboards as `label: url` lines). Unknown secret 404, disabled channel 403, malformed body 422."
        ),
        request=s.ChatEventInput,
        responses={
            202: s.ChatAcceptedDoc,
            403: OpenApiResponse(description="Channel disabled"),
            404: OpenApiResponse(description="Unknown channel secret"),
            422: OpenApiResponse(description="Malformed or non-JSON body, or not a text message"),
            **THROTTLE_RESPONSES,
        },
    )
    def post(self, request, secret: str):
        channel = _chat_channel(request, secret)
        data = validate_input(s.ChatEventInput, _object(_body(request)))
        try:
            message = channel_services.receive_custom_message(
                widget=channel.widget,
                channel=channel,
                external_client_id=data["sender"]["id"],
                external_channel_id=data["recipient"]["id"],
                text=data["message"]["text"],
                contact_name=data["sender"].get("name", ""),
            )
        except channel_services.ChannelDisabled:
            raise services.ChannelDisabled("This channel is disabled.") from None
        except AppError as exc:
            if exc.status == 409:  # a spam chat takes nothing: final for the sender, like any 4xx
                raise services.ChannelDisabled(str(exc.detail)) from None
            raise
        body = {"status": "accepted", "chat_id": message.chat_id, "message_id": message.pk}
        return Response(body, status=status.HTTP_202_ACCEPTED)


class ChatStatusView(CompatView):
    path_parameter_help = ChatView.path_parameter_help

    @compat_schema(
        operation_id="compat_chat_status",
        summary="Legacy Chat API: channel status",
        description="A bare `1` (someone answers now) or `0` (nobody online) as `text/plain`, not JSON.",
        responses={
            (200, "text/plain"): OpenApiResponse(response=str, description="`0` or `1`"),
            403: OpenApiResponse(description="Channel disabled"),
            404: OpenApiResponse(description="Unknown channel secret"),
            **THROTTLE_RESPONSES,
        },
    )
    def get(self, request, secret: str):
        channel = _chat_channel(request, secret)
        online = channel_selectors.is_online(channel.widget, channel)
        return HttpResponse(b"1" if online else b"0", content_type="text/plain; charset=utf-8")
