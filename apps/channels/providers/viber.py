"""Viber REST Bot API (https://developers.viber.com/docs/api/rest-bot-api/): `POST {base}/pa/<method>`
with the `X-Viber-Auth-Token` header; answers `{"status": 0, "status_message": "ok", ...}` (a
non-zero status is a refusal, with HTTP 200). `set_webhook` registers our hook (Viber calls it once
with a signed `webhook` event); every callback is signed: `X-Viber-Content-Signature` is the hex
HMAC-SHA256 of the raw body keyed by the account's auth token. Viber has no unregister we call."""

from __future__ import annotations

from .base import (
    FAILED,
    REGISTERED,
    Credential,
    HookRequest,
    Inbound,
    Provider,
    Registration,
    SendRequest,
    hmac_hex,
    ident,
    json_body,
    loads,
    same,
    short,
    string,
)

EVENT_TYPES = ["message", "subscribed", "unsubscribed", "conversation_started"]
SENDER_NAME = "Support"  # Viber requires a sender name (at most 28 characters)
# Status codes that will not change on a retry (invalid token, bad data, receiver gone, ...).
FINAL_STATUSES = {1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 13}


class Viber(Provider):
    code = "vb"

    def answer_error(self, status_code: int, data: object) -> str:
        if not isinstance(data, dict):
            return f"not a Viber answer (HTTP {status_code})"
        if status_code != 200 or data.get("status") != 0:
            return short(data.get("status_message") or f"status {data.get('status')}")
        return ""

    def register(self, cred: Credential, *, hook_url: str, hook_secret: str) -> Registration:
        result = self.call(
            "POST",
            f"{self.base}/pa/set_webhook",
            payload={"url": hook_url, "event_types": EVENT_TYPES, "send_name": True, "send_photo": False},
            headers={"X-Viber-Auth-Token": cred.token},
        )
        return Registration(True, REGISTERED) if result.ok else Registration(True, FAILED, result.description)

    def authentic(self, cred: Credential, hook_secret: str, request: HookRequest) -> bool:
        return same(hmac_hex(cred.token, request.body), request.headers.get("x-viber-content-signature"))

    def parse(self, cred: Credential, data: dict) -> list[Inbound]:
        if string(data, "event") != "message" or string(data, "message", "type") != "text":
            return []
        text, user, token = string(data, "message", "text"), string(data, "sender", "id"), ident(data, "message_token")
        if not text.strip() or not user or not token:
            return []
        return [Inbound(token, user, user, text, short(string(data, "sender", "name"), 255))]

    def send_payload(self, *, address: str, text: str) -> dict:
        return {
            "receiver": address,
            "min_api_version": 1,
            "sender": {"name": SENDER_NAME},
            "type": "text",
            "text": text or " ",
        }

    def send_request(self, cred: Credential, stored: dict) -> SendRequest:
        return SendRequest(
            f"{self.base}/pa/send_message",
            json_body(stored),
            {"Content-Type": "application/json", "X-Viber-Auth-Token": cred.token},
        )

    def send_error(self, status_code: int, content: bytes) -> tuple[str, bool]:
        if status_code != 200:
            return super().send_error(status_code, content)
        data = loads(content)
        if not isinstance(data, dict) or not isinstance(data.get("status"), int):
            return "vb_invalid_answer", False
        status = data["status"]
        return ("", False) if status == 0 else (f"vb_status_{status}", status in FINAL_STATUSES)


PROVIDER = Viber()
