"""A contact's room on a channel: one chat per contact and channel, made by its first message."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from apps.core import events
from apps.core.models import Widget
from apps.core.statements import ModelStatement, Slot
from apps.erasure import selectors as erasure

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
        return Chat.objects.get(widget=widget, contact=contact, channel=channel)


def find_room(*, widget: Widget, contact: Contact, channel: str = WIDGET_CHANNEL) -> Chat | None:
    """The contact's room on `channel`, or None (also once the contact's erasure is accepted, so a
    socket opened before it can neither type nor mark seen into the room). Every visitor message
    looks it up: compiled once."""
    found = _ROOM.instances(widget=widget.pk, contact=contact.pk, channel=channel)
    return found[0] if found else None


_ROOM = ModelStatement(
    lambda: (
        Chat.objects.filter(
            widget_id=Slot("widget", Widget._meta.pk),
            contact_id=Slot("contact", Contact._meta.pk),
            channel=Slot("channel", Chat._meta.get_field("channel")),
        )
        .live()
        .order_by("pk")[:1]
    ),
)
