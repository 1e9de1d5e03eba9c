"""Plain Django views of the core: problem pages, public media, the health check and the metrics."""

from __future__ import annotations

import logging
import posixpath
from pathlib import Path

from celery import current_app
from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_safe
from django.views.static import serve

from apps.core.errors import PROBLEM_CODES, AppError, Forbidden, NotAuthenticated, problem_response
from apps.core.ratelimit import client_address
from apps.core.uploads import protect_upload
from apps.platform import metrics

logger = logging.getLogger(__name__)

# The only public parts of the default storage: operator avatars, department avatars, launcher
# icons. Everything else in it (chat files, billing documents) is private and leaves only through
# the signed redirect of GET /v1/files/{id}.
PUBLIC_MEDIA_PREFIXES = ("avatars", "departments", "icons")


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


def public_media_path(path: str) -> str | None:
    """`path` (as routed, percent-escapes already decoded) normalised, when it names a file inside
    a public prefix; None for anything else (`avatars/../files/x`, absolute paths, backslashes)."""
    if not path or "\\" in path or "\x00" in path or path.startswith("/"):
        return None
    normal = posixpath.normpath(path)
    parts = normal.split("/")
    if len(parts) < 2 or parts[0] not in PUBLIC_MEDIA_PREFIXES or ".." in parts:
        return None
    root = Path(settings.MEDIA_ROOT)
    # A symlink inside a public folder must not lead out of it either.
    if not (root / normal).resolve().is_relative_to((root / parts[0]).resolve()):
        return None
    return normal


@require_safe
def public_media(request, path: str):
    """A public file of the default storage (development and single-host deployments: object
    storages serve their own), with the headers of every user upload (apps.core.uploads)."""
    normal = public_media_path(path)
    if normal is None:
        raise Http404
    response = serve(request, normal, document_root=settings.MEDIA_ROOT)
    return protect_upload(response, name=posixpath.basename(normal))


def _check_database() -> None:
    with connection.cursor() as cur:
        cur.execute("SELECT 1")


def _check_cache() -> None:
    cache.set("healthz", "ok", 10)
    if cache.get("healthz") != "ok":
        raise RuntimeError("cache read-back failed")


def _check_broker() -> None:
    with current_app.connection_for_write() as conn:
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


def _metrics_refusal(request) -> AppError | None:
    """Who may read /metrics (apps.platform.metrics.refusal), as this app's problem classes. The client
    is the address the rate limits use (TRUSTED_PROXY_HOPS applies), so a proxy on the same host does
    not make every caller loopback."""
    refused = metrics.refusal(request.headers.get("Authorization", ""), client_address(request))
    if refused is None:
        return None
    error = NotAuthenticated if refused.status == NotAuthenticated.status else Forbidden
    return error(refused.detail, headers=refused.headers)


@require_GET
def metrics_endpoint(request):
    """GET /metrics: the Prometheus text format of every process of this host (apps.platform.metrics)."""
    refusal = _metrics_refusal(request)
    if refusal is not None:
        return problem_response(refusal, request)
    return HttpResponse(metrics.exposition(), content_type=metrics.CONTENT_TYPE)
