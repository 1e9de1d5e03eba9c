#!/usr/bin/env sh
# The Procfile's web process: uvicorn serving config.asgi with WEB_CONCURRENCY worker processes
# (uvicorn's own supervisor: it starts the workers, restarts one that dies and stops them all on
# SIGTERM), each worker with a listening socket of its own (apps/platform/webserver.py), so the kernel
# spreads connections over the workers. Arguments are uvicorn's options and are passed on.
#
# WEB_CONCURRENCY: the number of web processes; default the number of cores with REDIS_URL.
# Without REDIS_URL (the embedded default of `make run`) the channel layer and operator presence
# live inside one process, so a visitor's socket on one process would never hear the operator on
# another: the default is then 1 process, and an explicit WEB_CONCURRENCY above 1 is refused.
# One process runs without the supervisor (uvicorn serves in this very process, pid unchanged).
#
# DB_POOL_MAX_SIZE: PostgreSQL connections each process's pool keeps (default 10).
set -eu

cores="$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)"
if [ -n "${WEB_CONCURRENCY:-}" ]; then
  case "$WEB_CONCURRENCY" in
    '' | *[!0-9]*)
      echo "web: WEB_CONCURRENCY must be a whole number of processes (1 or more), not '$WEB_CONCURRENCY'" >&2
      exit 2
      ;;
  esac
  workers=$((WEB_CONCURRENCY + 0))
  if [ "$workers" -lt 1 ]; then
    echo "web: WEB_CONCURRENCY must be at least 1, not '$WEB_CONCURRENCY'" >&2
    exit 2
  fi
  if [ "$workers" -gt 1 ] && [ -z "${REDIS_URL:-}" ]; then
    echo "web: refused: WEB_CONCURRENCY=$workers needs REDIS_URL. Without it the channel layer and operator" \
      "presence are in-process (the embedded default), so websockets on different processes could not" \
      "reach each other. Set REDIS_URL (channels-redis, shared presence) or WEB_CONCURRENCY=1." >&2
    exit 2
  fi
elif [ -n "${REDIS_URL:-}" ]; then
  workers="$cores"
else
  workers=1
fi

# Each web process keeps a pool of PostgreSQL connections (config/settings.py; ignored on SQLite):
# at most DB_POOL_MAX_SIZE per process, so processes x size must stay under the server's
# max_connections together with the workers' connections.
export DB_POOL_MAX_SIZE="${DB_POOL_MAX_SIZE:-10}"

# Websocket frames are sent uncompressed: permessage-deflate, which browsers offer on every socket,
# keeps a zlib compressor and decompressor per socket (about 50 kB of the process's memory each),
# while the frames are small JSON that compression barely shrinks. An argument given after it wins.
set -- --ws-per-message-deflate false "$@"
# An idle kept-alive connection stays open 75 s (uvicorn's default is 5 s). A proxy in front keeps
# its idle connections to the service for its own time (nginx: 60 s, deploy/nginx/chatwidget.conf)
# and may send a request on one at the moment the service closes it, which the proxy can only answer
# with a 502 for a POST. Outlasting the proxy leaves every close of an idle connection to the proxy.
set -- --timeout-keep-alive 75 "$@"
# The lifespan protocol is on: the application sets what only the serving process needs at its start
# (config.asgi.ServerStart), and a failure there stops the start.
set -- --lifespan on "$@"

if [ "$workers" -gt 1 ]; then
  # `python` as the container's entrypoint runs it: the environment's, with uvicorn beside it on PATH
  exec python -m apps.platform.webserver config.asgi:application --workers "$workers" "$@"
fi
exec uvicorn config.asgi:application "$@"
