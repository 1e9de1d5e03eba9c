#!/usr/bin/env bash
# `make run`: prepare the database, seed the demo widget, print its token and start the Procfile's
# processes (web, worker, ai worker, bulk worker, beat) under supervisord. In production mode (APP_MODE=production)
# nothing is seeded: the operating guide's bootstrap commands create the first widget and token.
# Called by make with .venv/bin first on PATH; the embedded default needs no DATABASE_URL/REDIS_URL.
set -euo pipefail
cd "$(dirname "$0")/.."

PORT="${PORT:-8000}"
export PORT

run_dir="${VAR_DIR:-var}/run"
mkdir -p "$run_dir"
python manage.py migrate --noinput
python manage.py reset_metrics >/dev/null  # prometheus-client's multiprocess files, before the processes start
# Development serves static files (Swagger UI, admin) through WhiteNoise's finders; a production
# deployment (APP_MODE=production) serves the collected, compressed copies from STATIC_ROOT.
if [[ "${APP_MODE:-development}" == "production" ]]; then
  python manage.py collectstatic --noinput
fi

if [[ "${APP_MODE:-development}" == "production" ]]; then
  echo "APP_MODE=production: no demo data is seeded; open the /setup/ address the web process logs to" \
    "create the first owner and widget in the browser (or use manage.py create_widget, create_agent and" \
    "issue_token, the operating guide). Serving on port $PORT."
else
  seed="$(python manage.py seed_demo)"
  # A Django admin superuser with a fresh password on every start (dev_admin refuses production,
  # where `manage.py createsuperuser` is the way).
  admin="$(python manage.py dev_admin)"
  # A console operator of the demo widget with a fresh password on every start: the widget shows
  # Online (and takes chats) only while an operator's console is open.
  operator_password="demo-$(python -c 'import secrets; print(secrets.token_urlsafe(12))')"
  guid="$(python -c 'import json, sys; print(json.loads(sys.argv[1])["button_guid"])' "$seed")"
  python manage.py create_agent --widget "$guid" --email operator@example.com --name "Demo operator" \
    --password "$operator_password" >/dev/null
  # Printed once the web process answers, so every URL in it works when it shows (run_banner.py
  # --after-web waits for /healthz), and once every Celery worker of the Procfile is ready, so their
  # start-up lines come before it: each leaves a file in RUN_READY_DIR (config/celery.py). Started
  # from a subshell, so it is not a child of supervisord (which would log it as an unknown process
  # when it exits).
  export RUN_READY_DIR="$run_dir/ready" RUN_READY_WORKERS="$(grep -c 'celery -A config worker' Procfile)"
  rm -rf "$RUN_READY_DIR" && mkdir -p "$RUN_READY_DIR"
  (python scripts/run_banner.py --after-web "$seed" "$PORT" "$admin" "$operator_password" &)
fi

# supervisord runs the Procfile's processes and restarts one that exits (a crash, kill -9) while
# the others keep serving. Ctrl-C (SIGINT) or SIGTERM stops them all: each process group gets
# SIGTERM and a few seconds to finish (a prefork worker's warm shutdown) before SIGKILL.
python scripts/supervisor_conf.py Procfile "$run_dir" >"$run_dir/supervisord.conf"
exec supervisord --nodaemon --configuration "$run_dir/supervisord.conf"
