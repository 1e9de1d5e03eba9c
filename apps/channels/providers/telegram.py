"""Telegram Bot API calls (https://core.telegram.org/bots/api), every one through the guarded
outbound client against PROVIDER_API_BASE_TG. The token is part of the URL path, so URLs are
built at call time and never stored or logged."""

from __future__ import annotations

import json
from dataclasses import dataclass

from django.conf import settings

from apps.core import outbound

CALL_TIMEOUT = (3.05, 10)
CALL_DEADLINE = 15.0
DELETE_DEADLINE = 5.0  # removal never blocks the disconnect for long
RESPONSE_CAP = 256 * 1024
ALLOWED_UPDATES = ["message"]


@dataclass(frozen=True)
class Result:
    """A call's outcome: `ok` as the Bot API says; `rejected` when the provider answered and
    refused (a real rejection, not a transport failure); `description` its reason."""

    ok: bool
    rejected: bool
    description: str
    result: object = None
    status_code: int | None = None


def method_url(token: str, method: str) -> str:
    return f"{settings.PROVIDER_API_BASE_TG.rstrip('/')}/bot{token}/{method}"


def call(token: str, method: str, payload: dict | None = None, *, deadline: float = CALL_DEADLINE) -> Result:
    body = json.dumps(payload or {}, ensure_ascii=False).encode()
    try:
        response = outbound.request(
            "POST",
            method_url(token, method),
            data=body,
            headers={"Content-Type": "application/json"},
            timeout=CALL_TIMEOUT,
            max_bytes=RESPONSE_CAP,
            deadline=deadline,
        )
    except outbound.OutboundBlocked as exc:
        return Result(ok=False, rejected=False, description=f"blocked: {exc.reason}")
    except outbound.OutboundError as exc:
        return Result(ok=False, rejected=False, description=f"unreachable: {exc.reason}")
    try:
        answer = response.json()
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        return Result(False, False, f"not a Bot API answer (HTTP {response.status_code})", None, response.status_code)
    description = str(answer.get("description") or "")[:200]
    if answer.get("ok") is True and 200 <= response.status_code < 300:
        return Result(True, False, description, answer.get("result"), response.status_code)
    # The provider answered and refused: 4xx other than 429 is its verdict on the request.
    rejected = 400 <= response.status_code < 500 and response.status_code != 429
    return Result(False, rejected, description or f"HTTP {response.status_code}", None, response.status_code)


def get_me(token: str) -> Result:
    """The read-only probe: does Telegram accept this token?"""
    return call(token, "getMe")


def set_webhook(token: str, *, url: str, secret_token: str) -> Result:
    return call(token, "setWebhook", {"url": url, "secret_token": secret_token, "allowed_updates": ALLOWED_UPDATES})


def delete_webhook(token: str) -> Result:
    return call(token, "deleteWebhook", {"drop_pending_updates": False}, deadline=DELETE_DEADLINE)


POLL_LIMIT = 100  # updates per getUpdates call (the Bot API's maximum)


def get_updates(token: str, *, offset: int) -> Result:
    """Long-poll mode: the updates from `offset` on, at once (`timeout` 0: beat calls again)."""
    payload = {"offset": offset, "limit": POLL_LIMIT, "timeout": 0, "allowed_updates": ALLOWED_UPDATES}
    return call(token, "getUpdates", payload)


def send_message_body(*, chat_id: str, text: str, buttons: list[dict]) -> str:
    """sendMessage: the text, and keyboard buttons as an inline keyboard, one URL button per row."""
    payload: dict = {"chat_id": chat_id, "text": text or " "}
    if buttons:
        payload["reply_markup"] = {"inline_keyboard": [[{"text": b["label"], "url": b["url"]}] for b in buttons]}
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
