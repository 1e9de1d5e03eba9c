"""Meta's Graph API: Facebook Messenger (Send API) and WhatsApp Business (Cloud API).

Neither has a webhook registration call a page or number token can make (the app's webhook is set
in Meta's app dashboard), so PUT answers `webhook: {attempted: false, status: "not_supported"}`.
Meta signs every callback: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body>` keyed by
the app secret of the Meta app that delivers it, the deployment's setting
`PROVIDER_APP_SECRET_FB` / `PROVIDER_APP_SECRET_WA` (unset: every callback is refused). The app's
GET verification of the callback URL is answered with `PROVIDER_VERIFY_TOKEN_FB` / `_WA`.
Sends authenticate with `Authorization: Bearer <token>`; errors are `{"error": {message, code}}`.

The app secret is deployment-wide, so a valid signature says only that Meta sent the event, not
for which widget: each event is also checked against the connection of the hook that received it
(Messenger: the page id, learned from the page token with `GET /me` when the credential is saved
or verified; WhatsApp: the phone number id given as `sid`). Events of another page or number are
acknowledged and dropped.
"""

from __future__ import annotations

from django.conf import settings

from .base import (
    FAILED,
    NOT_SUPPORTED,
    Credential,
    HookRequest,
    Inbound,
    Provider,
    Registration,
    SendRequest,
    hmac_hex,
    ident,
    json_body,
    member,
    objects,
    same,
    short,
    string,
)

GRAPH_VERSION = "v19.0"


def _signed(app_secret: str, request: HookRequest) -> bool:
    if not app_secret:
        return False
    return same("sha256=" + hmac_hex(app_secret, request.body), request.headers.get("x-hub-signature-256"))


class _Graph(Provider):
    def answer_error(self, status_code: int, data: object) -> str:
        if 200 <= status_code < 300 and isinstance(data, dict) and "error" not in data:
            return ""
        error = data.get("error") if isinstance(data, dict) else None
        return short(error.get("message") if isinstance(error, dict) else f"HTTP {status_code}")

    def authentic(self, cred: Credential, hook_secret: str, request: HookRequest) -> bool:
        return _signed(getattr(settings, f"PROVIDER_APP_SECRET_{self.code.upper()}", ""), request)

    def handshake(self, query: dict[str, str]) -> str | None:
        """Meta verifies a callback URL with `GET ?hub.mode=subscribe&hub.verify_token=..&hub.challenge=..`:
        the challenge is echoed when the verify token is the deployment's
        `PROVIDER_VERIFY_TOKEN_FB` / `_WA` (unset: never)."""
        expected = getattr(settings, f"PROVIDER_VERIFY_TOKEN_{self.code.upper()}", "")
        challenge = query.get("hub.challenge", "")
        if query.get("hub.mode") != "subscribe" or not same(expected, query.get("hub.verify_token")):
            return None
        return challenge if challenge.isascii() and challenge.isalnum() and len(challenge) <= 128 else None

    def _post(self, url: str, stored: dict, cred: Credential) -> SendRequest:
        return SendRequest(
            url, json_body(stored), {"Content-Type": "application/json", "Authorization": f"Bearer {cred.token}"}
        )


class Messenger(_Graph):
    """Facebook Messenger: events `{"object": "page", "entry": [{"id": <page id>, "messaging":
    [{"sender": {"id"}, "recipient": {"id": <page id>}, "message": {"mid", "text"}}]}]}`; replies
    `POST /{v}/me/messages` to the sender's page-scoped id. Only events whose entry and recipient
    are the connection's page (`cred.sid`) are taken; without a learned page id none is."""

    code = "fb"

    def register(self, cred: Credential, *, hook_url: str, hook_secret: str) -> Registration:
        """No webhook call exists (the app's webhook is set in Meta's dashboard); the page id of the
        token is read (`GET /me?fields=id`) so that the hook can tell this page's events from
        another page's. A failed read is reported `failed` (retry with verify)."""
        result = self.call(
            "GET", f"{self.base}/{GRAPH_VERSION}/me?fields=id", headers={"Authorization": f"Bearer {cred.token}"}
        )
        page_id = result.data.get("id") if result.ok and isinstance(result.data, dict) else None
        if not isinstance(page_id, str | int) or isinstance(page_id, bool) or not str(page_id).strip():
            return Registration(False, FAILED, f"page id lookup failed: {result.description or 'no id'}")
        return Registration(False, NOT_SUPPORTED, account_id=str(page_id).strip()[:64])

    def parse(self, cred: Credential, data: dict) -> list[Inbound]:
        if string(data, "object") != "page" or not cred.sid:
            return []
        out = []
        for entry in objects(data, "entry"):
            if ident(entry, "id") != cred.sid:
                continue
            for event in objects(entry, "messaging"):
                if ident(event, "recipient", "id") != cred.sid or member(event, "message", "is_echo"):
                    continue
                text, mid, user = (
                    string(event, "message", "text"),
                    string(event, "message", "mid"),
                    string(event, "sender", "id"),
                )
                if text.strip() and mid and user:
                    out.append(Inbound(mid, user, user, text))
        return out

    def send_payload(self, *, address: str, text: str) -> dict:
        return {"recipient": {"id": address}, "messaging_type": "RESPONSE", "message": {"text": text or " "}}

    def send_request(self, cred: Credential, stored: dict) -> SendRequest:
        return self._post(f"{self.base}/{GRAPH_VERSION}/me/messages", stored, cred)


class WhatsApp(_Graph):
    """WhatsApp Cloud API: the credential is `{token, sid}` (`sid` the business phone number id);
    events `{"object": "whatsapp_business_account", "entry": [{"changes": [{"field": "messages",
    "value": {"metadata": {"phone_number_id"}, "contacts": [{"profile": {"name"}, "wa_id"}],
    "messages": [{"from", "id", "type": "text", "text": {"body"}}]}}]}]}`; replies
    `POST /{v}/{phone_number_id}/messages`. Messages to another number of the same app are ignored."""

    code = "wa"
    fields = ("token", "sid")

    def parse(self, cred: Credential, data: dict) -> list[Inbound]:
        if string(data, "object") != "whatsapp_business_account" or not cred.sid:
            return []
        out = []
        for entry in objects(data, "entry"):
            for change in objects(entry, "changes"):
                if (
                    string(change, "field") != "messages"
                    or ident(change, "value", "metadata", "phone_number_id") != cred.sid
                ):
                    continue
                names = {string(c, "wa_id"): string(c, "profile", "name") for c in objects(change, "value", "contacts")}
                for message in objects(change, "value", "messages"):
                    body, mid, user = string(message, "text", "body"), string(message, "id"), string(message, "from")
                    if string(message, "type") == "text" and body.strip() and mid and user:
                        out.append(Inbound(mid, user, user, body, short(names.get(user), 255)))
        return out

    def send_payload(self, *, address: str, text: str) -> dict:
        return {
            "messaging_product": "whatsapp",
            "recipient_type": "individual",
            "to": address,
            "type": "text",
            "text": {"preview_url": True, "body": text or " "},
        }

    def send_request(self, cred: Credential, stored: dict) -> SendRequest:
        return self._post(f"{self.base}/{GRAPH_VERSION}/{cred.sid}/messages", stored, cred)


FB = Messenger()
WA = WhatsApp()
