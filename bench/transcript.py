"""Transcript of the 50 000-message chat: GET /api/v1/chats/{id}/transcript vs `COPY (the same
rows) TO STDOUT` streamed by a plain view (bench.lib.floor_views.transcript). Target: ratio at most
3 (whole download, median), and the server's resident memory grows by less than 20 MB.

Memory is measured on a fresh server per side: VmRSS after one small warm-up request, then the
peak sampled every 50 ms while three transcripts download; growth = peak - before (MB = 10^6
bytes). The transcript_rss_growth line's target applies to ours; its floor is the COPY view's own
growth, for reference.
"""

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.lib.common import (  # noqa: E402
    RssSampler,
    Server,
    bench_line,
    compare,
    env_int,
    expect,
    prepare,
    report_latency,
    session,
    skipped,
)

NAME = "transcript"
DOWNLOADS = 3


def download(s, url: str, params: dict | None = None) -> int:
    with expect(s.get(url, params=params, stream=True)) as response:
        return sum(len(chunk) for chunk in response.iter_content(64 * 1024))


def main() -> int:
    data = prepare(NAME)
    if data is None:
        return 0
    ours_path = f"/api/v1/chats/{data.transcript_chat_id}/transcript"
    floor_path = f"/bench/chats/{data.transcript_chat_id}/transcript"
    floor_params = {"widget": data.widget_id}

    growth = {}
    for side in ("ours", "floor"):
        with Server(f"{NAME}-{side}-memory") as server:
            s = session(data.token)
            if side == "ours":
                probe = s.get(f"{server.base}{ours_path}", stream=True)
                probe.close()
                if probe.status_code == 404:
                    skipped(NAME, "endpoint missing")
                    return 0
                expect(s.get(f"{server.base}/api/v1/chats", params={"limit": 1}))
            else:
                expect(s.get(f"{server.base}/bench/chats", params={"widget": data.widget_id, "limit": 1}))
            time.sleep(0.5)
            before = server.rss_kib()
            sizes, seconds = [], []
            with RssSampler(server, interval=0.05) as sampler:
                for _ in range(DOWNLOADS):
                    started = time.perf_counter()
                    if side == "ours":
                        sizes.append(download(s, f"{server.base}{ours_path}"))
                    else:
                        sizes.append(download(s, f"{server.base}{floor_path}", floor_params))
                    seconds.append(time.perf_counter() - started)
            growth[side] = (sampler.peak - before) * 1024 / 1e6
            print(
                f"{NAME} {side}: {sizes[0]} bytes, {statistics.median(seconds):.2f} s; RSS before "
                f"{before / 1024:.1f} MiB, peak {sampler.peak / 1024:.1f} MiB",
                flush=True,
            )

    with Server(NAME) as server:
        ours_session, floor_session = session(data.token), session()

        def ours():
            return download(ours_session, f"{server.base}{ours_path}")

        def floor():
            return download(floor_session, f"{server.base}{floor_path}", floor_params)

        ours_ms, floor_ms = compare(
            ours, floor, iterations=env_int("BENCH_TRANSCRIPT_ITERATIONS", 3), rounds=3, warmup=1, env=False
        )
    report_latency(NAME, ours_ms, floor_ms, target=3)
    ratio = growth["ours"] / growth["floor"] if growth["floor"] >= 0.1 else "n/a"
    bench_line(
        f"{NAME}_rss_growth", ours=growth["ours"], floor=growth["floor"], ratio=ratio, target="ours<20", unit="MB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
