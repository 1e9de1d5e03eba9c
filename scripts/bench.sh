#!/usr/bin/env bash
# `make bench`: run every bench/*.py with the venv's python (files starting with `_`, such as
# bench/_seed.py and bench/__init__.py, are helpers and data generators, not benchmarks). Each
# benchmark's full output goes to var/bench/<name>.log (<name>.<run>.log with BENCH_REPEAT); its
# BENCH and INFO lines are printed here as they come.
#
# Then every BENCH line of this run is checked against its own target (bench/lib/targets.py): the
# target exits non-zero naming each miss, each benchmark that failed and each BENCH line without a
# target, and prints the spread (min-max) of each figure over the runs.
#
#   BENCH_ONLY="load webhooks"  run only these benchmarks (names of bench/*.py without .py)
#   BENCH_REPEAT=3              run each benchmark 3 times (bench.lib.targets prints the spread)
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
# Never put bench/ itself first on sys.path: bench/channels.py would shadow the channels package.
export PYTHONSAFEPATH=1

repeat="${BENCH_REPEAT:-1}"
if ! [[ "$repeat" =~ ^[1-9][0-9]*$ ]]; then
  echo "bench: BENCH_REPEAT must be a whole number of runs (1 or more), not '$repeat'" >&2
  exit 2
fi

shopt -s nullglob
benches=()
for f in bench/*.py; do
  name="$(basename "$f" .py)"
  [[ "$name" == _* ]] && continue
  if [[ -n "${BENCH_ONLY:-}" ]] && [[ " $BENCH_ONLY " != *" $name "* ]]; then
    continue
  fi
  benches+=("$f")
done
if [[ ${#benches[@]} -eq 0 ]]; then
  echo "bench: no benchmarks to run (bench/*.py${BENCH_ONLY:+, BENCH_ONLY=$BENCH_ONLY}); nothing to run"
  exit 0
fi

mkdir -p var/bench
failed=()
logs=()
for ((run = 1; run <= repeat; run++)); do
  for f in "${benches[@]}"; do
    name="$(basename "$f" .py)"
    log="var/bench/$name.log"
    [[ $repeat -gt 1 ]] && log="var/bench/$name.$run.log"
    logs+=("$log")
    echo "bench: $f${BENCH_REPEAT:+ (run $run of $repeat)} (full output: $log)"
    start=$SECONDS
    .venv/bin/python -u "$f" 2>&1 | tee "$log" | { grep --line-buffered -E '^(BENCH|INFO) ' || true; }
    rc=${PIPESTATUS[0]}
    if [[ $rc -eq 0 ]]; then
      grep -qE '^BENCH' "$log" || echo "  (printed no BENCH line)"
      echo "  ran in $((SECONDS - start)) s"
    else
      echo "  FAILED (exit $rc) after $((SECONDS - start)) s; last lines:"
      tail -n 20 "$log" | sed 's/^/    /'
      failed+=("$f (run $run)")
    fi
  done
done

.venv/bin/python -m bench.lib.targets --spread "${logs[@]}"
checked=$?
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "bench: failed: ${failed[*]}" >&2
  exit 1
fi
if [[ $checked -ne 0 ]]; then
  echo "bench: targets missed (see the list above)" >&2
  exit 1
fi
echo "bench: every target met"
