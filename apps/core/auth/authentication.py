"""Bearer token authentication.

SECURITY: the token is read from `Authorization: Bearer <token>` only. A token-looking value in the
query string is refused (401 token_in_query) before anything else, and request logs never carry
the query string. Unknown, malformed, expired and revoked tokens all answer the same 401.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.utils import timezone
from rest_framework.authentication import BaseAuthentication

from apps.core.errors import InvalidToken, NotAuthenticated, TokenInQuery
from apps.core.logging import note_request
from apps.core.models import ApiToken
from apps.core.selectors import find_token

from . import tokens

_QUERY_TOKEN_NAMES = frozenset({"access_token", "token", "api_key", "apikey", "api_token", "bearer", "auth"})


class TokenPrincipal:
    """`request.user` of an API call: the token, not a person."""

    is_authenticated = True
    is_anonymous = False

    def __init__(self, token: ApiToken):
        self.token = token
        self.widget = token.widget
        self.scopes = frozenset(token.scopes)

    def __str__(self) -> str:
        return f"token {self.token.prefix}"


def query_carries_token(query_dict, raw_query: str) -> bool:
    if any(name.lower() in _QUERY_TOKEN_NAMES for name in query_dict):
        return True
    return bool(tokens.TOKEN_RE.search(raw_query))


def _in_force(token: ApiToken, now) -> bool:
    return not token.is_revoked and not token.is_expired(now)


# The environ key of a token already resolved for the request being served, as (credential, token):
# a route called in-process for it (apps.mcp.dispatch) reuses it instead of reading it again. A
# client cannot send it: the server puts a client's headers under HTTP_* keys.
RESOLVED_TOKEN = "chatwidget.resolved_token"  # noqa: S105 - a key name, not a secret


class BearerTokenAuthentication(BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        raw_query = request.META.get("QUERY_STRING", "")
        if raw_query and query_carries_token(request.query_params, raw_query):
            raise TokenInQuery("Send the token in the Authorization header, never in the URL.")
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            raise NotAuthenticated("Send `Authorization: Bearer <token>`.")
        scheme, _, credential = header.partition(" ")
        credential = credential.strip()
        if scheme.lower() != "bearer" or not credential or " " in credential:
            raise InvalidToken("The Authorization header must be `Bearer <token>`.")
        resolved = request.META.get(RESOLVED_TOKEN)
        token = resolved[1] if resolved is not None and resolved[0] == credential else self.resolve(credential)
        principal = TokenPrincipal(token)
        # The tenant comes from the token only, never from the URL or the body. `request` is the
        # view's DRF request: its views read `request.widget`, and `request.auth` is the token.
        request.widget = token.widget
        note_request(widget=token.widget, token_prefix=token.prefix)
        return principal, token

    def authenticate_header(self, request):
        return 'Bearer realm="api"'

    @staticmethod
    def resolve(credential: str) -> ApiToken:
        """The token of `credential` with its widget, read on every request (one lookup by the
        unique prefix, so a revocation or a change applies to the very next request);
        InvalidToken for any token that does not authenticate."""
        if not tokens.is_well_formed(credential):
            raise InvalidToken()
        now = timezone.now()
        token = find_token(credential[: tokens.PREFIX_LENGTH])
        if token is None or not tokens.matches(credential, token.secret_hash) or not _in_force(token, now):
            raise InvalidToken()
        touch_last_used(token, now)
        return token


def touch_last_used(token: ApiToken, now) -> None:
    """Record use at most once per resolution window: one UPDATE a minute, not one per request."""
    window = timedelta(seconds=settings.TOKEN_LAST_USED_RESOLUTION_SECONDS)
    if token.last_used_at is None or now - token.last_used_at >= window:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
