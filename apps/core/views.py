"""Plain Django views of the core: problem pages and the health check."""

from __future__ import annotations

import logging

from django.core.cache import cache
from django.db import connection
from django.http import Http404, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from apps.core.errors import PROBLEM_CODES

logger = logging.getLogger(__name__)


@require_GET
def problem_index(request):
    return render(request, "problems/index.html", {"problems": sorted(PROBLEM_CODES.items())})


@require_GET
def problem_page(request, code: str):
    if code not in PROBLEM_CODES:
        raise Http404
    status, title, explanation = PROBLEM_CODES[code]
    return render(
        request,
        "problems/detail.html",
        {"code": code, "status": status, "title": title, "explanation": explanation},
    )


def _check_database() -> None:
    with connection.cursor() as cur:
        cur.execute("SELECT 1")


def _check_cache() -> None:
    cache.set("healthz", "ok", 10)
    if cache.get("healthz") != "ok":
        raise RuntimeError("cache read-back failed")


def _check_broker() -> None:
    from config.celery import app

    with app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, timeout=2)


@require_GET
def healthz(request):
    """200 when database, cache and broker answer; 503 naming the failing ones otherwise."""
    checks = {"database": _check_database, "cache": _check_cache, "broker": _check_broker}
    results = {}
    for name, check in checks.items():
        try:
            check()
            results[name] = "ok"
        except Exception as exc:  # a health check reports, it never raises
            logger.warning("healthz: %s failed: %s", name, exc.__class__.__name__)
            results[name] = "error"
    healthy = all(v == "ok" for v in results.values())
    return JsonResponse({"status": "ok" if healthy else "error", "checks": results}, status=200 if healthy else 503)
