"""The visitor config (`GET /api/visitor/v1/{guid}/config`, what the embed script starts with) of a
widget that uses proactive messages and identity verification, against the same request for a
widget that uses neither, measured in the same run: the config stays one cached request whatever
the owner switched on. Target (issue 84): `ratio<=1.1`.

As deployed: the web process under uvicorn (bench.lib.common.Server), PostgreSQL and Redis (the
cache the config is kept in). Two widgets of their own (`bench-visitor-config-*`, deleted at the end)
configured through the REST API as an owner would: one with BENCH_CONFIG_PROACTIVE proactive messages
(default 10, each with page patterns, a time on page and attributes), identity verification
`optional` and an identity secret; the other as created. Each figure is the median of per-round
medians (bench.lib.common.compare: the two alternate call by call), with the config cached as a
visitor's browser would find it after the first visitor of the minute.

Needs PostgreSQL (DATABASE_URL) and Redis (REDIS_URL).
"""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.lib.common import Server, compare, env_int, expect, report_latency, session, skipped  # noqa: E402
from bench.lib.env import postgres_problem  # noqa: E402

NAME = "visitor_config"
TARGET = "ratio<=1.1"
PROACTIVE = env_int("BENCH_CONFIG_PROACTIVE", 10)


def seed():
    from apps.core.auth.scopes import ALL_SCOPES
    from apps.core.services import issue_token
    from tests.support.factories import WidgetFactory

    tag = uuid.uuid4().hex[:12]
    widgets = [
        WidgetFactory(
            name=f"bench-visitor-config-{kind}-{tag}", api_enabled=True, account__user__username=f"bc-{kind}-{tag}"
        )
        for kind in ("full", "plain")
    ]
    return widgets, issue_token(widget=widgets[0], scopes=sorted(ALL_SCOPES), name="bench").plaintext


def configure(server: Server, token: str) -> None:
    """Proactive messages and identity verification, through the same routes an owner's tools call."""
    api = session(token)

    def key() -> dict:
        return {"X-Service-Idempotency-Key": uuid.uuid4().hex}

    settings = {"identity_verification": "optional"}
    expect(api.patch(f"{server.base}/api/v1/widget/settings", json=settings, headers=key()))
    expect(api.post(f"{server.base}/api/v1/widget/identity-secret", json={}, headers=key()), 201)
    for i in range(PROACTIVE):
        body = {
            "name": f"Offer {i}",
            "text_i18n": {"en": f"Need help with order {i}?", "de": f"Hilfe bei Bestellung {i}?"},
            "rules": {
                "url_patterns": [f"/shop/category-{i}/*", "/checkout*"],
                "time_on_page_seconds": 10 + i,
                "visits_at_least": 1,
                "attributes": {"plan": "pro"},
                "only_when_open": i % 2 == 0,
            },
            "frequency": "once",
            "priority": i,
        }
        expect(api.post(f"{server.base}/api/v1/proactive-messages", json=body, headers=key()), 201)


def main() -> int:
    problem = postgres_problem()
    if problem:
        skipped(NAME, problem)
        return 0
    if not os.environ.get("REDIS_URL"):
        skipped(NAME, "REDIS_URL is not set: the config is cached in Redis as deployed")
        return 0
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)
    (full, plain), token = seed()
    try:
        # One client address asks thousands of times a minute: the visitors' per-address and per-widget
        # budgets (the same check on both widgets) are lifted.
        env = {"VISITOR_MESSAGES_PER_ADDRESS_PER_MINUTE": "1000000", "VISITOR_WIDGET_BUDGET_SCALE": "0"}
        with Server(NAME, env=env) as server:
            configure(server, token)
            visitor = session()
            urls = {w.pk: f"{server.base}/api/visitor/v1/{w.button_guid}/config" for w in (full, plain)}
            shown = expect(visitor.get(urls[full.pk])).json()
            if len(shown.get("proactive_messages") or []) != PROACTIVE:
                print(f"BENCH {NAME} FAILED (the config shows {len(shown.get('proactive_messages') or [])} messages)")
                return 1
            ours, floor = compare(
                lambda: expect(visitor.get(urls[full.pk])), lambda: expect(visitor.get(urls[plain.pk])), iterations=200
            )
            report_latency(NAME, ours, floor, target=TARGET)
    finally:
        from apps.core.models import Widget

        Widget.objects.filter(pk__in=[full.pk, plain.pk]).delete()
    return 0


if __name__ == "__main__":
    from bench.lib.env import setup_django

    setup_django()
    sys.exit(main())
