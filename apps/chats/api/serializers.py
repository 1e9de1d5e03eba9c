"""Input serializers (`XInput`) and documentation serializers of the output shapes.

Output is rendered by the dict builders in apps.chats.payloads (fast, shared with the visitor
API and websocket frames); the `...Doc` serializers below describe the same shapes for OpenAPI and
a contract test keeps the two in step.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from rest_framework import serializers

from apps.agents.models import Agent
from apps.core.api.serializers import (
    InputSerializer,
    StrictCharField,
    StrictFloatField,
    StrictIntegerField,
    TenantPrimaryKeyField,
)

from ..models import Chat, File, Message

# --- documentation of output shapes -----------------------------------------------------------------


class AttributionDoc(serializers.Serializer):
    agent_id = serializers.IntegerField(allow_null=True)
    type = serializers.ChoiceField(choices=["human", "ai"])
    at = serializers.DateTimeField(allow_null=True, help_text="Null for chats accepted before attribution existed.")


class ChatDoc(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=Chat.Status.values)
    channel = serializers.CharField(help_text="`widget`, `ch{id}` for a custom channel, or a messenger code.")
    client_id = serializers.CharField(help_text="The contact's 32-character guid.")
    agent_id = serializers.IntegerField(allow_null=True, help_text="Routing owner; never the AI operator.")
    department_id = serializers.IntegerField(allow_null=True)
    accepted_by = AttributionDoc(allow_null=True)
    handled_by = AttributionDoc(allow_null=True)
    handling = serializers.ChoiceField(choices=Chat.Handling.values)
    has_client_messages = serializers.BooleanField()
    last_message_id = serializers.IntegerField(allow_null=True)
    last_message_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class FileRefDoc(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField(help_text="Original file name.")
    content_type = serializers.CharField()
    size = serializers.IntegerField()


class KeyboardButtonDoc(serializers.Serializer):
    label = serializers.CharField()
    url = serializers.CharField()
    style = serializers.ChoiceField(choices=["primary", "secondary"])


class KeyboardDoc(serializers.Serializer):
    buttons = KeyboardButtonDoc(many=True)


class MessageSourceDoc(serializers.Serializer):
    title = serializers.CharField(help_text="The document's name, or the crawled page's address.")
    url = serializers.CharField(
        allow_null=True, help_text="The crawled page (http or https only); null for an uploaded document."
    )


class CoordsDoc(serializers.Serializer):
    latitude = serializers.FloatField(min_value=-90, max_value=90)
    longitude = serializers.FloatField(min_value=-180, max_value=180)
    title = serializers.CharField(required=False)


class StickerDoc(serializers.Serializer):
    id = serializers.CharField()
    url = serializers.CharField(required=False)


class AuthorDoc(serializers.Serializer):
    kind = serializers.ChoiceField(choices=Message.Author.values)
    agent_id = serializers.IntegerField(allow_null=True)


class MessageDoc(serializers.Serializer):
    id = serializers.IntegerField()
    chat_id = serializers.IntegerField()
    type = serializers.ChoiceField(choices=Message.Type.values)
    body = serializers.CharField(allow_blank=True)
    markdown = serializers.CharField(allow_null=True)
    file = FileRefDoc(allow_null=True)
    url = serializers.CharField(allow_null=True, help_text="Short-lived download URL of a file/image message.")
    coords = CoordsDoc(allow_null=True, help_text="For `location` messages; null otherwise.")
    sticker = StickerDoc(allow_null=True, help_text="For `sticker` messages; null otherwise.")
    keyboard = KeyboardDoc(allow_null=True)
    sources = MessageSourceDoc(
        many=True,
        allow_null=True,
        help_text="The knowledge-base documents an AI answer was built on, each once (its assistant's "
        "`cite_sources`); null on every other message.",
    )
    origin = serializers.CharField(allow_null=True)
    author = AuthorDoc()
    visibility = serializers.ChoiceField(choices=Message.Visibility.values)
    seen_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()


class AcceptedDoc(serializers.Serializer):
    status = serializers.CharField(help_text="`accepted`: handed to the chat layer.")


class MessageAcceptedDoc(AcceptedDoc):
    id = serializers.IntegerField()
    chat_id = serializers.IntegerField()
    created_at = serializers.DateTimeField()


class TypingAcceptedDoc(AcceptedDoc):
    forwarded = serializers.BooleanField(help_text="False when coalesced (about one per 5 s per chat).")


class SeenDoc(serializers.Serializer):
    chat_id = serializers.IntegerField()
    message_id = serializers.IntegerField()
    marked = serializers.IntegerField(help_text="Visitor messages newly marked as seen.")


# --- inputs -------------------------------------------------------------------------------------------


class EmptyInput(InputSerializer):
    """No body members are accepted."""


class CloseInput(InputSerializer):
    reason = StrictCharField(required=False, allow_blank=False, max_length=200)


class StateInput(InputSerializer):
    state = serializers.ChoiceField(choices=Chat.Status.values)
    reason = StrictCharField(required=False, allow_blank=False, max_length=200)


class TransferInput(InputSerializer):
    agent_id = TenantPrimaryKeyField(queryset=Agent.objects.all())

    def validate_agent_id(self, agent: Agent) -> Agent:
        if agent.status == Agent.Status.BANNED:
            raise serializers.ValidationError("The agent is banned.")
        return agent


def validate_button_url(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme != "https" or not parts.hostname:
        raise serializers.ValidationError("Must be an absolute https:// URL.")
    if parts.username is not None or parts.password is not None:
        raise serializers.ValidationError("URLs with credentials are refused.")
    if any(ch.isspace() for ch in value):
        raise serializers.ValidationError("URLs may not contain whitespace.")
    return value


class KeyboardButtonInput(InputSerializer):
    label = StrictCharField(min_length=1, max_length=64, trim_whitespace=False)
    url = StrictCharField(max_length=2048, validators=[validate_button_url])
    style = serializers.ChoiceField(choices=["primary", "secondary"], default="primary")


class KeyboardInput(InputSerializer):
    buttons = KeyboardButtonInput(many=True, allow_empty=False, max_length=7)


class CoordsInput(InputSerializer):
    latitude = StrictFloatField(min_value=-90, max_value=90)
    longitude = StrictFloatField(min_value=-180, max_value=180)
    title = StrictCharField(required=False, max_length=255)


class StickerInput(InputSerializer):
    id = StrictCharField(max_length=128)
    url = StrictCharField(required=False, max_length=2048, validators=[validate_button_url])


class MessageInput(InputSerializer):
    type = serializers.ChoiceField(choices=Message.Type.values)
    body = StrictCharField(required=False, allow_blank=True, max_length=65536, trim_whitespace=False)
    markdown = StrictCharField(required=False, allow_blank=True, max_length=65536, trim_whitespace=False)
    file = TenantPrimaryKeyField(queryset=File.objects.all(), required=False, missing="422")
    coords = CoordsInput(required=False)
    sticker = StickerInput(required=False)
    keyboard = KeyboardInput(required=False)
    origin = StrictCharField(required=False, max_length=64)
    agent_id = TenantPrimaryKeyField(
        queryset=Agent.objects.all(),
        required=False,
        missing="422",
        help_text="The sending agent: a human agent of this widget (never the AI operator), not banned. "
        "Required when the chat has no assigned agent (422 otherwise); optional when it has one, which "
        "then sends.",
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
        if errors:
            raise serializers.ValidationError(errors)
        chat = self.context.get("chat")
        if chat is not None and chat.agent_id is None and "agent_id" not in attrs:
            raise serializers.ValidationError({"agent_id": ["Required: the chat has no assigned agent."]})
        return attrs


class TypingInput(InputSerializer):
    state = serializers.ChoiceField(choices=["start", "stop"])


class SeenInput(InputSerializer):
    message_id = StrictIntegerField(min_value=1)

    def validate_message_id(self, value: int) -> Message:
        chat = self.context["chat"]
        message = Message.objects.filter(chat=chat, widget_id=chat.widget_id, pk=value).first()
        if message is None:
            raise serializers.ValidationError("No such message in this chat.")
        return message
