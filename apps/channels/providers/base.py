"""What every messenger provider implements: registration of our hook, the hook's authentication
and parsing, and the send call of an operator message. The services dispatch through these hooks
(`providers.registry`), never on a provider's code.

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
from typing import Any, ClassVar

from django.conf import settings

from apps.core import crypto
from apps.core.api.parsers import loads as strict_loads
from apps.core.errors import InvalidJSON, ValidationFailed
from apps.platform import outbound

from .. import payloads
from ..models import MessengerConnection

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


TEXT_LIMIT = 65536  # characters of one message body, as the REST API takes it
ID_LIMIT = 255  # characters of a user id or an address (the contact link's columns)
UPDATE_ID_LIMIT = 1024  # characters of a provider's message id (longer than 64 are stored hashed)
# Messages stored from one hook call, the rest acknowledged and dropped: twice the largest batch a
# provider sends (Meta batches up to 1000 updates a call; the others one event, Telegram's getUpdates 100).
HOOK_MESSAGES_LIMIT = 2000


@dataclass(frozen=True)
class Inbound:
    """One text message from a user: `update_id` dedupes it, `external_id` is the user,
    `address` where replies go."""

    update_id: str
    external_id: str
    address: str
    text: str
    name: str = ""

    def storable(self) -> bool:
        """Whether every part fits its column and a database can hold it: ids and a text that are
        not blank, ids up to their limit, the text up to TEXT_LIMIT, no NUL and no lone surrogate
        anywhere (the name is cleaned when stored)."""
        parts = ((self.update_id, UPDATE_ID_LIMIT), (self.external_id, ID_LIMIT), (self.address, ID_LIMIT))
        return (
            all(value.strip() and len(value) <= limit for value, limit in parts)
            and bool(self.text.strip())
            and len(self.text) <= TEXT_LIMIT
            and all(_holdable(value) for value in (self.update_id, self.external_id, self.address, self.text))
        )


def _holdable(value: str) -> bool:
    if "\x00" in value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate, as a JSON `\ud800` escape decodes
        return False
    return True


# --- reading an event -------------------------------------------------------------------------------
# SECURITY: a hook body is authenticated, not trusted. Parsers read every member through these
# helpers, which answer None (or nothing) for a member that is missing or of another JSON type, so a
# body of the wrong shape is dropped, never a crash, and a non-string is never turned into text.


def member(node: object, *path: str | int) -> Any:
    """The value at `path` (object keys and array indexes) inside `node`; None when a step is missing
    or of another type."""
    for key in path:
        if isinstance(key, str) and isinstance(node, dict):
            node = node.get(key)
        elif isinstance(key, int) and isinstance(node, list) and -len(node) <= key < len(node):
            node = node[key]
        else:
            return None
    return node


def objects(node: object, *path: str | int) -> list[dict]:
    """The objects of the array at `path`, skipping its other items; [] when `path` is not an array."""
    found = member(node, *path)
    return [item for item in found if isinstance(item, dict)] if isinstance(found, list) else []


def string(node: object, *path: str | int) -> str:
    """The string at `path`, or "" when it is missing or not a string."""
    found = member(node, *path)
    return found if isinstance(found, str) else ""


def integer(node: object, *path: str | int) -> int | None:
    """The JSON integer at `path` (never a boolean or a float)."""
    found = member(node, *path)
    return found if isinstance(found, int) and not isinstance(found, bool) else None


def ident(node: object, *path: str | int, numeric: bool = False) -> str:
    """A provider's id at `path` as text: a string or an integer (`numeric`: an integer only); ""
    otherwise. Blank and oversize ids are refused by `Inbound.storable`."""
    found = integer(node, *path)
    if found is not None:
        return str(found)
    return "" if numeric else string(node, *path)


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
    """Constant-time comparison; an empty expectation never matches, nor does a given value that
    is not text (a lone surrogate read from a JSON body)."""
    if not expected or not _holdable(given or ""):
        return False
    return hmac.compare_digest(expected.encode(), (given or "").encode())


def hmac_hex(key: str | bytes, body: bytes, digest: str = "sha256") -> str:
    return hmac.new(key.encode() if isinstance(key, str) else key, body, digest).hexdigest()


def json_body(payload: dict) -> bytes:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()


def short(value: object, limit: int = 200) -> str:
    return str(value or "")[:limit]


def stored_credential(conn: MessengerConnection) -> Credential | None:
    """A connection's credential, decrypted; None when it cannot be read (key dropped) or is gone."""
    token = crypto.decrypt_secret(conn.token_encrypted) if conn.token_encrypted else None
    sid = crypto.decrypt_secret(conn.sid_encrypted) if conn.sid_encrypted else ""
    if not token or sid is None:
        return None
    return Credential(token=token, sid=sid, url=conn.url)


@dataclass(frozen=True)
class HookAccount:
    """What authenticates one hook call: the credential and the hook secret, or `answer`, the
    reply given at once with nothing else done (VK's confirmation request)."""

    cred: Credential | None
    secret: str
    answer: tuple[str, bytes] | None = None


@dataclass(frozen=True)
class Polled:
    """One long-poll read: the events in order and the offset of the next read; `error` when the
    provider refused or did not answer (nothing taken)."""

    events: list[dict]
    next_offset: int
    error: str = ""


class Provider(ABC):
    """Defaults: connected through PUT with one credential on the widget's connection row, no
    read-only probe, no registration mechanism (`attempted: false`), no unregister call, no
    long-poll mode."""

    code: ClassVar[str] = ""
    label: ClassVar[str] = "The provider"  # how an error detail names it
    fields: ClassVar[tuple[str, ...]] = ("token",)
    # the whole token of a PUT matches this (its alphabet and length), else the 422 says `credential_rule`
    credential_pattern: ClassVar[str] = r"[\x21-\x7e]{1,512}"  # printable ASCII, no spaces
    credential_rule: ClassVar[str] = "Printable ASCII without spaces, at most 512 characters."
    # where the hook's own secret travels: "header" (the provider echoes what we registered),
    # "query" (the registered hook URL carries `?token=<secret>`, redacted in logs), or "" (the provider signs).
    hook_auth: ClassVar[str] = ""
    # False: not connected through PUT/verify (422 `not_writable`); the provider has its own routes.
    writable: ClassVar[bool] = True
    # False: a reply is queued without a credential on the connection row (the account that sends
    # it is named in the stored body and read when the attempt runs).
    sends_through_connection: ClassVar[bool] = True
    refusal: ClassVar[str] = "The provider's signature or secret does not match."  # the hook's 401 detail

    def connected(self, widget_id: int, stored: MessengerConnection | None) -> bool:
        """Whether the widget has the provider connected (`stored`: its connection row, if any)."""
        return stored is not None and bool(stored.token_encrypted)

    def remove_accounts(self, widget) -> None:  # noqa: B027 (a default, not abstract)
        """Accounts kept outside the connection row, removed first when the provider is disconnected."""

    # --- accounts: a provider connected through accounts of its own routes rather than PUT (VK's
    # communities, apps.channels.communities), each with its own token and callback registration.

    def account_ref(self, value: str) -> str | None:
        """What the provider looks an account up by, for an account the owner names (an id, a name,
        a link); None when `value` names none."""
        raise NotImplementedError(f"{self.code} is connected through PUT, not through accounts")

    def resolve_account(self, token: str, ref: str):
        """The account `ref` names, as the provider describes it (its id, name and screen name)."""
        raise NotImplementedError(f"{self.code} is connected through PUT, not through accounts")

    def register_account(self, token: str, *, account_id: int, url: str):
        """Our callback server at the provider for the account: (result, confirmation code, secret, server id)."""
        raise NotImplementedError(f"{self.code} is connected through PUT, not through accounts")

    def unregister_account(self, token: str, *, account_id: int, server_id: int):
        """Remove our callback server from the account."""
        raise NotImplementedError(f"{self.code} is connected through PUT, not through accounts")

    def probe(self, token: str) -> str | None:
        """The read-only check of a credential before anything is stored: the provider's refusal
        (a 422, nothing stored), or None when it did not refuse (no answer is no refusal)."""
        return None

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

    @property
    def long_poll(self) -> bool:
        """Inbound is read by polling (`poll`) instead of the hook."""
        return False

    def poll(self, cred: Credential, *, offset: int) -> Polled:
        return Polled([], offset, "no long-poll mode")

    # --- inbound --------------------------------------------------------------------------------

    def hook_account(self, conn: MessengerConnection, request: HookRequest) -> HookAccount | None:
        """Where the credential of a hook call comes from: None for the connection's own."""
        return None

    def decode(self, body: bytes) -> dict:
        """The hook body as a JSON object read by the core's RFC 8259 reader (no NaN, bounded
        depth); 422 otherwise."""
        try:
            data = strict_loads(body or b"")
        except InvalidJSON as exc:
            raise ValidationFailed("Not a provider event.", errors={"body": [exc.detail]}) from None
        if not isinstance(data, dict):
            raise ValidationFailed("Not a provider event.", errors={"body": ["Expected a JSON object."]})
        return data

    def authentic(self, cred: Credential, hook_secret: str, request: HookRequest) -> bool:
        if self.hook_auth == "query":
            return same(hook_secret, request.query.get("token"))
        return False

    @abstractmethod
    def parse(self, cred: Credential, data: dict) -> list[Inbound]:
        """The user text messages of one hook call (others are acknowledged and dropped). Reads
        members through `member`, `objects`, `string`, `integer` and `ident` only."""

    def messages(self, cred: Credential, data: dict) -> list[Inbound]:
        """What is stored of one event (a hook call or a polled update): the parsed messages that
        a database can hold; the others are dropped like an event without text."""
        return [item for item in self.parse(cred, data) if item.storable()]

    def handshake(self, query: dict[str, str]) -> str | None:
        """A GET verification of the hook URL (Meta's `hub.challenge`): the text to echo, or None
        when the provider has none or the request is not genuine."""
        return None

    def hook_answer(self, data: dict) -> tuple[str, bytes]:
        """The content type and body the provider expects from our hook."""
        return "application/json", b'{"ok":true}'

    # --- outbound -------------------------------------------------------------------------------

    def outbound_body(self, *, address: str, message) -> str | None:
        """The stored body of one operator message (keyboards as `label: url` lines); None when
        the address cannot be sent to."""
        payload = self.send_payload(address=address, text=payloads.text_with_link_lines(message))
        return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))

    @abstractmethod
    def send_payload(self, *, address: str, text: str) -> dict:
        """What is stored for one operator message (no credential in it)."""

    @abstractmethod
    def send_request(self, cred: Credential, stored: dict) -> SendRequest:
        """The send call of a stored payload, with the credential read when the attempt runs."""

    def account_key(self, stored: dict) -> str:
        """Which of the widget's accounts sends a stored body: "" for the connection's credential."""
        return ""

    def load_credential(self, widget_id: int, account: str) -> Credential | None:
        """The credential of one account, decrypted when the attempt runs; None when not connected."""
        conn = MessengerConnection.objects.filter(widget_id=widget_id, provider=self.code).first()
        return stored_credential(conn) if conn is not None else None

    def delivery_request(self, cred: Credential, stored: dict, *, delivery_id: int) -> SendRequest:
        """The send call of one delivery attempt (a provider with a per-message key takes the id)."""
        return self.send_request(cred, stored)

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
