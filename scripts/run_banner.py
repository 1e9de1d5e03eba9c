"""The banner `make run` prints for the seeded demo widget: its token and the URLs to open.

Arguments: [--after-web] the seed_demo JSON, the port, the dev_admin JSON, the demo operator's
password. With `--after-web` the banner waits until the web process answers /healthz (at most
WEB_WAIT seconds), so every URL in it works when it shows, and then until RUN_READY_WORKERS workers
have left their file in RUN_READY_DIR (at most WORKERS_WAIT seconds; config/celery.py), so their
start-up lines do not push it out of sight; Ctrl-C while it waits prints nothing.
"""

import json
import os
import signal
import sys
import time
import urllib.error
import urllib.request

# The web process imports the whole project and takes a few seconds to listen; a slow or busy
# machine takes longer. Past this the banner shows anyway, saying the web process is not up yet.
WEB_WAIT = 300
# Workers take a few seconds more than the web process on a first run; the box never waits longer.
WORKERS_WAIT = 120

args = sys.argv[1:]
after_web = args[:1] == ["--after-web"]
if after_web:
    args = args[1:]
seed, port, admin, operator_password = json.loads(args[0]), args[1], json.loads(args[2]), args[3]
base = f"http://127.0.0.1:{port}"


def web_answers() -> bool:
    try:
        with urllib.request.urlopen(f"{base}/healthz", timeout=5):  # noqa: S310 - our own loopback address
            return True
    except urllib.error.HTTPError:
        return True  # it answers (a failing check of its own is on the page, not a reason to wait)
    except (urllib.error.URLError, OSError):
        return False


if after_web:
    # Ctrl-C and supervisord's stop reach this process too (the same process group): leave quietly.
    signal.signal(signal.SIGINT, lambda *_: sys.exit(0))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    deadline = time.monotonic() + WEB_WAIT
    while not web_answers() and time.monotonic() < deadline:
        time.sleep(0.5)
    ready_dir, workers = os.environ.get("RUN_READY_DIR"), int(os.environ.get("RUN_READY_WORKERS") or 0)
    if ready_dir and workers:
        deadline = time.monotonic() + WORKERS_WAIT
        while len(os.listdir(ready_dir)) < workers and time.monotonic() < deadline:
            time.sleep(0.5)
        time.sleep(1.0)  # each worker logs "ready." as it signals: let those lines out first
line = "=" * 78
lines = [line]
lines.append(f"  Demo widget {seed['widget_id']} (button_guid {seed['button_guid']}), API token with every scope:")
lines.append("")
lines.append(f"    {seed['token']}")
lines.append("    (a new token on every start; earlier ones keep working until revoked in the Django admin)")
lines.append("")
lines.append(f"  Demo page: {base}/demo/   (the widget on a page; chat with it)")
lines.append(f"  Console:   {base}/console/   (operators answer here)")
if operator_password:
    lines.append(f"    sign in as operator@example.com, password {operator_password} (new on every start);")
lines.append("    the widget is Online while an operator's console is open, else it offers the offline form")
lines.append(f"  API docs:  {base}/api/docs/")
lines.append(f"  Health:    {base}/healthz")
lines.append(f"  Metrics:   {base}/metrics   (Prometheus; loopback callers only unless METRICS_TOKEN is set)")
if admin:
    lines.append(f"  Django admin (development only): {base}{admin['url']}")
    lines.append(f"    user {admin['username']}, password {admin['password']} (new on every start)")
else:
    lines.append("  Django admin: create a superuser with `python manage.py createsuperuser`")
lines.append(f"  Send it as: Authorization: Bearer {seed['token']}")
lines.append(
    "  Processes: web, worker, ai worker, bulk worker and beat under supervisord (a process that exits is restarted)."
)
lines.append("  Stop with Ctrl-C.")
if after_web and not web_answers():
    lines.append(f"  The web process has not answered {base}/healthz in {WEB_WAIT} s: see its lines above.")
lines.append(line)
# One write: the processes log to the same terminal, and a line of theirs never lands inside the box.
sys.stdout.write("\n".join(lines) + "\n")
sys.stdout.flush()
