from __future__ import annotations

import re

from rest_framework import serializers

from apps.core.api.serializers import InputSerializer, LabelField, StrictCharField

from .. import messengers


class ChannelDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The custom channel's id: its chats' channel is `ch{id}`.")
    name = serializers.CharField(help_text="The channel's name.")
    url = serializers.CharField(help_text="The https address operator messages are posted to.")
    is_active = serializers.BooleanField(help_text="false: the channel is disabled (takes and sends nothing).")
    created_at = serializers.DateTimeField(help_text="When the channel was registered.")


class ChannelCreatedDoc(ChannelDoc):
    secret = serializers.CharField(help_text="The signing secret of outbound posts; shown once, never again.")


class ChannelStatusDoc(serializers.Serializer):
    online = serializers.ChoiceField(
        choices=[0, 1], help_text="1 when the channel is active and an operator of the widget answers now."
    )


class InboundAcceptedDoc(serializers.Serializer):
    message_id = serializers.IntegerField(help_text="The stored message's id.")
    chat_id = serializers.IntegerField(help_text="The contact's `ch{id}` chat.")
    client_id = serializers.CharField(help_text="Our contact guid for this external client.")


class ChannelCreateInput(InputSerializer):
    name = LabelField(min_length=1, max_length=255, help_text="The channel's name, 1 to 255 characters.")
    url = StrictCharField(max_length=2048, help_text="https only, public address; operator messages are posted here.")


class InboundMessageBodyInput(InputSerializer):
    text = StrictCharField(
        min_length=1, max_length=65536, trim_whitespace=False, help_text="The message's text, not blank."
    )

    def validate_text(self, value: str) -> str:
        if not value.strip():
            raise serializers.ValidationError("This field may not be blank.")
        return value


class InboundMessageInput(InputSerializer):
    external_client_id = StrictCharField(
        min_length=1,
        max_length=255,
        help_text="Your id of the client; the first message of an id creates the contact and its `ch{id}` chat.",
    )
    external_channel_id = StrictCharField(
        min_length=1,
        max_length=255,
        help_text="Your id of the conversation on your channel; operator replies carry it back.",
    )
    message = InboundMessageBodyInput(help_text="The inbound message.")


class WebhookOutcomeDoc(serializers.Serializer):
    attempted = serializers.BooleanField(help_text="False for providers with no webhook mechanism.")
    status = serializers.ChoiceField(
        choices=["registered", "failed", "unconfirmed_provider_api", "not_supported"],
        help_text=(
            "`registered`, `failed`, `unconfirmed_provider_api` (the registration call's contract is unverified) or "
            "`not_supported`."
        ),
    )
    detail = serializers.CharField(required=False, help_text="The provider's reason when registration failed.")


class MessengerDoc(serializers.Serializer):
    provider = serializers.ChoiceField(
        choices=list(messengers.PROVIDERS),
        help_text="The provider code.",
    )
    connected = serializers.BooleanField(help_text="True when a credential is stored.")
    writable = serializers.BooleanField(help_text="false for `vk` and `custom` only.")
    has_token = serializers.BooleanField(help_text="True when a token is stored (tokens are never returned).")
    has_sid = serializers.BooleanField(required=False, help_text="`wa` and `apple` only.")


class MessengerListDoc(serializers.Serializer):
    data = MessengerDoc(many=True, help_text="All eleven providers, connected or not.")
    next_cursor = serializers.CharField(allow_null=True, help_text="Opaque cursor of the next page.")


class MessengerWriteDoc(MessengerDoc):
    webhook = WebhookOutcomeDoc(help_text="Read it: a 200 does not by itself mean inbound works.")


_SID = r"[A-Za-z0-9_.:@-]{1,128}"


class MessengerCredentialInput(InputSerializer):
    """The PUT body of a messenger: the members its provider names (`Provider.fields`: `token`, and
    `sid` and `url` for some); any other member is 422. The token must match the provider's
    `credential_pattern`. The provider comes in the serializer's context (`provider`)."""

    token = StrictCharField(
        min_length=1, max_length=512, trim_whitespace=False, help_text="The provider's access token (write-only)."
    )
    sid = StrictCharField(
        min_length=1,
        max_length=128,
        trim_whitespace=False,
        help_text="`wa`: the WhatsApp business phone number id; `apple`: the business id.",
    )
    url = StrictCharField(
        max_length=2048, help_text="The messaging gateway's endpoint: https, a public address (checked)."
    )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        named = self.context["provider"].fields
        for name in [name for name in self.fields if name not in named]:
            self.fields.pop(name)

    def validate_token(self, value: str) -> str:
        provider = self.context["provider"]
        if not re.fullmatch(provider.credential_pattern, value):
            raise serializers.ValidationError(provider.credential_rule)
        return value

    def validate_sid(self, value: str) -> str:
        if not re.fullmatch(_SID, value):
            raise serializers.ValidationError("Letters, digits and `_.:@-`, at most 128 characters.")
        return value


class MessengerCredentialDoc(serializers.Serializer):
    token = serializers.CharField(help_text="Every provider: its access token (`tg`: the bot token). Write-only.")
    sid = serializers.CharField(required=False, help_text="`wa` and `apple` only (required there).")
    url = serializers.CharField(required=False, help_text="`apple` only (required there): https, public.")


class VkCommunityDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The connection's id.")
    community_id = serializers.IntegerField(help_text="The VK community's id.")
    name = serializers.CharField(help_text="The community's name.")
    screen_name = serializers.CharField(help_text="The community's short address name.")
    is_primary = serializers.BooleanField(help_text="True for the widget's primary community.")
    webhook_status = serializers.CharField(
        allow_null=True, help_text="The provider webhook's registration status; null when none is recorded."
    )
    created_at = serializers.DateTimeField(help_text="When the community was connected.")


class VkCommunityCreatedDoc(VkCommunityDoc):
    webhook = WebhookOutcomeDoc(
        help_text="The provider webhook's registration outcome: a 200 does not by itself mean inbound works."
    )


class VkCommunityInput(InputSerializer):
    token = StrictCharField(min_length=10, max_length=512, trim_whitespace=False, help_text="Community access token.")
    community = StrictCharField(
        min_length=1, max_length=255, help_text="An id, a club-style name (`club123`, `myshop`) or a vk.com link."
    )


class AdCabinetDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The cabinet's id.")
    name = serializers.CharField(help_text="The cabinet's name.")
    status = serializers.ChoiceField(
        choices=["enabled", "disabled", "suspended_by_billing"],
        help_text="`enabled`, `disabled`, or `suspended_by_billing` (system-owned, never settable).",
    )
    channel = serializers.CharField(help_text="`av__<id>`: the channel code of its chats and department lists.")
    created_at = serializers.DateTimeField(help_text="When the cabinet was created.")
    updated_at = serializers.DateTimeField(help_text="When the cabinet last changed.")


class AdCabinetPatchInput(InputSerializer):
    status = serializers.ChoiceField(
        choices=["enabled", "disabled"],
        error_messages={"invalid_choice": "Must be enabled or disabled (suspended_by_billing is system-owned)."},
        help_text="`enabled` or `disabled`; enabling is capped by the slots the plan includes.",
    )
