"""Sanity checks that make a floor a floor: it runs our SQL and answers our bytes. Not timed."""

from __future__ import annotations

import logging


def api_queries(path: str, params: dict, token: str) -> list[str]:
    """The SQL statements one real API request runs (in this process, through Django's test client)."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    logging.getLogger("apps.request").setLevel(logging.WARNING)  # the request line would clutter the log
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}", HTTP_HOST="127.0.0.1")
    with CaptureQueriesContext(connection) as captured:
        response = client.get(path, params)
    if response.status_code != 200:
        raise RuntimeError(f"GET {path}: {response.status_code} {response.content[:300]!r}")
    return [query["sql"] for query in captured.captured_queries]


def floor_runs_api_sql(path: str, api_params: dict, token: str, floor_sql: str, floor_params: tuple) -> bool:
    from django.db import connection

    queries = api_queries(path, api_params, token)
    if not floor_sql:  # an empty page: Django ran no list query, and neither does the floor
        return not any(q.startswith('SELECT "chats_chat"."id"') for q in queries)
    return connection.ops.compose_sql(floor_sql, floor_params) in queries


def first_difference(a: bytes, b: bytes, widget_id: int | None = None) -> str:
    if a == b:
        return "identical"
    if widget_id is not None and _same_but_cursor_nonce(a, b, widget_id):
        return "identical but for the nonce of the sealed next_cursor (same cursor position)"
    at = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return f"DIFFERENT at byte {at} (lengths {len(a)} / {len(b)}): {a[at : at + 80]!r} vs {b[at : at + 80]!r}"


def _same_but_cursor_nonce(a: bytes, b: bytes, widget_id: int) -> bool:
    """Both pages equal but for next_cursor, and both cursors open (for the chat list of the widget)
    to the same position: a sealed cursor carries a random nonce."""
    import json

    from apps.core.api.pagination import open_cursor

    from .floor_views import cursor_context

    marker = b',"next_cursor":'
    if marker not in a or marker not in b or a.rsplit(marker, 1)[0] != b.rsplit(marker, 1)[0]:
        return False
    cursors = [json.loads(x)["next_cursor"] for x in (a, b)]
    if None in cursors:
        return False
    try:
        return open_cursor(cursors[0], context=cursor_context(widget_id)) == open_cursor(
            cursors[1], context=cursor_context(widget_id)
        )
    except ValueError:
        return False


def explain(sql: str, params: tuple) -> str:
    """EXPLAIN (ANALYZE, BUFFERS) of a statement, for the log."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) {sql}", params)
        return "\n".join(row[0] for row in cursor.fetchall())


def rows_examined(sql: str, params: tuple, relation: str) -> tuple[int, list[str]]:
    """Rows of `relation` the statement reads (returned plus removed by filters and rechecks), from
    EXPLAIN (ANALYZE, FORMAT JSON), and the scan nodes that read them."""
    import json

    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}", params)
        plan = cursor.fetchone()[0]
    if isinstance(plan, str):
        plan = json.loads(plan)
    total, nodes = 0, []

    def walk(node: dict) -> None:
        nonlocal total
        if node.get("Relation Name") == relation:
            loops = node.get("Actual Loops", 1)
            read = (
                node.get("Actual Rows", 0)
                + node.get("Rows Removed by Filter", 0)
                + node.get("Rows Removed by Index Recheck", 0)
            ) * loops
            total += read
            nodes.append(f"{node['Node Type']} {node.get('Index Name', '')}".strip() + f" ({read} rows)")
        for child in node.get("Plans", []):
            walk(child)

    walk(plan[0]["Plan"])
    return total, nodes
