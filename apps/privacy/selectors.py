"""Reads of data protection: a contact's export document (and the cap on exports in flight), what an
erasure would remove."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta

from django.core.serializers.json import DjangoJSONEncoder
from django.db.models import Q
from django.utils import timezone

from apps.chats import selectors as chats
from apps.chats.models import Chat, Contact, Message, Rating
from apps.core.models import File
from apps.core.ratelimit import Slots

# At most this many exports of contacts of one widget are in flight at once, across the web processes
# and entry points (the API's export route and the owner's console; apps.core.exports): a person's
# export can be large, and unread ones wait in the web process for their clients. The ttl frees the
# slot of a process that died meanwhile.
CONTACT_EXPORTS = Slots("contact-export", 2, ttl=3600)
CONTACT_EXPORT_RETRY_AFTER_SECONDS = 10

# Export links stay valid an hour (product-decisions.md, "Data protection").
EXPORT_LINK_SECONDS = 3600
MESSAGE_CHUNK = 500


def _dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), cls=DjangoJSONEncoder)


def contact_export_payload(contact: Contact) -> dict:
    """The contact as the REST API shows it."""
    return {
        "id": contact.guid,
        "name": contact.name,
        "email": contact.email,
        "phone": contact.phone,
        "attributes": contact.attributes,
        "tags": sorted(contact.tags.values_list("name", flat=True)),
        "created_at": contact.created_at.isoformat(),
        "updated_at": contact.updated_at.isoformat(),
    }


def _rating_payload(rating: Rating) -> dict:
    return {
        "value": rating.value,
        "comment": rating.comment,
        "agent_id": rating.agent_id,
        "created_at": rating.created_at.isoformat(),
    }


def export_contact(*, contact: Contact) -> Iterator[str]:
    """The contact's export as pieces of one JSON document:

    `{exported_at, links_expire_at, contact, identity, chats: [{...chat, messages, ratings}], files}`.

    Messages are the visible ones (operator notes, operator-only e-mails and operator-to-operator
    messages are never included), oldest first, read in chunks so memory stays bounded; each file
    URL is signed for EXPORT_LINK_SECONDS. `files` lists every file of the export: those of its
    messages and the contact's own uploads.
    """
    now = timezone.now()
    head = {
        "exported_at": now.isoformat(),
        "links_expire_at": (now + timedelta(seconds=EXPORT_LINK_SECONDS)).isoformat(),
        "contact": contact_export_payload(contact),
        "identity": chats.contact_identity(contact),
    }
    yield _dumps(head)[:-1] + ',"chats":['
    chats_of_contact = Chat.objects.filter(widget_id=contact.widget_id, contact=contact).select_related("contact")
    for index, chat in enumerate(chats_of_contact.order_by("created_at", "pk")):
        yield ("," if index else "") + _dumps(chats.chat_payload(chat))[:-1] + ',"messages":['
        messages = (
            Message.objects.filter(chat=chat, widget_id=contact.widget_id, visibility=Message.Visibility.PUBLIC)
            .select_related("file")
            .order_by("created_at", "pk")
        )
        for position, message in enumerate(messages.iterator(chunk_size=MESSAGE_CHUNK)):
            payload = chats.message_payload(message, url_max_age=EXPORT_LINK_SECONDS)
            yield ("," if position else "") + _dumps(payload)
        ratings = [_rating_payload(r) for r in Rating.objects.filter(chat=chat).order_by("created_at", "pk")]
        yield '],"ratings":' + _dumps(ratings) + "}"
    yield '],"files":['
    files = File.objects.filter(widget_id=contact.widget_id).filter(
        pk__in=Message.objects.filter(
            chat__contact=contact, visibility=Message.Visibility.PUBLIC, file__isnull=False
        ).values("file_id")
    ) | File.objects.filter(widget_id=contact.widget_id, visitor_upload__contact=contact)
    for position, file in enumerate(files.distinct().order_by("pk").iterator(chunk_size=MESSAGE_CHUNK)):
        yield ("," if position else "") + _dumps(chats.file_payload(file, url_max_age=EXPORT_LINK_SECONDS))
    yield "]}"


def erasure_counts(*, contact: Contact) -> dict[str, int]:
    """What erasing `contact` removes, for the confirmation that names it: its chats, their messages
    (notes included) and the files of those messages and of the contact's own uploads."""
    chats_of_contact = Chat.objects.filter(widget_id=contact.widget_id, contact=contact)
    messages = Message.objects.filter(widget_id=contact.widget_id, chat__contact=contact)
    files = File.objects.filter(widget_id=contact.widget_id).filter(
        Q(pk__in=messages.filter(file__isnull=False).values("file_id")) | Q(visitor_upload__contact=contact)
    )
    return {"chats": chats_of_contact.count(), "messages": messages.count(), "files": files.distinct().count()}
