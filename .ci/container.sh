#!/usr/bin/env bash
# The self-hosting packages built and run with Debian's podman (runc) and podman-compose (pinned).
# These machines reach no container registry, so the images the packages take from variables are
# built here from Debian's packages (mmdebstrap of bookworm, imported with `podman import`):
#
#   .ci/container.sh images WORK   the base image (python3.11, the host's CA bundle so pip reaches
#                                  PyPI as the host does), PostgreSQL 15, Redis and nginx images,
#                                  then the service's image from the Dockerfile with that base
#   .ci/container.sh check WORK    deploy/compose.yaml with those images: the image runs as a user;
#                                  `up` becomes healthy; create_widget and issue_token inside the
#                                  container and an API call with the token; a visitor's message
#                                  through nginx and its push on the visitor's websocket; a webhook
#                                  delivered to a receiver and counted on the worker container's own
#                                  metrics port; `down` then `up` keeps the data; then the
#                                  Kubernetes manifests with `podman kube play` (what podman supports
#                                  of them: the ConfigMap and the web and worker Deployments): the web
#                                  pod answers /healthz, the worker pod its metrics port
#
# WORK is a folder of the caller's (CI's temporary folder). Everything this script starts is removed
# on exit, images included after `check`.
set -euo pipefail
cd "$(dirname "$0")/.."

MODE="${1:?images or check}"
WORK="${2:?a work folder}"
mkdir -p "$WORK"
PODMAN=(podman)
# runc (crun cannot set resource limits on these machines), and limits below the machine's own:
# raising a hard limit is refused here, and podman's defaults would raise them.
export CONTAINERS_CONF="$WORK/containers.conf"
cat >"$CONTAINERS_CONF" <<'EOF'
[containers]
default_ulimits = ["nofile=16384:16384", "nproc=16384:16384"]

[engine]
runtime = "runc"
EOF
PC_VENV="$WORK/podman-compose"
PROJECT=chatwidget
APP_IMAGE=localhost/chatwidget:ci

log() { printf -- '--- %s\n' "$*"; }

# --- images ---------------------------------------------------------------------------------------------
build_images() {
  # Two root file systems, fetched side by side: Python for the service's image, the stateful
  # services for theirs.
  mmdebstrap --quiet --variant=apt --include=python3,python3-venv,ca-certificates \
    bookworm "$WORK/python.tar" >"$WORK/mm-python.log" 2>&1 &
  local python_pid=$!
  mmdebstrap --quiet --variant=apt --include=postgresql-15,redis-server,nginx,ca-certificates \
    bookworm "$WORK/services.tar" >"$WORK/mm-services.log" 2>&1 &
  local services_pid=$!
  wait "$python_pid" || { cat "$WORK/mm-python.log"; exit 1; }
  wait "$services_pid" || { cat "$WORK/mm-services.log"; exit 1; }
  "${PODMAN[@]}" import -q "$WORK/python.tar" localhost/ci-debian-python:bookworm >/dev/null
  "${PODMAN[@]}" import -q "$WORK/services.tar" localhost/ci-debian-services:bookworm >/dev/null
  rm -f "$WORK/python.tar" "$WORK/services.tar"

  local ctx="$WORK/images"
  mkdir -p "$ctx"
  cp /etc/ssl/certs/ca-certificates.crt "$ctx/host-ca.crt"
  cat >"$ctx/Containerfile.base" <<'EOF'
FROM localhost/ci-debian-python:bookworm
COPY host-ca.crt /etc/ssl/certs/ca-certificates.crt
ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt
EOF
  # PostgreSQL with the official image's interface: POSTGRES_USER, POSTGRES_PASSWORD and POSTGRES_DB
  # make the cluster on the first start, into the volume at /var/lib/postgresql/data.
  cat >"$ctx/postgres-entrypoint.sh" <<'EOF'
#!/bin/sh
set -eu
BIN=/usr/lib/postgresql/15/bin
PGDATA=/var/lib/postgresql/data
mkdir -p "$PGDATA" /run/postgresql
chown -R postgres:postgres "$PGDATA" /run/postgresql
chmod 700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  printf '%s\n' "$POSTGRES_PASSWORD" >/tmp/pwfile
  chown postgres /tmp/pwfile
  runuser -u postgres -- "$BIN/initdb" -D "$PGDATA" -U "$POSTGRES_USER" --pwfile=/tmp/pwfile \
    --auth-local=trust --auth-host=scram-sha-256 -E UTF8 >/dev/null
  rm -f /tmp/pwfile
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  runuser -u postgres -- "$BIN/pg_ctl" -D "$PGDATA" -w -o "-c listen_addresses=''" start >/dev/null
  runuser -u postgres -- /usr/bin/createdb -U "$POSTGRES_USER" -O "$POSTGRES_USER" "$POSTGRES_DB"
  runuser -u postgres -- "$BIN/pg_ctl" -D "$PGDATA" -w stop >/dev/null
fi
exec runuser -u postgres -- "$BIN/postgres" -D "$PGDATA" -c listen_addresses='*'
EOF
  cat >"$ctx/Containerfile.postgres" <<'EOF'
FROM localhost/ci-debian-services:bookworm
COPY postgres-entrypoint.sh /usr/local/bin/postgres-entrypoint.sh
RUN chmod 0755 /usr/local/bin/postgres-entrypoint.sh
ENTRYPOINT ["/usr/local/bin/postgres-entrypoint.sh"]
EOF
  # Redis as the official image runs it: reachable from the other containers (Debian's default
  # protected mode answers only loopback when no password is set).
  cat >"$ctx/redis-entrypoint.sh" <<'EOF'
#!/bin/sh
if [ "${1:-}" = redis-server ]; then
  shift
  exec redis-server "$@" --protected-mode no
fi
exec "$@"
EOF
  cat >"$ctx/Containerfile.redis" <<'EOF'
FROM localhost/ci-debian-services:bookworm
COPY redis-entrypoint.sh /usr/local/bin/redis-entrypoint.sh
RUN chmod 0755 /usr/local/bin/redis-entrypoint.sh && mkdir -p /data
ENTRYPOINT ["/usr/local/bin/redis-entrypoint.sh"]
CMD ["redis-server"]
EOF
  cat >"$ctx/Containerfile.nginx" <<'EOF'
FROM localhost/ci-debian-services:bookworm
RUN rm -f /etc/nginx/sites-enabled/default
CMD ["nginx", "-g", "daemon off;"]
EOF
  local name
  for name in base postgres redis nginx; do
    "${PODMAN[@]}" build -q --network host -f "$ctx/Containerfile.$name" -t "localhost/ci-$name:bookworm" "$ctx" >/dev/null
  done
  log "the service's image from the Dockerfile (BASE_IMAGE=localhost/ci-base:bookworm)"
  local start=$SECONDS
  "${PODMAN[@]}" build --format docker --network host --build-arg BASE_IMAGE=localhost/ci-base:bookworm -t "$APP_IMAGE" . \
    >"$WORK/build.log" 2>&1 || { tail -n 80 "$WORK/build.log"; exit 1; }
  log "built in $((SECONDS - start)) s: $("${PODMAN[@]}" image inspect "$APP_IMAGE" --format '{{.Size}}') bytes"
}

# --- check ----------------------------------------------------------------------------------------------
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

compose() {
  "$PC_VENV/bin/podman-compose" -p "$PROJECT" \
    -f deploy/compose.yaml -f "$WORK/compose.ci.yaml" "$@"
}

cleanup_check() {
  local rc=$?
  set +e
  if [[ $rc -ne 0 ]]; then
    echo "--- container logs (last 40 lines each) ---"
    local c
    for c in $("${PODMAN[@]}" ps -a --filter "label=io.podman.compose.project=$PROJECT" --format '{{.Names}}'); do
      echo "--- $c ($("${PODMAN[@]}" inspect "$c" --format '{{.State.Status}} {{.State.ExitCode}}'))"
      "${PODMAN[@]}" logs --tail 40 "$c" 2>&1 | grep -v '"level": "INFO"'
    done
    # CONTAINER_KEEP=1 (a person debugging this script) leaves the stack up
    [[ -z "${CONTAINER_KEEP:-}" ]] || exit "$rc"
  fi
  compose --env-file deploy/.env down -v >/dev/null 2>&1
  "${PODMAN[@]}" network rm -f "${PROJECT}_default" >/dev/null 2>&1
  "${PODMAN[@]}" kube down "$WORK/kube-play.yaml" >/dev/null 2>&1
  "${PODMAN[@]}" volume rm -f chatwidget-media >/dev/null 2>&1
  rm -f deploy/.env
  exit "$rc"
}

# Health checks are timers of systemd's in podman, and these machines run no systemd: each check is
# run here (`podman healthcheck run`) until every named service answers healthy.
wait_healthy() {
  local limit="$1" service
  shift
  local deadline=$((SECONDS + limit))
  for service in "$@"; do
    until "${PODMAN[@]}" healthcheck run "${PROJECT}_${service}_1" >/dev/null 2>&1; do
      if ((SECONDS >= deadline)); then
        echo "$service not healthy within $limit s" >&2
        "${PODMAN[@]}" ps -a --filter "label=io.podman.compose.project=$PROJECT" --format '{{.Names}} {{.Status}}' >&2
        return 1
      fi
      sleep 2
    done
    echo "healthy: $service"
  done
}

# `up`, in the order the compose file's conditions give. podman before 4.6 cannot wait for a
# health check, and starting a container that `requires` an exited one (migrate) is refused, so
# each stage is brought up with --no-deps after the one it depends on is healthy or has exited 0;
# Docker Compose and newer podman do the same from the single `up -d` the guide shows.
up_in_order() {
  compose --env-file deploy/.env up -d --no-deps postgres redis >>"$WORK/up.log" 2>&1
  wait_healthy 120 postgres redis
  compose --env-file deploy/.env up -d --no-deps migrate >>"$WORK/up.log" 2>&1
  local code
  code="$("${PODMAN[@]}" wait "${PROJECT}_migrate_1")"
  [[ "$code" == 0 ]] || { "${PODMAN[@]}" logs "${PROJECT}_migrate_1" | tail -n 40; echo "migrate exited $code" >&2; return 1; }
  echo "migrate exited 0"
  compose --env-file deploy/.env up -d --no-deps web worker ai bulk beat >>"$WORK/up.log" 2>&1
  wait_healthy 240 web worker ai bulk
  compose --env-file deploy/.env up -d --no-deps nginx >>"$WORK/up.log" 2>&1
  wait_healthy 60 nginx
  local state
  state="$("${PODMAN[@]}" inspect "${PROJECT}_beat_1" --format '{{.State.Status}}')"
  [[ "$state" == running ]] || { echo "beat is $state" >&2; return 1; }
}

check() {
  python3 -m venv "$PC_VENV"
  "$PC_VENV/bin/pip" install -q --disable-pip-version-check podman-compose==1.6.0
  trap cleanup_check EXIT

  HTTP_PORT="$(free_port)"
  HOOK_PORT="$(free_port)"
  local hook="$WORK/hook"
  mkdir -p "$hook"
  # The receiver's certificate (trustme) and a CA bundle the service trusts it with, readable by the
  # image's user; the receiver (as that user) writes what it receives into out/.
  .venv/bin/python -m trustme -q -d "$hook" -i 127.0.0.1
  cat "$(.venv/bin/python -m certifi)" "$hook/client.pem" >"$hook/ca-bundle.pem"
  cp .ci/container_receiver.py "$hook/receiver.py"
  chmod 644 "$hook"/*
  mkdir -p "$hook/out"
  chmod 777 "$hook/out"

  cat >deploy/.env <<EOF
APP_MODE=production
SECRET_KEY=$(python3 -c 'import secrets; print(secrets.token_urlsafe(48))')
WEBHOOK_SECRET_KEYS=$(.venv/bin/python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())')
POSTGRES_PASSWORD=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
ALLOWED_HOSTS=localhost,127.0.0.1
CSRF_TRUSTED_ORIGINS=http://localhost:$HTTP_PORT
PUBLIC_BASE_URL=http://localhost:$HTTP_PORT
SECURE_SSL_REDIRECT=0
EMAIL_URL=consolemail://
WEB_CONCURRENCY=1
OUTBOUND_ALLOW_LOOPBACK=1
METRICS_TOKEN=$(python3 -c 'import secrets; print(secrets.token_urlsafe(32))')
HTTP_PORT=$HTTP_PORT
HTTPS_PORT=$(free_port)
APP_IMAGE=$APP_IMAGE
POSTGRES_IMAGE=localhost/ci-postgres:bookworm
REDIS_IMAGE=localhost/ci-redis:bookworm
NGINX_IMAGE=localhost/ci-nginx:bookworm
EOF
  # CI's additions: loopback allowed (.env above), since the receiver listens inside the worker's own
  # network namespace, and the receiver's CA for the worker, which delivers.
  cat >"$WORK/compose.ci.yaml" <<EOF
services:
  worker:
    environment:
      DATABASE_URL: postgres://chatwidget:\${POSTGRES_PASSWORD}@postgres:5432/chatwidget
      REDIS_URL: redis://redis:6379/0
      TRUSTED_PROXY_HOPS: "1"
      REQUESTS_CA_BUNDLE: /ci-hook/ca-bundle.pem
    volumes:
      - media:/data/media
      - $hook:/ci-hook
EOF

  log "the image runs as a user"
  local user
  user="$("${PODMAN[@]}" run --rm --entrypoint id "$APP_IMAGE" -u)"
  [[ "$user" != 0 ]] || { echo "the image runs as root" >&2; exit 1; }
  echo "uid $user"

  log "compose up"
  local start=$SECONDS
  up_in_order || { cat "$WORK/up.log"; exit 1; }
  log "healthy in $((SECONDS - start)) s"

  log "create_widget and issue_token inside the container"
  local created guid token
  created="$(compose --env-file deploy/.env run --rm -T web manage create_widget --owner-email ci@example.com --name "CI compose" --enable-api 2>/dev/null | tail -n 1)"
  guid="$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["button_guid"])' "$created")"
  token="$(compose --env-file deploy/.env run --rm -T web manage issue_token --widget "$guid" --scopes all --name ci 2>/dev/null | tail -n 1)"

  log "the webhook receiver in the worker's network namespace"
  "${PODMAN[@]}" exec -d "${PROJECT}_worker_1" python /ci-hook/receiver.py --port "$HOOK_PORT" \
    --cert /ci-hook/server.pem --key /ci-hook/server.key --secret ci-signing-secret-0123 --out /ci-hook/out/hooks.jsonl

  .venv/bin/python .ci/container_check.py --base "http://localhost:$HTTP_PORT" --token="$token" \
    --button-guid "$guid" --hook-url "https://127.0.0.1:$HOOK_PORT/hook" --hook-secret ci-signing-secret-0123 \
    --hooks "$hook/out/hooks.jsonl" --phase first

  log "the worker containers' metrics ports on the compose network"
  .venv/bin/python .ci/container_check.py --base "http://localhost:$HTTP_PORT" --phase metrics \
    --web-container "${PROJECT}_web_1"

  log "down and up again: the data is kept"
  compose --env-file deploy/.env down >"$WORK/down.log" 2>&1 || { cat "$WORK/down.log"; exit 1; }
  up_in_order || { cat "$WORK/up.log"; exit 1; }
  .venv/bin/python .ci/container_check.py --base "http://localhost:$HTTP_PORT" --token="$token" \
    --button-guid "$guid" --hook-url "" --hook-secret "" --hooks "" --phase again

  log "the Kubernetes manifests with podman kube play"
  # What podman plays of them: the ConfigMap, the uploads' claim and the web Deployment's pod, on the
  # compose stack's network, with its PostgreSQL and Redis as the Secret's URLs.
  # The secrets are joined to their flags with "=": token_urlsafe's alphabet has "-", and argparse
  # takes a separate value that begins with it for an option of its own.
  .venv/bin/python .ci/container_kube.py --out "$WORK/kube-play.yaml" --image "$APP_IMAGE" \
    --database-url="postgres://chatwidget:$(sed -n 's/^POSTGRES_PASSWORD=//p' deploy/.env)@postgres:5432/chatwidget" \
    --redis-url "redis://redis:6379/1" --secret-key="$(sed -n 's/^SECRET_KEY=//p' deploy/.env)" \
    --metrics-token="$(sed -n 's/^METRICS_TOKEN=//p' deploy/.env)"
  "${PODMAN[@]}" kube play --network "${PROJECT}_default" "$WORK/kube-play.yaml" >"$WORK/kube.log" 2>&1 ||
    { cat "$WORK/kube.log"; exit 1; }
  local web_ctr
  web_ctr="$("${PODMAN[@]}" ps --filter pod=chatwidget-web-pod-0 --format '{{.Names}}' | grep -v infra | head -n 1)"
  [[ -n "$web_ctr" ]] || { cat "$WORK/kube.log"; "${PODMAN[@]}" pod ps >&2; exit 1; }
  local deadline=$((SECONDS + 240))
  # The image's own check inside the pod: GET /healthz with the ConfigMap's host name.
  until "${PODMAN[@]}" exec "$web_ctr" python deploy/container/healthcheck.py; do
    if ((SECONDS >= deadline)); then
      "${PODMAN[@]}" logs --tail 40 "$web_ctr" >&2
      echo "the web pod did not answer /healthz within 240 s" >&2
      exit 1
    fi
    sleep 3
  done
  echo "ok  the web pod of deploy/kubernetes/web.yaml answers /healthz"
  local worker_ctr
  worker_ctr="$("${PODMAN[@]}" ps --filter pod=chatwidget-worker-pod-0 --format '{{.Names}}' | grep -v infra | head -n 1)"
  [[ -n "$worker_ctr" ]] || { cat "$WORK/kube.log"; "${PODMAN[@]}" pod ps >&2; exit 1; }
  # The worker pod's declared metrics port, with the token of the Secret (its stand-in here).
  until "${PODMAN[@]}" exec "$worker_ctr" python -c '
import os, urllib.request
request = urllib.request.Request(
    "http://127.0.0.1:" + os.environ["METRICS_PORT"] + "/metrics",
    headers={"Authorization": "Bearer " + os.environ["METRICS_TOKEN"]},
)
assert b"chatwidget_delivery_attempts_total" in urllib.request.urlopen(request, timeout=10).read()
' 2>/dev/null; do
    if ((SECONDS >= deadline + 120)); then
      "${PODMAN[@]}" logs --tail 40 "$worker_ctr" >&2
      echo "the worker pod did not answer its metrics port" >&2
      exit 1
    fi
    sleep 3
  done
  echo "ok  the worker pod of deploy/kubernetes/workers.yaml answers its metrics port with the Secret's token"
}

case "$MODE" in
  images) build_images ;;
  check) check ;;
  *) echo "usage: .ci/container.sh images|check WORK" >&2; exit 2 ;;
esac
