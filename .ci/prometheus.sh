#!/usr/bin/env bash
# A real Prometheus (Debian's `prometheus` package: prometheus and promtool on PATH) scrapes the
# running service's /metrics:
#
#   1. promtool checks deploy/prometheus/alerts.yml and runs its unit tests (alerts_test.yml);
#   2. the service runs as schemathesis.sh runs it (uvicorn on the embedded default, a fresh VAR_DIR)
#      with METRICS_TOKEN set, plus one Celery worker (a forked pool process: its counts reach the
#      web's scrape through the multiprocess folder); /metrics refuses a caller without the token;
#   3. Prometheus scrapes it every second with the token and loads the rules file: the target is up,
#      the rules are loaded, every family is there with its labels;
#   4. a webhook subscription whose receiver refuses connections, then a visitor message: Prometheus
#      sees the pending-deliveries gauge rise and the oldest pending age grow, the worker's failed
#      attempt counted; then the receiver starts, the worker's retry delivers, and the gauge falls
#      back to 0.
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=.ci/serve.sh
source .ci/serve.sh
serve_init prometheus 60
unset DJANGO_SETTINGS_MODULE

for tool in prometheus promtool curl; do
  command -v "$tool" >/dev/null 2>&1 || { echo "$tool is missing (apt-get install prometheus curl)" >&2; exit 1; }
done

WORKER_PID="" RECEIVER_PID="" PROM_PID=""
stop_all() {
  local rc=$?
  set +e
  for pid in "$PROM_PID" "$RECEIVER_PID" "$WORKER_PID"; do
    [[ -n "$pid" ]] && kill -TERM "$pid" 2>/dev/null
  done
  for pid in "$PROM_PID" "$RECEIVER_PID" "$WORKER_PID"; do
    [[ -z "$pid" ]] && continue
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  if [[ $rc -ne 0 ]]; then
    for log in prometheus worker receiver; do
      [[ -s "$WORK/$log.log" ]] && { echo "--- last lines of the $log log ---"; tail -n 30 "$WORK/$log.log"; }
    done
  fi
  (exit "$rc")
  serve_stop
}
trap stop_all EXIT

free_port() {
  $PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# --- 1. the rules file ----------------------------------------------------------------------------
echo "$(prometheus --version 2>&1 | head -n 1)"
promtool check rules deploy/prometheus/alerts.yml
(cd deploy/prometheus && promtool test rules alerts_test.yml)

# --- 2. the service, a worker, and a receiver's address that refuses ---------------------------------
export METRICS_TOKEN OUTBOUND_ALLOW_LOOPBACK=1 REQUESTS_CA_BUNDLE
METRICS_TOKEN="$($PY -c 'import secrets; print(secrets.token_urlsafe(24))')"
HOOK_PORT="$(free_port)"
mkdir -p "$WORK/hook"
$PY -m trustme -q -d "$WORK/hook" -i 127.0.0.1
cat "$($PY -m certifi)" "$WORK/hook/client.pem" >"$WORK/hook/ca-bundle.pem"
REQUESTS_CA_BUNDLE="$WORK/hook/ca-bundle.pem"

serve_migrate
$PY manage.py reset_metrics >/dev/null
CREATED="$($PY manage.py create_widget --owner-email metrics@example.com --name "CI metrics" --enable-api)"
WIDGET_ID="$(printf '%s' "$CREATED" | $PY -c 'import json, sys; print(json.load(sys.stdin)["widget_id"])')"
BUTTON_GUID="$(printf '%s' "$CREATED" | $PY -c 'import json, sys; print(json.load(sys.stdin)["button_guid"])')"
TOKEN="$($PY manage.py issue_token --widget "$WIDGET_ID" --scopes webhooks:write,chats:read --name metrics)"

.venv/bin/celery -A config worker -l warning --concurrency 1 --without-gossip --without-mingle -Q celery \
  >"$WORK/worker.log" 2>&1 &
WORKER_PID=$!
serve_start
echo "server up on $BASE, worker pid $WORKER_PID"

code="$(curl -s -o /dev/null -w '%{http_code}' "$BASE/metrics")"
[[ "$code" == 401 ]] || { echo "/metrics without the token answered $code, not 401" >&2; exit 1; }
code="$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $METRICS_TOKEN" "$BASE/metrics")"
[[ "$code" == 200 ]] || { echo "/metrics with the token answered $code, not 200" >&2; exit 1; }

# --- 3. Prometheus scrapes it ------------------------------------------------------------------------
PROM_PORT="$(free_port)"
PROM="http://127.0.0.1:$PROM_PORT"
printf '%s' "$METRICS_TOKEN" >"$WORK/metrics.token"
cat >"$WORK/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $PWD/deploy/prometheus/alerts.yml
scrape_configs:
  - job_name: chatwidget
    metrics_path: /metrics
    authorization:
      credentials_file: $WORK/metrics.token
    static_configs:
      - targets: ["${BASE#http://}"]
YAML
promtool check config "$WORK/prometheus.yml"
prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
  --web.listen-address="127.0.0.1:$PROM_PORT" --log.level=warn >"$WORK/prometheus.log" 2>&1 &
PROM_PID=$!

# query EXPR: Prometheus's answer (JSON) for an instant query.
query() { curl -sfG "$PROM/api/v1/query" --data-urlencode "query=$1"; }

# wait_for DESCRIPTION EXPR [SECONDS]: until the instant query EXPR (a filter such as `x > 0`) has a
# result; prints it.
wait_for() {
  local deadline=$((SECONDS + ${3:-60}))
  while ((SECONDS < deadline)); do
    if query "$2" >"$WORK/answer.json" 2>/dev/null && $PY - "$WORK/answer.json" <<'PY'
import json
import sys

result = json.load(open(sys.argv[1]))["data"]["result"]
for row in result:
    labels = {k: v for k, v in row["metric"].items() if k not in ("job", "instance")}
    print(f"    {labels} = {row['value'][1]}")
sys.exit(0 if result else 1)
PY
    then
      echo "ok: $1"
      return 0
    fi
    kill -0 "$PROM_PID" 2>/dev/null || { echo "prometheus exited" >&2; exit 1; }
    sleep 0.5
  done
  echo "not within ${3:-60} s: $1 ($2); last answer: $(cat "$WORK/answer.json" 2>/dev/null)" >&2
  exit 1
}

for i in $(seq 120); do
  [[ "$(curl -s -o /dev/null -w '%{http_code}' "$PROM/-/ready" || true)" == 200 ]] && break
  kill -0 "$PROM_PID" 2>/dev/null || { echo "prometheus exited" >&2; exit 1; }
  [[ $i -eq 120 ]] && { echo "prometheus was not ready within 60 s" >&2; exit 1; }
  sleep 0.5
done
echo "prometheus up on $PROM"

# The target is scraped successfully (health up, no error), and the rules file is loaded.
deadline=$((SECONDS + 60))
until curl -sf "$PROM/api/v1/targets" >"$WORK/targets.json" && $PY - "$WORK/targets.json" <<'PY'
import json
import sys

targets = json.load(open(sys.argv[1]))["data"]["activeTargets"]
sys.exit(0 if targets and all(t["health"] == "up" and not t["lastError"] for t in targets) else 1)
PY
do
  ((SECONDS < deadline)) || { echo "the target was not scraped successfully: $(cat "$WORK/targets.json")" >&2; exit 1; }
  sleep 0.5
done
echo "ok: the scrape of $BASE/metrics succeeds"
curl -sf "$PROM/api/v1/rules" >"$WORK/rules.json"
$PY - "$WORK/rules.json" <<'PY'
import json
import sys

rules = [r for g in json.load(open(sys.argv[1]))["data"]["groups"] for r in g["rules"]]
names = {r["name"] for r in rules if r["type"] == "alerting" and r["health"] in ("ok", "unknown")}
expected = {
    "ChatwidgetDeliveriesDelayed",
    "ChatwidgetAiQueueBacklog",
    "ChatwidgetAiProviderErrors",
    "ChatwidgetApiErrorRate",
    "ChatwidgetMetricsSourceDown",
}
missing = expected - names
if missing:
    sys.exit(f"alert rules not loaded: {sorted(missing)}")
print("ok: prometheus loaded the alert rules:", ", ".join(sorted(names)))
PY

# Some traffic, then every family with exactly its labels (besides job, instance and le).
curl -s -o /dev/null -H "Authorization: Bearer $TOKEN" "$BASE/api/v1/chats/123456789"
wait_for "requests counted by route pattern and status" \
  'chatwidget_http_requests_total{route="/api/v1/chats/{pk}", method="GET", status="404"} >= 1'
query '{__name__=~"chatwidget_.*"}' >"$WORK/families.json"
$PY - "$WORK/families.json" <<'PY'
import json
import sys

expected = {
    "chatwidget_http_requests_total": {"method", "route", "status"},
    "chatwidget_http_request_duration_seconds_bucket": {"method", "route", "le"},
    "chatwidget_http_request_duration_seconds_count": {"method", "route"},
    "chatwidget_websockets_open": {"kind"},
    "chatwidget_delivery_attempts_total": {"kind", "outcome"},
    "chatwidget_ai_answer_duration_seconds_bucket": {"outcome", "le"},
    "chatwidget_ai_provider_errors_total": {"driver", "kind"},
    "chatwidget_celery_queue_length": {"queue"},
    "chatwidget_celery_queue_oldest_task_age_seconds": {"queue"},
    "chatwidget_deliveries_pending": {"kind"},
    "chatwidget_deliveries_oldest_pending_age_seconds": {"kind"},
    "chatwidget_kb_documents_waiting": {"state"},
    "chatwidget_metrics_source_up": {"source"},
}
seen: dict[str, set] = {}
for row in json.load(open(sys.argv[1]))["data"]["result"]:
    metric = dict(row["metric"])
    name = metric.pop("__name__")
    seen.setdefault(name, set()).add(frozenset(k for k in metric if k not in ("job", "instance")))
    if name == "chatwidget_metrics_source_up" and row["value"][1] != "1":
        sys.exit(f"{name} {metric} is {row['value'][1]}: the scrape could not read that source")
problems = []
for name, labels in expected.items():
    if name not in seen:
        problems.append(f"{name}: missing")
    elif seen[name] != {frozenset(labels)}:
        problems.append(f"{name}: labels {sorted(map(sorted, seen[name]))}, expected {sorted(labels)}")
    else:
        print(f"ok: {name} {{{', '.join(sorted(labels))}}}")
sys.exit("\n".join(problems) if problems else 0)
PY
wait_for "both Celery queues read from the broker" 'count(chatwidget_celery_queue_length{queue=~"celery|ai"}) == 2'

# --- 4. a receiver that refuses, then accepts ------------------------------------------------------------
curl -sf -X POST "$BASE/api/v1/webhook-subscriptions" -H "Authorization: Bearer $TOKEN" \
  -H "Content-Type: application/json" -H "X-Service-Idempotency-Key: ci-metrics-hook" \
  -d "{\"url\": \"https://127.0.0.1:$HOOK_PORT/hook\", \"events\": [\"message.created\"], \"secret\": \"ci-metrics-secret\"}" \
  >/dev/null
SESSION="$(curl -sf -X POST "$BASE/api/visitor/v1/$BUTTON_GUID/sessions" -H "Content-Type: application/json" -d '{}' \
  | $PY -c 'import json, sys; print(json.load(sys.stdin)["session_token"])')"
curl -sf -X POST "$BASE/api/visitor/v1/$BUTTON_GUID/messages" -H "Authorization: Visitor $SESSION" \
  -H "Content-Type: application/json" -d '{"type": "text", "body": "Hello from CI"}' >/dev/null
echo "a visitor wrote; nothing listens on the receiver's port $HOOK_PORT"

wait_for "the worker's refused attempt is counted (summed from its pool process)" \
  'chatwidget_delivery_attempts_total{kind="webhook", outcome="retrying"} >= 1'
wait_for "the pending-deliveries gauge rose" 'chatwidget_deliveries_pending{kind="webhook"} >= 1'
wait_for "the oldest pending delivery ages" 'chatwidget_deliveries_oldest_pending_age_seconds{kind="webhook"} >= 3'

$PY scripts/webhook_receiver.py --port "$HOOK_PORT" --cert "$WORK/hook/server.pem" --key "$WORK/hook/server.key" \
  --secret ci-metrics-secret >"$WORK/receiver.log" 2>&1 &
RECEIVER_PID=$!
echo "the receiver now accepts on $HOOK_PORT; waiting for the worker's retry"
wait_for "the retry was delivered" 'chatwidget_delivery_attempts_total{kind="webhook", outcome="delivered"} >= 1' 90
wait_for "the pending-deliveries gauge fell back to 0" 'chatwidget_deliveries_pending{kind="webhook"} == 0'
wait_for "and the oldest pending age to 0" 'chatwidget_deliveries_oldest_pending_age_seconds{kind="webhook"} == 0'
grep -q '^verified message.created ' "$WORK/receiver.log" || { echo "the receiver verified no delivery" >&2; exit 1; }
echo "metrics: a real Prometheus scraped the service, the families and the rules are in place, and the pending deliveries moved"
