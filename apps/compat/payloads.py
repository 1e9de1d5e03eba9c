"""The legacy Bot API's CLIENT_MESSAGE event, as its bots read it."""

from __future__ import annotations

import json

from apps.chats.models import Chat, Message
from apps.core.models import Widget


def client_message_body(*, event_id: str, widget: Widget, chat: Chat, message: Message, agents_online: bool) -> str:
    """`{id, site_id, client_id, chat_id, agents_online, sender, message: {type: "TEXT", text,
    timestamp}, channel, event}`; ids are strings (chat_id is our numeric chat id), the timestamp
    in Unix seconds."""
    contact = chat.contact
    sender = {"id": contact.guid, "has_contacts": bool(contact.email or contact.phone)}
    if contact.name:
        sender["name"] = contact.name
    body = {
        "id": event_id,
        "site_id": str(widget.pk),
        "client_id": contact.guid,
        "chat_id": str(chat.pk),
        "agents_online": agents_online,
        "sender": sender,
        "message": {"type": "TEXT", "text": message.body, "timestamp": int(message.created_at.timestamp())},
        "channel": {"id": widget.button_guid, "type": "widget"},
        "event": "CLIENT_MESSAGE",
    }
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))
