"""Inputs of the visitor API (`XInput`, strict: unknown members are 422) and its output shapes.

Message output is `apps.chats.payloads.visitor_message_frame`, shared with the websocket.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

from rest_framework import serializers

from apps.core.api.query import IdQueryField
from apps.core.api.serializers import (
    InputSerializer,
    LabelField,
    StrictCharField,
    StrictEmailField,
    StrictIntegerField,
    StrictRegexField,
)
from apps.core.models import Widget
from apps.proactive import selectors as proactive_selectors

from ..models import Message
from . import services

BODY_MAX = 4096


class FileUploadInput(InputSerializer):
    """Multipart `file`: the file itself, at most MAX_FILE_BYTES (nothing else in the form)."""

    file = serializers.FileField()


def file_created_payload(file) -> dict:
    return {
        "id": file.pk,
        "name": file.original_name,
        "content_type": file.content_type,
        "size": file.size,
        "created_at": file.created_at.isoformat(),
    }


def _not_blank(value: str) -> str:
    if not value.strip():
        raise serializers.ValidationError("Must not be blank.")
    return value


def _http_url(value: str) -> str:
    try:
        parts = urlsplit(value)
    except ValueError:  # an unclosed `[` host: no URL at all
        raise serializers.ValidationError("Must be an absolute http(s) URL.") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise serializers.ValidationError("Must be an absolute http(s) URL.")
    return value


class SessionInput(InputSerializer):
    name = LabelField(required=False, allow_blank=True, max_length=255, help_text="The visitor's name, optional.")
    email = StrictEmailField(
        required=False, allow_blank=True, max_length=255, help_text="The visitor's e-mail address, optional."
    )
    phone = StrictRegexField(
        r"^[0-9+()\-. ]{0,64}$",
        required=False,
        allow_blank=True,
        max_length=64,
        help_text="The visitor's phone number, optional.",
    )
    locale = StrictRegexField(
        r"^[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8})*$",
        required=False,
        allow_blank=True,
        max_length=16,
        help_text="The visitor's language tag (`ru`, `en-US`...), optional.",
    )
    page_url = StrictCharField(
        required=False,
        allow_blank=True,
        max_length=2000,
        validators=[_http_url],
        help_text="The `http(s)` address of the page the visitor is on, optional.",
    )


class MessageInput(InputSerializer):
    """`{type: "text", body}` or `{type: "file" | "image", file_id}` (a file of this widget)."""

    type = serializers.ChoiceField(
        choices=[Message.Type.TEXT, Message.Type.FILE, Message.Type.IMAGE], help_text="`text`, `file` or `image`."
    )
    body = StrictCharField(
        required=False,
        min_length=1,
        max_length=BODY_MAX,
        trim_whitespace=False,
        validators=[_not_blank],
        help_text="The text; required for `text`, refused on the others.",
    )
    file_id = StrictIntegerField(
        required=False,
        min_value=1,
        help_text="The `id` of an upload (`POST .../files`); required for `file` and `image` (an image file).",
    )
    proactive_id = StrictIntegerField(
        required=False,
        min_value=1,
        help_text="The `id` of the proactive message (the config's `proactive_messages`) this message answers. When "
        "the message starts the conversation, its first message is the proactive text, then this one. An unknown, "
        "disabled or other widget's id is 422.",
    )

    def validate(self, attrs):
        kind = attrs["type"]
        errors = {}
        if kind == Message.Type.TEXT:
            if "body" not in attrs:
                errors["body"] = ["Required for type text."]
            if "file_id" in attrs:
                errors["file_id"] = ["Only file and image messages carry a file."]
        else:
            if "body" in attrs:
                errors["body"] = ["Only text messages carry a body."]
            if "file_id" not in attrs:
                errors["file_id"] = [f"Required for type {kind}."]
        if errors:
            raise serializers.ValidationError(errors)
        if kind != Message.Type.TEXT:
            file = services.attachable_file(
                widget=self.context["widget"], contact=self.context["contact"], file_id=attrs["file_id"]
            )
            if file is None:
                raise serializers.ValidationError({"file_id": ["Unknown file."]})
            if kind == Message.Type.IMAGE and not file.content_type.startswith("image/"):
                raise serializers.ValidationError({"file_id": ["Must be an image file."]})
            attrs["file"] = file
        if "proactive_id" in attrs:
            found = proactive_selectors.get_enabled(widget=self.context["widget"], message_id=attrs["proactive_id"])
            if found is None:
                raise serializers.ValidationError({"proactive_id": ["Unknown proactive message."]})
            attrs["proactive"] = found
        return attrs


class MessageListQuery(InputSerializer):
    # None: past any id a message can have, so nothing comes after it.
    after_id = IdQueryField(required=False)


class ProactiveEventInput(InputSerializer):
    kind = serializers.ChoiceField(
        choices=["shown", "opened"],
        help_text="`shown`: the widget showed the bubble; `opened`: the visitor clicked it (opening the widget).",
    )


class TypingInput(InputSerializer):
    state = serializers.ChoiceField(choices=["start", "stop"], help_text="`start` or `stop`.")


class RatingInput(InputSerializer):
    value = StrictIntegerField(min_value=1, max_value=5, help_text="The rating, 1 to 5.")
    comment = StrictCharField(
        required=False,
        allow_blank=True,
        max_length=2000,
        trim_whitespace=False,
        help_text="A comment, optional, up to 2000 characters.",
    )


class OfflineInput(InputSerializer):
    name = LabelField(required=False, allow_blank=True, max_length=255, help_text="The visitor's name, optional.")
    email = StrictEmailField(
        required=False, allow_blank=True, max_length=255, help_text="The visitor's e-mail address, optional."
    )
    phone = StrictRegexField(
        r"^[0-9+()\-. ]{0,64}$",
        required=False,
        allow_blank=True,
        max_length=64,
        help_text="The visitor's phone number, optional.",
    )
    message = StrictCharField(
        min_length=1,
        max_length=BODY_MAX,
        trim_whitespace=False,
        validators=[_not_blank],
        help_text="The visitor's message, 1 to 4096 characters.",
    )


class PrechatInput(InputSerializer):
    values = serializers.DictField(
        child=serializers.JSONField(allow_null=True),
        help_text="The answers by field `key`: a string for text, email, phone and select fields (a select's "
        "option `value`), a JSON number for number fields, true or false for checkboxes. An optional field may be "
        "left out.",
    )


class IdentityInput(InputSerializer):
    """`ChatWidget.setUser`: the person's id on the site, the HMAC proving it, optional details."""

    id = StrictCharField(
        min_length=1,
        max_length=128,
        trim_whitespace=False,
        validators=[_not_blank],
        help_text="The person's id on the site, 1 to 128 characters, exactly as the hash was computed over it.",
    )
    hash = StrictCharField(
        required=False,
        allow_blank=True,
        max_length=128,
        trim_whitespace=False,
        help_text="Lowercase hex HMAC-SHA256 of `id` under the widget's identity secret (computed on the site's "
        "server); a wrong or missing one keeps the details unverified (`optional`) or is refused (`required`).",
    )
    name = LabelField(required=False, allow_blank=True, max_length=255, help_text="The person's name, optional.")
    email = StrictEmailField(
        required=False, allow_blank=True, max_length=255, help_text="The person's e-mail address, optional."
    )
    phone = StrictRegexField(
        r"^[0-9+()\-. ]{0,64}$",
        required=False,
        allow_blank=True,
        max_length=64,
        help_text="The person's phone number, optional.",
    )
    attributes = serializers.DictField(
        required=False,
        help_text="Merged into the contact's attributes by the `PATCH .../attributes` rules, optional.",
    )


# --- output ----------------------------------------------------------------------------------------


def config_payload(
    widget: Widget, *, online: bool, operators: list[dict] | None = None, absolute: Callable[[str], str] | None = None
) -> dict:
    """Public settings the embed script starts with. Members are only ever added: the widget
    settings issue adds its appearance and language members here from its own selector.
    `operators` is the cached roster (services.header_roster), which the view replaces per request
    with the visitor's view of it (services.header_operators)."""
    return {
        "button_guid": widget.button_guid,
        "name": widget.name,
        "language": "auto",
        "online": online,
        "features": {"rating": True, "offline_form": True},
        "operators": operators or [],
        "show_queue_position": services.shows_queue_position(widget),
        "proactive_messages": proactive_selectors.config_messages(widget, absolute=absolute),
    }


def message_created_payload(message: Message) -> dict:
    return {"id": message.pk, "chat_id": message.chat_id, "created_at": message.created_at.isoformat()}
