"""The banner `make run` prints once the demo widget is seeded: its token and the URLs to open.

Arguments: the seed_demo JSON, the port, the dev_admin JSON, the demo operator's password."""

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
print(
    "  Processes: web, worker, ai worker, bulk worker and beat under supervisord (a process that exits is restarted)."
)
print("  Stop with Ctrl-C.")
print(line, flush=True)
