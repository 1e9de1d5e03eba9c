"""Who is calling the visitor API, and how often they may.

SECURITY: the visitor API is public (the embed script runs on the customer's pages). The tenant is
the widget named by `button_guid` in the path; the caller is the contact bound to the session token
in `Authorization: Visitor <session_token>` (or `?session=` on the websocket). A token is 256 random
bits stored only as its SHA-256 and found by that hash; a token of another widget answers exactly
like an unknown one. Nothing here reads `api_enabled`, which gates the bearer REST API only.

A session unused for VISITOR_SESSION_IDLE_DAYS answers like an unknown one and is purged hourly.

Rate limits are budgets per widget and client address whose limits are settings read at call time
(0 turns the per-address limit off), plus generous per-widget budgets. The client address is
REMOTE_ADDR, or behind TRUSTED_PROXY_HOPS proxies of ours the address that many hops from the right
of X-Forwarded-For (what a client writes further left is never trusted).
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from apps.core import selectors as core_selectors
from apps.core.auth.tokens import hash_token as hash_token
from apps.core.errors import AppError, NotFound
from apps.core.models import Widget
from apps.core.ratelimit import Budget
from apps.core.ratelimit import address_from as address_from
from apps.core.ratelimit import client_address as client_address

from .. import selectors
from ..models import VisitorSession

SESSION_TOKEN_PREFIX = "cvs_"  # noqa: S105 (public marker, not a secret)
_TOKEN_RE = re.compile(r"^cvs_[A-Za-z0-9_-]{43}$")
# last_seen_at is written at most this often, so a chatty visitor does not write on every request.
LAST_SEEN_RESOLUTION = timedelta(seconds=60)


class VisitorSessionRequired(AppError):
    """Send `Authorization: Visitor <session_token>` with a token from POST .../sessions."""

    status, code, title = 401, "visitor_session_required", "Visitor session required"
    headers = {"WWW-Authenticate": 'Visitor realm="visitor"'}


class InvalidVisitorSession(VisitorSessionRequired):
    """The visitor session token is malformed, unknown or belongs to another widget: start a new session."""

    code, title = "invalid_visitor_session", "Invalid visitor session"
    headers = {"WWW-Authenticate": 'Visitor realm="visitor", error="invalid_token"'}


# --- tokens ---------------------------------------------------------------------------------------


def new_session_token() -> str:
    """`cvs_` + 256 random bits (43 url-safe base64 characters)."""
    return SESSION_TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_from_header(header: str | None) -> str:
    """The token of `Authorization: Visitor <token>`; raises 401 when missing or malformed."""
    if not header:
        raise VisitorSessionRequired()
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "visitor":
        raise VisitorSessionRequired("Use the Visitor authorization scheme.")
    token = token.strip()
    if not _TOKEN_RE.match(token):
        raise InvalidVisitorSession()
    return token


# --- lookups -------------------------------------------------------------------------------------


def resolve_widget(button_guid: str | None) -> Widget:
    """The widget of the path; an unknown guid is 404 (the API switch does not matter here)."""
    widget = core_selectors.get_widget_by_button_guid(button_guid=button_guid) if button_guid else None
    if widget is None:
        raise NotFound("No widget with this button_guid.")
    return widget


def find_session(*, widget: Widget, token: str | None) -> VisitorSession | None:
    """The session of `token` bound to `widget` (None when malformed, unknown or foreign).
    Touches `last_seen_at` at most once a minute."""
    if not token or not _TOKEN_RE.match(token):
        return None
    now = timezone.now()
    session = selectors.get_visitor_session(token_hash=hash_token(token), widget=widget, cutoff=idle_cutoff(now))
    if session is None:
        return None
    note_seen(session, now)
    return session


def note_seen(session: VisitorSession, now) -> None:
    """Touch `last_seen_at` of a session just found, at most once per LAST_SEEN_RESOLUTION."""
    if session.last_seen_at < now - LAST_SEEN_RESOLUTION:
        VisitorSession.objects.filter(pk=session.pk).update(last_seen_at=now)
        session.last_seen_at = now


def idle_cutoff(now=None):
    """Sessions last seen before this are dead."""
    return (now or timezone.now()) - timedelta(days=settings.VISITOR_SESSION_IDLE_DAYS)


def purge_idle_sessions(*, batch_size: int = 5000) -> int:
    """Delete the sessions idle longer than VISITOR_SESSION_IDLE_DAYS, in batches. Returns how many."""
    cutoff, total = idle_cutoff(), 0
    while True:
        ids = list(VisitorSession.objects.filter(last_seen_at__lt=cutoff).values_list("pk", flat=True)[:batch_size])
        if not ids:
            return total
        total += VisitorSession.objects.filter(pk__in=ids).delete()[0]


def authenticate(request, *, widget: Widget) -> VisitorSession:
    token = token_from_header(request.META.get("HTTP_AUTHORIZATION"))
    session = find_session(widget=widget, token=token)
    if session is None:
        raise InvalidVisitorSession()
    return session


# --- rate limits ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Limit:
    """One kind of visitor request: a per-address budget whose limit is `factor` times a setting
    (read at call time; 0 turns it off) and a per-widget budget of `per_widget` times
    VISITOR_WIDGET_BUDGET_SCALE (default 1; 0 turns it off)."""

    name: str
    setting: str
    factor: int
    window: float
    per_widget: int
    widget_window: float = 60

    def check(self, *, widget: Widget, address: str) -> None:
        per_address = getattr(settings, self.setting) * self.factor
        # The address first: one noisy address is cut off before it eats the widget's budget.
        Budget(f"{self.name}:addr", per_address, self.window).check(
            widget.pk, address, detail="Too many requests from this address; retry later."
        )
        per_widget = self.per_widget * settings.VISITOR_WIDGET_BUDGET_SCALE
        Budget(f"{self.name}:widget", per_widget, self.widget_window).check(
            widget.pk, detail="This widget receives too many requests; retry later."
        )


LIMITS: dict[str, Limit] = {
    # POST sessions: VISITOR_SESSIONS_PER_ADDRESS_PER_HOUR per address and widget.
    "sessions": Limit("visitor_sessions", "VISITOR_SESSIONS_PER_ADDRESS_PER_HOUR", 1, 3600, per_widget=600),
    # POST messages and POST offline: VISITOR_MESSAGES_PER_ADDRESS_PER_MINUTE.
    "messages": Limit("visitor_messages", "VISITOR_MESSAGES_PER_ADDRESS_PER_MINUTE", 1, 60, per_widget=600),
    # POST typing and POST rating: twice the message allowance (typing start and stop per burst).
    "actions": Limit("visitor_actions", "VISITOR_MESSAGES_PER_ADDRESS_PER_MINUTE", 2, 60, per_widget=1200),
    # POST files: as many uploads per address as messages, a smaller per-widget budget (10 MB each).
    "uploads": Limit("visitor_uploads", "VISITOR_MESSAGES_PER_ADDRESS_PER_MINUTE", 1, 60, per_widget=120),
    # GET config and GET messages (polling fallback of the socket).
    "reads": Limit("visitor_reads", "VISITOR_MESSAGES_PER_ADDRESS_PER_MINUTE", 5, 60, per_widget=6000),
}


def admit(kind: str, *, widget: Widget, address: str) -> None:
    """Consume one unit of the `kind` budgets or raise 429 with Retry-After."""
    LIMITS[kind].check(widget=widget, address=address)
