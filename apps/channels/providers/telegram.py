"""Telegram Bot API calls (https://core.telegram.org/bots/api), every one through the guarded
outbound client against PROVIDER_API_BASE_TG. The token is part of the URL path, so URLs are
built at call time and never stored or logged.

The provider: PUT probes the token with `getMe` (a refusal is 422 and stores nothing), then
registers our hook with `setWebhook` and a secret Telegram echoes in
`X-Telegram-Bot-Api-Secret-Token`; with TELEGRAM_LONG_POLL it deletes the webhook instead and beat
reads `getUpdates` from the stored offset. DELETE calls `deleteWebhook`. Replies are `sendMessage`
with keyboard buttons as an inline keyboard."""

from __future__ import annotations

import json
from dataclasses import dataclass

from django.conf import settings

from apps.core.errors import ValidationFailed
from apps.platform import outbound

from .. import payloads
from .base import (
    FAILED,
    REGISTERED,
    Credential,
    HookRequest,
    Inbound,
    Polled,
    Provider,
    Registration,
    SendRequest,
    ident,
    integer,
    json_body,
    member,
    same,
    string,
)

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
MAX_UPDATE_ID = 2**63 - 2  # the next offset (id + 1) must fit the stored bigint


def get_updates(token: str, *, offset: int) -> Result:
    """Long-poll mode: the updates from `offset` on, at once (`timeout` 0: beat calls again)."""
    payload = {"offset": offset, "limit": POLL_LIMIT, "timeout": 0, "allowed_updates": ALLOWED_UPDATES}
    return call(token, "getUpdates", payload)


class Telegram(Provider):
    code = "tg"
    label = "Telegram"
    hook_auth = "header"
    refusal = "X-Telegram-Bot-Api-Secret-Token does not match."
    credential_pattern = r"[0-9]{1,20}:[A-Za-z0-9_-]{20,100}"  # @BotFather's `<digits>:<characters>`
    credential_rule = "Not a Telegram bot token (`<digits>:<characters>`)."

    @property
    def long_poll(self) -> bool:
        return settings.TELEGRAM_LONG_POLL

    def probe(self, token: str) -> str | None:
        """getMe: the chat messenger's read-only probe (endpoints.md, Rules)."""
        result = get_me(token)
        return result.description if result.rejected else None

    def register(self, cred: Credential, *, hook_url: str, hook_secret: str) -> Registration:
        if self.long_poll:  # no webhook: delete it, check the identity; beat polls
            result = delete_webhook(cred.token)
            if result.ok:
                result = get_me(cred.token)
            return (
                Registration(True, REGISTERED, "long-poll mode")
                if result.ok
                else Registration(True, FAILED, result.description)
            )
        result = set_webhook(cred.token, url=hook_url, secret_token=hook_secret)
        return Registration(True, REGISTERED) if result.ok else Registration(True, FAILED, result.description)

    def unregister(self, cred: Credential, *, hook_url: str) -> None:
        delete_webhook(cred.token)  # best effort: an inert webhook may remain

    def poll(self, cred: Credential, *, offset: int) -> Polled:
        result = get_updates(cred.token, offset=offset)
        if not result.ok or not isinstance(result.result, list):
            return Polled([], offset, result.description or "no update list")
        updates = [
            u
            for u in result.result
            if isinstance(u, dict) and type(u.get("update_id")) is int and 0 <= u["update_id"] <= MAX_UPDATE_ID
        ]
        updates.sort(key=lambda u: u["update_id"])
        return Polled(updates, updates[-1]["update_id"] + 1 if updates else offset)

    def authentic(self, cred: Credential, hook_secret: str, request: HookRequest) -> bool:
        return same(hook_secret, request.headers.get("x-telegram-bot-api-secret-token"))

    def parse(self, cred: Credential, data: dict) -> list[Inbound]:
        """A text message from a user, keyed by update_id; updates without text are dropped."""
        update_id = integer(data, "update_id")
        if update_id is None:
            raise ValidationFailed("Not a Telegram update.", errors={"update_id": ["Must be an integer."]})
        text, chat_id = string(data, "message", "text"), ident(data, "message", "chat", "id", numeric=True)
        if not text.strip() or not chat_id:
            return []
        sender = member(data, "message", "from")
        external_id = ident(sender, "id", numeric=True) or chat_id
        name = " ".join(string(sender, k) for k in ("first_name", "last_name"))
        return [Inbound(str(update_id), external_id, chat_id, text, name)]

    def outbound_body(self, *, address: str, message) -> str | None:
        """sendMessage: the text, and keyboard buttons as an inline keyboard, one URL button per row."""
        payload = self.send_payload(address=address, text=message.body)
        if buttons := payloads.buttons_of(message):
            payload["reply_markup"] = {"inline_keyboard": [[{"text": b["label"], "url": b["url"]}] for b in buttons]}
        return json_body(payload).decode()

    def send_payload(self, *, address: str, text: str) -> dict:
        return {"chat_id": address, "text": text or " "}

    def send_request(self, cred: Credential, stored: dict) -> SendRequest:
        return SendRequest(
            method_url(cred.token, "sendMessage"), json_body(stored), {"Content-Type": "application/json"}
        )


PROVIDER = Telegram()
