"""VK API calls (https://dev.vk.com/method): `POST {base}/method/{name}` with form parameters
`access_token` and `v`; answers `{"response": ...}` or `{"error": {"error_code", "error_msg"}}`.
Every call goes through the guarded outbound client against PROVIDER_API_BASE_VK."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from urllib.parse import urlencode, urlsplit

from django.conf import settings

from apps.core import outbound

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
        parts = urlsplit(value)
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
