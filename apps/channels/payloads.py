"""What a channel receives for an operator message."""

from __future__ import annotations

import json

from apps.chats.models import Message


def buttons_of(message: Message) -> list[dict]:
    """The keyboard's buttons as stored (`{label, url, style}`), or none."""
    keyboard = message.keyboard or {}
    return [
        {"label": b["label"], "url": b["url"], "style": b.get("style") or "primary"}
        for b in keyboard.get("buttons") or []
    ]


def custom_channel_body(
    *, event_id: str, chat_id: int, external_client_id: str, external_channel_id: str, message: Message
) -> str:
    """`{id, type: "message.created", data: {chat_id, external_client_id, external_channel_id,
    message: {text, buttons?}}}` as the exact UTF-8 JSON sent on every attempt."""
    out: dict = {"text": message.body}
    buttons = buttons_of(message)
    if buttons:
        out["buttons"] = buttons
    body = {
        "id": event_id,
        "type": "message.created",
        "data": {
            "chat_id": chat_id,
            "external_client_id": external_client_id,
            "external_channel_id": external_channel_id,
            "message": out,
        },
    }
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


def text_with_link_lines(message: Message) -> str:
    """The text followed by one `label: url` line per keyboard button: how a keyboard reaches
    channels that draw no buttons (core specification, Message)."""
    lines = [message.body] if message.body else []
    lines += [f"{b['label']}: {b['url']}" for b in buttons_of(message)]
    return "\n".join(lines)


def legacy_chat_body(*, recipient_id: str, message: Message) -> str:
    """The legacy Chat API's operator reply: `{sender: {id, name}, recipient: {id}, message:
    {type: "text", text, id}}` (text only: keyboards become `label: url` lines)."""
    agent = message.agent
    sender = {"id": str(agent.pk), "name": agent.name} if agent is not None else {"id": "0", "name": ""}
    body = {
        "sender": sender,
        "recipient": {"id": recipient_id},
        "message": {"type": "text", "text": text_with_link_lines(message), "id": str(message.pk)},
    }
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))
