"""Apple Messages for Business through the business's messaging gateway (`{token, sid, url}`: the
gateway's shared secret, the business id, and the gateway's https endpoint, which must be a public
address). There is no registration call (the gateway is configured in Apple Business Register), so
PUT answers `webhook: {attempted: false, status: "not_supported"}`.

Both directions carry Apple's headers: `id` (the message id), `Source-Id`, `Destination-Id`, and
`Authorization: Bearer <JWT>` signed HS256 with the shared secret. Inbound, the JWT is verified
(signature; `exp` required, in the future and at most `MAX_INBOUND_LIFETIME` (1 hour) away, and
when `iat` is present `exp - iat` at most that too, so a captured token lapses within the hour),
`Destination-Id` and the body's `destinationId` must be our business id, and the body's `sourceId`
is the customer. The claims Apple's scheme has (`aud`, `iss`, `iat`) cover neither the body nor the
headers, so a token read off the wire authenticates any body until it lapses: the lifetime bound is
the only limit there is. Outbound, our JWT has `iss` = the business id and the body is
`{"v": 1, "type": "text", "id", "sourceId", "destinationId", "body"}` posted to the gateway URL."""

from __future__ import annotations

import base64
import hmac
import time
import uuid

from apps.core.api.parsers import loads as strict_loads
from apps.core.errors import InvalidJSON

from .base import Credential, HookRequest, Inbound, Provider, SendRequest, json_body, same, string

TOKEN_LIFETIME = 300  # seconds, of the tokens we sign
MAX_INBOUND_LIFETIME = 3600  # seconds: the longest-lived gateway token we accept
CLOCK_SKEW = 60  # seconds an `iat` may lie ahead of our clock


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def sign_jwt(secret: str, claims: dict) -> str:
    head = _b64(json_body({"alg": "HS256", "typ": "JWT"}))
    body = _b64(json_body(claims))
    mac = hmac.new(secret.encode(), f"{head}.{body}".encode(), "sha256").digest()
    return f"{head}.{body}.{_b64(mac)}"


def verify_jwt(secret: str, token: str, *, now: float | None = None) -> bool:
    parts = token.split(".")
    if len(parts) != 3 or not secret:
        return False
    try:
        header = strict_loads(_unb64(parts[0]))
        claims = strict_loads(_unb64(parts[1]))
    except (ValueError, InvalidJSON):
        return False
    if not isinstance(header, dict) or header.get("alg") != "HS256" or not isinstance(claims, dict):
        return False
    expected = _b64(hmac.new(secret.encode(), f"{parts[0]}.{parts[1]}".encode(), "sha256").digest())
    if not same(expected, parts[2]):
        return False
    now = time.time() if now is None else now
    exp, iat = claims.get("exp"), claims.get("iat")
    if not _number(exp) or exp < now or exp - now > MAX_INBOUND_LIFETIME:
        return False
    if iat is not None and (not _number(iat) or iat > now + CLOCK_SKEW or exp - iat > MAX_INBOUND_LIFETIME):
        return False
    return True


def _number(value: object) -> bool:
    """A NumericDate within what a float holds exactly (a larger integer cannot be compared with
    the clock's float time without overflowing)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and abs(value) < 2**53


class Apple(Provider):
    code = "apple"
    fields = ("token", "sid", "url")

    def authentic(self, cred: Credential, hook_secret: str, request: HookRequest) -> bool:
        auth = request.headers.get("authorization") or ""
        if not auth.startswith("Bearer ") or not verify_jwt(cred.token, auth[7:]):
            return False
        return same(cred.sid, request.headers.get("destination-id"))

    def parse(self, cred: Credential, data: dict) -> list[Inbound]:
        """A text message to our business: the body's `destinationId` must be the business id the
        `Destination-Id` header was checked against (the gateway's secret signs for every business
        it serves, and the token covers neither the headers nor the body)."""
        text, mid, user = string(data, "body"), string(data, "id"), string(data, "sourceId")
        if string(data, "type") != "text" or not text.strip() or not mid or not user:
            return []
        if not same(cred.sid, string(data, "destinationId")):
            return []
        return [Inbound(mid, user, user, text)]

    def send_payload(self, *, address: str, text: str) -> dict:
        return {"v": 1, "type": "text", "id": str(uuid.uuid4()), "destinationId": address, "body": text or " "}

    def send_request(self, cred: Credential, stored: dict) -> SendRequest:
        body = {**stored, "sourceId": cred.sid}
        now = int(time.time())
        token = sign_jwt(cred.token, {"iss": cred.sid, "iat": now, "exp": now + TOKEN_LIFETIME})
        return SendRequest(
            cred.url,
            json_body(body),
            {
                "Content-Type": "application/json",
                "Authorization": f"Bearer {token}",
                "id": stored["id"],
                "Source-Id": cred.sid,
                "Destination-Id": stored["destinationId"],
            },
        )


PROVIDER = Apple()
