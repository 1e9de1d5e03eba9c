"""Input serializers (`XInput`) and documentation serializers of the output shapes.

Output is rendered by the dict builders in apps.chats.payloads (fast, shared with the visitor
API and websocket frames); the `...Doc` serializers below describe the same shapes for OpenAPI and
a contract test keeps the two in step.
"""

from __future__ import annotations

from rest_framework import serializers

from apps.agents.models import Agent
from apps.core.api.serializers import (
    InputSerializer,
    StrictCharField,
    StrictFloatField,
    StrictIntegerField,
    TenantPrimaryKeyField,
    validate_https_link,
)

from ..contact_input import StrictTextField

# The label routes' inputs, re-exported for the owner's settings page (which may import this module only).
from ..label_input import LabelInput as LabelInput
from ..label_input import LabelPatchInput as LabelPatchInput
from ..models import Chat, File, Message
from ..selectors import not_erasing_file

# --- documentation of output shapes -----------------------------------------------------------------


class AttributionDoc(serializers.Serializer):
    agent_id = serializers.IntegerField(allow_null=True, help_text="The operator's agent id.")
    type = serializers.ChoiceField(choices=["human", "ai"], help_text="`human` or `ai`.")
    at = serializers.DateTimeField(allow_null=True, help_text="Null for chats accepted before attribution existed.")


class ChatDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The chat's id.")
    status = serializers.ChoiceField(
        choices=Chat.Status.values,
        help_text=(
            "`active`, `ready`, `expired` or `spam`: written as `state` (`POST /chats/{id}/state`), read and filtered"
            " as `status`."
        ),
    )
    channel = serializers.CharField(help_text="`widget`, `ch{id}` for a custom channel, or a messenger code.")
    client_id = serializers.CharField(help_text="The contact's 32-character guid.")
    agent_id = serializers.IntegerField(allow_null=True, help_text="Routing owner; never the AI operator.")
    department_id = serializers.IntegerField(allow_null=True, help_text="The chat's department; null when it has none.")
    accepted_by = AttributionDoc(
        allow_null=True, help_text="The operator who answered first; null while nobody has answered."
    )
    handled_by = AttributionDoc(
        allow_null=True, help_text="The operator handling the chat now, in the shape of `accepted_by`; null when none."
    )
    handling = serializers.ChoiceField(
        choices=Chat.Handling.values,
        help_text=(
            "`missed`: nobody answered; `human` or `ai`: who answered; `ai_to_human`: the AI answered, then a person "
            "took over; `human_to_ai`: a person accepted, went silent, and the AI takeover answered."
        ),
    )
    has_client_messages = serializers.BooleanField(help_text="True once the visitor has written in the chat.")
    last_message_id = serializers.IntegerField(
        allow_null=True, help_text="The chat's latest message; null before the first."
    )
    last_message_at = serializers.DateTimeField(
        allow_null=True, help_text="When the latest message was stored; null before the first."
    )
    created_at = serializers.DateTimeField(help_text="When the chat was created.")
    updated_at = serializers.DateTimeField(help_text="When the chat was last updated.")


class FileRefDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The file's id (`GET /files/{id}`).")
    name = serializers.CharField(help_text="Original file name.")
    content_type = serializers.CharField(help_text="The file's media type.")
    size = serializers.IntegerField(help_text="The file's size in bytes.")


class KeyboardButtonDoc(serializers.Serializer):
    label = serializers.CharField(help_text="The button's text, 1 to 64 characters.")
    url = serializers.CharField(help_text="The absolute `https://` URL the button opens.")
    style = serializers.ChoiceField(
        choices=["primary", "secondary"], help_text="`primary` (the default) or `secondary`."
    )


class KeyboardDoc(serializers.Serializer):
    buttons = KeyboardButtonDoc(many=True, help_text="The link buttons, at most 7.")


class MessageSourceDoc(serializers.Serializer):
    title = serializers.CharField(help_text="The document's name, or the crawled page's address.")
    url = serializers.CharField(
        allow_null=True, help_text="The crawled page (http or https only); null for an uploaded document."
    )


class CoordsDoc(serializers.Serializer):
    latitude = serializers.FloatField(min_value=-90, max_value=90, help_text="Degrees, -90 to 90.")
    longitude = serializers.FloatField(min_value=-180, max_value=180, help_text="Degrees, -180 to 180.")
    title = serializers.CharField(required=False, help_text="The place's name, when given.")


class StickerDoc(serializers.Serializer):
    id = serializers.CharField(help_text="The sticker's id.")
    url = serializers.CharField(required=False, help_text="The sticker's `https://` URL, when given.")


class AuthorDoc(serializers.Serializer):
    kind = serializers.ChoiceField(
        choices=Message.Author.values, help_text="`client` (the visitor), `agent`, `ai` or `system`."
    )
    agent_id = serializers.IntegerField(
        allow_null=True, help_text="The writing operator's agent id; null when no operator wrote it."
    )


class MessageDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The message's id.")
    chat_id = serializers.IntegerField(help_text="The chat the message belongs to.")
    type = serializers.ChoiceField(
        choices=Message.Type.values, help_text="`text`, `image`, `file`, `location`, `sticker` or `keyboard`."
    )
    body = serializers.CharField(allow_blank=True, help_text="The message's text; empty when it has none.")
    markdown = serializers.CharField(
        allow_null=True, help_text="The text as Markdown, when the sender gave one; null otherwise."
    )
    file = FileRefDoc(allow_null=True, help_text="The attachment of an `image` or `file` message; null otherwise.")
    url = serializers.CharField(allow_null=True, help_text="Short-lived download URL of a file/image message.")
    coords = CoordsDoc(allow_null=True, help_text="For `location` messages; null otherwise.")
    sticker = StickerDoc(allow_null=True, help_text="For `sticker` messages; null otherwise.")
    keyboard = KeyboardDoc(allow_null=True, help_text="`{buttons}` of a `keyboard` message; null otherwise.")
    sources = MessageSourceDoc(
        many=True,
        allow_null=True,
        help_text="The knowledge-base documents an AI answer was built on, each once (its assistant's "
        "`cite_sources`); null on every other message.",
    )
    origin = serializers.CharField(
        allow_null=True, help_text="The origin label given on send; null when none was given."
    )
    author = AuthorDoc(help_text="Who wrote the message.")
    visibility = serializers.ChoiceField(
        choices=Message.Visibility.values,
        help_text=(
            "`public` (the visitor sees it), `note` (a private operator note), `email` (an operator-only e-mail) or "
            "`internal` (operator to operator)."
        ),
    )
    seen_at = serializers.DateTimeField(
        allow_null=True, help_text="When the other side marked the message seen; null until then."
    )
    created_at = serializers.DateTimeField(help_text="When the message was stored.")


class AcceptedDoc(serializers.Serializer):
    status = serializers.CharField(help_text="`accepted`: handed to the chat layer.")


class MessageAcceptedDoc(AcceptedDoc):
    id = serializers.IntegerField(help_text="The stored message's id.")
    chat_id = serializers.IntegerField(help_text="The chat the message was stored in.")
    created_at = serializers.DateTimeField(help_text="When the message was stored.")


class TypingAcceptedDoc(AcceptedDoc):
    forwarded = serializers.BooleanField(help_text="False when coalesced (about one per 5 s per chat).")


class SeenDoc(serializers.Serializer):
    chat_id = serializers.IntegerField(help_text="The chat's id.")
    message_id = serializers.IntegerField(help_text="The `message_id` sent: messages up to it are seen.")
    marked = serializers.IntegerField(help_text="Visitor messages newly marked as seen.")


# --- inputs -------------------------------------------------------------------------------------------


class EmptyInput(InputSerializer):
    """No body members are accepted."""


class CloseInput(InputSerializer):
    reason = StrictCharField(
        required=False,
        allow_blank=False,
        max_length=200,
        help_text="Why the chat is closed; `chat.closed` carries it (`expired` when omitted).",
    )


class StateInput(InputSerializer):
    state = serializers.ChoiceField(
        choices=Chat.Status.values,
        help_text="The new state: `active`, `ready`, `expired` or `spam`; read back as `status`.",
    )
    reason = StrictCharField(
        required=False,
        allow_blank=False,
        max_length=200,
        help_text="Why the state changes; moving into `expired` passes it to `chat.closed`.",
    )


class TransferInput(InputSerializer):
    agent_id = TenantPrimaryKeyField(
        queryset=Agent.objects.all(),
        help_text="The agent of this widget to hand the chat to; banned agents are refused.",
    )

    def validate_agent_id(self, agent: Agent) -> Agent:
        if agent.status == Agent.Status.BANNED:
            raise serializers.ValidationError("The agent is banned.")
        return agent


class KeyboardButtonInput(InputSerializer):
    label = StrictCharField(
        min_length=1, max_length=64, trim_whitespace=False, help_text="The button's text, 1 to 64 characters."
    )
    url = StrictCharField(
        max_length=2048,
        validators=[validate_https_link],
        help_text="An absolute `https://` URL without user or password.",
    )
    style = serializers.ChoiceField(
        choices=["primary", "secondary"], default="primary", help_text="`primary` (the default) or `secondary`."
    )


class KeyboardInput(InputSerializer):
    buttons = KeyboardButtonInput(
        many=True,
        allow_empty=False,
        max_length=7,
        help_text="1 to 7 link buttons; one invalid button refuses the whole request.",
    )


class CoordsInput(InputSerializer):
    latitude = StrictFloatField(min_value=-90, max_value=90, help_text="Degrees, -90 to 90.")
    longitude = StrictFloatField(min_value=-180, max_value=180, help_text="Degrees, -180 to 180.")
    title = StrictCharField(required=False, max_length=255, help_text="The place's name, optional.")


class StickerInput(InputSerializer):
    id = StrictCharField(max_length=128, help_text="The sticker's id.")
    url = StrictCharField(
        required=False,
        max_length=2048,
        validators=[validate_https_link],
        help_text="The sticker's absolute `https://` URL, optional.",
    )


class MessageInput(InputSerializer):
    type = serializers.ChoiceField(
        choices=Message.Type.values,
        help_text="`text`, `image`, `file`, `location`, `sticker` or `keyboard`; says which member is required.",
    )
    body = StrictCharField(
        required=False,
        allow_blank=True,
        max_length=65536,
        trim_whitespace=False,
        help_text="The text; required for `text` and `keyboard`.",
    )
    markdown = StrictCharField(
        required=False,
        allow_blank=True,
        max_length=65536,
        trim_whitespace=False,
        help_text="The text as Markdown, optional.",
    )
    file = TenantPrimaryKeyField(
        # a file of a contact under erasure is missing: it cannot be shown in another chat
        queryset=File.objects.filter(not_erasing_file()),
        required=False,
        missing="422",
        help_text="The id of an uploaded file (`POST /files`); required for `image` (an image file) and `file`.",
    )
    coords = CoordsInput(required=False, help_text="The location; required for `location`.")
    sticker = StickerInput(required=False, help_text="The sticker; required for `sticker`.")
    keyboard = KeyboardInput(
        required=False, help_text="The link buttons; required for `keyboard`, refused on other types."
    )
    origin = StrictCharField(required=False, max_length=64, help_text="An origin label, optional, up to 64 characters.")
    agent_id = TenantPrimaryKeyField(
        queryset=Agent.objects.all(),
        required=False,
        missing="422",
        help_text="The sending agent: a human agent of this widget (never the AI operator), not banned. "
        "Required when the chat has no assigned agent (422 otherwise); optional when it has one, which "
        "then sends.",
    )
    visibility = serializers.ChoiceField(
        choices=[Message.Visibility.PUBLIC, Message.Visibility.NOTE],
        required=False,
        default=Message.Visibility.PUBLIC,
        help_text="`public` (the default): the visitor sees it; `note`: a private note for the chat's operators, "
        "never shown to the visitor and never an answer (the chat is not accepted by it). A note is `text` only.",
    )

    REQUIRED_BY_TYPE = {
        "text": "body",
        "keyboard": "body",
        "image": "file",
        "file": "file",
        "location": "coords",
        "sticker": "sticker",
    }

    def validate_agent_id(self, agent: Agent) -> Agent:
        if agent.type != Agent.Type.HUMAN:
            raise serializers.ValidationError("Must be a human agent (never the AI operator).")
        if agent.status == Agent.Status.BANNED:
            raise serializers.ValidationError("The agent is banned.")
        return agent

    def validate(self, attrs):
        kind = attrs["type"]
        errors = {}
        needed = self.REQUIRED_BY_TYPE[kind]
        value = attrs.get(needed)
        if value in (None, "") or (needed == "body" and not str(value).strip()):
            errors[needed] = [f"Required for type {kind}."]
        if kind == "keyboard" and "keyboard" not in attrs:
            errors["keyboard"] = ["Required for type keyboard."]
        if kind != "keyboard" and "keyboard" in attrs:
            errors["keyboard"] = ["Only keyboard messages carry buttons."]
        if kind == "image" and attrs.get("file") is not None and not attrs["file"].content_type.startswith("image/"):
            errors["file"] = ["Must be an image file."]
        if attrs.get("visibility") == Message.Visibility.NOTE and kind != Message.Type.TEXT:
            errors["visibility"] = ["A note is a text message."]
        if errors:
            raise serializers.ValidationError(errors)
        chat = self.context.get("chat")
        if chat is not None and chat.agent_id is None and "agent_id" not in attrs:
            raise serializers.ValidationError({"agent_id": ["Required: the chat has no assigned agent."]})
        return attrs


class TypingInput(InputSerializer):
    state = serializers.ChoiceField(choices=["start", "stop"], help_text="`start` or `stop`.")


class SeenInput(InputSerializer):
    message_id = StrictIntegerField(
        min_value=1, help_text="A message of this chat: the visitor's messages up to and including it are marked seen."
    )

    def validate_message_id(self, value: int) -> Message:
        chat = self.context["chat"]
        message = Message.objects.filter(chat=chat, widget_id=chat.widget_id, pk=value).first()
        if message is None:
            raise serializers.ValidationError("No such message in this chat.")
        return message


class ContactListQuery(InputSerializer):
    """Query parameters of the contact list (besides `cursor` and `limit`); the owner's contact list
    in the console reads its search box with it too."""

    query = StrictTextField(
        min_length=1, max_length=100, required=False, help_text="1 to 100 characters; matches name, e-mail, phone."
    )
