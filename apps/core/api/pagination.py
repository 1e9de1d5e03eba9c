"""Keyset cursor pagination: `{data, next_cursor}`, newest first with an id tie-break, no COUNT.

The cursor is the position of the last row served, encrypted and authenticated (AES-256-GCM with a
key derived from SECRET_KEY) for one view and one widget:
- opaque: the position holds internal values (numeric contact ids, which are never exposed);
- tamper-evident and bound: a forged cursor, another view's or another widget's is refused with
  the same 422, never a silent restart and never a page of someone else's order.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
from datetime import datetime

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from django.conf import settings
from django.utils.crypto import salted_hmac
from drf_spectacular.utils import OpenApiParameter
from rest_framework.pagination import BasePagination
from rest_framework.response import Response

from apps.core import keyset
from apps.core.errors import ValidationFailed
from apps.platform.numbers import parse_int

DEFAULT_LIMIT = 20
MAX_LIMIT = 100
CURSOR_MAX_LENGTH = 512
# An empty `cursor=` is the first page, like no cursor at all.
CURSOR_PATTERN = r"^[A-Za-z0-9_-]*$"
_CURSOR_RE = re.compile(CURSOR_PATTERN[1:-1])
_NONCE_BYTES = 12
_KEY_SALT = "apps.core.api.pagination.cursor"

CURSOR_HELP = "Opaque cursor from a previous page's `next_cursor` of the same list and widget; anything else is 422."
CURSOR_SCHEMA = {"type": "string", "maxLength": CURSOR_MAX_LENGTH, "pattern": CURSOR_PATTERN}
LIMIT_HELP = f"Page size, 1 to {MAX_LIMIT} (default {DEFAULT_LIMIT}); else 422."
LIMIT_SCHEMA = {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT}
# The same parameters for a view that pages (or caps) by hand with parse_limit and open_cursor.
CURSOR_PARAMETER = OpenApiParameter("cursor", CURSOR_SCHEMA, OpenApiParameter.QUERY, description=CURSOR_HELP)
LIMIT_PARAMETER = OpenApiParameter("limit", LIMIT_SCHEMA, OpenApiParameter.QUERY, description=LIMIT_HELP)


def parse_limit(raw: str | None) -> int:
    if raw is None:
        return DEFAULT_LIMIT
    try:
        return parse_int(raw, minimum=1, maximum=MAX_LIMIT)
    except ValueError:
        raise ValidationFailed(errors={"limit": [f"Must be an integer from 1 to {MAX_LIMIT}."]}) from None


def _encode(value):
    return {"dt": value.isoformat()} if isinstance(value, datetime) else value


def _decode(value):
    return datetime.fromisoformat(value["dt"]) if isinstance(value, dict) else value


def _keys() -> list[AESGCM]:
    """The current key first, then those of SECRET_KEY_FALLBACKS (cursors outlive a rotation)."""
    secrets = [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", [])]
    return [AESGCM(salted_hmac(_KEY_SALT, "", secret=secret, algorithm="sha256").digest()) for secret in secrets]


def seal_cursor(values: list, *, context: str) -> str:
    """`values` (JSON) encrypted and bound to `context` (view and widget), URL-safe base64."""
    nonce = os.urandom(_NONCE_BYTES)
    plain = json.dumps(values, separators=(",", ":")).encode()
    sealed = nonce + _keys()[0].encrypt(nonce, plain, context.encode())
    return base64.urlsafe_b64encode(sealed).decode().rstrip("=")


def open_cursor(raw: str, *, context: str) -> list:
    """The values `seal_cursor` sealed for the same `context`; ValueError for anything else."""
    if len(raw) > CURSOR_MAX_LENGTH or not _CURSOR_RE.fullmatch(raw):
        raise ValueError("not a cursor")
    try:
        sealed = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4))
    except (binascii.Error, ValueError):
        raise ValueError("not a cursor") from None
    nonce, body = sealed[:_NONCE_BYTES], sealed[_NONCE_BYTES:]
    if len(nonce) < _NONCE_BYTES or not body:
        raise ValueError("not a cursor")
    for key in _keys():
        try:
            values = json.loads(key.decrypt(nonce, body, context.encode()))
        except InvalidTag:
            continue
        if not isinstance(values, list):
            raise ValueError("not a cursor")
        return values
    raise ValueError("not a cursor")


class KeysetPagination(BasePagination):
    ordering: tuple[str, ...] = keyset.NEWEST_FIRST

    def _context(self, request, view) -> str:
        """What a cursor is bound to: the view class and the token's widget."""
        widget = getattr(request, "widget", None)
        return f"cursor:{type(view).__module__}.{type(view).__qualname__}:widget:{getattr(widget, 'pk', '-')}"

    def _open(self, request, view, ordering) -> list | None:
        """Read `limit` and `cursor` for this view; the cursor's position, or None."""
        self.limit = parse_limit(request.query_params.get("limit"))
        self.context, self.ordering_used = self._context(request, view), tuple(ordering)
        raw = request.query_params.get("cursor")
        if not raw:
            return None
        try:
            position = [_decode(v) for v in open_cursor(raw, context=self.context)]
            if len(position) != len(ordering):
                raise ValueError
        except (ValueError, TypeError, KeyError):
            raise ValidationFailed(errors={"cursor": ["Invalid cursor."]}) from None
        return position

    def _page(self, rows: list) -> list:
        self.has_next = len(rows) > self.limit
        rows = rows[: self.limit]
        self.last = rows[-1] if rows else None
        return rows

    def paginate_queryset(self, queryset, request, view=None):
        ordering = tuple(getattr(view, "cursor_ordering", None) or self.ordering)
        position = self._open(request, view, ordering)
        queryset = queryset.order_by(*ordering)
        if position is not None:
            queryset = queryset.filter(self._after(ordering, position))
        return self._page(list(queryset[: self.limit + 1]))

    def paginate_selector(self, select, request, view=None, **filters) -> list:
        """A page that a selector serves itself: `select(**filters, after=position, limit=n)` returns
        at most `n` rows in the view's cursor ordering, strictly after `position` (the cursor's
        values, or None for the first page). The same page, cursor and errors as
        `paginate_queryset` on the selector's queryset."""
        ordering = tuple(getattr(view, "cursor_ordering", None) or self.ordering)
        position = self._open(request, view, ordering)
        return self._page(list(select(**filters, after=position, limit=self.limit + 1)))

    @staticmethod
    def _after(ordering, position):
        """Rows strictly after `position` in `ordering` (see apps.core.keyset)."""
        return keyset.after(ordering, position)

    def next_cursor(self) -> str | None:
        if not self.has_next or self.last is None:
            return None
        last = self.last
        if isinstance(last, dict):  # a page of QuerySet.values() rows
            values = [_encode(last[f.lstrip("-")]) for f in self.ordering_used]
        else:
            values = [_encode(getattr(last, f.lstrip("-"))) for f in self.ordering_used]
        return seal_cursor(values, context=self.context)

    def get_paginated_response(self, data):
        return Response({"data": data, "next_cursor": self.next_cursor()})

    def get_paginated_response_schema(self, schema):
        return {
            "type": "object",
            "required": ["data", "next_cursor"],
            "properties": {
                "data": {**schema, "description": "The page's items, in the list's order."},
                "next_cursor": {"type": ["string", "null"], "description": "Opaque cursor of the next page."},
            },
        }

    def get_schema_operation_parameters(self, view):
        return [
            {"name": "cursor", "in": "query", "required": False, "description": CURSOR_HELP, "schema": CURSOR_SCHEMA},
            {"name": "limit", "in": "query", "required": False, "description": LIMIT_HELP, "schema": LIMIT_SCHEMA},
        ]
