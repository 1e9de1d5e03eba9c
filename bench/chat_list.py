"""Chat list, 50 per page: GET /api/v1/chats vs a plain Django view running the same SQL and
answering the same bytes (bench.lib.floor_views.chat_list). Target: ratio at most 2.

Cases: no filter; status=active; has_client_messages=1; a deep page (the keyset cursor of the row
at offset 50 000, or half the list at smaller scales, sealed as the API seals its next_cursor).
Before timing, each case checks that the floor's SQL is the statement the API runs and that both
answer identical bytes (printed, not asserted).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.lib.common import Server, compare, expect, prepare, report_latency, session  # noqa: E402

NAME = "chat_list"
LIMIT = 50
TARGET = 2


def deep_position(widget_id: int, offset: int):
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT created_at, id FROM chats_chat WHERE widget_id = %s ORDER BY created_at DESC, id DESC "
            "OFFSET %s LIMIT 1",
            (widget_id, offset),
        )
        return cursor.fetchone()


def main() -> int:
    data = prepare(NAME)
    if data is None:
        return 0
    from apps.core.api.pagination import seal_cursor
    from bench.lib.checks import first_difference, floor_runs_api_sql
    from bench.lib.floor_views import chat_list_sql, cursor_context

    at, pk = deep_position(data.widget_id, min(50_000, int(100_000 * data.scale) // 2))
    deep_cursor = seal_cursor([{"dt": at.isoformat()}, pk], context=cursor_context(data.widget_id))
    cases = [
        (NAME, {}, {}, {}),
        (f"{NAME}_status", {"status": "active"}, {"status": "active"}, {"status": "active"}),
        (
            f"{NAME}_client_wrote",
            {"has_client_messages": "1"},
            {"has_client_messages": "1"},
            {"has_client_messages": "1"},
        ),
        (f"{NAME}_deep_page", {"cursor": deep_cursor}, {"after": f"{at.isoformat()},{pk}"}, {"after": [at, pk]}),
    ]
    with Server(NAME) as server:
        ours_session, floor_session = session(data.token), session()
        ours_url, floor_url = f"{server.base}/api/v1/chats", f"{server.base}/bench/chats"

        # The API's own next_cursor leads where the floor's `after` does.
        first = expect(ours_session.get(ours_url, params={"limit": LIMIT})).json()
        last = first["data"][-1]
        page2 = expect(ours_session.get(ours_url, params={"limit": LIMIT, "cursor": first["next_cursor"]})).content
        floor2 = expect(
            floor_session.get(
                floor_url,
                params={"widget": data.widget_id, "limit": LIMIT, "after": f"{last['created_at']},{last['id']}"},
            )
        ).content
        print(f"{NAME}: page 2 by next_cursor vs floor: {first_difference(page2, floor2, data.widget_id)}")

        for name, api_params, floor_params, sql_params in cases:
            ours_params = {"limit": LIMIT, **api_params}
            floor_all = {"widget": data.widget_id, "limit": LIMIT, **floor_params}
            sql, params, _ = chat_list_sql(widget_id=data.widget_id, limit=LIMIT, **sql_params)
            same_sql = floor_runs_api_sql("/api/v1/chats", ours_params, data.token, sql, params)
            ours_body = expect(ours_session.get(ours_url, params=ours_params)).content
            floor_body = expect(floor_session.get(floor_url, params=floor_all)).content
            print(
                f"{name}: floor runs the API's SQL: {'yes' if same_sql else 'NO'}; "
                f"bytes: {first_difference(ours_body, floor_body, data.widget_id)}"
            )

            def ours(params=ours_params):
                return expect(ours_session.get(ours_url, params=params))

            def floor(params=floor_all):
                return expect(floor_session.get(floor_url, params=params))

            ours_ms, floor_ms = compare(ours, floor, iterations=100)
            report_latency(name, ours_ms, floor_ms, target=TARGET)
    return 0


if __name__ == "__main__":
    sys.exit(main())
