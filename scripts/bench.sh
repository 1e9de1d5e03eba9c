#!/usr/bin/env bash
# `make bench`: run every bench/*.py with the venv's python (files starting with `_`, such as
# bench/_seed.py and bench/__init__.py, are helpers and data generators, not benchmarks). Each
# benchmark's full output goes to var/bench/<name>.log; its BENCH lines are printed here as they
# come. A failing benchmark fails the target after the others have run.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

shopt -s nullglob
benches=()
for f in bench/*.py; do
  [[ "$(basename "$f")" == _* ]] && continue
  benches+=("$f")
done
if [[ ${#benches[@]} -eq 0 ]]; then
  echo "bench: no benchmarks yet (bench/*.py); nothing to run"
  exit 0
fi

mkdir -p var/bench
failed=()
for f in "${benches[@]}"; do
  name="$(basename "$f" .py)"
  log="var/bench/$name.log"
  echo "bench: $f (full output: $log)"
  start=$SECONDS
  .venv/bin/python -u "$f" 2>&1 | tee "$log" | { grep --line-buffered -E '^BENCH' || true; }
  rc=${PIPESTATUS[0]}
  if [[ $rc -eq 0 ]]; then
    grep -qE '^BENCH' "$log" || echo "  (printed no BENCH line)"
    echo "  ok in $((SECONDS - start)) s"
  else
    echo "  FAILED (exit $rc) after $((SECONDS - start)) s; last lines:"
    tail -n 20 "$log" | sed 's/^/    /'
    failed+=("$f")
  fi
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "bench: failed: ${failed[*]}" >&2
  exit 1
fi
