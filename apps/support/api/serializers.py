"""Inputs (strict: a JSON object with known keys only) and documentation shapes of the support
routes."""

from __future__ import annotations

from django.core.validators import ProhibitNullCharactersValidator
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
    awaiting = serializers.ChoiceField(choices=["client", "any"], required=False, default="any")
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
    has_open_ticket = serializers.ChoiceField(choices=["true", "false"], required=False)
    limit = serializers.IntegerField(
        min_value=1,
        max_value=CHAT_LIST_MAX,
        required=False,
        default=CHAT_LIST_MAX,
        help_text=("At most this many chats."),
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
        help_text=("How long the lease holds, 60 to 1800 seconds (default 300)."),
    )
    claim_id = StrictRegexField(
        CLAIM_ID_PATTERN,
        required=False,
        help_text=("Your id of this lease; generated when omitted. Release names the lease with it."),
    )
    note = StrictCharField(
        max_length=500, required=False, allow_blank=True, help_text=("A note for the audit, up to 500 characters.")
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
        help_text=("The reply, 1 to 3500 characters once normalised; links only from the official catalogue."),
    )
    expected_last_message_id = StrictIntegerField(
        min_value=0,
        allow_null=True,
        help_text=("The chat's latest message id you saw; a newer message is 409 `chat_changed`."),
    )
    ticket = StrictIntegerField(
        min_value=1, required=False, help_text=("The number of a ticket of this chat the reply answers.")
    )
    close_ticket = StrictBooleanField(
        required=False,
        default=True,
        help_text=("With `ticket`: true (the default) closes it as answered; false keeps it open, held for the owner."),
    )
    claim_id = StrictRegexField(
        CLAIM_ID_PATTERN, required=False, help_text=("The `claim_id` of your lease on the chat, when you hold one.")
    )
    note = StrictCharField(
        max_length=500, required=False, allow_blank=True, help_text=("A note for the audit, up to 500 characters.")
    )


# --- documentation shapes ---------------------------------------------------------------------------


class SupportAccountDoc(serializers.Serializer):
    link = serializers.ChoiceField(
        choices=["anonymous", "awaiting_code", "verified", "none"],
        help_text=("`anonymous`, `awaiting_code`, `verified`, or `none` (never bind such a chat to an account)."),
    )
    email = serializers.CharField(
        allow_null=True,
        help_text=(
            "The confirmed mailbox: detail endpoints only, while verified or when the integrating backend named one; "
            "always null for app-ticket chats."
        ),
    )
    app_user_id = serializers.CharField(
        allow_null=True, help_text=("The application account id the chat is bound to; null when unbound.")
    )
    link_source = serializers.CharField(
        required=False, help_text="email_code, agent_code, cabinet, telegram_link or app_ticket"
    )
    identity_expires_at = serializers.DateTimeField(allow_null=True, help_text="When the identity lapses.")
    regrant_needed = serializers.BooleanField(
        help_text=("True when the identity holds but the assistant's 30-minute read grant ran out.")
    )
    code_pending = serializers.BooleanField(help_text="True while a code can still be typed.")
    code_expires_at = serializers.DateTimeField(
        allow_null=True, help_text=("When the code stops working (10 minutes after sending).")
    )
    last_code_result = serializers.CharField(
        allow_null=True,
        help_text=("`verified`, `wrong`, `expired`, `attempts_exhausted`, `rate_limited`, `consumed`, or null."),
    )
    last_code_at = serializers.DateTimeField(
        allow_null=True, help_text=("When `last_code_result` was recorded; null when none.")
    )
    email_requested = serializers.BooleanField(
        help_text=("True when the chat asked the customer for the mailbox and will mail the code on arrival.")
    )


class SupportLeaseDoc(serializers.Serializer):
    held_by = serializers.CharField()
    mine = serializers.BooleanField()
    claim_id = serializers.CharField(allow_null=True)
    claimed_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()


class SupportSenderDoc(serializers.Serializer):
    kind = serializers.ChoiceField(
        choices=["client", "ai", "support", "external_operator", "system"],
        help_text=("`client`, `ai`, `support`, `external_operator` or `system`."),
    )
    agent_id = serializers.IntegerField(
        allow_null=True, required=False, help_text="The writing operator's agent id; null when no operator wrote it."
    )


class SupportLastMessageDoc(serializers.Serializer):
    id = serializers.IntegerField()
    sender = SupportSenderDoc()
    type = serializers.CharField()
    created_at = serializers.DateTimeField()


class SupportTicketBriefDoc(serializers.Serializer):
    number = serializers.IntegerField()
    state = serializers.CharField(help_text="open or closed")
    priority = serializers.CharField()
    held_for_owner = serializers.BooleanField()
    created_at = serializers.DateTimeField()


class SupportAiStateDoc(serializers.Serializer):
    handling = serializers.CharField()
    handled_by = serializers.CharField(allow_null=True)


class SupportChatDoc(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField()
    channel = serializers.CharField()
    delivery = serializers.CharField()
    locale = serializers.CharField(allow_null=True)
    last_message = SupportLastMessageDoc(allow_null=True)
    unanswered_count = serializers.IntegerField()
    ai_state = SupportAiStateDoc()
    open_ticket = SupportTicketBriefDoc(allow_null=True)
    account = SupportAccountDoc()
    lease = SupportLeaseDoc(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class SupportChatListDoc(serializers.Serializer):
    data = SupportChatDoc(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class SupportAttachmentRefDoc(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    content_type = serializers.CharField()
    size = serializers.IntegerField()


class SupportMessageDoc(serializers.Serializer):
    id = serializers.IntegerField()
    chat_id = serializers.IntegerField()
    type = serializers.CharField()
    text = serializers.CharField()
    sender = SupportSenderDoc()
    visibility = serializers.CharField()
    via_support_api = serializers.BooleanField()
    attachment = SupportAttachmentRefDoc(allow_null=True)
    created_at = serializers.DateTimeField()


class SupportChatRefDoc(serializers.Serializer):
    id = serializers.IntegerField()
    account = SupportAccountDoc()


class SupportMessageListDoc(serializers.Serializer):
    data = SupportMessageDoc(many=True)
    chat = SupportChatRefDoc()
    next_cursor = serializers.CharField(allow_null=True)


class SupportAttachmentDoc(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["image", "text"])
    name = serializers.CharField()
    mime_type = serializers.CharField()
    size = serializers.IntegerField()
    data_base64 = serializers.CharField(required=False)
    text = serializers.CharField(required=False)
    truncated = serializers.BooleanField(required=False)
    chat = SupportChatRefDoc()


class SupportClaimDoc(serializers.Serializer):
    chat_id = serializers.IntegerField()
    claim_id = serializers.CharField()
    held_by = serializers.CharField()
    ttl_sec = serializers.IntegerField()
    claimed_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()
    action_id = serializers.IntegerField()


class SupportReleaseDoc(serializers.Serializer):
    chat_id = serializers.IntegerField()
    released = serializers.BooleanField()
    action_id = serializers.IntegerField()


class SupportTicketEffectDoc(serializers.Serializer):
    ticket = serializers.IntegerField(allow_null=True)
    effect = serializers.ChoiceField(choices=["none", "closed", "held_for_owner", "unchanged"])
    state = serializers.CharField(required=False)


class SupportReplyDoc(serializers.Serializer):
    action_id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=["stored", "pending"])
    message_id = serializers.IntegerField(allow_null=True)
    chat_id = serializers.IntegerField()
    delivery = serializers.CharField()
    text = serializers.CharField()
    ticket_effect = SupportTicketEffectDoc()
    chat = SupportChatRefDoc()


class SupportActionDoc(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.CharField()
    outcome = serializers.ChoiceField(choices=["ok", "refused", "pending"])
    status_code = serializers.IntegerField(allow_null=True)
    reason = serializers.CharField(allow_null=True)
    service_agent = serializers.CharField()
    chat_id = serializers.IntegerField(allow_null=True)
    ticket_number = serializers.IntegerField(allow_null=True)
    message_id = serializers.IntegerField(allow_null=True)
    text_sha256 = serializers.CharField(allow_null=True)
    text_length = serializers.IntegerField(allow_null=True)
    is_support_reply = serializers.BooleanField()
    created_at = serializers.DateTimeField()
