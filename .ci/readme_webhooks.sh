#!/usr/bin/env bash
# Runs the "Webhooks on your machine" example of docs/integrating/webhooks.md exactly as written:
# the two shell blocks after the `<!-- docs-example: local-webhooks-1 -->` and `-2` markers. Block 1
# (certificates, the receiver, `make run`) runs in the background in its own process group; once
# `make run` has printed the demo token and the service answers, block 2 (subscribe, a visitor
# writes) runs with TOKEN and BUTTON_GUID taken from that output, and the receiver must print a
# verified message.created within 60 s. Free ports are passed as PORT / HOOK_PORT (the blocks
# default to 8000 / 9443).
set -euo pipefail
cd "$(dirname "$0")/.."

WORK="$(mktemp -d /tmp/ci-readme.XXXXXX)"
GROUP=""
stop() {
  local rc=$?
  set +e
  if [[ -n "$GROUP" ]] && kill -0 -- "-$GROUP" 2>/dev/null; then
    kill -TERM -- "-$GROUP"
    for _ in $(seq 150); do kill -0 -- "-$GROUP" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$GROUP" 2>/dev/null
  fi
  if [[ $rc -ne 0 && -s "$WORK/block1.log" ]]; then
    echo "--- last lines of block 1 (receiver and make run) ---"
    grep -v '"level": "INFO"' "$WORK/block1.log" | tail -n 40
  fi
  rm -rf "$WORK"
  exit "$rc"
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

extract() {
  python3 - "$1" <<'PY'
import re
import sys

PAGE = "docs/integrating/webhooks.md"
text = open(PAGE, encoding="utf-8").read()
match = re.search(r"<!-- docs-example: " + re.escape(sys.argv[1]) + r" -->\n```sh\n(.*?)\n```", text, re.S)
if not match:
    sys.exit(f"{PAGE} has no block marked docs-example: {sys.argv[1]}")
print(match.group(1))
PY
}
extract local-webhooks-1 >"$WORK/block1.sh"
extract local-webhooks-2 >"$WORK/block2.sh"

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
export PORT HOOK_PORT
PORT="$(free_port)"
HOOK_PORT="$(free_port)"
# The service's data in a throwaway folder; the example's own files go where it says (var/hook).
export VAR_DIR="$WORK/var"
unset DATABASE_URL REDIS_URL DJANGO_SETTINGS_MODULE

setsid bash -e "$WORK/block1.sh" >"$WORK/block1.log" 2>&1 &
GROUP=$!
echo "block 1 running (process group $GROUP), service port $PORT, receiver port $HOOK_PORT"

TOKEN="" BUTTON_GUID=""
# make run migrates a fresh database first: on a busy machine that alone can take a minute.
for i in $(seq 900); do
  if [[ -z "$TOKEN" ]]; then
    TOKEN="$(grep -oE 'cwt_[0-9A-Za-z]{46}' "$WORK/block1.log" | head -n 1 || true)"
    BUTTON_GUID="$(grep -oE 'button_guid [0-9a-f]{32}' "$WORK/block1.log" | head -n 1 | cut -d' ' -f2 || true)"
  fi
  if [[ -n "$TOKEN" ]] && [[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/healthz" || true)" == 200 ]]; then
    break
  fi
  kill -0 "$GROUP" 2>/dev/null || { echo "block 1 exited early" >&2; exit 1; }
  [[ $i -eq 900 ]] && { echo "the service did not come up within 180 s" >&2; exit 1; }
  sleep 0.2
done
[[ -n "$BUTTON_GUID" ]] || { echo "make run printed no button_guid" >&2; exit 1; }
grep -q "receiving on https://127.0.0.1:$HOOK_PORT/" "$WORK/block1.log" || { echo "the receiver did not start" >&2; exit 1; }
echo "service up; running block 2"

TOKEN="$TOKEN" BUTTON_GUID="$BUTTON_GUID" bash -e -o pipefail "$WORK/block2.sh"

for i in $(seq 300); do
  if grep -q '^verified message.created ' "$WORK/block1.log"; then
    grep '^verified message.created ' "$WORK/block1.log"
    echo "docs local webhooks example: delivered and verified"
    exit 0
  fi
  if grep -q '^REFUSED' "$WORK/block1.log"; then
    grep '^REFUSED' "$WORK/block1.log" >&2
    exit 1
  fi
  sleep 0.2
done
echo "no verified delivery reached the receiver within 60 s" >&2
exit 1
