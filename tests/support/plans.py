"""PostgreSQL's plan of a queryset (EXPLAIN, FORMAT JSON), for tests that pin a plan's shape or the
planner's estimate."""

from __future__ import annotations

import json
from collections.abc import Iterator

from django.db import connection


def plan(queryset) -> dict:
    """The root node of the plan PostgreSQL makes for `queryset` (not run)."""
    sql, params = queryset.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}", params)
        found = cursor.fetchone()[0]
    # psycopg decodes the json column; a driver that does not hands back its text
    return (json.loads(found) if isinstance(found, str) else found)[0]["Plan"]


def nodes(node: dict) -> Iterator[dict]:
    """`node` and every node under it."""
    yield node
    for child in node.get("Plans", ()):
        yield from nodes(child)


def estimate(queryset) -> float:
    """The rows the planner expects `queryset` to return."""
    return plan(queryset.values("pk"))["Plan Rows"]
