#!/usr/bin/env bash
# The AsyncAPI document of the websockets, as the service serves it (GET /api/v1/asyncapi.yaml),
# validated by the AsyncAPI Initiative's parser (@asyncapi/parser, pinned with its whole tree in
# .ci/asyncapi/package-lock.json and installed with `npm ci`). Fails on any error or warning.
# Needs node and npm (Node 18 or newer). Usable locally too: `.ci/asyncapi.sh`.
set -euo pipefail
cd "$(dirname "$0")/.."

WORK="$(mktemp -d /tmp/ci-asyncapi.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT

command -v node >/dev/null 2>&1 || { echo "node is not installed (apt-get install nodejs npm)" >&2; exit 1; }
echo "node $(node --version)"
npm ci --prefix .ci/asyncapi --no-audit --no-fund --ignore-scripts --loglevel=error

export VAR_DIR="$WORK/var"
unset DATABASE_URL REDIS_URL
export DJANGO_SETTINGS_MODULE=config.settings
.venv/bin/python - "$WORK/asyncapi.yaml" <<'PY'
import sys

import django

django.setup()
from django.test import Client  # noqa: E402

response = Client().get("/api/v1/asyncapi.yaml", HTTP_HOST="127.0.0.1")
if response.status_code != 200 or not response["Content-Type"].startswith("application/yaml"):
    sys.exit(f"GET /api/v1/asyncapi.yaml answered {response.status_code} {response['Content-Type']}")
open(sys.argv[1], "wb").write(response.content)
print(f"GET /api/v1/asyncapi.yaml: {len(response.content)} bytes")
PY
node .ci/asyncapi/validate.mjs "$WORK/asyncapi.yaml"
