"""Write docs/performance.md from a `make bench` log: one table per benchmark, from its BENCH lines.

    python scripts/bench_report.py [LOG] [--check]

LOG defaults to bench/results/latest.log. Its `# machine:`, `# date:` and `# settings:` lines say
where and when the run was made (`# machine <benchmark>:` and `# date <benchmark>:` for a benchmark
whose lines come from a run of its own); every `BENCH` line (bench/lib/targets.py's format) becomes a row
with its figures, its target and the verdict recomputed from the figures. `--check` writes nothing
and exits 1 when docs/performance.md differs from what the log gives (tests/test_docs.py runs it),
so the page is never edited by hand.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.lib.targets import _PAIR, check_line  # noqa: E402

DEFAULT_LOG = ROOT / "bench" / "results" / "latest.log"
PAGE = ROOT / "docs" / "performance.md"

# BENCH names start with their benchmark's name, except where a file prints several families.
PREFIXES = (
    ("load_", "load"),
    ("webhook_", "webhooks"),
    ("channels_", "channels"),
    ("ai_reply", "ai_reply"),
    ("ai_test", "ai_test"),
    ("ai_complete_", "ai_floor"),
    ("chat_export", "chat_export"),
    ("chat_list", "chat_list"),
    ("console_list", "console_list"),
    ("console_", "console"),
    ("kb_quality", "kb_quality"),
    ("kb_search", "kb_search"),
    ("message_send", "message_send"),
    ("search_", "search"),
    ("stats_", "stats"),
    ("support_reply", "support_reply"),
    ("transcript_service_", "transcript_memory"),
    ("transcript_asgi_", "transcript_memory"),
    ("transcript", "transcript"),
    ("visitor_config", "visitor_config"),
    ("widget_", "widget"),
)

WHAT = {
    "ai_floor": "the provider layer's completion against the same call made with the OpenAI SDK",
    "ai_reply": (
        "a visitor's message to the AI operator's answer on the visitor's websocket, with a provider that takes "
        "as long as real ones (a lognormal delay, median 800 ms): the time added to each answer, against one SDK "
        "call, an INSERT and its push, timed once every chat's room is open and answered and each visitor has paused "
        "up to 5 s before writing again (the POSTs that opened the rooms, all at once, are the `opening_post` figures "
        "of the log's INFO lines); and the answers per second "
        "with a provider that answers at once, with each process's CPU per answer"
    ),
    "ai_test": "the detached assistant test against a request of the same shape, and tests held at once",
    "automation": (
        "a widget's 50 automation rules evaluated by the worker for one visitor message (runs logged), and the "
        "statements the rules' handler adds to the message's request"
    ),
    "channels": "messenger hooks and the engine's messenger sends against the visitor API and a bare POST loop",
    "chat_export": "a year of chats exported as CSV and JSON Lines, against PostgreSQL's COPY of the same rows",
    "chat_list": "the chat list against a plain view running the same SQL",
    "console": "a visitor's message until the console shows it",
    "console_list": (
        "the operator console's chat list at 100,000 chats (the page and each view's fragment, over HTTP with a "
        "session cookie), against the database work of the same request"
    ),
    "kb_quality": "recall@5 and MRR of keyword, vector and hybrid knowledge-base search with a real model",
    "kb_search": "knowledge-base search against the machine's own limit, the GIN match alone plus the numpy scan",
    "load": "requests per second under locust, against a plain Django view with the same SQL",
    "mcp": (
        "an MCP tool call as the official client makes it, and in a session of the handshake era, against its REST twin"
    ),
    "message_send": "an operator's message through the API against the same service call",
    "reports": (
        "the owner's reports page at 1,000,000 chats over 90 days (the page and its CSV downloads over HTTP with a "
        "session cookie), and the widget's config while reports load against it alone: checked on a one-process "
        "server, where the report renders in the visitor's own process, and reported beside it with the report in "
        "the other process of a two-process server"
    ),
    "relay": "a frame a worker pushes until the visitor's socket receives it, on the embedded default",
    "routing": (
        "routing with 1,000 chats queued and 200 operators online: a freed slot filled and every queued visitor's "
        "place read (and pushed by routing.queue_changed's handlers), one assignment decision, and the SLA beat pass "
        "with 100,000 open chats against the same pass without them"
    ),
    "search": "chat search by message text",
    "sockets": "visitor sockets on one web process with Redis (opens, idle memory and CPU, pushed replies) "
    "against a bare websocket server under the same server",
    "stats": "statistics reads against direct SQL over the base tables",
    "support_reply": "a support agent's reply against an operator's reply",
    "transcript": "a chat transcript against PostgreSQL's COPY",
    "transcript_memory": "memory held while a transcript streams",
    "visitor_config": "the visitor config of a widget with proactive messages and identity verification against a "
    "plain widget's",
    "webhooks": (
        "webhook deliveries against the receiver's capacity over as many connections as the engine opens to it"
    ),
    "widget": "the widget's size and what it adds to the host page's load",
}

SKIP_KEYS = {"unit", "target"}


def benchmark_of(name: str) -> str:
    for prefix, bench in PREFIXES:
        if name.startswith(prefix):
            return bench
    return name.split(".")[0].split("_")[0]


def read_log(path: Path) -> tuple[dict[str, str], list[str]]:
    meta, lines = {}, []
    for raw in path.read_text(encoding="utf-8").splitlines():
        header = re.match(r"^#\s*(machine|date|settings)(?:\s+([a-z_]+))?:\s*(.+)$", raw)
        if header:
            meta[header[1] + (f" {header[2]}" if header[2] else "")] = header[3].strip()
        elif raw.startswith("BENCH "):
            lines.append(raw)
    return meta, lines


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render(log: Path) -> str:
    meta, lines = read_log(log)
    by_bench: dict[str, list[str]] = {}
    for line in lines:
        name = line.split()[1]
        by_bench.setdefault(benchmark_of(name), []).append(line)
    machine = meta.get("machine", "not recorded")
    date = meta.get("date", "not recorded")
    settings = meta.get("settings", "")
    try:
        source = log.resolve().relative_to(ROOT)
    except ValueError:
        source = log
    out = [
        "# Performance",
        "",
        "<!-- Generated by scripts/bench_report.py from " + str(source) + "; do not edit by hand. -->",
        "",
        "Each benchmark measures our path against a *floor*: the least any implementation must do for the",
        "same result, measured in the same run on the same machine. Every BENCH line carries its own target",
        "and the verdict is recomputed from its figures. How to run them: [Benchmarks](contributing.md#benchmarks).",
        "",
        f"- Machine: {machine}",
        f"- Date: {date}",
    ]
    if settings:
        out.append(f"- Settings: `{settings}`")
    out.append(f"- Source: `{source}` ({len(lines)} BENCH lines)")
    out.append("")
    benches = sorted(p.stem for p in (ROOT / "bench").glob("*.py") if not p.stem.startswith("_"))
    for bench in sorted(set(benches) | set(by_bench)):
        out.append(f"## {bench}")
        out.append("")
        what = WHAT.get(bench)
        out.append(f"`bench/{bench}.py`" + (f": {what}." if what else "."))
        out.append("")
        rows = by_bench.get(bench)
        if not rows:
            out.append("No BENCH line of this benchmark in the log: run `make bench` to measure it.")
            out.append("")
            continue
        out.append(f"Machine: {meta.get(f'machine {bench}', machine)}; date: {meta.get(f'date {bench}', date)}.")
        out.append("")
        out.append("| figure | results | unit | target | verdict |")
        out.append("|---|---|---|---|---|")
        for line in rows:
            outcome = check_line(line)
            pairs = dict(_PAIR.findall(line.split(" MISS(")[0]))
            figures = ", ".join(f"{k} {v}" for k, v in pairs.items() if k not in SKIP_KEYS)
            detail = outcome.detail.removeprefix("MISS(").removesuffix(")").replace("=nan", " (not recorded)")
            verdict = "met" if outcome.status == "ok" else f"missed: {detail}"
            if outcome.status not in ("ok", "miss"):
                verdict = f"{outcome.status}: {outcome.detail}"
            out.append(
                f"| `{outcome.name}` | {_cell(figures)} | {_cell(pairs.get('unit', ''))} "
                f"| `{_cell(pairs.get('target', ''))}` | {_cell(verdict)} |"
            )
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def main(argv: list[str]) -> int:
    check = "--check" in argv
    paths = [a for a in argv if a != "--check"]
    log = Path(paths[0]) if paths else DEFAULT_LOG
    text = render(log)
    if check:
        if not PAGE.exists() or PAGE.read_text(encoding="utf-8") != text:
            print(f"{PAGE.relative_to(ROOT)} is not what {log} gives: run scripts/bench_report.py", file=sys.stderr)
            return 1
        return 0
    PAGE.parent.mkdir(parents=True, exist_ok=True)
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)} from {log}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
