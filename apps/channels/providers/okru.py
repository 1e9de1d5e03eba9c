"""OK.ru bot API (https://apiok.ru/en/dev/graph_api/): `{base}/graph/me/<method>?access_token=<token>`
with JSON bodies; a refusal is `{"error_code", "error_msg"}` (often with HTTP 200). `me/subscribe`
registers our hook URL. OK.ru does not sign its webhooks, so the URL we subscribe carries our hook's
own secret (`?token=`, redacted in logs), compared in constant time; without it a call is refused. Events:
`{"webhookType": "MESSAGE_CREATED", "sender": {"user_id", "name"}, "recipient": {"chat_id"},
"message": {"mid", "text"}, "timestamp"}`; replies `POST me/messages/{chat_id}`."""

from __future__ import annotations

from urllib.parse import quote

from .base import (
    FAILED,
    REGISTERED,
    Credential,
    Inbound,
    Provider,
    Registration,
    SendRequest,
    json_body,
    loads,
    short,
    string,
)


class OkRu(Provider):
    code = "ok"
    hook_auth = "query"

    def _url(self, path: str, cred: Credential) -> str:
        return f"{self.base}/graph/{path}?access_token={quote(cred.token, safe='')}"

    def answer_error(self, status_code: int, data: object) -> str:
        if not isinstance(data, dict):
            return f"not an OK.ru answer (HTTP {status_code})"
        if "error_code" in data or not 200 <= status_code < 300:
            return short(data.get("error_msg") or f"error {data.get('error_code')}")
        return ""

    def register(self, cred: Credential, *, hook_url: str, hook_secret: str) -> Registration:
        result = self.call("POST", self._url("me/subscribe", cred), payload={"url": hook_url})
        if result.ok and isinstance(result.data, dict) and result.data.get("success") is True:
            return Registration(True, REGISTERED)
        return Registration(True, FAILED, result.description or "not confirmed")

    def parse(self, cred: Credential, data: dict) -> list[Inbound]:
        if string(data, "webhookType") != "MESSAGE_CREATED":
            return []
        text, mid = string(data, "message", "text"), string(data, "message", "mid")
        user, chat = string(data, "sender", "user_id"), string(data, "recipient", "chat_id")
        if not text.strip() or not mid or not user or not chat:
            return []
        return [Inbound(mid, user, chat, text, short(string(data, "sender", "name"), 255))]

    def send_payload(self, *, address: str, text: str) -> dict:
        return {"recipient": {"chat_id": address}, "message": {"text": text or " "}}

    def send_request(self, cred: Credential, stored: dict) -> SendRequest:
        chat = quote(stored["recipient"]["chat_id"], safe=":")
        return SendRequest(
            self._url(f"me/messages/{chat}", cred), json_body(stored), {"Content-Type": "application/json"}
        )

    def send_error(self, status_code: int, content: bytes) -> tuple[str, bool]:
        if status_code != 200:
            return super().send_error(status_code, content)
        data = loads(content)
        if not isinstance(data, dict):
            return "ok_invalid_answer", False
        if "error_code" in data:
            # 102 (session expired), 104 (bad token), 160 (chat not found) and other errors are final;
            # 3 (method blocked) and 1/2/... transient ones retry.
            code = data.get("error_code")
            return f"ok_error_{code}", code not in (1, 2, 3, 9999)
        return "", False


PROVIDER = OkRu()
