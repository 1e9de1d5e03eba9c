"""AliExpress seller chat as this deployment calls it: `{base}/im/...` with `Authorization: Bearer
<token>` and JSON. Its subscribe call is not part of a published contract, so a 2xx answer to
`POST /im/webhook/subscribe` is reported `unconfirmed_provider_api` (the call was made, whether
events will come is not confirmed); a refusal is `failed`. There is no unregister call. Callbacks
are not signed: the subscribed URL carries our hook's own secret (`?token=`, redacted in logs), compared in constant
time. Events: `{"event_id", "event_type": "message", "conversation_id", "sender": {"buyer_id",
"name"}, "content": {"type": "text", "text"}}`; replies `POST /im/message/send`."""

from __future__ import annotations

from .base import (
    FAILED,
    UNCONFIRMED,
    Credential,
    Inbound,
    Provider,
    Registration,
    SendRequest,
    ident,
    json_body,
    short,
    string,
)


class AliExpress(Provider):
    code = "ali"
    hook_auth = "query"

    def answer_error(self, status_code: int, data: object) -> str:
        if 200 <= status_code < 300 and not (isinstance(data, dict) and data.get("error_code")):
            return ""
        if isinstance(data, dict):
            return short(data.get("error_message") or data.get("error_code") or f"HTTP {status_code}")
        return f"HTTP {status_code}"

    def register(self, cred: Credential, *, hook_url: str, hook_secret: str) -> Registration:
        result = self.call(
            "POST",
            f"{self.base}/im/webhook/subscribe",
            payload={"url": hook_url, "events": ["message"]},
            headers={"Authorization": f"Bearer {cred.token}"},
        )
        return Registration(True, UNCONFIRMED) if result.ok else Registration(True, FAILED, result.description)

    def parse(self, cred: Credential, data: dict) -> list[Inbound]:
        if string(data, "event_type") != "message" or string(data, "content", "type") != "text":
            return []
        text, mid = string(data, "content", "text"), ident(data, "event_id")
        user, conversation = ident(data, "sender", "buyer_id"), ident(data, "conversation_id")
        if not text.strip() or not mid or not user or not conversation:
            return []
        return [Inbound(mid, user, conversation, text, short(string(data, "sender", "name"), 255))]

    def send_payload(self, *, address: str, text: str) -> dict:
        return {"conversation_id": address, "content": {"type": "text", "text": text or " "}}

    def send_request(self, cred: Credential, stored: dict) -> SendRequest:
        return SendRequest(
            f"{self.base}/im/message/send",
            json_body(stored),
            {"Content-Type": "application/json", "Authorization": f"Bearer {cred.token}"},
        )


PROVIDER = AliExpress()
