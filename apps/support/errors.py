"""Errors of the support surface. Support problems carry the machine-readable `reason` (the spec's
word) beside `code`; both hold the same value."""

from __future__ import annotations

from apps.core.errors import AppError


class SupportError(AppError):
    """Base of support errors: adds `reason` = `code` to the problem body."""

    def __init__(self, detail: str | None = None, **kwargs):
        super().__init__(detail, **kwargs)
        self.extra.setdefault("reason", self.code)


class SupportApiDisabled(SupportError):
    """The support API is off for this widget, or no token is allowed to use it."""

    status, code, title = 503, "support_api_disabled", "Support API disabled"


class TokenNotAllowed(SupportError):
    """The widget's owner has not listed this token for the support API."""

    status, code, title = 403, "token_not_allowed", "Token not allowed for the support API"


class IpNotAllowed(SupportError):
    """The caller's address is not on the widget's support IP allowlist (an allowlist without a
    valid entry denies everyone)."""

    status, code, title = 403, "ip_not_allowed", "Address not on the support allowlist"


class SupportOperatorNotConfigured(SupportError):
    """No support operator is configured, or it is no longer an active human operator of the widget."""

    status, code, title = 503, "support_operator_not_configured", "Support operator not configured"


class ServiceAgentMissing(SupportError):
    """Support writes need `X-Service-Agent` matching `^[a-z0-9][a-z0-9_.-]{0,47}$`."""

    status, code, title = 400, "invalid_service_agent", "Missing or invalid X-Service-Agent"


class ChatClaimed(SupportError):
    """The chat is leased by another claim; release it or wait until the lease ends."""

    status, code, title = 409, "chat_claimed", "Chat claimed by another agent"


class ClaimMismatch(SupportError):
    """The `claim_id` does not name the chat's current lease."""

    status, code, title = 409, "claim_mismatch", "Claim does not hold the chat"


class ChatUnavailable(SupportError):
    """The chat server would drop a reply to this chat (spam, or no client)."""

    status, code, title = 409, "chat_unavailable", "Chat unavailable"


class ChannelUnsupported(SupportError):
    """Support replies go only to the channels the widget's support configuration allows."""

    status, code, title = 409, "channel_unsupported", "Channel not supported for support replies"


class ChatChanged(SupportError):
    """The chat has a message newer than `expected_last_message_id`; read it and decide again."""

    status, code, title = 409, "chat_changed", "Chat changed"


class LinkNotAllowed(SupportError):
    """The reply text holds a link outside the official catalogue; `offending` lists them
    (token, kind, view) and `allowed` the catalogue."""

    status, code, title = 422, "link_not_allowed", "Link not allowed"


class GuardError(SupportError):
    """The reply text could not be checked; shorten it."""

    status, code, title = 422, "guard_error", "Text could not be checked"


class ForbiddenWhitespace(SupportError):
    """Tab, form feed, U+0085, U+2028 and U+2029 are refused in reply text."""

    status, code, title = 422, "forbidden_whitespace", "Forbidden whitespace"


class InvalidText(SupportError):
    """Reply text must be plain text: no markup, markers or control characters, 1 to 3500 characters."""

    status, code, title = 422, "invalid_text", "Invalid reply text"


class RoomReplyLimit(SupportError):
    """The per-chat support reply limit is reached; retry after `Retry-After` seconds."""

    status, code, title = 429, "room_reply_limit", "Per-chat reply limit reached"


class SupportRateLimited(SupportError):
    """The per-token support reply limit is reached; retry after `Retry-After` seconds."""

    status, code, title = 429, "support_rate_limited", "Per-token reply limit reached"
