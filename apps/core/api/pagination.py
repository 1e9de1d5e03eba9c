"""Keyset cursor pagination: `{data, next_cursor}`, newest first with an id tie-break, no COUNT.

The cursor is the signed position of the last row served (HMAC with SECRET_KEY, salted per view),
so it is opaque and tamper-evident: a forged or foreign cursor is 422, never a silent restart.
"""

from __future__ import annotations

from datetime import datetime
from functools import reduce

from django.core import signing
from django.db.models import Q
from rest_framework.pagination import BasePagination
from rest_framework.response import Response

from apps.core.errors import ValidationFailed
from apps.core.numbers import parse_int

DEFAULT_LIMIT = 20
MAX_LIMIT = 100


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


class KeysetPagination(BasePagination):
    ordering: tuple[str, ...] = ("-created_at", "-id")

    def _salt(self, view) -> str:
        return f"cursor:{type(view).__module__}.{type(view).__qualname__}"

    def paginate_queryset(self, queryset, request, view=None):
        ordering = tuple(getattr(view, "cursor_ordering", None) or self.ordering)
        self.limit = parse_limit(request.query_params.get("limit"))
        self.view, self.ordering_used = view, ordering
        raw = request.query_params.get("cursor")
        queryset = queryset.order_by(*ordering)
        if raw:
            try:
                position = [_decode(v) for v in signing.loads(raw, salt=self._salt(view))]
                if len(position) != len(ordering):
                    raise ValueError
            except (signing.BadSignature, ValueError, TypeError, KeyError):
                raise ValidationFailed(errors={"cursor": ["Invalid cursor."]}) from None
            queryset = queryset.filter(self._after(ordering, position))
        rows = list(queryset[: self.limit + 1])
        self.has_next = len(rows) > self.limit
        rows = rows[: self.limit]
        self.last = rows[-1] if rows else None
        return rows

    @staticmethod
    def _after(ordering, position) -> Q:
        """Rows strictly after `position` in `ordering` (lexicographic keyset condition)."""
        clauses = []
        for i, field in enumerate(ordering):
            name = field.lstrip("-")
            op = "lt" if field.startswith("-") else "gt"
            equal = {f.lstrip("-"): position[j] for j, f in enumerate(ordering[:i])}
            clauses.append(Q(**equal, **{f"{name}__{op}": position[i]}))
        return reduce(lambda a, b: a | b, clauses)

    def next_cursor(self) -> str | None:
        if not self.has_next or self.last is None:
            return None
        values = [_encode(getattr(self.last, f.lstrip("-"))) for f in self.ordering_used]
        return signing.dumps(values, salt=self._salt(self.view), compress=True)

    def get_paginated_response(self, data):
        return Response({"data": data, "next_cursor": self.next_cursor()})

    def get_paginated_response_schema(self, schema):
        return {
            "type": "object",
            "required": ["data", "next_cursor"],
            "properties": {
                "data": schema,
                "next_cursor": {"type": ["string", "null"], "description": "Opaque cursor of the next page."},
            },
        }

    def get_schema_operation_parameters(self, view):
        return [
            {
                "name": "cursor",
                "in": "query",
                "required": False,
                "description": "Opaque cursor from a previous page's `next_cursor`.",
                "schema": {"type": "string"},
            },
            {
                "name": "limit",
                "in": "query",
                "required": False,
                "description": f"Page size, 1 to {MAX_LIMIT} (default {DEFAULT_LIMIT}); else 422.",
                "schema": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
            },
        ]
