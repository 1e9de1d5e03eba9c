"""Documented shapes of the visitor API's answers (OpenAPI only: the views build plain dicts with
apps.chats.payloads and serializers.py; tests check real answers against these)."""

from __future__ import annotations

from rest_framework import serializers

from apps.proactive.models import ProactiveMessage

from ..api.serializers import CoordsDoc, FileRefDoc, KeyboardDoc, MessageSourceDoc, StickerDoc
from ..models import Message


class VisitorHeaderOperatorDoc(serializers.Serializer):
    name = serializers.CharField(help_text="The operator's display name (as messages show it).")
    avatar_url = serializers.CharField(allow_null=True, help_text="Absolute URL of the avatar, or null.")
    kind = serializers.ChoiceField(choices=["human", "ai"], help_text="`human` or `ai`.")
    presence = serializers.ChoiceField(
        choices=["online", "away", "offline"],
        help_text="Live: a person is online while their console is connected and not switched to away, "
        "offline without a connected console; an AI operator is online while active and the built-in AI answers "
        "(switched on, with a provider credential), away while paused, offline otherwise.",
    )


class VisitorProactiveRulesDoc(serializers.Serializer):
    url_patterns = serializers.ListField(
        child=serializers.CharField(), help_text="Globs against the page's full URL; any one must match (empty: any)."
    )
    time_on_page_seconds = serializers.IntegerField(help_text="Seconds on the page.")
    visits_at_least = serializers.IntegerField(help_text="Visits counted in the browser, the current one included.")
    attributes = serializers.DictField(help_text="Values the visitor's attributes (`setAttributes`) must equal.")
    only_when_open = serializers.BooleanField(help_text="Only inside the business hours (the config's `open`).")


class VisitorProactiveSenderDoc(serializers.Serializer):
    name = serializers.CharField(help_text="The message's agent's name, else the widget's name.")
    avatar_url = serializers.CharField(allow_null=True, help_text="Absolute URL of the agent's avatar, or null.")


class VisitorProactiveDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="Sent back as `proactive_id` with the reply, and in `POST .../events`.")
    name = serializers.CharField(help_text="The name the page's `trigger(name)` uses.")
    text_i18n = serializers.DictField(child=serializers.CharField(), help_text="`{language: text}`.")
    sender = VisitorProactiveSenderDoc(help_text="Who the bubble shows as the sender.")
    rules = VisitorProactiveRulesDoc(help_text="Evaluated in the page; every rule must hold.")
    frequency = serializers.ChoiceField(
        choices=ProactiveMessage.Frequency.choices, help_text="The cap the browser keeps."
    )
    priority = serializers.IntegerField(help_text="Of the messages that match, the largest shows.")


class VisitorConfigDoc(serializers.Serializer):
    button_guid = serializers.CharField(help_text="The widget's public 32-character hex guid.")
    name = serializers.CharField(help_text="The widget's name.")
    language = serializers.CharField(help_text="`auto` or a language code (widget_default_language).")
    online = serializers.BooleanField(
        help_text="Someone answers now: an active person of the widget has the console open (live presence, "
        "never cached), or a machine answers (the built-in AI switched on, not in shadow mode, with an "
        "active AI operator and a credential, or an active external operator; these within 30 s of a "
        "change), and the widget's business hours say open. False: the widget shows its offline form."
    )
    people_online = serializers.BooleanField(
        help_text="A person answers now: an active person of the widget has the console open (live presence, never "
        "cached) and the business hours say open; machines do not count. False while a chat a machine handed to "
        "people waits: the widget offers its offline form instead of the chat."
    )
    open = serializers.BooleanField(help_text="Inside the widget's business hours (always true while they are off).")
    opens_at = serializers.CharField(
        allow_null=True,
        help_text="While closed: the next opening, ISO 8601 with offset in the widget's time zone; null while open "
        "or when none is within 14 days.",
    )
    outside_hours = serializers.ChoiceField(
        choices=["offline_form", "ai_only", "hidden"],
        allow_null=True,
        help_text="What the widget does while closed (null while business hours are off): `offline_form`, `ai_only` "
        "(the chat stays, the AI answers) or `hidden` (no launcher unless a conversation is open).",
    )
    features = serializers.DictField(help_text="Switches the embed script reads (`rating`, `offline_form`, ...).")
    settings = serializers.DictField(required=False, help_text="Every public appearance setting, as rendered.")
    texts = serializers.DictField(required=False, help_text="Interface texts per enabled locale.")
    icon_urls = serializers.DictField(required=False, help_text="Absolute URLs of the custom icons in use.")
    operators = VisitorHeaderOperatorDoc(
        many=True,
        help_text="The operators the header shows, by `operators_display_mode`: `online` those online, `all` every "
        "header-visible operator (online first, then away, then offline), `single` one representative (the first "
        "online, else the first away, else the first), `hidden` none; at most 10, header-visible "
        "(`show_in_header`) human and AI operators only, never banned ones.",
    )
    identity_verification = serializers.ChoiceField(
        choices=["off", "optional", "required"],
        help_text="The widget setting of the same name: whether `setUser`'s hash is checked, and whether a wrong "
        "or missing one is refused.",
    )
    show_queue_position = serializers.BooleanField(
        help_text="The widget tells a visitor waiting for an operator their place in the routing queue "
        "(`GET .../queue` and the socket's `queue` frame; the routing settings' `show_queue_position`)."
    )
    proactive_messages = VisitorProactiveDoc(
        many=True,
        help_text="The widget's enabled proactive messages, largest priority first: the widget evaluates their "
        "rules in the page and shows the first that matches as a bubble.",
    )


class VisitorIdentityDoc(serializers.Serializer):
    verified = serializers.BooleanField(
        help_text="The hash proved the id: the session speaks for the person's one contact (reload the "
        "conversation when `contact_id` changed). False: the id is kept as an unverified detail."
    )
    contact_id = serializers.CharField(help_text="The 32-character guid of the contact the session now speaks for.")


class VisitorAttributesDoc(serializers.Serializer):
    attributes = serializers.DictField(help_text="Every attribute of the contact after the merge.")


class VisitorQueueDoc(serializers.Serializer):
    position = serializers.IntegerField(
        allow_null=True, min_value=1, help_text="1 is the next to be served; null when not waiting."
    )
    estimated_wait_seconds = serializers.IntegerField(
        allow_null=True,
        min_value=0,
        help_text="The position times the median wait of the widget's last 50 assigned chats; null when not "
        "waiting or with fewer than 5 such chats.",
    )


class VisitorSessionDoc(serializers.Serializer):
    session_token = serializers.CharField(
        help_text="Shown once: send it as `Authorization: Visitor <session_token>` and as `?session=` of the websocket."
    )
    client_id = serializers.CharField(help_text="The new contact's 32-character guid.")


class VisitorAuthorDoc(serializers.Serializer):
    kind = serializers.ChoiceField(
        choices=Message.Author.values, help_text="`client` (the visitor), `agent`, `ai` or `system`."
    )
    name = serializers.CharField(
        allow_blank=True,
        help_text="The operator's display name; for the visitor's own messages the name they gave (empty when none).",
    )


class VisitorMessageDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The message's id: pass the last one seen as `after_id`.")
    chat_id = serializers.IntegerField(help_text="The visitor's chat.")
    type = serializers.ChoiceField(
        choices=Message.Type.values, help_text="`text`, `image`, `file`, `location`, `sticker` or `keyboard`."
    )
    body = serializers.CharField(allow_blank=True, help_text="The message's text; empty when it has none.")
    markdown = serializers.CharField(
        allow_null=True, help_text="The text as Markdown, when the sender gave one; null otherwise."
    )
    file = FileRefDoc(allow_null=True, help_text="The attachment of an `image` or `file` message; null otherwise.")
    url = serializers.CharField(allow_null=True, help_text="Short-lived download URL of a file or image.")
    coords = CoordsDoc(allow_null=True, help_text="For `location` messages; null otherwise.")
    sticker = StickerDoc(allow_null=True, help_text="For `sticker` messages; null otherwise.")
    keyboard = KeyboardDoc(allow_null=True, help_text="Link buttons of a `keyboard` message.")
    sources = MessageSourceDoc(
        many=True,
        allow_null=True,
        help_text="The documents an AI answer was built on, shown under it; null on every other message.",
    )
    author = VisitorAuthorDoc(help_text="Who wrote the message.")
    seen = serializers.BooleanField(help_text="An operator has seen it (visitor messages).")
    created_at = serializers.DateTimeField(help_text="When the message was stored.")


class VisitorMessageListDoc(serializers.Serializer):
    data = VisitorMessageDoc(many=True, help_text="Oldest first, at most 200.")


class VisitorMessageCreatedDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The stored message's id.")
    chat_id = serializers.IntegerField(help_text="The visitor's chat; the first message makes it.")
    created_at = serializers.DateTimeField(help_text="When the message was stored.")


class VisitorTypingDoc(serializers.Serializer):
    status = serializers.ChoiceField(choices=["accepted"], help_text="`accepted`.")
    forwarded = serializers.BooleanField(help_text="False when coalesced (about one per 5 s per chat) or no chat yet.")


class VisitorPrechatDoc(serializers.Serializer):
    values = serializers.DictField(
        help_text="What was stored, by field `key`: `name`, `email` and `phone` in the contact's fields, the "
        "others in its attributes (answers left out are not listed)."
    )


class VisitorRatingDoc(serializers.Serializer):
    chat_id = serializers.IntegerField(help_text="The rated chat.")
    value = serializers.IntegerField(min_value=1, max_value=5, help_text="The rating, 1 to 5.")
    comment = serializers.CharField(allow_blank=True, help_text="The visitor's comment; empty when none was given.")


class VisitorFileDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="Send it as `file_id` of a `file` or `image` message.")
    name = serializers.CharField(help_text="The original file name.")
    content_type = serializers.CharField(help_text="The file's media type.")
    size = serializers.IntegerField(help_text="The file's size in bytes.")
    created_at = serializers.DateTimeField(help_text="When the file was stored.")


class VisitorFileUploadDoc(serializers.Serializer):
    file = serializers.FileField(help_text="The file, at most 10 MB; the form holds nothing else.")
