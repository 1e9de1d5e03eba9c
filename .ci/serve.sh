# Sourced by .ci/client.sh and .ci/schemathesis.sh: a fresh VAR_DIR on the embedded default, the
# service started with uvicorn on a free loopback port, and its stop (with the server log's tail when
# the calling script fails). Usage:
#   source .ci/serve.sh; serve_init NAME LOG_LINES
#   ... migrate, create_widget, issue_token with $PY ...
#   serve_start            # sets BASE and SERVER_PID, waits for /healthz
# shellcheck shell=bash

serve_init() {
  WORK="$(mktemp -d "/tmp/ci-$1.XXXXXX")"
  SERVE_LOG_LINES="${2:-40}"
  SERVER_PID=""
  trap serve_stop EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  export VAR_DIR="$WORK/var"
  unset DATABASE_URL REDIS_URL
  PY="$PWD/.venv/bin/python"
}

serve_stop() {
  local rc=$?
  set +e
  if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID"
    for _ in $(seq 100); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$SERVER_PID" 2>/dev/null
    wait "$SERVER_PID" 2>/dev/null
  fi
  if [[ $rc -ne 0 && -s "$WORK/server.log" ]]; then
    echo "--- last lines of the server log ---"
    tail -n "$SERVE_LOG_LINES" "$WORK/server.log"
  fi
  rm -rf "$WORK"
  exit "$rc"
}

serve_migrate() {
  $PY manage.py migrate --noinput >"$WORK/migrate.log" 2>&1 || { cat "$WORK/migrate.log"; exit 1; }
}

serve_start() {
  local port code i
  port="$($PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  BASE="http://127.0.0.1:$port"
  .venv/bin/uvicorn config.asgi:application --host 127.0.0.1 --port "$port" --no-access-log \
    --lifespan off >"$WORK/server.log" 2>&1 &
  SERVER_PID=$!
  for i in $(seq 150); do
    code="$(curl -s -o /dev/null -w '%{http_code}' "$BASE/healthz" || true)"
    [[ "$code" == 200 ]] && break
    if ! kill -0 "$SERVER_PID" 2>/dev/null || [[ $i -eq 150 ]]; then
      echo "the server did not answer /healthz with 200 (last: $code)" >&2
      exit 1
    fi
    sleep 0.2
  done
}
