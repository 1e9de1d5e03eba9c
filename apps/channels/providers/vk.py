"""VK API calls (https://dev.vk.com/method): `POST {base}/method/{name}` with form parameters
`access_token` and `v`; answers `{"response": ...}` or `{"error": {"error_code", "error_msg"}}`.
Every call goes through the guarded outbound client against PROVIDER_API_BASE_VK.

The provider: connected through its communities (`communities.py`, not PUT), each with its own
token and Callback API secret; the widget's one hook takes every community's events, told apart by
`group_id`. A reply goes out through the community the visitor wrote to (`messages.send`, keyboard
buttons as `label: url` lines), its token read when the attempt runs."""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass
from urllib.parse import urlencode, urlsplit

from django.conf import settings

from apps.core import crypto
from apps.core.errors import NotFound, ValidationFailed
from apps.platform import outbound

from .. import payloads
from ..models import MessengerConnection, VkCommunity
from .base import Credential, HookAccount, HookRequest, Inbound, Provider, SendRequest, ident, integer, same, string

API_VERSION = "5.199"
CALL_TIMEOUT = (3.05, 10)
CALL_DEADLINE = 15.0
RESPONSE_CAP = 256 * 1024
# An id ("12345"), a club-style name ("club12345", "public12345") or a screen name ("myshop"),
# or a link to any of them ("https://vk.com/myshop").
_SCREEN_NAME = re.compile(r"[A-Za-z0-9_.]{2,64}")


@dataclass(frozen=True)
class Result:
    ok: bool
    rejected: bool  # VK answered with an error (not a transport failure)
    description: str
    response: object = None


def call(method: str, token: str, **params) -> Result:
    body = urlencode({**params, "access_token": token, "v": API_VERSION}).encode()
    url = f"{settings.PROVIDER_API_BASE_VK.rstrip('/')}/method/{method}"
    try:
        answer = outbound.request(
            "POST",
            url,
            data=body,
            headers={"Content-Type": "application/x-www-form-urlencoded"},
            timeout=CALL_TIMEOUT,
            max_bytes=RESPONSE_CAP,
            deadline=CALL_DEADLINE,
        )
    except outbound.OutboundBlocked as exc:
        return Result(False, False, f"blocked: {exc.reason}")
    except outbound.OutboundError as exc:
        return Result(False, False, f"unreachable: {exc.reason}")
    try:
        data = answer.json()
    except ValueError:
        data = None
    if not isinstance(data, dict) or answer.status_code != 200:
        return Result(False, False, f"not a VK API answer (HTTP {answer.status_code})")
    if "error" in data:
        error = data["error"] if isinstance(data["error"], dict) else {}
        return Result(False, True, str(error.get("error_msg") or "error")[:200])
    return Result(True, False, "", data.get("response"))


def community_key(value: str) -> str | None:
    """What groups.getById takes for a community given as an id, a club-style name or a link;
    None when it is none of these."""
    value = value.strip()
    if value.startswith(("https://", "http://")):
        try:
            parts = urlsplit(value)
        except ValueError:  # a link urlsplit cannot read (an unclosed `[` host) is no VK link
            return None
        if parts.hostname not in ("vk.com", "www.vk.com", "m.vk.com", "vk.ru"):
            return None
        value = parts.path.strip("/")
    match = re.fullmatch(r"(?:club|public|event)?([0-9]{1,19})", value)
    if match:
        return match.group(1)
    return value if _SCREEN_NAME.fullmatch(value) else None


def resolve(token: str, key: str) -> Result:
    """groups.getById: the community's id, name and screen name."""
    result = call("groups.getById", token, group_id=key)
    if not result.ok:
        return result
    groups = result.response.get("groups") if isinstance(result.response, dict) else result.response
    if not isinstance(groups, list) or not groups or not isinstance(groups[0], dict):
        return Result(False, True, "community not found")
    return Result(True, False, "", groups[0])


def register(token: str, *, community_id: int, url: str) -> tuple[Result, str, str, int | None]:
    """Callback API registration: the confirmation code, a callback server with a fresh secret,
    and message_new switched on. Returns (result, code, secret, server_id)."""
    secret = secrets.token_urlsafe(24)[:50]
    code = call("groups.getCallbackConfirmationCode", token, group_id=community_id)
    if not code.ok or not isinstance(code.response, dict):
        return code, "", secret, None
    server = call("groups.addCallbackServer", token, group_id=community_id, url=url, title="Chat", secret_key=secret)
    server_id = server.response.get("server_id") if server.ok and isinstance(server.response, dict) else None
    if not isinstance(server_id, int):
        return (
            (server if not server.ok else Result(False, True, "no server_id")),
            str(code.response.get("code")),
            secret,
            None,
        )
    settings_result = call(
        "groups.setCallbackSettings",
        token,
        group_id=community_id,
        server_id=server_id,
        api_version=API_VERSION,
        message_new=1,
    )
    return settings_result, str(code.response.get("code") or ""), secret, server_id


def unregister(token: str, *, community_id: int, server_id: int) -> Result:
    return call("groups.deleteCallbackServer", token, group_id=community_id, server_id=server_id)


def send_message_form(*, peer_id: str, text: str, random_id: int) -> dict:
    return {"peer_id": peer_id, "message": text or " ", "random_id": str(random_id)}


def send_error(content: bytes) -> str:
    """VK answers errors with HTTP 200 and `{"error": {...}}`."""
    try:
        data = json.loads(content)
    except ValueError:
        return "vk_invalid_answer"
    if isinstance(data, dict) and isinstance(data.get("error"), dict):
        return f"vk_error_{data['error'].get('error_code')}"
    return "" if isinstance(data, dict) and "response" in data else "vk_invalid_answer"


class VK(Provider):
    code = "vk"
    writable = False
    sends_through_connection = False
    refusal = "The VK secret does not match."

    def connected(self, widget_id: int, stored: MessengerConnection | None) -> bool:
        return VkCommunity.objects.filter(widget_id=widget_id).exists()

    def remove_accounts(self, widget) -> None:
        from ..communities import delete_community

        for community in VkCommunity.objects.filter(widget=widget).order_by("pk"):
            delete_community(widget=widget, community=community, count_call=False)  # 502 keeps what VK did not confirm

    # --- the communities (apps.channels.communities reaches these through the registry) --------

    def account_ref(self, value: str) -> str | None:
        return community_key(value)

    def resolve_account(self, token: str, ref: str) -> Result:
        return resolve(token, ref)

    def register_account(self, token: str, *, account_id: int, url: str) -> tuple[Result, str, str, int | None]:
        return register(token, community_id=account_id, url=url)

    def unregister_account(self, token: str, *, account_id: int, server_id: int) -> Result:
        return unregister(token, community_id=account_id, server_id=server_id)

    # --- inbound --------------------------------------------------------------------------------

    def hook_account(self, conn: MessengerConnection, request: HookRequest) -> HookAccount:
        """The community the event names (`group_id`): its secret authenticates the event, and a
        `confirmation` request is answered with its confirmation code before any secret."""
        event = self.decode(request.body)
        group_id = integer(event, "group_id")
        if group_id is None:
            raise ValidationFailed("Not a VK event.", errors={"group_id": ["Must be an integer."]})
        community = VkCommunity.objects.filter(widget_id=conn.widget_id, community_id=group_id).first()
        if community is None:
            raise NotFound("No such community.")
        if event.get("type") == "confirmation":
            return HookAccount(None, "", ("text/plain; charset=utf-8", community.confirmation_code.encode()))
        # the token is not needed to read an event: only the community's secret
        return HookAccount(
            Credential(token="", sid=str(group_id)), crypto.decrypt_secret(community.secret_encrypted) or ""
        )

    def authentic(self, cred: Credential, hook_secret: str, request: HookRequest) -> bool:
        return same(hook_secret, string(self.decode(request.body), "secret"))

    def parse(self, cred: Credential, data: dict) -> list[Inbound]:
        """`message_new` with text: one message of its sender, keyed by its whole event_id (a long
        one stored hashed, as every provider's)."""
        if string(data, "type") != "message_new":
            return []
        message = ("object", "message")
        text = string(data, *message, "text")
        from_id, peer_id = (
            ident(data, *message, "from_id", numeric=True),
            ident(data, *message, "peer_id", numeric=True),
        )
        group_id, message_id = ident(data, "group_id", numeric=True), ident(data, *message, "id", numeric=True)
        if not text.strip() or not from_id or not peer_id or not group_id:
            return []
        dedupe = string(data, "event_id") or (f"{group_id}:{message_id}" if message_id else "")
        return [Inbound(dedupe, from_id, f"{group_id}:{peer_id}", text)]

    def hook_answer(self, data: dict) -> tuple[str, bytes]:
        return "text/plain; charset=utf-8", b"ok"

    # --- outbound -------------------------------------------------------------------------------

    def outbound_body(self, *, address: str, message) -> str | None:
        """The address is `{community_id}:{peer_id}`: the reply leaves from the community written to."""
        if ":" not in address:
            return None
        return json.dumps(
            self.send_payload(address=address, text=payloads.text_with_link_lines(message)), ensure_ascii=False
        )

    def send_payload(self, *, address: str, text: str) -> dict:
        community_id, peer_id = address.split(":", 1)
        return {"community_id": int(community_id), "peer_id": peer_id, "message": text}

    def account_key(self, stored: dict) -> str:
        return str(stored["community_id"])

    def load_credential(self, widget_id: int, account: str) -> Credential | None:
        community = VkCommunity.objects.filter(widget_id=widget_id, community_id=int(account)).first()
        token = crypto.decrypt_secret(community.token_encrypted) if community is not None else None
        return Credential(token=token) if token else None

    def delivery_request(self, cred: Credential, stored: dict, *, delivery_id: int) -> SendRequest:
        """messages.send; `random_id` (the delivery's id) makes VK drop a resent attempt."""
        form = send_message_form(peer_id=stored["peer_id"], text=stored["message"], random_id=delivery_id)
        return SendRequest(
            f"{settings.PROVIDER_API_BASE_VK.rstrip('/')}/method/messages.send",
            urlencode(form | {"access_token": cred.token, "v": API_VERSION}).encode(),
            {"Content-Type": "application/x-www-form-urlencoded"},
        )

    def send_request(self, cred: Credential, stored: dict) -> SendRequest:
        return self.delivery_request(cred, stored, delivery_id=0)  # random_id 0: VK dedupes nothing

    def send_error(self, status_code: int, content: bytes) -> tuple[str, bool]:
        """Neither an HTTP error nor VK's refusal in a 200 is final: the attempt is retried."""
        if not 200 <= status_code < 300:
            return f"http_{status_code}", False
        return send_error(content), False


PROVIDER = VK()
