"""Cian (the real-estate marketplace) chat API as this deployment calls it: `{base}/v1/chats/...`
with `Authorization: Bearer <token>` and JSON; a refusal is a non-2xx answer `{"message", "errors"?}`.
`subscribe-webhook` registers our hook URL and `unsubscribe-webhook` removes it (Cian and Telegram
are the providers with a real unregister call). Cian does not sign its callbacks, so the subscribed
URL carries our hook's own secret (`?token=`, redacted in logs), compared in constant time. Events: `{"eventId",
"eventType": "message", "data": {"chatId", "message": {"messageId", "text", "author": {"userId",
"name"}}}}`; replies `POST /v1/chats/send-message` `{chatId, text}`. Cian publishes this API to
partners only: the shapes are the partner documentation's as understood here, and the loopback fake
(`apps/channels/tests/provider_fakes.py`) speaks them."""

from __future__ import annotations

from .base import (
    FAILED,
    REGISTERED,
    UNREGISTER_DEADLINE,
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


class Cian(Provider):
    code = "cian"
    hook_auth = "query"

    def _headers(self, cred: Credential) -> dict[str, str]:
        return {"Authorization": f"Bearer {cred.token}"}

    def answer_error(self, status_code: int, data: object) -> str:
        if 200 <= status_code < 300:
            return ""
        return short(data.get("message") if isinstance(data, dict) else None) or f"HTTP {status_code}"

    def register(self, cred: Credential, *, hook_url: str, hook_secret: str) -> Registration:
        result = self.call(
            "POST", f"{self.base}/v1/chats/subscribe-webhook", payload={"url": hook_url}, headers=self._headers(cred)
        )
        return Registration(True, REGISTERED) if result.ok else Registration(True, FAILED, result.description)

    def unregister(self, cred: Credential, *, hook_url: str) -> None:
        self.call(
            "POST",
            f"{self.base}/v1/chats/unsubscribe-webhook",
            payload={"url": hook_url},
            headers=self._headers(cred),
            deadline=UNREGISTER_DEADLINE,
        )

    def parse(self, cred: Credential, data: dict) -> list[Inbound]:
        if string(data, "eventType") != "message":
            return []
        message = ("data", "message")
        text, mid, chat = (
            string(data, *message, "text"),
            ident(data, *message, "messageId"),
            ident(data, "data", "chatId"),
        )
        user = ident(data, *message, "author", "userId")
        if not text.strip() or not mid or not user or not chat:
            return []
        return [Inbound(mid, user, chat, text, short(string(data, *message, "author", "name"), 255))]

    def send_payload(self, *, address: str, text: str) -> dict:
        return {"chatId": address, "text": text or " "}

    def send_request(self, cred: Credential, stored: dict) -> SendRequest:
        return SendRequest(
            f"{self.base}/v1/chats/send-message",
            json_body(stored),
            {"Content-Type": "application/json", **self._headers(cred)},
        )


PROVIDER = Cian()
