#!/usr/bin/env bash
# `make run`: prepare the database, seed the demo widget, print its token and start web, worker and
# beat under honcho. Ctrl-C (SIGINT) or SIGTERM stops all three: honcho signals each process group.
# Called by make with .venv/bin first on PATH; the embedded default needs no DATABASE_URL/REDIS_URL.
set -euo pipefail
cd "$(dirname "$0")/.."

PORT="${PORT:-8000}"
export PORT

python manage.py migrate --noinput
python manage.py reset_metrics >/dev/null  # prometheus-client's multiprocess files, before the processes start
# Development serves static files (Swagger UI, admin) through WhiteNoise's finders; a production
# deployment (APP_MODE=production) serves the collected, compressed copies from STATIC_ROOT.
if [[ "${APP_MODE:-development}" == "production" ]]; then
  python manage.py collectstatic --noinput
fi

seed="$(python manage.py seed_demo)"
# Development only: a Django admin superuser with a fresh password on every start (dev_admin refuses
# production, where `manage.py createsuperuser` is the way).
admin="{}"
operator_password=""
if [[ "${APP_MODE:-development}" != "production" ]]; then
  admin="$(python manage.py dev_admin)"
  # A console operator of the demo widget with a fresh password on every start: the widget shows
  # Online (and takes chats) only while an operator's console is open.
  operator_password="demo-$(python -c 'import secrets; print(secrets.token_urlsafe(12))')"
  guid="$(python -c 'import json, sys; print(json.loads(sys.argv[1])["button_guid"])' "$seed")"
  python manage.py create_agent --widget "$guid" --email operator@example.com --name "Demo operator" \
    --password "$operator_password" >/dev/null
fi
python - "$seed" "$PORT" "$admin" "$operator_password" <<'PY'
import json
import sys

seed, port, admin, operator_password = json.loads(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
base = f"http://127.0.0.1:{port}"
line = "=" * 78
print(line)
print(f"  Demo widget {seed['widget_id']} (button_guid {seed['button_guid']}), API token with every scope:")
print()
print(f"    {seed['token']}")
print()
print(f"  Demo page: {base}/demo/   (the widget on a page; chat with it)")
print(f"  Console:   {base}/console/   (operators answer here)")
if operator_password:
    print(f"    sign in as operator@example.com, password {operator_password} (new on every start);")
print("    the widget is Online while an operator's console is open, else it offers the offline form")
print(f"  API docs:  {base}/api/docs/")
print(f"  Health:    {base}/healthz")
print(f"  Metrics:   {base}/metrics   (Prometheus; loopback callers only unless METRICS_TOKEN is set)")
if admin:
    print(f"  Django admin (development only): {base}{admin['url']}")
    print(f"    user {admin['username']}, password {admin['password']} (new on every start)")
else:
    print("  Django admin: create a superuser with `python manage.py createsuperuser`")
print(f"  Send it as: Authorization: Bearer {seed['token']}")
print("  Stop with Ctrl-C.")
print(line, flush=True)
PY

# honcho kills what has not exited 5 s after its SIGTERM; a prefork worker's warm shutdown (Celery's
# and billiard's stop steps each poll once a second) takes 4-5 s on two cores: give it 10 s.
exec python -c 'import sys, honcho.manager; honcho.manager.KILL_WAIT = 10; from honcho.command import main; sys.argv[0] = "honcho"; main()' \
  start -f Procfile -p "$PORT"
