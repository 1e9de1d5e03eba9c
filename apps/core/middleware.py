"""Request metrics, request context, problem+json for everything under /api/, and the body size gate."""

from __future__ import annotations

import logging
import re
import time
import uuid

from django.conf import settings

from apps.core.errors import (
    PROBLEM_CONTENT_TYPE,
    BodyTooLarge,
    ServerError,
    error_for_status,
    problem_response,
    to_app_error,
)
from apps.core.logging import RequestNotes, request_id_var, request_notes_var
from apps.platform import metrics
from apps.platform.numbers import parse_int

logger = logging.getLogger("apps.request")

_REQUEST_ID_RE = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_KEPT_HEADERS = ("Allow", "Retry-After", "WWW-Authenticate")


def is_api_path(path: str) -> bool:
    return path.startswith("/api/") and not path.startswith(("/api/docs", "/api/redoc"))


class RequestMetricsMiddleware:
    """Counts every answered request and its duration in /metrics (apps.platform.metrics), labelled by
    the URL pattern that answered, never by the path as sent. First in MIDDLEWARE, so the answers of
    the middleware below it (problem+json, 413) are counted as sent."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.monotonic()
        response = self.get_response(request)
        metrics.observe_request(
            method=request.method if request.method in _METHODS else "other",
            route=metrics.route_label(getattr(request, "resolver_match", None)),
            status=response.status_code,
            seconds=time.monotonic() - started,
        )
        return response


_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class RequestContextMiddleware:
    """Assigns a request id (or keeps a sane incoming `X-Request-Id`) and logs one line per
    request: method, path (never the query string, which might carry a token), status, duration
    and the token prefix."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        incoming = request.headers.get("X-Request-Id", "")
        request_id = incoming if _REQUEST_ID_RE.match(incoming) else uuid.uuid4().hex
        request.request_id = request_id
        token_var = request_id_var.set(request_id)
        notes = RequestNotes()
        notes_var = request_notes_var.set(notes)
        started = time.monotonic()
        try:
            response = self.get_response(request)
            response["X-Request-Id"] = request_id
            logger.info(
                "request",
                extra={
                    "method": request.method,
                    "path": request.path,
                    "status": response.status_code,
                    "duration_ms": round((time.monotonic() - started) * 1000, 1),
                    "token": notes.token_prefix,
                    "widget_id": notes.widget_id,
                },
            )
            return response
        finally:
            request_notes_var.reset(notes_var)
            request_id_var.reset(token_var)


class ProblemResponseMiddleware:
    """Any non-2xx/3xx answer under /api/ that is not already problem+json (Django's own 404 for
    unknown paths, 405 of plain views, 400/403 of Django, 500 with or without DEBUG) becomes a
    problem of the same status. No stack trace ever leaves under /api/."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if (
            response.status_code >= 400
            and is_api_path(request.path)
            and not response.get("Content-Type", "").startswith(PROBLEM_CONTENT_TYPE)
            and not getattr(response, "problem_exempt", False)
        ):
            err = error_for_status(response.status_code)()
            err.status = response.status_code
            problem = problem_response(err, request)
            for name in _KEPT_HEADERS:
                if name in response:
                    problem[name] = response[name]
            return problem
        return response

    def process_exception(self, request, exception):
        """Exceptions of plain Django views under /api/: known ones (Http404, PermissionDenied,
        Django's refusals of a hostile request) are their problem; only the unexpected are 500."""
        if not is_api_path(request.path):
            return None
        err = to_app_error(exception)
        if err is None:
            logger.exception("unhandled error", extra={"path": request.path})
            err = ServerError()
        return problem_response(err, request)


class BodySizeLimitMiddleware:
    """413 before anything reads a body larger than the view allows (`max_body_bytes` on the
    view class, else API_MAX_BODY_BYTES)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        if not is_api_path(request.path):
            return None
        try:
            length = parse_int(request.META.get("CONTENT_LENGTH") or "0")
        except ValueError:
            length = 0  # as Django reads it: the body is then empty
        view_cls = getattr(view_func, "cls", None)
        limit = getattr(view_cls, "max_body_bytes", None) or settings.API_MAX_BODY_BYTES
        if length > limit:
            return problem_response(BodyTooLarge(f"The body exceeds {limit} bytes."), request)
        return None
