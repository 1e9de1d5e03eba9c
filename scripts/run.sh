#!/usr/bin/env bash
# `make run`: prepare the database, seed the demo widget, print its token and start web, worker and
# beat under honcho. Ctrl-C (SIGINT) or SIGTERM stops all three: honcho signals each process group.
# Called by make with .venv/bin first on PATH; the embedded default needs no DATABASE_URL/REDIS_URL.
set -euo pipefail
cd "$(dirname "$0")/.."

PORT="${PORT:-8000}"
export PORT

python manage.py migrate --noinput
# Development serves static files (Swagger UI, admin) through WhiteNoise's finders; a production
# deployment (APP_MODE=production) serves the collected, compressed copies from STATIC_ROOT.
if [[ "${APP_MODE:-development}" == "production" ]]; then
  python manage.py collectstatic --noinput
fi

seed="$(python manage.py seed_demo)"
python - "$seed" "$PORT" <<'PY'
import json
import sys

seed, port = json.loads(sys.argv[1]), sys.argv[2]
base = f"http://127.0.0.1:{port}"
line = "=" * 78
print(line)
print(f"  Demo widget {seed['widget_id']} (button_guid {seed['button_guid']}), API token with every scope:")
print()
print(f"    {seed['token']}")
print()
print(f"  Demo page: {base}/demo/   (the widget on a page; chat with it)")
print(f"  Console:   {base}/console/   (operators answer here)")
print(f"  API docs:  {base}/api/docs/")
print(f"  Health:    {base}/healthz")
print(f"  Send it as: Authorization: Bearer {seed['token']}")
print("  Stop with Ctrl-C.")
print(line, flush=True)
PY

exec honcho start -f Procfile -p "$PORT"
