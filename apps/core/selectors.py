"""Reads of the core's rows that every request makes: the API token by its prefix and the visitor
API's widget by its button guid. Both run on every call of their API, so each is a statement
compiled once (apps.platform.statements; docs/architecture.md, "Compiled statements")."""

from __future__ import annotations

from apps.core.models import ApiToken, Widget
from apps.platform.statements import ModelStatement, Slot, Statement

_TOKEN_COLUMNS = tuple(f.attname for f in ApiToken._meta.concrete_fields)
_WIDGET_COLUMNS = tuple(f.attname for f in Widget._meta.concrete_fields)


def _token_by_prefix():
    # `prefix` is unique: no ordering, at most one row.
    prefix = Slot("prefix", ApiToken._meta.get_field("prefix"))
    return ApiToken.objects.filter(prefix=prefix).values(
        *_TOKEN_COLUMNS, *(f"widget__{name}" for name in _WIDGET_COLUMNS)
    )[:1]


_TOKEN_BY_PREFIX = Statement(_token_by_prefix)


def find_token(prefix: str) -> ApiToken | None:
    """The token with this prefix and its widget (loaded with it), or None."""
    rows = _TOKEN_BY_PREFIX.tuples(prefix=prefix)
    if not rows:
        return None
    row = rows[0]  # the token's columns, then the widget's (the values() order)
    token = ApiToken.from_db("default", _TOKEN_COLUMNS, row[: len(_TOKEN_COLUMNS)])
    token.widget = Widget.from_db("default", _WIDGET_COLUMNS, row[len(_TOKEN_COLUMNS) :])
    return token


_WIDGET_BY_GUID = ModelStatement(
    lambda: Widget.objects.filter(button_guid=Slot("guid", Widget._meta.get_field("button_guid"))).order_by("pk")[:1],
)


def get_widget_by_button_guid(*, button_guid: str) -> Widget | None:
    """The widget of a visitor API path's `button_guid`, or None."""
    found = _WIDGET_BY_GUID.instances(guid=button_guid)
    return found[0] if found else None
