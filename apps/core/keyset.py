"""The keyset condition of a cursor list: the rows strictly after a position in an ordering. Shared
by the paginator (`apps.core.api.pagination`, on a queryset) and the selectors that serve a page
themselves (the position's values may be `Slot`s of a compiled statement)."""

from __future__ import annotations

from functools import reduce

from django.db.models import Q

# Newest first, the id breaking ties: the order of every cursor list.
NEWEST_FIRST: tuple[str, ...] = ("-created_at", "-id")


def after(ordering: tuple[str, ...], position) -> Q:
    """Rows strictly after `position` (one value per field of `ordering`) in `ordering`: the
    lexicographic keyset condition."""
    clauses = []
    for i, field in enumerate(ordering):
        name = field.lstrip("-")
        op = "lt" if field.startswith("-") else "gt"
        equal = {f.lstrip("-"): position[j] for j, f in enumerate(ordering[:i])}
        clauses.append(Q(**equal, **{f"{name}__{op}": position[i]}))
    return reduce(lambda a, b: a | b, clauses)
