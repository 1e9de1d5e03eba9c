"""The AI provider layer against its floor: one chat completion through `apps.ai.providers`
(the official OpenAI SDK on the guarded transport, with the budget, the chain walk and the attempt
records) versus the same completion made directly with the official SDK on its default transport.

The fake OpenAI server (`python -m tests.llm_fake`) runs in a process of its own and answers at
once, so the figures are what each side adds on the client. No database is needed.

1. sequential, sync: `complete()` vs `OpenAI().chat.completions.create()`, p50 and p99 per call.
2. sequential, async: `acomplete()` vs `AsyncOpenAI()`, p50 and p99 per call.
3. concurrent, async: C completions at once in one event loop (one web process under ASGI), total
   completions per second vs the same with AsyncOpenAI.

Knobs: BENCH_AI_CALLS (sequential calls per side and round, default 200), BENCH_AI_CONCURRENCY
(C, default 50), BENCH_ROUNDS (default 3). Sequential calls alternate ours / floor call by call (the
machine's noise hits both alike); concurrent runs alternate round by round; each figure is the median
over rounds. Prints BENCH lines (target: ratio at most 3).

The ai helper's `bench/ai_test.py` measures the detached test endpoint against the same floor; it can
reuse `start_fake()` and the `tests.llm_fake` floor helpers.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CALLS = int(os.environ.get("BENCH_AI_CALLS") or 200)
CONCURRENCY = int(os.environ.get("BENCH_AI_CONCURRENCY") or 50)
ROUNDS = int(os.environ.get("BENCH_ROUNDS") or 3)
TARGET = 3.0
PROMPT = "Do you ship to Riga?"
SYSTEM = "You are the shop's assistant."


def start_fake(flavor: str = "openai") -> tuple[subprocess.Popen, dict]:
    """The fake vendor in a process of its own; returns it and its {base_url, api_key, ca_path...}."""
    process = subprocess.Popen(  # noqa: S603
        [sys.executable, "-m", "tests.llm_fake", "--flavor", flavor],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    info = json.loads(process.stdout.readline())
    return process, info


def setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ["OUTBOUND_ALLOW_LOOPBACK"] = "1"
    import django

    django.setup()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def line(name: str, ours: float, floor: float, unit: str, *, lower_is_better: bool = True) -> float:
    ratio = ours / floor if lower_is_better else floor / ours
    verdict = "ok" if ratio <= TARGET else f"MISS(ratio={ratio:.2f} not <={TARGET})"
    # unit has no spaces in it (bench.lib.targets reads key=value pairs)
    print(
        f"BENCH {name} ours={ours:.2f} floor={floor:.2f} ratio={ratio:.2f} unit={unit.replace(' ', '_')} "
        f"target=ratio<={TARGET} {verdict}",
        flush=True,
    )
    return ratio


def timed_pairs(ours, floor, count: int) -> tuple[list[float], list[float]]:
    """`count` calls of each, alternating call by call (a shared machine's noise hits both alike)."""
    samples: tuple[list[float], list[float]] = ([], [])
    for _ in range(count):
        for call, into in ((floor, samples[1]), (ours, samples[0])):
            started = time.perf_counter()
            text = call()
            into.append((time.perf_counter() - started) * 1000)
            assert text
    return samples


async def atimed_pairs(ours, floor, count: int) -> tuple[list[float], list[float]]:
    samples: tuple[list[float], list[float]] = ([], [])
    for _ in range(count):
        for call, into in ((floor, samples[1]), (ours, samples[0])):
            started = time.perf_counter()
            text = await call()
            into.append((time.perf_counter() - started) * 1000)
            assert text
    return samples


async def concurrent(call, total: int, concurrency: int) -> float:
    """Completions per second with `concurrency` in flight at once."""
    semaphore = asyncio.Semaphore(concurrency)

    async def one():
        async with semaphore:
            assert await call()

    started = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(total)))
    return total / (time.perf_counter() - started)


def main() -> int:
    process, info = start_fake("openai")
    try:
        os.environ["REQUESTS_CA_BUNDLE"] = info["ca_path"]
        setup_django()
        from apps.ai.providers import ChatMessage, ProviderConfig, acomplete, complete
        from tests.llm_fake import asdk_floor_completion, sdk_floor_client, sdk_floor_completion

        config = ProviderConfig("openai", api_key=info["api_key"], base_url=info["base_url"], credential_id=1)
        messages = [ChatMessage("system", SYSTEM), ChatMessage("user", PROMPT)]
        floor_client = sdk_floor_client(info["base_url"], info["api_key"], ca_file=info["ca_path"])

        def ours_sync() -> str:
            return complete([config], messages, deadline=time.monotonic() + 45, max_operations=10).text

        def floor_sync() -> str:
            return sdk_floor_completion(floor_client, PROMPT, system=SYSTEM)

        # 1. sequential, sync
        timed_pairs(ours_sync, floor_sync, 20)
        ours_rounds, floor_rounds = [], []
        for _ in range(ROUNDS):
            ours_samples, floor_samples = timed_pairs(ours_sync, floor_sync, CALLS)
            ours_rounds.append(ours_samples)
            floor_rounds.append(floor_samples)
        for label, q in (("p50", 0.5), ("p99", 0.99)):
            ours = statistics.median(percentile(r, q) for r in ours_rounds)
            floor = statistics.median(percentile(r, q) for r in floor_rounds)
            line(f"ai_complete_sync_{label}", ours, floor, "ms")

        # 2 and 3: async, in one event loop
        async def run_async() -> None:
            floor_aclient = sdk_floor_client(info["base_url"], info["api_key"], is_async=True, ca_file=info["ca_path"])

            async def ours_async() -> str:
                answer = await acomplete([config], messages, deadline=time.monotonic() + 45, max_operations=10)
                return answer.text

            async def floor_async() -> str:
                return await asdk_floor_completion(floor_aclient, PROMPT, system=SYSTEM)

            await atimed_pairs(ours_async, floor_async, 20)
            ours_rounds, floor_rounds = [], []
            for _ in range(ROUNDS):
                ours_samples, floor_samples = await atimed_pairs(ours_async, floor_async, CALLS)
                ours_rounds.append(ours_samples)
                floor_rounds.append(floor_samples)
            for label, q in (("p50", 0.5), ("p99", 0.99)):
                ours = statistics.median(percentile(r, q) for r in ours_rounds)
                floor = statistics.median(percentile(r, q) for r in floor_rounds)
                line(f"ai_complete_async_{label}", ours, floor, "ms")

            total = CONCURRENCY * 4
            ours_rates, floor_rates = [], []
            for _ in range(ROUNDS):
                floor_rates.append(await concurrent(floor_async, total, CONCURRENCY))
                ours_rates.append(await concurrent(ours_async, total, CONCURRENCY))
            line(
                f"ai_complete_async_concurrent_{CONCURRENCY}",
                statistics.median(ours_rates),
                statistics.median(floor_rates),
                "completions/s",
                lower_is_better=False,
            )

        asyncio.run(run_async())
    finally:
        if process.stdin is not None:
            process.stdin.close()
        process.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
