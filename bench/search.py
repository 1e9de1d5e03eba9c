"""`q` search: GET /api/v1/chats?q=<word>&limit=50 for a rare word (in 7 messages of this widget),
a common word (about 10% of its messages) and a word common in other widgets but absent from
this one. The absent word may not scan the tenant: it must stay within 100 times the rare-word
case, which is its floor (BENCH search_absent, target 100). search_common prints common/rare
without a target. Each word is also a chat list filter, so each is measured against the plain
view running the same final list SQL (search_<word>_vs_plain, informative: the plain view skips
the trigram probe that comes first).

The EXPLAIN (ANALYZE, BUFFERS) of each word's statement is printed to the log for investigation,
with how many of the tenant's message rows it reads (a WARNING when it is a tenth or more: the
ratio target alone would not notice that the rare-word case scans the tenant too).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.lib.common import Server, bench_line, compare, expect, prepare, report_latency, session  # noqa: E402

NAME = "search"
LIMIT = 50


def main() -> int:
    data = prepare(NAME)
    if data is None:
        return 0
    from apps.chats.models import Message
    from bench.lib.checks import explain, first_difference, floor_runs_api_sql, rows_examined
    from bench.lib.floor_views import chat_list_sql
    from bench.lib.seed import ABSENT_WORD, COMMON_WORD, RARE_WORD

    tenant_messages = Message.objects.filter(widget_id=data.widget_id).count()
    words = {"rare": RARE_WORD, "common": COMMON_WORD, "absent": ABSENT_WORD}
    ours_ms: dict[str, float] = {}
    with Server(NAME) as server:
        ours_session, floor_session = session(data.token), session()
        ours_url, floor_url = f"{server.base}/api/v1/chats", f"{server.base}/bench/chats"
        for label, word in words.items():
            ours_params = {"limit": LIMIT, "q": word}
            floor_params = {"widget": data.widget_id, "limit": LIMIT, "q": word}
            sql, params, _ = chat_list_sql(widget_id=data.widget_id, limit=LIMIT, q=word)
            same_sql = floor_runs_api_sql("/api/v1/chats", ours_params, data.token, sql, params)
            ours_body = expect(ours_session.get(ours_url, params=ours_params))
            floor_body = expect(floor_session.get(floor_url, params=floor_params))
            print(
                f"{NAME} {label} ({word}): {len(ours_body.json()['data'])} chats on the page; floor runs the "
                f"API's SQL: {'yes' if same_sql else 'NO'}; bytes: "
                f"{first_difference(ours_body.content, floor_body.content)}"
            )
            examined, nodes = 0, ["no list query: the page is empty"]
            if sql:
                print(f"EXPLAIN {label}:\n{explain(sql, params)}\n", flush=True)
                examined, nodes = rows_examined(sql, params, "chats_message")
            warning = "  WARNING: scans the tenant" if examined >= tenant_messages // 10 else ""
            print(
                f"{NAME} {label}: reads {examined} of the tenant's {tenant_messages} message rows "
                f"({'; '.join(nodes)}){warning}",
                flush=True,
            )

            def ours(params=ours_params):
                return expect(ours_session.get(ours_url, params=params))

            def floor(params=floor_params):
                return expect(floor_session.get(floor_url, params=params))

            ours_ms[label], floor_ms = compare(ours, floor, iterations=10, warmup=2)
            # The plain view replays only the final list query; ours also probes the trigram index
            # first (that probe is what keeps the absent word off the tenant), so no target here.
            report_latency(f"{NAME}_{label}_vs_plain", ours_ms[label], floor_ms, target=None)
    rare = ours_ms["rare"]
    bench_line(
        f"{NAME}_absent", ours=ours_ms["absent"], floor=rare, ratio=ours_ms["absent"] / rare, target=100, unit="ms"
    )
    bench_line(
        f"{NAME}_common", ours=ours_ms["common"], floor=rare, ratio=ours_ms["common"] / rare, target=None, unit="ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
