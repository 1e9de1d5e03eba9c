"""A contact's room on a channel: one chat per contact and channel, made by its first message (a
merged contact may hold several; its room is the one with the latest message)."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from apps.core import events
from apps.core.models import Widget
from apps.erasure import selectors as erasure

from .. import selectors
from ..models import Chat, Contact

WIDGET_CHANNEL = "widget"


def get_or_create_room(*, widget: Widget, contact: Contact, channel: str = WIDGET_CHANNEL, source: str) -> Chat:
    """The contact's room on `channel`; created (with chat.created) only the first time. A contact
    under erasure gets no room (Chat.DoesNotExist, as if it were gone already)."""
    chat = find_room(widget=widget, contact=contact, channel=channel)
    if chat is not None:
        return chat
    if erasure.is_erasing(contact.pk):
        raise Chat.DoesNotExist("The contact is being erased.")
    try:
        with transaction.atomic():
            chat = Chat.objects.create(widget=widget, contact=contact, channel=channel)
            events.emit(
                widget,
                events.CHAT_CREATED,
                objects={"chat": chat},
                chat_id=chat.pk,
                client_id=contact.guid,
                source=source,
            )
            return chat
    except IntegrityError:  # the same contact's concurrent first message created it
        return Chat.objects.get(widget=widget, contact=contact, channel=channel, merged_from="")


def find_room(*, widget: Widget, contact: Contact, channel: str = WIDGET_CHANNEL) -> Chat | None:
    """The contact's room on `channel`, or None (also once the contact's erasure is accepted, so a
    socket opened before it can neither type nor mark seen into the room)."""
    return selectors.get_room(widget=widget, contact=contact, channel=channel)
