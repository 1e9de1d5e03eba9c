#!/usr/bin/env bash
# Start a production host's processes without systemd: every line of the Procfile under supervisord,
# in the background, as the user who runs this (no root needed).
#
#   scripts/start.sh ENV_FILE        e.g. scripts/start.sh ~/chatwidget.env   (crontab: @reboot ...)
#
# ENV_FILE holds the settings (docs/operating/deployment.md, step 2). Before the processes start,
# the host's metrics folder is emptied (manage.py reset_metrics), as every deployment's start must.
# Logs: $VAR_DIR/log/<process>.log. Status, restarts, stop:
#   .venv/bin/supervisorctl -c "$VAR_DIR/run/supervisord.conf" status | restart web | shutdown
# PROCFILE names another process list (default: the repository's Procfile).
set -euo pipefail
cd "$(dirname "$0")/.."

[[ $# -eq 1 && -r "$1" ]] || { echo "usage: scripts/start.sh ENV_FILE (a readable file of settings)" >&2; exit 2; }
set -a
# shellcheck source=/dev/null
. "$1"
set +a

export PORT="${PORT:-8000}"
export PATH="$PWD/.venv/bin:$PATH"
var_dir="${VAR_DIR:-var}"
mkdir -p "$var_dir/run" "$var_dir/log"

conf="$var_dir/run/supervisord.conf"
if [[ -f "$conf" ]] && supervisorctl -c "$conf" pid >/dev/null 2>&1; then
  echo "already running (stop it first: .venv/bin/supervisorctl -c $conf shutdown)" >&2
  exit 1
fi
python manage.py reset_metrics >/dev/null
python scripts/supervisor_conf.py --logs "$var_dir/log" "${PROCFILE:-Procfile}" "$var_dir/run" \
  >"$conf"
supervisord --configuration "$conf"  # returns once it has detached
echo "started: .venv/bin/supervisorctl -c $conf status"
