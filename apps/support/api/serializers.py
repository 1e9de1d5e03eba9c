"""Inputs (strict: a JSON object with known keys only) and documentation shapes of the support
routes."""

from __future__ import annotations

from django.core.validators import ProhibitNullCharactersValidator
from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from apps.core.api.query import IdQueryField, MomentField
from apps.core.api.serializers import (
    InputSerializer,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    StrictRegexField,
)

from ..selectors import CHAT_LIST_MAX
from ..services import CLAIM_TTL_MAX, CLAIM_TTL_MIN

CLAIM_ID_PATTERN = r"^[A-Za-z0-9_-]{8,64}$"


# --- queries -----------------------------------------------------------------------------------------


class SupportChatListQuery(InputSerializer):
    updated_since = MomentField(help_text="Required; at most 7 days back.")
    awaiting = serializers.ChoiceField(
        choices=["client", "any"],
        required=False,
        default="any",
        help_text="`client`: only chats whose last message is the customer's; `any` (default): every chat.",
    )
    min_idle_sec = serializers.IntegerField(
        min_value=0,
        max_value=7 * 86400,
        required=False,
        default=180,
        help_text="Only chats whose last message is at least this many seconds old; 0 keeps every chat.",
    )
    channel = serializers.RegexField(
        r"^[a-z0-9_]{1,64}$", max_length=64, required=False, help_text="Only chats of this channel code."
    )
    has_open_ticket = serializers.ChoiceField(
        choices=["true", "false"],
        required=False,
        help_text="`true`: only chats with an open ticket; `false`: only chats without one.",
    )
    limit = serializers.IntegerField(
        min_value=1,
        max_value=CHAT_LIST_MAX,
        required=False,
        default=CHAT_LIST_MAX,
        help_text="At most this many chats.",
    )


class SupportMessageListQuery(InputSerializer):
    after_id = IdQueryField(required=False, help_text="Only messages with a greater id: the last `id` seen.")
    limit = serializers.IntegerField(
        min_value=1, max_value=200, required=False, default=100, help_text="At most this many messages."
    )
    include = serializers.RegexField(
        r"^(system|notes)(,(system|notes))?$", required=False, help_text="Comma list of `system`, `notes`."
    )


# --- bodies ------------------------------------------------------------------------------------------


class ClaimInput(InputSerializer):
    ttl_sec = StrictIntegerField(
        min_value=CLAIM_TTL_MIN,
        max_value=CLAIM_TTL_MAX,
        required=False,
        default=300,
        help_text="How long the lease holds, 60 to 1800 seconds (default 300).",
    )
    claim_id = StrictRegexField(
        CLAIM_ID_PATTERN,
        required=False,
        help_text="Your id of this lease; generated when omitted. Release names the lease with it.",
    )
    note = StrictCharField(
        max_length=500, required=False, allow_blank=True, help_text="A note for the audit, up to 500 characters."
    )


class ReleaseInput(InputSerializer):
    claim_id = StrictRegexField(CLAIM_ID_PATTERN, help_text="The `claim_id` of the lease to release.")


class ReplyTextField(StrictCharField):
    """A JSON string taken as sent: the reply rules (normalisation, then 422 invalid_text or
    forbidden_whitespace) judge every character, U+0000 included."""

    def __init__(self, **kwargs):
        super().__init__(trim_whitespace=False, allow_blank=True, **kwargs)
        self.validators = [v for v in self.validators if not isinstance(v, ProhibitNullCharactersValidator)]


class ReplyInput(InputSerializer):
    # The text is checked by the reply rules after normalisation (linkguard), not here: its length
    # limits apply to the normalised text.
    text = ReplyTextField(
        max_length=20000,
        help_text="The reply, 1 to 3500 characters once normalised; links only from the official catalogue.",
    )
    expected_last_message_id = StrictIntegerField(
        min_value=0,
        allow_null=True,
        help_text="The chat's latest message id you saw; a newer message is 409 `chat_changed`.",
    )
    ticket = StrictIntegerField(
        min_value=1, required=False, help_text="The number of a ticket of this chat the reply answers."
    )
    close_ticket = StrictBooleanField(
        required=False,
        default=True,
        help_text="With `ticket`: true (the default) closes it as answered; false keeps it open, held for the owner.",
    )
    claim_id = StrictRegexField(
        CLAIM_ID_PATTERN, required=False, help_text="The `claim_id` of your lease on the chat, when you hold one."
    )
    note = StrictCharField(
        max_length=500, required=False, allow_blank=True, help_text="A note for the audit, up to 500 characters."
    )


# --- documentation shapes ---------------------------------------------------------------------------


class SupportAccountDoc(serializers.Serializer):
    link = serializers.ChoiceField(
        choices=["anonymous", "awaiting_code", "verified", "none"],
        help_text="`anonymous`, `awaiting_code`, `verified`, or `none` (never bind such a chat to an account).",
    )
    email = serializers.CharField(
        allow_null=True,
        help_text=(
            "The confirmed mailbox: detail endpoints only, while verified or when the integrating backend named one; "
            "always null for app-ticket chats."
        ),
    )
    app_user_id = serializers.CharField(
        allow_null=True, help_text="The application account id the chat is bound to; null when unbound."
    )
    link_source = serializers.CharField(
        required=False, help_text="email_code, agent_code, cabinet, telegram_link or app_ticket"
    )
    identity_expires_at = serializers.DateTimeField(allow_null=True, help_text="When the identity lapses.")
    regrant_needed = serializers.BooleanField(
        help_text="True when the identity holds but the assistant's 30-minute read grant ran out."
    )
    code_pending = serializers.BooleanField(help_text="True while a code can still be typed.")
    code_expires_at = serializers.DateTimeField(
        allow_null=True, help_text="When the code stops working (10 minutes after sending)."
    )
    last_code_result = serializers.CharField(
        allow_null=True,
        help_text="`verified`, `wrong`, `expired`, `attempts_exhausted`, `rate_limited`, `consumed`, or null.",
    )
    last_code_at = serializers.DateTimeField(
        allow_null=True, help_text="When `last_code_result` was recorded; null when none."
    )
    email_requested = serializers.BooleanField(
        help_text="True when the chat asked the customer for the mailbox and will mail the code on arrival."
    )


class SupportLeaseDoc(serializers.Serializer):
    held_by = serializers.CharField(help_text="Who holds the lease.")
    mine = serializers.BooleanField(help_text="True when the calling token holds it.")
    claim_id = serializers.CharField(allow_null=True, help_text="The lease's `claim_id`; null when it is not yours.")
    claimed_at = serializers.DateTimeField(help_text="When the lease was taken.")
    expires_at = serializers.DateTimeField(help_text="When the lease lapses.")


class SupportSenderDoc(serializers.Serializer):
    kind = serializers.ChoiceField(
        choices=["client", "ai", "support", "external_operator", "system"],
        help_text="`client`, `ai`, `support`, `external_operator` or `system`.",
    )
    agent_id = serializers.IntegerField(
        allow_null=True, required=False, help_text="The writing operator's agent id; null when no operator wrote it."
    )


class SupportLastMessageDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The message's id.")
    sender = SupportSenderDoc(help_text="Who wrote the message.")
    type = serializers.CharField(help_text="The message's type.")
    created_at = serializers.DateTimeField(help_text="When the message was stored.")


class SupportTicketBriefDoc(serializers.Serializer):
    number = serializers.IntegerField(help_text="The ticket's number.")
    state = serializers.CharField(help_text="open or closed")
    priority = serializers.CharField(help_text="The ticket's priority.")
    held_for_owner = serializers.BooleanField(help_text="True when a reply kept the ticket open for the owner.")
    created_at = serializers.DateTimeField(help_text="When the ticket was filed.")


class SupportAiStateDoc(serializers.Serializer):
    handling = serializers.CharField(help_text="The chat's `handling`.")
    handled_by = serializers.CharField(allow_null=True, help_text="Who handles the chat now; null when nobody does.")


class SupportChatDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The chat's id.")
    status = serializers.CharField(help_text="The chat's status.")
    channel = serializers.CharField(help_text="The chat's channel code.")
    delivery = serializers.CharField(
        help_text=(
            "How the customer gets a reply: `widget_on_return` (the widget, on the visitor's return), "
            "`app_ticket_status` (the app's ticket status) or `messenger`."
        )
    )
    locale = serializers.CharField(allow_null=True, help_text="The customer's language tag; null when unknown.")
    last_message = SupportLastMessageDoc(allow_null=True, help_text="The chat's latest message; null before the first.")
    unanswered_count = serializers.IntegerField(
        help_text="Customer messages after the last visible operator or AI message."
    )
    ai_state = SupportAiStateDoc(help_text="Who handles the chat: the AI or people.")
    open_ticket = SupportTicketBriefDoc(allow_null=True, help_text="The chat's open ticket; null when none.")
    account = SupportAccountDoc(help_text="`chat.account`: the link between the chat and an application account.")
    lease = SupportLeaseDoc(allow_null=True, help_text="The current lease on the chat; null when none.")
    created_at = serializers.DateTimeField(help_text="When the chat was created.")
    updated_at = serializers.DateTimeField(help_text="When the chat was last updated.")


# The list answers one object (`many=False`): drf-spectacular would document a list action without a
# paginator as an array of it.
@extend_schema_serializer(many=False)
class SupportChatListDoc(serializers.Serializer):
    data = SupportChatDoc(many=True, help_text="The chats, longest waiting first.")
    next_cursor = serializers.CharField(
        allow_null=True, help_text="Always null: page on by passing the last chat's `updated_at` as `updated_since`."
    )


class SupportAttachmentRefDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The file's id.")
    name = serializers.CharField(help_text="The original file name.")
    content_type = serializers.CharField(help_text="The file's media type.")
    size = serializers.IntegerField(help_text="The file's size in bytes.")


class SupportMessageDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The message's id: pass the last one seen as `after_id`.")
    chat_id = serializers.IntegerField(help_text="The chat's id.")
    type = serializers.CharField(help_text="The message's type.")
    text = serializers.CharField(help_text="The message's text.")
    sender = SupportSenderDoc(help_text="Who wrote the message.")
    visibility = serializers.CharField(help_text="`public`, `note`, `email` or `internal`.")
    via_support_api = serializers.BooleanField(help_text="True when the message was sent through the support API.")
    attachment = SupportAttachmentRefDoc(allow_null=True, help_text="The attached file; null when none.")
    created_at = serializers.DateTimeField(help_text="When the message was stored.")


class SupportChatRefDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The chat's id.")
    account = SupportAccountDoc(help_text="`chat.account`: the link between the chat and an application account.")


class SupportMessageListDoc(serializers.Serializer):
    data = SupportMessageDoc(many=True, help_text="The messages, oldest first.")
    chat = SupportChatRefDoc(help_text="The chat and its `account`.")
    next_cursor = serializers.CharField(allow_null=True, help_text="Opaque cursor of the next page.")


class SupportAttachmentDoc(serializers.Serializer):
    kind = serializers.ChoiceField(
        choices=["image", "text"], help_text="`image` (base64 in `data_base64`) or `text` (in `text`)."
    )
    name = serializers.CharField(help_text="The original file name.")
    mime_type = serializers.CharField(help_text="The file's media type.")
    size = serializers.IntegerField(help_text="The file's size in bytes.")
    data_base64 = serializers.CharField(required=False, help_text="The image, base64-encoded; `image` only.")
    text = serializers.CharField(required=False, help_text="The document's text; `text` only.")
    truncated = serializers.BooleanField(required=False, help_text="True when `text` was cut short; `text` only.")
    chat = SupportChatRefDoc(help_text="The chat and its `account`.")


class SupportClaimDoc(serializers.Serializer):
    chat_id = serializers.IntegerField(help_text="The chat's id.")
    claim_id = serializers.CharField(help_text="The lease's `claim_id`.")
    held_by = serializers.CharField(help_text="Who holds the lease.")
    ttl_sec = serializers.IntegerField(help_text="How long the lease holds, in seconds.")
    claimed_at = serializers.DateTimeField(help_text="When the lease was taken.")
    expires_at = serializers.DateTimeField(help_text="When the lease lapses.")
    action_id = serializers.IntegerField(help_text="The audited action's id.")


class SupportReleaseDoc(serializers.Serializer):
    chat_id = serializers.IntegerField(help_text="The chat's id.")
    released = serializers.BooleanField(help_text="True when a lease was released.")
    action_id = serializers.IntegerField(help_text="The audited action's id.")


class SupportTicketEffectDoc(serializers.Serializer):
    ticket = serializers.IntegerField(allow_null=True, help_text="The ticket's number; null when the reply named none.")
    effect = serializers.ChoiceField(
        choices=["none", "closed", "held_for_owner", "unchanged"],
        help_text="`none`, `closed`, `held_for_owner` or `unchanged`.",
    )
    state = serializers.CharField(required=False, help_text="The ticket's state after the reply: `open` or `closed`.")


class SupportReplyDoc(serializers.Serializer):
    action_id = serializers.IntegerField(help_text="The audited action's id.")
    status = serializers.ChoiceField(
        choices=["stored", "pending"],
        help_text="`stored`, or `pending` when storing was not confirmed within 5 seconds (202).",
    )
    message_id = serializers.IntegerField(allow_null=True, help_text="The stored message; null while `pending`.")
    chat_id = serializers.IntegerField(help_text="The chat's id.")
    delivery = serializers.CharField(
        help_text="How the customer gets the reply: `widget_on_return`, `app_ticket_status` or `messenger`."
    )
    text = serializers.CharField(help_text="The text as sent, after normalisation.")
    ticket_effect = SupportTicketEffectDoc(help_text="What the reply did to a ticket.")
    chat = SupportChatRefDoc(help_text="The chat and its `account`.")


class SupportActionDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The action's id.")
    kind = serializers.CharField(help_text="What the call was.")
    outcome = serializers.ChoiceField(choices=["ok", "refused", "pending"], help_text="`ok`, `refused` or `pending`.")
    status_code = serializers.IntegerField(
        allow_null=True, help_text="The HTTP status answered; null when none was recorded."
    )
    reason = serializers.CharField(allow_null=True, help_text="The refusal's code; null unless refused.")
    service_agent = serializers.CharField(help_text="The `X-Service-Agent` the call named.")
    chat_id = serializers.IntegerField(allow_null=True, help_text="The chat concerned; null when none.")
    ticket_number = serializers.IntegerField(allow_null=True, help_text="The ticket concerned; null when none.")
    message_id = serializers.IntegerField(allow_null=True, help_text="The message concerned; null when none.")
    text_sha256 = serializers.CharField(
        allow_null=True, help_text="SHA-256 of the sent text (never the text); null when none."
    )
    text_length = serializers.IntegerField(allow_null=True, help_text="The sent text's length; null when none.")
    is_support_reply = serializers.BooleanField(help_text="True for a reply to a customer.")
    created_at = serializers.DateTimeField(help_text="When the call was made.")
