"""The two failures of an outbound call: refused by policy (nothing sent) or failed in transport."""

from __future__ import annotations

import logging

logger = logging.getLogger("apps.platform.outbound")


class OutboundBlocked(Exception):
    """The URL or an address it resolves to is refused by policy. Nothing was sent."""

    def __init__(self, reason: str, *, url: str | None = None, address: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.url = url  # always safe_url(): no userinfo, query or fragment
        self.address = address

    def __str__(self) -> str:
        parts = [self.reason]
        if self.url:
            parts.append(self.url)
        if self.address:
            parts.append(f"address={self.address}")
        return " ".join(parts)


class OutboundError(Exception):
    """The call failed in transport: resolution, connection, TLS, timeout, size or redirect limit."""

    def __init__(self, reason: str, *, url: str | None = None, detail: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.url = url  # always safe_url(): no userinfo, query or fragment
        self.detail = detail

    def __str__(self) -> str:
        parts = [self.reason]
        if self.url:
            parts.append(self.url)
        if self.detail:
            parts.append(f"({self.detail})")
        return " ".join(parts)
