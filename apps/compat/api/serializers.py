"""The legacy wire formats as they arrive. Members the legacy senders add and we do not read
(`id`, `site_id`, `client_id`, `force_reply`, ...) are accepted and ignored, so an integration
migrates by swapping the base URL; what we read is checked strictly."""

from __future__ import annotations

from rest_framework import serializers

from apps.core.api.serializers import LabelField, StrictCharField, validate_https_link
from apps.platform.numbers import parse_id

EVENTS = ("BOT_MESSAGE", "INVITE_AGENT", "INIT_RATE")
MESSAGE_TYPES = ("TEXT", "MARKDOWN", "BUTTONS")
MAX_TEXT = 65536
# Unix seconds below this; milliseconds at or above it (1e11 s is the year 5138).
MILLISECONDS_FROM = 10**11


class LegacyIdField(serializers.Field):
    """An id the legacy platform sends as a string or a number: kept as a string. A NUL or a lone
    surrogate is refused (no text column stores them; PostgreSQL refuses NUL outright)."""

    default_error_messages = {
        "invalid": "Must be a string or an integer.",
        "blank": "Must not be empty.",
        "characters": "Must not contain NUL or surrogate characters.",
    }

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, (str, int)):
            self.fail("invalid")
        value = str(data)
        if not value.strip() or len(value) > 255:
            self.fail("blank")
        if "\x00" in value or any("\ud800" <= ch <= "\udfff" for ch in value):
            self.fail("characters")
        return value

    def to_representation(self, value):
        return value


class ChatIdField(serializers.Field):
    """`chat_id` as a string of digits or an integer: our numeric chat id. Too large an id is
    None (it names no chat: 404)."""

    default_error_messages = {"invalid": "Must be a chat id (digits, as a string or a number)."}

    def to_internal_value(self, data):
        if isinstance(data, bool):
            self.fail("invalid")
        if isinstance(data, int):
            data = str(data) if data >= 0 else "-"
        try:
            return parse_id(data)
        except ValueError:
            self.fail("invalid")

    def to_representation(self, value):
        return str(value)


class TimestampField(serializers.Field):
    """A Unix time in seconds or milliseconds (integer, or digits in a string): seconds out."""

    default_error_messages = {"invalid": "Must be a Unix time in seconds or milliseconds."}

    def to_internal_value(self, data):
        if isinstance(data, bool):
            self.fail("invalid")
        if isinstance(data, float) and data.is_integer():
            data = int(data)
        if isinstance(data, str):
            try:
                data = int(parse_id(data) or -1)
            except ValueError:
                self.fail("invalid")
        if not isinstance(data, int) or data < 0:
            self.fail("invalid")
        return data // 1000 if data >= MILLISECONDS_FROM else data

    def to_representation(self, value):
        return value


class BotButtonInput(serializers.Serializer):
    text = StrictCharField(min_length=1, max_length=64, trim_whitespace=False)
    id = LegacyIdField(required=False)
    url = StrictCharField(required=False, max_length=2048, validators=[validate_https_link])


class BotMessageBodyInput(serializers.Serializer):
    type = serializers.ChoiceField(choices=MESSAGE_TYPES)
    text = StrictCharField(required=False, allow_blank=True, max_length=MAX_TEXT, trim_whitespace=False)
    title = StrictCharField(required=False, allow_blank=True, max_length=MAX_TEXT, trim_whitespace=False)
    content = serializers.JSONField(required=False)
    buttons = BotButtonInput(many=True, required=False, allow_empty=False, max_length=7)
    timestamp = TimestampField(required=False)

    def validate(self, attrs):
        kind = attrs["type"]
        content = attrs.get("content")
        if kind == "MARKDOWN" and not attrs.get("text"):
            # the markdown may come as `content` (a string or {text}), checked like `text`
            if isinstance(content, dict):
                content = content.get("text")
            if isinstance(content, str):
                try:
                    attrs["text"] = self.fields["text"].run_validation(content)
                except serializers.ValidationError as exc:
                    raise serializers.ValidationError({"content": exc.detail}) from None
        if kind == "BUTTONS" and not attrs.get("buttons"):
            raise serializers.ValidationError({"buttons": ["A BUTTONS message needs 1 to 7 buttons."]})
        if kind != "BUTTONS" and attrs.get("buttons"):
            raise serializers.ValidationError({"buttons": ["Only a BUTTONS message carries buttons."]})
        if kind != "BUTTONS" and not (attrs.get("text") or "").strip():
            raise serializers.ValidationError({"text": ["This field is required."]})
        if len(attrs.get("text") or "") > MAX_TEXT:
            raise serializers.ValidationError({"text": [f"At most {MAX_TEXT} characters."]})
        return attrs


class BotEventInput(serializers.Serializer):
    """`event` (the legacy name) or `message_type` (the same value) names the call."""

    event = serializers.ChoiceField(choices=EVENTS, required=False)
    message_type = serializers.ChoiceField(choices=EVENTS, required=False)
    chat_id = ChatIdField()
    client_id = LegacyIdField(required=False)
    id = LegacyIdField(required=False)
    message = BotMessageBodyInput(required=False)

    def validate(self, attrs):
        event, message_type = attrs.get("event"), attrs.get("message_type")
        if event and message_type and event != message_type:
            raise serializers.ValidationError({"message_type": ["Must match event when both are sent."]})
        kind = event or message_type
        if not kind:
            raise serializers.ValidationError({"event": ["This field is required (or message_type)."]})
        if kind == "BOT_MESSAGE" and "message" not in attrs:
            raise serializers.ValidationError({"message": ["This field is required for BOT_MESSAGE."]})
        attrs["kind"] = kind
        return attrs


class ChatSenderInput(serializers.Serializer):
    id = LegacyIdField()
    name = LabelField(required=False, allow_blank=True, max_length=255)


class ChatRecipientInput(serializers.Serializer):
    id = LegacyIdField()


class ChatMessageBodyInput(serializers.Serializer):
    type = serializers.ChoiceField(choices=["text"], error_messages={"invalid_choice": "Only text messages."})
    text = StrictCharField(min_length=1, max_length=MAX_TEXT, trim_whitespace=False)
    id = LegacyIdField(required=False)

    def validate_text(self, value: str) -> str:
        if not value.strip():
            raise serializers.ValidationError("This field may not be blank.")
        return value


class ChatEventInput(serializers.Serializer):
    sender = ChatSenderInput()
    recipient = ChatRecipientInput()
    message = ChatMessageBodyInput()


# --- documentation only ---------------------------------------------------------------------------


class BotAnswerDoc(serializers.Serializer):
    status = serializers.ChoiceField(
        choices=["ok", "agent_invited", "no_agents_online", "rating_requested"],
        help_text="`no_agents_online`: INVITE_AGENT found nobody online; the bot keeps the chat (not an error).",
    )
    message_id = serializers.IntegerField(required=False, help_text="The stored message (`BOT_MESSAGE`).")
    agent_id = serializers.IntegerField(required=False, help_text="The operator the chat went to (`INVITE_AGENT`).")


class ChatAcceptedDoc(serializers.Serializer):
    status = serializers.ChoiceField(choices=["accepted"], help_text="`accepted`.")
    chat_id = serializers.IntegerField(help_text="Our numeric id of the chat.")
    message_id = serializers.IntegerField(help_text="The stored message's id.")
