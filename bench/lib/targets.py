"""Targets of the benchmarks: every BENCH line carries its target and its verdict, and `make bench`
checks them all again from the lines themselves.

A BENCH line:

    BENCH <name> ours=<v> floor=<v> ratio=<v> [<key>=<v> ...] unit=<unit> target=<check>[,<check>...] ok
    BENCH <name> ... target=ratio>=0.6,p99<250,errors==0 MISS(p99=312.4 not <250)

A check is `<key><op><limit>` with op one of <=, >=, <, >, == over a number printed on the same
line, so the verdict can be recomputed by anyone reading the log. A figure that has no target is
printed as an `INFO <name> ...` line instead, never as BENCH. `<name> SKIPPED (...)` and
`<name> FAILED (...)` lines report a benchmark that could not run or broke.

`python -m bench.lib.targets <log>...` (run by scripts/bench.sh) re-checks every BENCH line of the
logs and exits 1 naming each miss, each failed benchmark and each line without a target.
"""

from __future__ import annotations

import math
import operator
import re
import sys
from dataclasses import dataclass
from pathlib import Path

OPS = {"<=": operator.le, ">=": operator.ge, "==": operator.eq, "<": operator.lt, ">": operator.gt}
_CHECK = re.compile(r"^([a-z_][a-z0-9_]*)(<=|>=|==|<|>)(-?[0-9.]+(?:e-?[0-9]+)?)$")


@dataclass(frozen=True)
class Check:
    key: str
    op: str
    limit: float

    @classmethod
    def parse(cls, text: str) -> Check:
        match = _CHECK.match(text.strip())
        if not match:
            raise ValueError(f"not a target check: {text!r} (want e.g. ratio<=2 or p99<250)")
        return cls(match[1], match[2], float(match[3]))

    def __str__(self) -> str:
        return f"{self.key}{self.op}{_fmt(self.limit)}"

    def holds(self, values: dict[str, float]) -> bool:
        value = values.get(self.key)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return False
        return OPS[self.op](value, self.limit)


def _fmt(value) -> str:
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.3f}".rstrip("0").rstrip(".") if abs(value) < 10 else f"{value:.2f}"
    return str(value)


def checks(spec: str | list) -> list[Check]:
    if isinstance(spec, str):
        return [Check.parse(part) for part in spec.split(",") if part.strip()]
    return [c if isinstance(c, Check) else Check.parse(c) for c in spec]


def verdict(values: dict[str, float], targets: list[Check]) -> tuple[bool, str]:
    misses = [
        f"{c.key}={_fmt(values.get(c.key, float('nan')))} not {c.op}{_fmt(c.limit)}"
        for c in targets
        if not c.holds(values)
    ]
    return (not misses), ("ok" if not misses else f"MISS({'; '.join(misses)})")


def bench(name: str, *, unit: str, target: str | list, **values) -> bool:
    """Print the BENCH line of `values` (ours, floor, ratio and any other figures, in that order)
    with its target and verdict; returns whether the target holds."""
    targets = checks(target)
    if not targets:
        raise ValueError(f"BENCH {name}: a target is required (print an INFO line for a figure without one)")
    numbers = {k: float(v) for k, v in values.items() if v is not None}
    ok, text = verdict(numbers, targets)
    figures = " ".join(f"{k}={_fmt(float(v)) if v is not None else 'n/a'}" for k, v in values.items())
    print(f"BENCH {name} {figures} unit={unit} target={','.join(map(str, targets))} {text}", flush=True)
    return ok


def info(name: str, *, unit: str = "", **values) -> None:
    """A figure printed for information: no target, so not a BENCH line."""
    figures = " ".join(f"{k}={_fmt(float(v)) if isinstance(v, int | float) else v}" for k, v in values.items())
    print(f"INFO {name} {figures}" + (f" unit={unit}" if unit else ""), flush=True)


# --- checking logs ---------------------------------------------------------------------------------------

_PAIR = re.compile(r"([a-z_][a-z0-9_]*)=(\S+)")


@dataclass
class Outcome:
    line: str
    name: str
    status: str  # ok | miss | failed | skipped | unchecked | inconsistent
    detail: str = ""


def check_line(line: str) -> Outcome:
    line = line.rstrip("\n")
    parts = line.split()
    name = parts[1] if len(parts) > 1 else "?"
    if " SKIPPED" in line:
        return Outcome(line, name, "skipped")
    if " FAILED" in line:
        return Outcome(line, name, "failed", line.split(" FAILED", 1)[1].strip())
    pairs = dict(_PAIR.findall(line))
    if "target" not in pairs:
        return Outcome(line, name, "unchecked", "no target on the line")
    try:
        targets = checks(pairs["target"])
    except ValueError as error:
        return Outcome(line, name, "unchecked", str(error))
    values = {}
    for key, raw in pairs.items():
        try:
            values[key] = float(raw)
        except ValueError:
            continue
    ok, text = verdict(values, targets)
    printed_ok = line.endswith(" ok")
    if printed_ok != ok:
        return Outcome(
            line, name, "inconsistent", f"the line says {'ok' if printed_ok else 'MISS'}, its figures {text}"
        )
    return Outcome(line, name, "ok" if ok else "miss", "" if ok else text)


def check_logs(paths: list[Path]) -> list[Outcome]:
    outcomes = []
    for path in paths:
        for line in path.read_text(errors="replace").splitlines():
            if line.startswith("BENCH "):
                outcomes.append(check_line(line))
    return outcomes


def spread(outcomes: list[Outcome]) -> list[str]:
    """Per BENCH name over the runs: each figure as min-max, and how many runs met the target."""
    by_name: dict[str, list[Outcome]] = {}
    for outcome in outcomes:
        if outcome.status in ("ok", "miss"):
            by_name.setdefault(outcome.name, []).append(outcome)
    rows = []
    for name, runs in by_name.items():
        figures: dict[str, list[float]] = {}
        unit = target = ""
        for outcome in runs:
            pairs = dict(_PAIR.findall(outcome.line))
            unit, target = pairs.get("unit", ""), pairs.get("target", "")
            for key, raw in pairs.items():
                if key in ("unit", "target"):
                    continue
                try:
                    value = float(raw)
                except ValueError:  # floor=n/a and the like: not a figure
                    continue
                figures.setdefault(key, []).append(value)
        shown = " ".join(
            f"{key}={_fmt(min(v))}" + (f"..{_fmt(max(v))}" if max(v) != min(v) else "") for key, v in figures.items()
        )
        met = sum(1 for o in runs if o.status == "ok")
        rows.append(f"  {name}: {shown} unit={unit} target={target}: met in {met} of {len(runs)} runs")
    return rows


def main(argv: list[str]) -> int:
    show_spread = "--spread" in argv
    outcomes = check_logs([Path(p) for p in argv if p != "--spread"])
    statuses = ("ok", "miss", "failed", "skipped", "unchecked", "inconsistent")
    counts = {s: sum(1 for o in outcomes if o.status == s) for s in statuses}
    bad = [o for o in outcomes if o.status in ("miss", "failed", "unchecked", "inconsistent")]
    if show_spread:
        print("bench spread (min..max over the runs):")
        print("\n".join(spread(outcomes)))
    print(
        f"bench targets: {len(outcomes)} BENCH lines: {counts['ok']} ok, {counts['miss']} missed, "
        f"{counts['failed']} failed, {counts['skipped']} skipped, "
        f"{counts['unchecked'] + counts['inconsistent']} unchecked"
    )
    for outcome in bad:
        print(f"  {outcome.status.upper()}: {outcome.name}: {outcome.detail}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
