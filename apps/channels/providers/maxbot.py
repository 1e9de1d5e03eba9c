"""Max bot API (https://dev.max.ru/docs-api): `{base}/<path>` with the `Authorization: <token>`
header and JSON bodies; a refusal is a 4xx `{"code", "message"}` or `{"success": false, "message"}`.
`POST /subscriptions` registers our hook URL with `update_types: ["message_created"]` and a
`secret` that Max sends back on every callback in `X-Max-Bot-Api-Secret` (compared in constant
time). Events: `{"update_type": "message_created", "message": {"sender": {"user_id", "name"},
"recipient": {"chat_id"}, "body": {"mid", "text"}}}`; replies `POST /messages?chat_id=`."""

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
    ident,
    json_body,
    member,
    same,
    short,
    string,
)


class Max(Provider):
    code = "mx"
    hook_auth = "header"

    def answer_error(self, status_code: int, data: object) -> str:
        if not isinstance(data, dict):
            return f"not a Max answer (HTTP {status_code})"
        if not 200 <= status_code < 300 or data.get("success") is False:
            return short(data.get("message") or data.get("code") or f"HTTP {status_code}")
        return ""

    def register(self, cred: Credential, *, hook_url: str, hook_secret: str) -> Registration:
        result = self.call(
            "POST",
            f"{self.base}/subscriptions",
            payload={"url": hook_url, "update_types": ["message_created"], "secret": hook_secret},
            headers={"Authorization": cred.token},
        )
        return Registration(True, REGISTERED) if result.ok else Registration(True, FAILED, result.description)

    def authentic(self, cred: Credential, hook_secret: str, request: HookRequest) -> bool:
        return same(hook_secret, request.headers.get("x-max-bot-api-secret"))

    def parse(self, cred: Credential, data: dict) -> list[Inbound]:
        if string(data, "update_type") != "message_created" or member(data, "message", "sender", "is_bot"):
            return []
        text, mid = string(data, "message", "body", "text"), string(data, "message", "body", "mid")
        user = ident(data, "message", "sender", "user_id", numeric=True)
        chat = ident(data, "message", "recipient", "chat_id", numeric=True)
        if not text.strip() or not mid or not user or not chat:
            return []
        return [Inbound(mid, user, chat, text, short(string(data, "message", "sender", "name"), 255))]

    def send_payload(self, *, address: str, text: str) -> dict:
        return {"chat_id": address, "body": {"text": text or " "}}

    def send_request(self, cred: Credential, stored: dict) -> SendRequest:
        return SendRequest(
            f"{self.base}/messages?chat_id={int(stored['chat_id'])}",
            json_body(stored["body"]),
            {"Content-Type": "application/json", "Authorization": cred.token},
        )


PROVIDER = Max()
