"""Writes on channels: custom channel registration and switches, inbound messages from a channel
(through the chats services, like the widget's), and the operator messages queued for them.

Inbound: the first message of an external client on a channel creates the contact and its chat on
that channel's code (`ch{id}`); later ones find them through ExternalContact. Outbound: the
`message.created` handler (handlers.py) queues one delivery of the webhook engine per operator
message of a chat on a channel, in the message's transaction; the engine posts it after commit
(delivery.py holds the channels' endpoint kinds).
"""

from __future__ import annotations

import hashlib
import secrets

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.audit import services as audit
from apps.chats import services as chat_services
from apps.chats.models import Chat, Message
from apps.core import crypto
from apps.core.errors import Conflict
from apps.core.models import Widget
from apps.webhooks import services as webhooks
from apps.webhooks.models import Delivery

from . import delivery, payloads, selectors
from .models import CustomChannel, ExternalContact, MessengerConnection

CHANNEL_AUDIT = "custom_channel"  # audit rows: custom_channel.created, .changed, .deleted

SOURCE_CUSTOM = "channel"


class ChannelDisabled(Conflict):
    """The custom channel is switched off (`is_active` false): it takes no messages."""

    code, title = "channel_disabled", "Channel is disabled"


class MergeChannelConflict(Conflict):
    """Both contacts of a merge hold an external id on the same channel (two Telegram accounts, two
    clients of one custom channel): replies go to a contact's one id on a channel, so they stay two
    contacts."""

    code, title = "merge_channel_conflict", "Contacts on the same channel"


# --- custom channels ----------------------------------------------------------------------------


@transaction.atomic
def register_custom_channel(*, widget: Widget, name: str, url: str) -> tuple[CustomChannel, str]:
    """A new active channel and its signing secret (returned once, stored encrypted with the
    webhooks' rotatable key set). The url passes the webhook destination rule (https, public)."""
    webhooks.check_destination(url)
    secret = crypto.generate_secret()
    channel = CustomChannel.objects.create(
        widget=widget, name=name, url=url, secret_encrypted=crypto.encrypt_secret(secret)
    )
    audit.record_row(
        widget=widget, target_type=CHANNEL_AUDIT, target_id=channel.pk, before=None, after=audit.values(channel)
    )
    return channel, secret


PATH_KEY_LENGTH = 8


def path_secret_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@transaction.atomic
def create_legacy_chat_channel(*, widget: Widget, url: str, name: str = "Chat API") -> tuple[CustomChannel, str]:
    """A custom channel speaking the legacy platform's Chat API (compat routes): its secret is
    the path segment of `/api/compat/legacy/chat/{secret}`, also the key of the outbound
    signatures. Returned once; stored as a lookup key, a SHA-256 and the encrypted secret."""
    webhooks.check_destination(url)
    key = secrets.token_hex(PATH_KEY_LENGTH // 2)
    secret = key + secrets.token_hex(20)
    channel = CustomChannel.objects.create(
        widget=widget,
        name=name,
        url=url,
        wire_format=CustomChannel.WireFormat.LEGACY_CHAT,
        path_key=key,
        path_secret_hash=path_secret_hash(secret),
        secret_encrypted=crypto.encrypt_secret(secret),
    )
    audit.record_row(
        widget=widget, target_type=CHANNEL_AUDIT, target_id=channel.pk, before=None, after=audit.values(channel)
    )
    return channel, secret


@transaction.atomic
def set_custom_channel_active(*, widget: Widget, channel: CustomChannel, is_active: bool) -> CustomChannel:
    """Switch a channel on or off. Off: inbound is refused (409) and nothing more is posted to it
    (queued deliveries fail as `channel_inactive` when their attempt comes)."""
    return update_custom_channel(widget=widget, channel=channel, changes={"is_active": is_active})


@transaction.atomic
def update_custom_channel(*, widget: Widget, channel: CustomChannel, changes: dict) -> CustomChannel:
    """Change a channel's `name`, `url` (which passes the webhook destination rule) or `is_active`
    (see `set_custom_channel_active`); audited. A change that changes nothing writes nothing."""
    channel = CustomChannel.objects.select_for_update().get(pk=channel.pk, widget=widget)
    if "url" in changes and changes["url"] != channel.url:
        webhooks.check_destination(changes["url"])
    before = audit.values(channel)
    changed = [
        name for name in ("name", "url", "is_active") if name in changes and getattr(channel, name) != changes[name]
    ]
    if not changed:
        return channel
    for name in changed:
        setattr(channel, name, changes[name])
    channel.updated_at = timezone.now()
    channel.save(update_fields=[*changed, "updated_at"])
    audit.record_row(
        widget=widget, target_type=CHANNEL_AUDIT, target_id=channel.pk, before=before, after=audit.values(channel)
    )
    return channel


@transaction.atomic
def delete_custom_channel(*, widget: Widget, channel: CustomChannel) -> None:
    """Django admin's deletion of a channel (its links to contacts and its deliveries go along); audited."""
    channel = CustomChannel.objects.select_for_update().filter(pk=channel.pk, widget=widget).first()
    if channel is None:
        return
    before, pk = audit.values(channel), channel.pk
    channel.delete()
    audit.record_row(widget=widget, target_type=CHANNEL_AUDIT, target_id=pk, before=before, after=None)


@transaction.atomic
def deactivate_custom_channels(*, widget: Widget) -> int:
    """Every active custom channel of the widget off (the `custom` messenger's DELETE), each audited."""
    channels = list(CustomChannel.objects.select_for_update().filter(widget=widget, is_active=True).order_by("pk"))
    for channel in channels:
        update_custom_channel(widget=widget, channel=channel, changes={"is_active": False})
    return len(channels)


@transaction.atomic
def rotate_custom_channel_keys() -> int:
    """Re-encrypt every stored channel secret (custom channel secrets, messenger tokens and hook
    secrets, VK community tokens and callback secrets) under the newest key, after a key was
    added in front of WEBHOOK_SECRET_KEYS. Returns the number of rows rewritten."""
    from .models import VkCommunity

    count = 0
    for model, fields in (
        (CustomChannel, ("secret_encrypted",)),
        (MessengerConnection, ("token_encrypted", "sid_encrypted", "hook_secret_encrypted")),
        (VkCommunity, ("token_encrypted", "secret_encrypted")),
    ):
        for row in model.objects.select_for_update().only("pk", *fields):
            changes = {f: crypto.rotate_token(getattr(row, f)) for f in fields if getattr(row, f)}
            if changes:
                model.objects.filter(pk=row.pk).update(**changes)
                count += 1
    return count


# --- inbound ------------------------------------------------------------------------------------


def link_external_contact(
    *, widget: Widget, channel: str, external_id: str, address: str, name: str = ""
) -> ExternalContact:
    """The contact behind `external_id` on `channel`, created on first use; `address` (where
    replies go) follows the latest inbound message."""
    found = ExternalContact.objects.filter(widget=widget, channel=channel, external_id=external_id).first()
    if found is None:
        try:
            with transaction.atomic():
                contact = chat_services.create_contact(widget=widget, name=name)
                return ExternalContact.objects.create(
                    widget=widget, channel=channel, external_id=external_id, address=address, contact=contact
                )
        except IntegrityError:  # a concurrent first message of the same client made it
            found = ExternalContact.objects.get(widget=widget, channel=channel, external_id=external_id)
    if found.address != address:
        found.address = address
        found.save(update_fields=["address"])
    return found


@transaction.atomic
def receive_custom_message(
    *,
    widget: Widget,
    channel: CustomChannel,
    external_client_id: str,
    external_channel_id: str,
    text: str,
    contact_name: str = "",
) -> Message:
    """An inbound message of a custom channel: the contact and the `ch{id}` chat on first use,
    then the chats service stores it (chat.created, message.created, reopening) like a visitor's.
    A disabled channel refuses (409); the row is locked so a concurrent switch-off is seen."""
    channel = CustomChannel.objects.select_for_update().get(pk=channel.pk, widget=widget)
    if not channel.is_active:
        raise ChannelDisabled("This channel is disabled; it takes no messages.")
    link = link_external_contact(
        widget=widget,
        channel=channel.code,
        external_id=external_client_id,
        address=external_channel_id,
        name=contact_name,
    )
    return chat_services.post_client_message(
        widget=widget,
        contact=link.contact,
        data=chat_services.MessageInput(body=text),
        channel=channel.code,
        source=SOURCE_CUSTOM,
    )


# --- outbound -----------------------------------------------------------------------------------

OPERATOR_AUTHORS = (Message.Author.AGENT, Message.Author.AI)


def is_deliverable(message: Message) -> bool:
    """An operator's (human, AI, external) visible message with something to show."""
    return (
        message.author_kind in OPERATOR_AUTHORS
        and message.visibility == Message.Visibility.PUBLIC
        and bool(message.body or message.keyboard)
    )


def queue_custom_channel_delivery(*, widget: Widget, chat: Chat, message: Message) -> Delivery | None:
    """Inside the message's transaction: one delivery for an operator message of a `ch{id}` chat of
    an active channel, sent after commit. None when there is nothing to send."""
    channel_id = selectors.custom_channel_id(chat.channel)
    if channel_id is None or not is_deliverable(message):
        return None
    channel = CustomChannel.objects.filter(widget=widget, pk=channel_id, is_active=True).first()
    if channel is None:
        return None
    link = selectors.external_contact_for(widget, channel=chat.channel, contact_id=chat.contact_id)
    if link is None:  # a chat on the channel no external client opened (made by hand): nowhere to send
        return None
    if channel.wire_format == CustomChannel.WireFormat.LEGACY_CHAT:
        body = payloads.legacy_chat_body(recipient_id=link.external_id, message=message)
    else:

        def body(key) -> str:
            return payloads.custom_channel_body(
                event_id=str(key),
                chat_id=chat.pk,
                external_client_id=link.external_id,
                external_channel_id=link.address,
                message=message,
            )

    return delivery.queue(widget=widget, channel=channel, provider=None, message=message, body=body)


def queue_messenger_delivery(*, widget: Widget, chat: Chat, message: Message) -> Delivery | None:
    """Inside the message's transaction: an operator message of a chat on a messenger provider as
    that provider's stored body (`Provider.outbound_body`: Telegram's keyboards as an inline
    keyboard, the others' as `label: url` lines), sent after commit. The stored body has no
    credential."""
    from .providers import registry

    provider = registry.get(chat.channel)
    if provider is None or not is_deliverable(message):
        return None
    if (
        provider.sends_through_connection
        and not MessengerConnection.objects.filter(widget=widget, provider=chat.channel)
        .exclude(token_encrypted="")
        .exists()
    ):
        return None
    link = selectors.external_contact_for(widget, channel=chat.channel, contact_id=chat.contact_id)
    if link is None:
        return None
    body = provider.outbound_body(address=link.address, message=message)
    if body is None:
        return None
    return delivery.queue(widget=widget, channel=None, provider=provider, message=message, body=body)


# --- messengers: the writes of the messenger routes, for the other entry points (the console) -----
# messengers.py and communities.py import this module: they are imported when called.


def writable_messenger(*, widget: Widget, provider: str):
    """The provider a connect may write (404 unknown, 422 `not_writable`, 409 `plan_required`): what
    the connect route's serializer takes as its `provider` context."""
    from . import messengers

    return messengers.writable(widget, provider)


def connect_messenger(*, widget: Widget, provider: str, data: dict, base_url: str):
    """PUT /v1/messengers/{provider}: the probe, the local write, the provider webhook registration."""
    from . import messengers

    return messengers.connect(widget=widget, provider=provider, data=data, base_url=base_url)


def verify_messenger(*, widget: Widget, provider: str, base_url: str):
    from . import messengers

    return messengers.verify(widget=widget, provider=provider, base_url=base_url)


def disconnect_messenger(*, widget: Widget, provider: str, base_url: str = "") -> None:
    from . import messengers

    messengers.disconnect(widget=widget, provider=provider, base_url=base_url)


def connect_vk_community(*, widget: Widget, token: str, community: str, base_url: str):
    from . import communities

    return communities.connect_community(widget=widget, token=token, community=community, base_url=base_url)


def set_primary_vk_community(*, widget: Widget, community):
    from . import communities

    return communities.set_primary_community(widget=widget, community=community)


def delete_vk_community(*, widget: Widget, community) -> None:
    from . import communities

    communities.delete_community(widget=widget, community=community)
