#!/usr/bin/env bash
# The production proxy configuration, deploy/nginx/chatwidget.conf, run in front of the service and
# proved through it. The service runs as in production (APP_MODE=production, the Procfile's `web`
# line, collectstatic, the bootstrap commands) on the embedded default in a fresh VAR_DIR; nginx runs
# the committed file with only the ports, the host name (localhost), the certificate (a throwaway
# self-signed one) and the static root substituted, in the foreground under a temporary prefix as
# the calling user. Then, all through nginx (.ci/nginx_check.py):
#   - plain http is redirected to https; the API answers 200 with the bearer token;
#   - a visitor session, its websocket (upgrade through the proxy) answers a ping and receives the
#     operator's reply sent through the API;
#   - a 10 MB file uploads; a file just over 10 MB gets the service's 413 problem+json; a body over
#     nginx's own cap gets nginx's 413;
#   - a download link the service builds is https:// (X-Forwarded-Proto trusted in production);
#   - a static file comes from nginx's alias.
# Usable locally too: `.ci/nginx.sh` (needs nginx and openssl on PATH).
set -euo pipefail
cd "$(dirname "$0")/.."

WORK="$(mktemp -d /tmp/ci-nginx.XXXXXX)"
SERVER_PID=""
NGINX_PID=""
stop_pid() {
  local pid="$1"
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid"
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
}
stop() {
  local rc=$?
  set +e
  stop_pid "$NGINX_PID"
  stop_pid "$SERVER_PID"
  if [[ $rc -ne 0 ]]; then
    [[ -s "$WORK/server.log" ]] && { echo "--- last lines of the service log ---"; tail -n 30 "$WORK/server.log"; }
    [[ -s "$WORK/nginx/logs/error.log" ]] && { echo "--- nginx error log ---"; tail -n 30 "$WORK/nginx/logs/error.log"; }
  fi
  rm -rf "$WORK"
  exit "$rc"
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

PY="$PWD/.venv/bin/python"
free_port() {
  $PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
APP_PORT="$(free_port)"
HTTP_PORT="$(free_port)"
HTTPS_PORT="$(free_port)"

# --- the service, as in production --------------------------------------------------------------
unset DATABASE_URL REDIS_URL DJANGO_SETTINGS_MODULE WEB_CONCURRENCY
export APP_MODE=production
export VAR_DIR="$WORK/var"
export SECRET_KEY="$($PY -c 'import secrets; print(secrets.token_urlsafe(48))')"
export ALLOWED_HOSTS=localhost
export CSRF_TRUSTED_ORIGINS="https://localhost:$HTTPS_PORT"
export TRUSTED_PROXY_HOPS=1
# The Procfile's worker is not started: the reply below goes to the socket without Celery.
export CELERY_TASK_ALWAYS_EAGER=1

$PY manage.py migrate --noinput >"$WORK/setup.log" 2>&1 || { cat "$WORK/setup.log"; exit 1; }
$PY manage.py collectstatic --noinput >>"$WORK/setup.log" 2>&1 || { cat "$WORK/setup.log"; exit 1; }
CREATED="$($PY manage.py create_widget --owner-email nginx@example.com --name "CI nginx" --enable-api)"
WIDGET_ID="$(printf '%s' "$CREATED" | $PY -c 'import json, sys; print(json.load(sys.stdin)["widget_id"])')"
BUTTON_GUID="$(printf '%s' "$CREATED" | $PY -c 'import json, sys; print(json.load(sys.stdin)["button_guid"])')"
TOKEN="$($PY manage.py issue_token --widget "$WIDGET_ID" \
  --scopes chats:read,messages:write,agents:read,files:read,files:write --name nginx)"
[[ -n "$TOKEN" ]] || { echo "issue_token printed no token" >&2; exit 1; }

# The Procfile's web line as written, with this run's port.
WEB_COMMAND="$(sed -n 's/^web: //p' Procfile)"
[[ -n "$WEB_COMMAND" ]] || { echo "the Procfile has no web line" >&2; exit 1; }
PORT="$APP_PORT" PATH="$PWD/.venv/bin:$PATH" sh -c "exec $WEB_COMMAND" >"$WORK/server.log" 2>&1 &
SERVER_PID=$!

# --- nginx with the committed configuration ----------------------------------------------------------
PREFIX="$WORK/nginx"
mkdir -p "$PREFIX/logs" "$PREFIX/tls"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=localhost" \
  -addext "subjectAltName=DNS:localhost" \
  -keyout "$PREFIX/tls/key.pem" -out "$PREFIX/tls/cert.pem" >/dev/null 2>&1
CONF=deploy/nginx/chatwidget.conf
for pattern in 'server 127.0.0.1:8000;' 'listen 80;' 'listen 443 ssl http2;' 'server_name chat.example.com;' \
  '/etc/letsencrypt/live/chat.example.com/fullchain.pem' '/etc/letsencrypt/live/chat.example.com/privkey.pem' \
  'alias /srv/chatwidget/var/static/;'; do
  grep -qF -- "$pattern" "$CONF" || { echo "$CONF no longer holds '$pattern' (update .ci/nginx.sh)" >&2; exit 1; }
done
sed -e "s#server 127.0.0.1:8000;#server 127.0.0.1:$APP_PORT;#" \
  -e "s#listen 80;#listen 127.0.0.1:$HTTP_PORT;#" \
  -e "s#listen 443 ssl http2;#listen 127.0.0.1:$HTTPS_PORT ssl http2;#" \
  -e '/listen \[::\]/d' \
  -e "s#server_name chat.example.com;#server_name localhost;#" \
  -e "s#/etc/letsencrypt/live/chat.example.com/fullchain.pem#$PREFIX/tls/cert.pem#" \
  -e "s#/etc/letsencrypt/live/chat.example.com/privkey.pem#$PREFIX/tls/key.pem#" \
  -e "s#alias /srv/chatwidget/var/static/;#alias $VAR_DIR/static/;#" \
  "$CONF" >"$PREFIX/chatwidget.conf"
MIME_TYPES=/etc/nginx/mime.types
[[ -f "$MIME_TYPES" ]] || MIME_TYPES="$(dirname "$(command -v nginx)")/../conf/mime.types"
# The main file a distribution's nginx.conf would be, minimal: workers run as the calling user (root
# or not), every path under the prefix.
cat >"$PREFIX/nginx.conf" <<CONFEOF
user $(id -un) $(id -gn);
worker_processes 1;
pid $PREFIX/nginx.pid;
error_log $PREFIX/logs/error.log warn;
events { worker_connections 256; }
http {
    include $MIME_TYPES;
    default_type application/octet-stream;
    access_log $PREFIX/logs/access.log;
    client_body_temp_path $PREFIX/client_body;
    proxy_temp_path $PREFIX/proxy;
    fastcgi_temp_path $PREFIX/fastcgi;
    uwsgi_temp_path $PREFIX/uwsgi;
    scgi_temp_path $PREFIX/scgi;
    include $PREFIX/chatwidget.conf;
}
CONFEOF
nginx -t -p "$PREFIX" -c "$PREFIX/nginx.conf" 2>&1 | grep -v 'the "user" directive makes sense only' || true
nginx -p "$PREFIX" -c "$PREFIX/nginx.conf" -g 'daemon off;' 2>>"$PREFIX/logs/error.log" &
NGINX_PID=$!

for i in $(seq 150); do
  code="$(curl -s -o /dev/null -w '%{http_code}' --cacert "$PREFIX/tls/cert.pem" \
    "https://localhost:$HTTPS_PORT/healthz" || true)"
  [[ "$code" == 200 ]] && break
  for pid in "$SERVER_PID" "$NGINX_PID"; do
    kill -0 "$pid" 2>/dev/null || { echo "a process exited early (pid $pid)" >&2; exit 1; }
  done
  [[ $i -eq 150 ]] && { echo "no 200 from /healthz through nginx within 30 s (last: $code)" >&2; exit 1; }
  sleep 0.2
done
echo "service on 127.0.0.1:$APP_PORT, nginx on http :$HTTP_PORT and https :$HTTPS_PORT"

$PY .ci/nginx_check.py --http "http://localhost:$HTTP_PORT" --https "https://localhost:$HTTPS_PORT" \
  --cacert "$PREFIX/tls/cert.pem" --token "$TOKEN" --button-guid "$BUTTON_GUID" --static-root "$VAR_DIR/static"
echo "nginx: the production proxy configuration works"
