"""Bodies of deliveries (native and legacy envelopes) and the masked copy kept in the log.

Bodies are rendered once, when the delivery row is made, and stored: every retry sends identical
bytes. A manual redelivery renders the event again in the envelope the subscription uses now.
"""

from __future__ import annotations

import json
import re
from typing import Any

from apps.agents import selectors as agents
from apps.chats import selectors as chats
from apps.core.models import OutboxEvent

from .catalogue import NATIVE_TO_LEGACY

MASK = "[скрыто]"
# Identifier members are never masked (hex guids can contain digit runs).
ID_KEYS = frozenset({"id", "button_guid", "client_id", "client_guid", "chat_client_id", "widget_id", "event_name"})
# An address starts where a run of local-part characters starts: the same matches (a match inside a
# run would also match from the run's start), but a long run without an `@` is scanned once, not
# once per character (quadratic in the run: a message body is up to 64 KiB, masked per delivery).
_EMAIL = re.compile(r"(?<![A-Za-z0-9._%+\-])[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}")
_CARD = re.compile(r"(?<!\d)(?:\d[ \-]?){12,18}\d(?!\d)")
_PHONE = re.compile(r"(?<![\w])\+?\d[\d\s().\-]{5,}\d(?![\w])")
# What every one of the three needs: an `@` (an address) or a digit (a card, a phone number). Most
# members of an event are neither (types, names, sources), and one search skips the three.
_MAYBE_PERSONAL = re.compile(r"[@\d]")


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode()


def native_envelope(event: OutboxEvent) -> dict:
    return {"id": str(event.pk), "type": event.type, "data": dict(event.data)}


def legacy_envelope(event: OutboxEvent) -> dict | None:
    """The legacy platform's body, keyed by `event_name`, with the members its integrations read:
    `chat_id`, `widget_id` (the button guid), `visitor` {id, name, email, phone}, `agent` {id, name,
    email} where an operator is involved, `offline_message_id` and `message` for offline messages,
    `client_id` and `changed_fields` for client updates. `id` is the event id (dedupe key)."""
    name = NATIVE_TO_LEGACY.get(event.type)
    if name is None:
        return None
    data = event.data
    body: dict[str, Any] = {"event_name": name, "id": str(event.pk), "widget_id": data["button_guid"]}

    def visitor(guid: str | None) -> dict | None:
        contact = chats.get_contact_by_guid(widget_id=event.widget_id, guid=guid)
        if contact is None:
            return None
        return {"id": contact.guid, "name": contact.name, "email": contact.email, "phone": contact.phone}

    def agent(agent_id: int | None) -> dict | None:
        row = agents.get_agent(widget_id=event.widget_id, agent_id=agent_id)
        return None if row is None else {"id": row.pk, "name": row.name, "email": row.email}

    chat = chats.get_chat(widget_id=event.widget_id, chat_id=data.get("chat_id"))
    chat_guid = chat.contact.guid if chat else None
    if name == "chat_updated":
        body |= {
            "chat_id": data["chat_id"],
            "visitor": visitor(data["client_guid"]),
            "agent": agent(data["to_operator_id"]),
            "previous_agent": agent(data["from_operator_id"]),
        }
    elif name == "chat_finished":
        body |= {"chat_id": data["chat_id"], "visitor": visitor(chat_guid), "reason": data["reason"]}
    elif name == "chat_accepted":
        body |= {"chat_id": data["chat_id"], "visitor": visitor(data["client_id"]), "agent": agent(data["operator_id"])}
    elif name == "offline_message":
        message = chats.get_message(widget_id=event.widget_id, message_id=data["message_id"])
        body |= {
            "chat_id": data["chat_id"],
            "visitor": visitor(data["client_id"])
            or {"name": data["name"], "email": data["email"], "phone": data["phone"]},
            "offline_message_id": data["message_id"],
            "message": message.body if message else "",
        }
    elif name == "client_updated":
        body |= {
            "client_id": data["client_id"],
            "visitor": visitor(data["client_id"]),
            "changed_fields": data["changed_fields"],
        }
    return body


def render(event: OutboxEvent, envelope: str) -> bytes | None:
    body = native_envelope(event) if envelope == "native" else legacy_envelope(event)
    return None if body is None else _dumps(body)


def mask_text(text: str) -> str:
    if not _MAYBE_PERSONAL.search(text):
        return text
    text = _EMAIL.sub(MASK, text)
    text = _CARD.sub(MASK, text)
    return _PHONE.sub(MASK, text)


def redact(value: Any, key: str | None = None) -> Any:
    """The log's copy: `button_id` removed everywhere, personal data masked in every text member."""
    if isinstance(value, dict):
        return {k: redact(v, k) for k, v in value.items() if k != "button_id"}
    if isinstance(value, list):
        return [redact(v, key) for v in value]
    if isinstance(value, str) and key not in ID_KEYS:
        return mask_text(value)
    return value


def log_payload(body: bytes) -> dict:
    return redact(json.loads(body))
