"""Event handlers of the channels app (registered in apps.py)."""

from __future__ import annotations

from apps.core.events import Event

from . import selectors, services
from .models import ExternalContact
from .providers import registry


def queue_outbound_message(event: Event) -> None:
    """message.created, in the transaction: an operator message of a chat on a channel is queued
    for that channel. Chats of the on-site widget cost nothing here (no query)."""
    chat, message = event.obj("chat"), event.obj("message")
    if chat is None or message is None:
        return
    if selectors.custom_channel_id(chat.channel) is not None:
        services.queue_custom_channel_delivery(widget=event.widget, chat=chat, message=message)
    elif chat.channel in registry.PROVIDERS:
        services.queue_messenger_delivery(widget=event.widget, chat=chat, message=message)


def move_external_contacts(event: Event) -> None:
    """contact.merged, in the transaction (before the source row is deleted): the source's external
    ids on messenger and custom channels now name the target, so the person's next message there
    reaches the target's chat."""
    source, target = event.obj("source"), event.obj("target")
    if source is None or target is None:
        return
    links = ExternalContact.objects.filter(widget=event.widget, contact=source)
    channels = set(links.values_list("channel", flat=True))
    if channels and ExternalContact.objects.filter(widget=event.widget, contact=target, channel__in=channels).exists():
        # A reply on a channel goes to the contact's one external id there: with two, the
        # operator's answers in one conversation could reach the other account.
        raise services.MergeChannelConflict(
            "Both contacts write from their own account on the same messenger or channel; they cannot be merged."
        )
    links.update(contact=target)
