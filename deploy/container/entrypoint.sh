#!/bin/sh
# The image's one entrypoint: the first argument names the process, as the Procfile does.
#
#   web | worker | ai | bulk | beat   the Procfile's line of that name (the web process on
#                                     $WEB_HOST:$PORT, 0.0.0.0:8000 in the image)
#   migrate                           apply the migrations, then exit (compose's one-shot service,
#                                     the Kubernetes Job): the app processes start after it
#   manage ARGS...                    python manage.py ARGS... (create_widget, issue_token, ...)
#
# Each process's metrics go to its container's own VAR_DIR/metrics, emptied here at the start as
# every start of a host's processes must (scripts/start.sh does the same with manage.py reset_metrics).
set -eu
cd "$(dirname "$0")/../.."

# On Kubernetes the pod's own address (POD_IP, from the Downward API in web.yaml) is one of the
# service's host names, so Prometheus can scrape each web pod's /metrics at its address.
if [ -n "${POD_IP:-}" ]; then
  export ALLOWED_HOSTS="${ALLOWED_HOSTS:+$ALLOWED_HOSTS,}$POD_IP"
fi

role="${1:-web}"
[ "$#" -gt 0 ] && shift

case "$role" in
  web | worker | ai | bulk | beat)
    line="$(sed -n "s/^$role: //p" Procfile)"
    [ -n "$line" ] || { echo "entrypoint: the Procfile has no '$role' line" >&2; exit 2; }
    python manage.py reset_metrics >/dev/null
    # The Procfile's line through the shell, as honcho and supervisord run it (it uses ${PORT:-8000}
    # and `env`); exec, so the process gets the container's signals (SIGTERM: a warm shutdown).
    eval "exec $line \"\$@\""
    ;;
  migrate)
    exec python manage.py migrate --noinput "$@"
    ;;
  manage)
    exec python manage.py "$@"
    ;;
  *)
    echo "entrypoint: unknown process '$role' (web, worker, ai, bulk, beat, migrate, manage ...)" >&2
    exit 2
    ;;
esac
