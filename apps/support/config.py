"""The support configuration: its validation (one function for `configure_support`, Django admin
and tests) and its read-side helpers (the valid allowlist networks, the reply limits)."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from apps.agents.models import Agent
from apps.audit import services as audit
from apps.core.models import Widget

from .models import SupportConfig

KNOWN_KEYS = (
    "enabled",
    "operator_agent_id",
    "allowed_tokens",
    "ip_allowlist",
    "link_hosts",
    "exact_links",
    "app_store_id",
    "play_package",
    "ipv4_literals",
    "messenger_handles",
    "emails",
    "channels",
    "room_reply_limit",
    "token_reply_limit",
)
# Channels a support reply may go to: the web widget, the chat messenger, app tickets.
SUPPORTED_CHANNELS = ("widget", "tg", "app")
ROOM_LIMIT_MAX = 30
TOKEN_PREFIX_RE = re.compile(r"cwt_[0-9A-Za-z]{8}")
HANDLE_RE = re.compile(r"[A-Za-z0-9_]{3,64}")
HOST_RE = re.compile(
    r"(?=.{1,253}$)([a-z0-9\u00a0-\uffff]([a-z0-9\u00a0-\uffff-]{0,61}[a-z0-9\u00a0-\uffff])?\.)+[a-z\u00a0-\uffff0-9-]{2,63}"
)
EMAIL_RE = re.compile(r"[^@\s]{1,64}@[^@\s]{1,253}")
PLAY_PACKAGE_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+")
APP_STORE_ID_RE = re.compile(r"(id)?[0-9]{1,15}")


class ConfigInvalid(ValueError):
    """The configuration is refused; the message names the first problem."""


def valid_networks(entries) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    """The entries of an allowlist that parse as addresses or networks; invalid ones are ignored
    (an allowlist without a valid entry therefore admits nobody)."""
    out = []
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, str):
            continue
        try:
            out.append(ipaddress.ip_network(entry.strip(), strict=False))
        except ValueError:
            continue
    return out


def _str_list(data: dict, key: str, pattern: re.Pattern | None = None, *, lower: bool = False) -> list[str]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ConfigInvalid(f"{key} must be a list of non-empty strings")
    out = []
    for item in value:
        item = item.strip().lower() if lower else item.strip()
        if pattern is not None and not pattern.fullmatch(item):
            raise ConfigInvalid(f"{key}: invalid entry {item!r}")
        if item not in out:
            out.append(item)
    return out


def _host(item: str) -> str:
    try:
        return item.encode("idna").decode("ascii") if not item.isascii() else item
    except UnicodeError:
        raise ConfigInvalid(f"link_hosts: invalid host {item!r}") from None


@dataclass(frozen=True)
class RoomLimit:
    count: int
    window_sec: int


@dataclass(frozen=True)
class TokenLimit:
    per_10_min: int
    per_day: int


def _room_limit(value) -> dict:
    if not isinstance(value, dict) or set(value) - {"count", "window_sec"}:
        raise ConfigInvalid("room_reply_limit must be {count, window_sec}")
    count, window = value.get("count", 3), value.get("window_sec", 1800)
    if type(count) is not int or not 1 <= count <= ROOM_LIMIT_MAX:
        raise ConfigInvalid(f"room_reply_limit.count must be 1 to {ROOM_LIMIT_MAX} (never unlimited)")
    if type(window) is not int or not 60 <= window <= 86400:
        raise ConfigInvalid("room_reply_limit.window_sec must be 60 to 86400")
    return {"count": count, "window_sec": window}


def _token_limit(value) -> dict:
    if not isinstance(value, dict) or set(value) - {"per_10_min", "per_day"}:
        raise ConfigInvalid("token_reply_limit must be {per_10_min, per_day}")
    out = {"per_10_min": value.get("per_10_min", 20), "per_day": value.get("per_day", 300)}
    for key, number in out.items():
        if type(number) is not int or not 0 <= number <= 100000:
            raise ConfigInvalid(f"token_reply_limit.{key} must be 0 (unlimited) to 100000")
    return out


def clean_config(*, widget: Widget, data: dict) -> dict:
    """The configuration `data` checked whole; returns the values to store. Refuses unknown keys,
    malformed entries, an operator that is not an active human operator of `widget`, and enabling
    without that operator, an allowed token and an allowlist with a valid entry."""
    if not isinstance(data, dict):
        raise ConfigInvalid("the configuration must be a JSON object")
    unknown = sorted(set(data) - set(KNOWN_KEYS))
    if unknown:
        raise ConfigInvalid(f"unknown keys: {', '.join(unknown)}")
    enabled = data.get("enabled", False)
    if not isinstance(enabled, bool):
        raise ConfigInvalid("enabled must be true or false")
    operator_id = data.get("operator_agent_id")
    operator = None
    if operator_id is not None:
        if type(operator_id) is not int:
            raise ConfigInvalid("operator_agent_id must be an integer or null")
        operator = Agent.objects.filter(pk=operator_id, widget=widget).first()
        if operator is None:
            raise ConfigInvalid(f"operator_agent_id {operator_id}: no such agent of this widget")
        if operator.type != Agent.Type.HUMAN or operator.status == Agent.Status.BANNED:
            raise ConfigInvalid(f"operator_agent_id {operator_id}: not an active human operator")
    ip_allowlist = _str_list(data, "ip_allowlist")
    for entry in ip_allowlist:
        if not valid_networks([entry]):
            raise ConfigInvalid(f"ip_allowlist: invalid entry {entry!r}")
    ipv4 = _str_list(data, "ipv4_literals")
    for entry in ipv4:
        try:
            ipaddress.IPv4Address(entry)
        except ValueError:
            raise ConfigInvalid(f"ipv4_literals: invalid entry {entry!r}") from None
    hosts = [_host(h) for h in _str_list(data, "link_hosts", lower=True)]
    for host in hosts:
        if not HOST_RE.fullmatch(host):
            raise ConfigInvalid(f"link_hosts: invalid host {host!r}")
    exact_links = _str_list(data, "exact_links")
    for link in exact_links:
        if not link.startswith("https://") or any(c.isspace() for c in link):
            raise ConfigInvalid(f"exact_links: {link!r} must be an absolute https:// link")
    channels = _str_list(data, "channels")
    bad = [c for c in channels if c not in SUPPORTED_CHANNELS]
    if bad:
        raise ConfigInvalid(f"channels: unsupported {bad}; allowed {list(SUPPORTED_CHANNELS)}")
    cleaned = {
        "enabled": enabled,
        "operator": operator,
        "allowed_tokens": _str_list(data, "allowed_tokens", TOKEN_PREFIX_RE),
        "ip_allowlist": ip_allowlist,
        "link_hosts": hosts,
        "exact_links": exact_links,
        "app_store_id": _optional(data, "app_store_id", APP_STORE_ID_RE),
        "play_package": _optional(data, "play_package", PLAY_PACKAGE_RE),
        "ipv4_literals": ipv4,
        "messenger_handles": [
            h.lstrip("@") for h in _str_list(data, "messenger_handles", re.compile(r"@?[A-Za-z0-9_]{3,64}"))
        ],
        "emails": _str_list(data, "emails", EMAIL_RE, lower=True),
        "channels": channels,
        "room_reply_limit": _room_limit(data.get("room_reply_limit", {"count": 3, "window_sec": 1800})),
        "token_reply_limit": _token_limit(data.get("token_reply_limit", {"per_10_min": 20, "per_day": 300})),
    }
    if enabled:
        missing = []
        if operator is None:
            missing.append("a human operator (operator_agent_id)")
        if not cleaned["allowed_tokens"]:
            missing.append("an allowed token")
        if not valid_networks(ip_allowlist):
            missing.append("an IP allowlist")
        if missing:
            raise ConfigInvalid(f"enabling needs {', '.join(missing)}")
    return cleaned


def _optional(data: dict, key: str, pattern: re.Pattern) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not pattern.fullmatch(value.strip()):
        raise ConfigInvalid(f"{key}: invalid value {value!r}")
    return value.strip()


def config_payload(config: SupportConfig) -> dict:
    return {
        "widget_id": config.widget_id,
        "enabled": config.enabled,
        "operator_agent_id": config.operator_id,
        "allowed_tokens": config.allowed_tokens,
        "ip_allowlist": config.ip_allowlist,
        "link_hosts": config.link_hosts,
        "exact_links": config.exact_links,
        "app_store_id": config.app_store_id,
        "play_package": config.play_package,
        "ipv4_literals": config.ipv4_literals,
        "messenger_handles": config.messenger_handles,
        "emails": config.emails,
        "channels": config.channels,
        "room_reply_limit": config.room_reply_limit,
        "token_reply_limit": config.token_reply_limit,
    }


@transaction.atomic
def configure_support(*, widget: Widget, data: dict) -> SupportConfig:
    """Replace the widget's support configuration whole (the `account_link` switch is kept; it has
    its own command). Raises ConfigInvalid and stores nothing when refused."""
    cleaned = clean_config(widget=widget, data=data)
    config, _ = SupportConfig.objects.select_for_update().get_or_create(widget=widget)
    before = audit.values(config)
    for name, value in cleaned.items():
        setattr(config, name, value)
    config.updated_at = timezone.now()
    config.save()
    audit.record_change(
        widget=widget,
        action="support_config.changed",
        target_type="support_config",
        before=before,
        after=audit.values(config),
    )
    return config


@transaction.atomic
def set_account_link(*, widget: Widget, enabled: bool) -> SupportConfig:
    config, _ = SupportConfig.objects.select_for_update().get_or_create(widget=widget)
    before = audit.values(config)
    config.account_link = enabled
    config.updated_at = timezone.now()
    config.save(update_fields=["account_link", "updated_at"])
    audit.record_change(
        widget=widget,
        action="support_config.changed",
        target_type="support_config",
        before=before,
        after=audit.values(config),
    )
    return config


def room_limit(config: SupportConfig) -> RoomLimit:
    value = config.room_reply_limit or {}
    count = value.get("count", 3)
    count = min(max(int(count) if isinstance(count, int) else 3, 1), ROOM_LIMIT_MAX)  # never unlimited
    return RoomLimit(count=count, window_sec=int(value.get("window_sec", 1800)))


def token_limit(config: SupportConfig) -> TokenLimit:
    value = config.token_reply_limit or {}
    return TokenLimit(per_10_min=int(value.get("per_10_min", 20)), per_day=int(value.get("per_day", 300)))
