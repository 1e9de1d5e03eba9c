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
