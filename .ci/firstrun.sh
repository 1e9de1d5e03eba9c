#!/usr/bin/env bash
# A newcomer's first run, reproduced: a clean clone of this repository in a folder with nothing
# beside it (no ../shared), `make run` on the embedded default with a virtualenv made from
# requirements/base.txt alone, then `make test` in that clone (the suite's embedded-default run,
# without the browser tests).
#
#   .ci/firstrun.sh WORK_DIR
#
# make run must: print the banner; keep web, worker, ai worker, bulk worker and beat running for
# 60 s (none exits); answer /healthz, the printed token on /api/v1/chats, the demo page and the console; and
# stop every process within 15 s of Ctrl-C (SIGINT to its process group).
set -euo pipefail

src="$(cd "$(dirname "$0")/.." && pwd)"
work="$(cd "$1" && pwd)"
clone="$work/chatwidget"
log="$work/make-run.log"
run_pgid=""

fail() {
  echo "firstrun: $*" >&2
  [[ -f "$log" ]] && { echo "--- make run's output (last 80 lines) ---" >&2; tail -n 80 "$log" >&2; }
  exit 1
}

stop_run() {
  [[ -n "$run_pgid" ]] && kill -KILL -- "-$run_pgid" 2>/dev/null || true
}
trap stop_run EXIT

git clone -q "$src" "$clone"
cd "$clone"
[[ ! -e ../shared ]] || fail "the clone's parent folder must hold nothing but the clone"
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
base="http://127.0.0.1:$port"

# Ctrl-C in a terminal signals the foreground process group: run make in a group of its own.
env -u DATABASE_URL -u REDIS_URL -u VAR_DIR PORT="$port" setsid make run >"$log" 2>&1 </dev/null &
run_pgid=$!

# The virtualenv is made first (a few minutes on a fresh machine).
deadline=$((SECONDS + 900))
until curl -fsS -o /dev/null "$base/healthz" 2>/dev/null; do
  kill -0 "$run_pgid" 2>/dev/null || fail "make run exited before /healthz answered"
  ((SECONDS < deadline)) || fail "/healthz did not answer within 900 s"
  sleep 1
done
echo "firstrun: /healthz answers; watching the processes for 60 s"
if .venv/bin/pip show pytest >/dev/null 2>&1; then
  fail "make run installed more than requirements/base.txt (pytest is in its virtualenv)"
fi

sleep 60
for program in web worker ai bulk beat; do
  grep -q "success: $program entered RUNNING state" "$log" || fail "$program never reached RUNNING"
done
if grep -E "exited: (web|worker|ai|bulk|beat) " "$log"; then
  fail "a process exited during the first minute"
fi

token="$(grep -oE 'cwt_[A-Za-z0-9]+' "$log" | head -n 1)"
[[ -n "$token" ]] || fail "make run printed no token"
curl -fsS -o /dev/null -H "Authorization: Bearer $token" "$base/api/v1/chats" || fail "the printed token is refused"
curl -fsS -o /dev/null "$base/demo/" || fail "the demo page does not answer"
curl -fsSL -o /dev/null "$base/console/" || fail "the console does not answer"
echo "firstrun: the token, the demo page and the console answer"

kill -INT -- "-$run_pgid"
stopped_at=$((SECONDS + 15))
while pgrep -g "$run_pgid" >/dev/null 2>&1 || pgrep -f "$clone/.venv/bin/(celery|uvicorn)" >/dev/null 2>&1; do
  ((SECONDS <= stopped_at)) || fail "processes still running 15 s after Ctrl-C: $(pgrep -af "$clone/.venv" || true)"
  sleep 0.5
done
run_pgid=""
echo "firstrun: Ctrl-C stopped every process"

# The browser tests drive the served pages the same way on either database; the PostgreSQL suite
# runs them, and this run leaves them out.
make test PYTEST_ARGS="${PYTEST_ARGS:--rfE} -m 'not browser'"
