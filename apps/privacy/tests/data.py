"""A contact with everything the product stores about a person, made through the services (so the
statistics facts, outbox events and webhook deliveries are the real ones)."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.core.files.base import ContentFile
from django.utils import timezone

from apps.chats import services as chats
from apps.chats.models import Chat, Contact, ContactTag, Message, VisitorSession, VisitorUpload
from apps.chats.services import MessageInput
from apps.chats.visitor import services as visitor
from apps.core.files import store_file
from apps.core.models import File, OutboxEvent
from apps.webhooks.event_deliveries import fan_out_events
from apps.webhooks.models import Subscription
from tests.support.factories import AgentFactory


@dataclass
class Person:
    contact: Contact
    chats: list[Chat]
    messages: list[Message]
    files: list[File]
    words: list[str] = field(default_factory=list)  # personal text that must not survive erasure

    @property
    def stored_names(self) -> list[str]:
        return [f.stored.name for f in self.files]


def subscribe(widget) -> None:
    """A native and a legacy subscription of the widget (the legacy body carries name and e-mail)."""
    Subscription.objects.create(
        widget=widget, url="https://receiver.example/native", events=["message.created", "chat.created"]
    )
    Subscription.objects.create(
        widget=widget,
        url="https://receiver.example/legacy",
        events=["client_updated", "chat_accepted"],
        is_legacy_compat=True,
    )


def fan_out() -> None:
    """What the fan-out task does once the events' transaction commits (tests roll back instead)."""
    waiting = list(OutboxEvent.objects.filter(dispatched_at__isnull=True).order_by("created_at"))
    fan_out_events(waiting)
    OutboxEvent.objects.filter(pk__in=[e.pk for e in waiting]).update(dispatched_at=timezone.now())


def make_person(widget, *, tag: str, messages: int = 3) -> Person:
    """A contact with a widget chat and a telegram chat, visitor and agent messages, an operator
    note, a message file and an unsent upload, a rating, tags and a visitor session."""
    session, _ = visitor.start_session(
        widget=widget,
        name=f"Person {tag}",
        email=f"{tag}@mail.example",
        phone="+79001234567",
        page_url=f"https://shop.example/{tag}",
    )
    contact = session.contact
    agent = AgentFactory(widget=widget)
    words = [contact.name, contact.email]
    sent = []
    for n in range(messages):
        body = f"my secret {tag} {n}"
        words.append(body)
        sent.append(chats.post_client_message(widget=widget, contact=contact, data=MessageInput(body=body)))
    chat = sent[0].chat
    upload = visitor.upload_file(widget=widget, contact=contact, upload=_upload(f"passport-{tag}.txt"))
    sent.append(
        chats.post_client_message(
            widget=widget, contact=contact, data=MessageInput(type=Message.Type.FILE, file_id=upload.pk)
        )
    )
    staff_file = store_file(
        widget=widget,
        content=ContentFile(b"invoice", name="invoice.txt"),
        original_name="invoice.txt",
        content_type="text/plain",
        size=7,
    )
    sent.append(
        chats.post_agent_message(
            widget=widget,
            chat=chat,
            agent=agent,
            data=MessageInput(type=Message.Type.FILE, file_id=staff_file.pk),
        )
    )
    answer = f"answer to {tag}"
    words.append(answer)
    sent.append(chats.post_agent_message(widget=widget, chat=chat, agent=agent, data=MessageInput(body=answer)))
    note = f"private note on {tag}"
    words.append(note)
    sent.append(
        chats.post_agent_message(
            widget=widget,
            chat=chat,
            agent=agent,
            data=MessageInput(body=note, visibility=Message.Visibility.NOTE),
        )
    )
    unsent = visitor.upload_file(widget=widget, contact=contact, upload=_upload(f"unsent-{tag}.txt"))
    telegram = chats.post_client_message(
        widget=widget, contact=contact, data=MessageInput(body=f"telegram {tag}"), channel="telegram"
    )
    words.append(f"telegram {tag}")
    sent.append(telegram)
    chats.rate_chat(widget=widget, chat=chat, value=4, comment=f"thanks {tag}")
    words.append(f"thanks {tag}")
    chats.add_tags(widget=widget, contact=contact, names=[f"vip-{tag}"])
    chats.update_contact(widget=widget, contact=contact, changes={"phone": "+79007654321"})
    fan_out()
    return Person(
        contact=contact,
        chats=[chat, telegram.chat],
        messages=sent,
        files=[upload, staff_file, unsent],
        words=words,
    )


def _upload(name: str):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, f"bytes of {name}".encode(), content_type="text/plain")


def rows_of(person: Person) -> dict[str, int]:
    """Rows that hold the person's contact, chats or messages, per table that can hold them."""
    contact_ids, chat_ids = [person.contact.pk], [c.pk for c in person.chats]
    message_ids = [m.pk for m in person.messages]
    return {
        "contact": Contact.objects.filter(pk__in=contact_ids).count(),
        "tags": ContactTag.objects.filter(contact_id__in=contact_ids).count(),
        "sessions": VisitorSession.objects.filter(contact_id__in=contact_ids).count(),
        "uploads": VisitorUpload.objects.filter(contact_id__in=contact_ids).count(),
        "chats": Chat.objects.filter(pk__in=chat_ids).count(),
        "messages": Message.objects.filter(pk__in=message_ids).count(),
        "files": File.objects.filter(pk__in=[f.pk for f in person.files]).count(),
    }
