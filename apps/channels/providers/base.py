"""What every messenger provider other than Telegram and VK implements: registration of our hook,
the hook's authentication and parsing, and the send call of an operator message.

A provider module exposes one `Provider` instance. Calls go through the guarded outbound client
against `PROVIDER_API_BASE_<CODE>` (a test points it at a loopback fake of the provider's wire
format). Credentials are passed in at call time and never stored in a request body we keep: the
stored outbound body (`send_payload`) carries the recipient and the text only; `send_request`
adds the credential when the attempt runs.
"""

from __future__ import annotations

import hmac
import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import ClassVar

from django.conf import settings

from apps.core import outbound

CALL_TIMEOUT = (3.05, 10)
CALL_DEADLINE = 15.0
UNREGISTER_DEADLINE = 5.0  # removal never blocks the disconnect for long
RESPONSE_CAP = 256 * 1024
USER_AGENT = "ChatWidgetService-Channels/1"

REGISTERED = "registered"
FAILED = "failed"
UNCONFIRMED = "unconfirmed_provider_api"
NOT_SUPPORTED = "not_supported"


@dataclass(frozen=True)
class Credential:
    token: str
    sid: str = ""
    url: str = ""


@dataclass(frozen=True)
class Registration:
    """`account_id`: the provider's id of the connected account learned while registering (a
    Messenger page id), stored as the connection's `sid` so the hook can check events against it."""

    attempted: bool
    status: str
    detail: str = ""
    account_id: str = ""


@dataclass(frozen=True)
class CallResult:
    """`ok`: the provider accepted; `status_code` None when nothing answered; `data` the JSON answer."""

    ok: bool
    status_code: int | None
    description: str
    data: object = None


@dataclass(frozen=True)
class Inbound:
    """One text message from a user: `update_id` dedupes it, `external_id` is the user,
    `address` where replies go."""

    update_id: str
    external_id: str
    address: str
    text: str
    name: str = ""


@dataclass
class SendRequest:
    url: str
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class HookRequest:
    """What the hook view hands a provider: raw bytes (signatures are over them), lower-cased
    headers, the query string's parameters, the absolute URL called."""

    body: bytes
    headers: dict[str, str]
    query: dict[str, str]


def same(expected: str, given: str | None) -> bool:
    """Constant-time comparison; an empty expectation never matches."""
    return bool(expected) and hmac.compare_digest(expected.encode(), (given or "").encode())


def hmac_hex(key: str | bytes, body: bytes, digest: str = "sha256") -> str:
    return hmac.new(key.encode() if isinstance(key, str) else key, body, digest).hexdigest()


def json_body(payload: dict) -> bytes:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()


def short(value: object, limit: int = 200) -> str:
    return str(value or "")[:limit]


class Provider(ABC):
    """Defaults: no registration mechanism (`attempted: false`), no unregister call."""

    code: ClassVar[str] = ""
    fields: ClassVar[tuple[str, ...]] = ("token",)
    # where the hook's own secret travels: "header" (the provider echoes what we registered),
    # "query" (the registered hook URL carries `?token=<secret>`, redacted in logs), or "" (the provider signs).
    hook_auth: ClassVar[str] = ""

    @property
    def base(self) -> str:
        return getattr(settings, f"PROVIDER_API_BASE_{self.code.upper()}").rstrip("/")

    def call(
        self,
        method: str,
        url: str,
        *,
        payload: dict | None = None,
        headers: dict[str, str] | None = None,
        deadline: float = CALL_DEADLINE,
    ) -> CallResult:
        body = json_body(payload) if payload is not None else None
        try:
            response = outbound.request(
                method,
                url,
                data=body,
                headers={"Content-Type": "application/json", "User-Agent": USER_AGENT, **(headers or {})},
                timeout=CALL_TIMEOUT,
                max_bytes=RESPONSE_CAP,
                deadline=deadline,
            )
        except outbound.OutboundBlocked as exc:
            return CallResult(False, None, f"blocked: {exc.reason}")
        except outbound.OutboundError as exc:
            return CallResult(False, None, f"unreachable: {exc.reason}")
        try:
            data = response.json()
        except ValueError:
            data = None
        error = self.answer_error(response.status_code, data)
        return CallResult(not error, response.status_code, error, data)

    def answer_error(self, status_code: int, data: object) -> str:
        """The provider's refusal in an answer, or "" when it accepted."""
        if 200 <= status_code < 300:
            return ""
        return f"HTTP {status_code}"

    # --- registration ---------------------------------------------------------------------------

    def register(self, cred: Credential, *, hook_url: str, hook_secret: str) -> Registration:
        return Registration(False, NOT_SUPPORTED)

    def unregister(self, cred: Credential, *, hook_url: str) -> None:  # noqa: B027 (a default, not abstract)
        """Provider-side removal (best effort, short deadline). Most providers have none."""

    # --- inbound --------------------------------------------------------------------------------

    def authentic(self, cred: Credential, hook_secret: str, request: HookRequest) -> bool:
        if self.hook_auth == "query":
            return same(hook_secret, request.query.get("token"))
        return False

    @abstractmethod
    def parse(self, cred: Credential, data: dict) -> list[Inbound]:
        """The user text messages of one hook call (others are acknowledged and dropped)."""

    def handshake(self, query: dict[str, str]) -> str | None:
        """A GET verification of the hook URL (Meta's `hub.challenge`): the text to echo, or None
        when the provider has none or the request is not genuine."""
        return None

    def hook_answer(self, data: dict) -> tuple[str, bytes]:
        """The content type and body the provider expects from our hook."""
        return "application/json", b'{"ok":true}'

    # --- outbound -------------------------------------------------------------------------------

    @abstractmethod
    def send_payload(self, *, address: str, text: str) -> dict:
        """What is stored for one operator message (no credential in it)."""

    @abstractmethod
    def send_request(self, cred: Credential, stored: dict) -> SendRequest:
        """The send call of a stored payload, with the credential read when the attempt runs."""

    def send_error(self, status_code: int, content: bytes) -> tuple[str, bool]:
        """(error, permanent) for an answer; ("", False) when it was accepted. A 4xx other than
        408 and 429 is the provider's final verdict on the request."""
        if 200 <= status_code < 300:
            return "", False
        return f"http_{status_code}", 400 <= status_code < 500 and status_code not in (408, 429)


def loads(content: bytes) -> object:
    try:
        return json.loads(content)
    except ValueError:
        return None
