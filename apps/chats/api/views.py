"""Chats and messages of the token's widget. State changes go through apps.chats.services only."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, status
from rest_framework.decorators import action
from rest_framework.response import Response

from apps.core.api.query import query_data
from apps.core.api.views import WidgetScopedViewSet
from apps.core.errors import NotFound

from .. import selectors, services
from ..models import Chat, Message
from ..payloads import chat_payload, chat_row_payload, message_payload
from . import serializers as s
from .filters import ChatListQuery, MessageListQuery


def _accepted(extra: dict | None = None) -> Response:
    return Response({"status": "accepted", **(extra or {})}, status=status.HTTP_202_ACCEPTED)


@extend_schema_view(
    list=extend_schema(
        summary="List chats",
        description=(
            "Chats of the token's widget in every state, newest first. Filters: `status`, `channel`, "
            "`has_client_messages` (1 keeps chats where the visitor wrote), `q` (2 to 100 characters of visible "
            "message text), `label` (repeatable: chats carrying every label named), `from` and `to` (chat creation "
            "date, Europe/Moscow unless an offset is given); `cursor` and `limit` page."
        ),
    ),
    retrieve=extend_schema(
        summary="Get a chat",
        description=(
            "One chat of the widget: status, channel, contact guid, routing agent, department, who accepted and "
            "handled it, and its last message. A foreign or unknown id is 404."
        ),
    ),
    close=extend_schema(
        summary="Close a chat",
        description=(
            "Moves the chat into `expired` with an optional `reason` (up to 200 characters) and emits `chat.closed`. "
            "Synchronous (200). Closing an already expired chat changes nothing and emits nothing."
        ),
    ),
    state=extend_schema(
        summary="Set a chat's state",
        description=(
            "`{state: active, ready, expired or spam; reason?}`. Synchronous (200); moving into `expired` is a close "
            "(emits `chat.closed`)."
        ),
    ),
    transfer=extend_schema(
        summary="Transfer a chat",
        description=(
            "`{agent_id}` (required): an agent of this widget, not banned; the chat's routing owner changes and "
            "`chat.transferred` is emitted (a spam chat is 409). Answers 202: handed to the chat layer."
        ),
    ),
    rate_request=extend_schema(
        summary="Ask the visitor for a rating",
        description=(
            "No body. Shows the visitor the rating prompt in the widget. Answers 202: handed to the chat layer."
        ),
    ),
    messages=extend_schema(
        summary="List a chat's messages",
        description=(
            "Messages of one chat, newest first, operator notes and e-mails included (see `visibility`). File and "
            "image messages carry a short-lived `url`; keyboard messages carry `keyboard.buttons`. `from` and `to` "
            "filter on creation date."
        ),
    ),
    typing=extend_schema(
        summary="Send a typing indicator",
        description=(
            "`{state: start or stop}` shows or hides the operator typing indicator in the visitor's widget; forwarded "
            "about once per 5 s per chat (`forwarded` says whether this one was). Answers 202."
        ),
    ),
    seen=extend_schema(
        summary="Mark visitor messages seen",
        description=(
            "`{message_id}`: every visitor message of the chat up to this one is marked as seen by the operator; "
            "`marked` counts the newly marked ones. Synchronous (200)."
        ),
    ),
)
class ChatViewSet(WidgetScopedViewSet, mixins.ListModelMixin, mixins.RetrieveModelMixin):
    """Chats of the token's widget: every state is listed, newest first."""

    queryset = Chat.objects.all()
    route_scopes = {
        "list": ["chats:read"],
        "retrieve": ["chats:read"],
        "close": ["chats:write"],
        "state": ["chats:write"],
        "transfer": ["chats:write"],
        "rate_request": ["chats:write"],
        "messages": ["messages:read"],
        "send_message": ["messages:write"],
        "typing": ["messages:write"],
        "seen": ["messages:write"],
    }
    idempotency_required = {"close", "state", "transfer", "rate_request", "send_message", "typing", "seen"}
    problem_statuses = {
        "close": [409],
        "state": [409],
        "transfer": [409],
        "rate_request": [409],
        "send_message": [409],
        "typing": [409],
        "seen": [409],
    }

    @classmethod
    def tenant_queryset(cls, widget):
        """A contact under erasure (apps.erasure) reads as missing."""
        return super().tenant_queryset(widget).live()

    def scope_queryset(self, queryset):
        return queryset.select_related("contact")

    def _locked_chat(self, related: tuple[str, ...]) -> Chat:
        """`get_object` for a write in the idempotency transaction: the chat locked with `related`
        in the one read the service would make (the view then hands it over as `locked`)."""
        try:
            chat = services.lock_chat(widget=self.request.widget, chat=Chat(pk=self.lookup_key()), related=related)
        except Chat.DoesNotExist:
            raise NotFound() from None
        self.check_object_permissions(self.request, chat)
        return chat

    @extend_schema(parameters=[ChatListQuery], responses={200: s.ChatDoc(many=True)})
    def list(self, request):
        filters = _rename_from(self.validated(ChatListQuery, data=query_data(request, repeatable=("label",))))
        if "label" in filters:
            filters["label_ids"] = filters.pop("label")
        page = self.paginator.paginate_selector(selectors.list_chats, request, self, widget=request.widget, **filters)
        return self.get_paginated_response([chat_row_payload(row) for row in page])

    @extend_schema(responses={200: s.ChatDoc})
    def retrieve(self, request, pk=None):
        return Response(chat_payload(self.get_object()))

    @extend_schema(request=s.CloseInput, responses={200: s.ChatDoc})
    @action(detail=True, methods=["post"])
    def close(self, request, pk=None):
        chat = self.get_object()
        data = self.validated(s.CloseInput)
        chat = services.close_chat(widget=request.widget, chat=chat, reason=data.get("reason"))
        return Response(chat_payload(chat))

    @extend_schema(request=s.StateInput, responses={200: s.ChatDoc})
    @action(detail=True, methods=["post"])
    def state(self, request, pk=None):
        chat = self.get_object()
        data = self.validated(s.StateInput)
        chat = services.set_chat_state(widget=request.widget, chat=chat, state=data["state"], reason=data.get("reason"))
        return Response(chat_payload(chat))

    @extend_schema(request=s.TransferInput, responses={202: s.AcceptedDoc})
    @action(detail=True, methods=["post"])
    def transfer(self, request, pk=None):
        chat = self.get_object()
        data = self.validated(s.TransferInput)
        services.transfer_chat(widget=request.widget, chat=chat, to_agent=data["agent_id"])
        return _accepted()

    @extend_schema(request=None, responses={202: s.AcceptedDoc})
    @action(detail=True, methods=["post"], url_path="rate-request")
    def rate_request(self, request, pk=None):
        chat = self.get_object()
        self.validated(s.EmptyInput)
        services.request_rating(widget=request.widget, chat=chat)
        return _accepted()

    @extend_schema(parameters=[MessageListQuery], responses={200: s.MessageDoc(many=True)})
    @action(detail=True, methods=["get"])
    def messages(self, request, pk=None):
        chat = self.get_object()
        query = self.validated(MessageListQuery, data=query_data(request))
        queryset = selectors.filter_messages(chat=chat, **_rename_from(query))
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response([message_payload(m) for m in page])

    @extend_schema(
        request=s.MessageInput,
        responses={202: s.MessageAcceptedDoc},
        summary="Send a message to a chat",
        description=(
            "Sends an operator message: `type` text, image, file, location, sticker or keyboard with the member that "
            "type needs (`body`, `file`, `coords`, `sticker`, `keyboard`). `agent_id` (a human agent of this widget, "
            "never the AI operator) is required when the chat has no assigned agent, and optional otherwise (default: "
            "the chat's agent). `visibility: note` stores a private operator note instead (text only; the visitor "
            "never sees it and it does not accept the chat). A message into an expired chat reopens it. Answers 202: "
            "handed to the websocket layer; confirm with the message list."
        ),
    )
    @messages.mapping.post
    def send_message(self, request, pk=None):
        chat = self._locked_chat(services.AGENT_MESSAGE_RELATED)
        data = self.validated(s.MessageInput, context={"chat": chat})
        message = services.post_agent_message(
            widget=request.widget,
            chat=chat,
            agent=data.get("agent_id"),
            data=services.MessageInput(
                type=data["type"],
                body=data.get("body", ""),
                markdown=data.get("markdown", ""),
                file_id=data["file"].pk if data.get("file") else None,
                coords=data.get("coords"),
                sticker=data.get("sticker"),
                keyboard=_keyboard(data.get("keyboard")),
                origin=data.get("origin", ""),
                visibility=data.get("visibility", Message.Visibility.PUBLIC),
            ),
            locked=True,
        )
        return _accepted({"id": message.pk, "chat_id": chat.pk, "created_at": message.created_at.isoformat()})

    @extend_schema(request=s.TypingInput, responses={202: s.TypingAcceptedDoc})
    @action(detail=True, methods=["post"])
    def typing(self, request, pk=None):
        chat = self.get_object()
        data = self.validated(s.TypingInput)
        forwarded = services.note_typing(widget=request.widget, chat=chat, state=data["state"], by="agent")
        return _accepted({"forwarded": forwarded})

    @extend_schema(request=s.SeenInput, responses={200: s.SeenDoc})
    @action(detail=True, methods=["post"])
    def seen(self, request, pk=None):
        chat = self.get_object()
        data = self.validated(s.SeenInput, context={"chat": chat})
        message: Message = data["message_id"]
        marked = services.mark_seen(widget=request.widget, chat=chat, message=message, by="agent")
        return Response({"chat_id": chat.pk, "message_id": message.pk, "marked": marked})


def _rename_from(query: dict) -> dict:
    out = dict(query)
    if "from" in out:
        out["start"] = out.pop("from")
    if "to" in out:
        out["end"] = out.pop("to")
    return out


def _keyboard(keyboard: dict | None) -> dict | None:
    if keyboard is None:
        return None
    return {"buttons": [dict(button) for button in keyboard["buttons"]]}
