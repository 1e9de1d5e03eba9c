"""problem+json (RFC 9457) for every error under /api/.

Domain errors are `AppError` subclasses declaring `status`, `code` and `title`; they carry extra
members (`offending`, `allowed`, `previous`, ...) in `extra`. Views never build error bodies: the
DRF exception handler below renders AppErrors and DRF/Django exceptions, and
`ProblemResponseMiddleware` renders what never reaches DRF (unknown paths, 405 of plain Django
views, 413, 500).
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import (
    ObjectDoesNotExist,
    RequestDataTooBig,
    SuspiciousOperation,
    TooManyFieldsSent,
    TooManyFilesSent,
)
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db import OperationalError as DatabaseOperationalError
from django.http import Http404, JsonResponse
from rest_framework import exceptions as drf_exceptions
from rest_framework.response import Response

logger = logging.getLogger(__name__)

PROBLEM_CONTENT_TYPE = "application/problem+json"

# code -> (status, title, explanation). The explanation is served at /api/problems/<code>.
PROBLEM_CODES: dict[str, tuple[int, str, str]] = {}


def register_problem(code: str, status: int, title: str, explanation: str) -> None:
    PROBLEM_CODES[code] = (status, title, explanation)


def problem_type(code: str | None) -> str:
    return f"/api/problems/{code}" if code and code in PROBLEM_CODES else "about:blank"


class AppError(Exception):
    """Base of every domain error. Subclasses declare status, code, title (and explanation)."""

    status: int = 400
    code: str = "bad_request"
    title: str = "Bad request"
    explanation: str = ""
    headers: dict[str, str] = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "code" in cls.__dict__:
            register_problem(cls.code, cls.status, cls.title, cls.explanation or cls.__doc__ or cls.title)

    def __init__(
        self,
        detail: str | None = None,
        *,
        errors: dict[str, list[str]] | None = None,
        headers: dict[str, str] | None = None,
        **extra: Any,
    ):
        self.detail = detail or self.title
        self.errors = errors
        self.extra = extra
        self.headers = {**self.headers, **(headers or {})}
        super().__init__(self.detail)


class BadRequest(AppError):
    """The request could not be understood."""

    status, code, title = 400, "bad_request", "Bad request"


class InvalidJSON(AppError):
    """The body is not well-formed JSON (or not the JSON object the operation expects)."""

    status, code, title = 400, "invalid_json", "Malformed JSON body"


class MalformedBody(AppError):
    """The body could not be parsed as the media type it declares (e.g. a broken multipart form)."""

    status, code, title = 400, "malformed_body", "Malformed request body"


class TooManyFields(AppError):
    """The query string or form body carries more than 1,000 parameters; nothing was read."""

    status, code, title = 400, "too_many_fields", "Too many parameters"


class TooManyFiles(AppError):
    """A multipart body carries more than 100 files; nothing was read."""

    status, code, title = 400, "too_many_files", "Too many files"


class IdempotencyKeyMissing(AppError):
    """This operation is marked `x-idempotency: required`; send `X-Service-Idempotency-Key`."""

    status, code, title = 400, "idempotency_key_missing", "Idempotency key required"


class InvalidIdempotencyKey(AppError):
    """`X-Service-Idempotency-Key` must be 1 to 64 bytes with no ASCII whitespace or control characters."""

    status, code, title = 400, "invalid_idempotency_key", "Invalid idempotency key"


class NotAuthenticated(AppError):
    """Send `Authorization: Bearer <token>` with a valid, unexpired, unrevoked token."""

    status, code, title = 401, "not_authenticated", "Authentication required"
    headers = {"WWW-Authenticate": 'Bearer realm="api"'}


class InvalidToken(NotAuthenticated):
    """The bearer token is malformed, unknown, expired or revoked."""

    code, title = "invalid_token", "Invalid token"
    headers = {"WWW-Authenticate": 'Bearer realm="api", error="invalid_token"'}


class TokenInQuery(NotAuthenticated):
    """Tokens are accepted only in the Authorization header, never in the URL query."""

    code, title = "token_in_query", "Token in query string refused"
    headers = {"WWW-Authenticate": 'Bearer realm="api", error="invalid_request"'}


class ApiDisabled(AppError):
    """The widget's owner has not enabled "Allow widget API (JS and REST)"."""

    status, code, title = 403, "api_disabled", "Widget API is disabled"


class MissingScope(AppError):
    """The token lacks every scope that grants this operation; `required_scopes` lists them (any one suffices)."""

    status, code, title = 403, "missing_scope", "Token lacks the required scope"


class Forbidden(AppError):
    """The caller may not perform this operation."""

    status, code, title = 403, "forbidden", "Forbidden"


class NotFound(AppError):
    """No such resource for this widget. A foreign id answers exactly like a missing one."""

    status, code, title = 404, "not_found", "Not found"


class MethodNotAllowed(AppError):
    """The path exists but does not accept this HTTP method; `Allow` lists the ones it does."""

    status, code, title = 405, "method_not_allowed", "Method not allowed"


class NotAcceptable(AppError):
    """The API answers JSON (or the media type an operation documents)."""

    status, code, title = 406, "not_acceptable", "Not acceptable"


class Conflict(AppError):
    """The request conflicts with the current state of the resource."""

    status, code, title = 409, "conflict", "Conflict"


class IdempotencyKeyReused(AppError):
    """This key was used within 24 hours; `previous` describes the original request's result."""

    status, code, title = 409, "idempotency_key_reused", "Idempotency key already used"


class BodyTooLarge(AppError):
    """The request body exceeds the operation's size limit."""

    status, code, title = 413, "body_too_large", "Request body too large"


class UnsupportedMediaType(AppError):
    """Send the body as `application/json` (or the media type the operation documents)."""

    status, code, title = 415, "unsupported_media_type", "Unsupported media type"


class ValidationFailed(AppError):
    """The input is invalid; `errors` maps dotted field paths (`keyboard.buttons.3.url`) to messages."""

    status, code, title = 422, "validation_failed", "Validation failed"


class RateLimited(AppError):
    """Too many requests; retry after `Retry-After` seconds."""

    status, code, title = 429, "rate_limited", "Too many requests"


class ProviderBusy(AppError):
    """The widget (AI_REQUEST_PROVIDER_SLOTS) or the web process (AI_REQUEST_PROVIDER_PROCESS_SLOTS)
    already waits on AI providers in as many requests as it may at once; retry after `Retry-After`
    seconds."""

    status, code, title = 429, "provider_busy", "Provider calls of this widget in flight"


class ServerError(AppError):
    """An unexpected error; it has been logged. Retry later."""

    status, code, title = 500, "server_error", "Internal server error"


class ServiceUnavailable(AppError):
    """A dependency is unavailable; retry later."""

    status, code, title = 503, "service_unavailable", "Service unavailable"


_STATUS_DEFAULTS: dict[int, type[AppError]] = {
    400: BadRequest,
    401: NotAuthenticated,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    406: NotAcceptable,
    409: Conflict,
    413: BodyTooLarge,
    415: UnsupportedMediaType,
    422: ValidationFailed,
    429: RateLimited,
    500: ServerError,
    503: ServiceUnavailable,
}


def error_for_status(status: int) -> type[AppError]:
    return _STATUS_DEFAULTS.get(status) or (ServerError if status >= 500 else BadRequest)


def _encodable(value: Any) -> Any:
    """`value` with every string UTF-8 can encode: a lone surrogate a client sent (a JSON `\\ud800`)
    and an error echoes (an unknown member's name, a refused choice) is written as its escape
    instead of failing the rendering of the problem."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
        return value
    if isinstance(value, dict):
        return {_encodable(key): _encodable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_encodable(item) for item in value]
    return value


def problem_body(err: AppError, *, instance: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": problem_type(err.code),
        "title": err.title,
        "status": err.status,
        "detail": err.detail,
        "instance": instance,
        "code": err.code,
    }
    if err.errors is not None:
        body["errors"] = err.errors
    for key, value in err.extra.items():
        body.setdefault(key, value)
    return _encodable(body)


def problem_response(err: AppError, request) -> JsonResponse:
    """A plain Django response (for middleware and non-DRF views)."""
    response = JsonResponse(
        problem_body(err, instance=request.path),
        status=err.status,
        content_type=PROBLEM_CONTENT_TYPE,
        json_dumps_params={"ensure_ascii": False},
    )
    for name, value in err.headers.items():
        response[name] = value
    return response


# --- validation error flattening -------------------------------------------------------------------


def flatten_errors(detail: Any, prefix: str = "") -> dict[str, list[str]]:
    """DRF's nested error structure -> {"keyboard.buttons.3.url": ["..."]}.

    Non-field errors of the body itself are keyed `body`; of a nested object, by its own path.
    """
    out: dict[str, list[str]] = {}
    if isinstance(detail, dict):
        for key, value in detail.items():
            key = str(key)
            if key in ("non_field_errors", "__all__"):
                path = prefix or "body"
            else:
                path = f"{prefix}.{key}" if prefix else key
            for p, msgs in flatten_errors(value, path).items():
                out.setdefault(p, []).extend(msgs)
    elif isinstance(detail, list):
        if all(not isinstance(item, (dict, list)) for item in detail):
            if detail:
                out.setdefault(prefix or "body", []).extend(str(item) for item in detail)
        else:
            for index, item in enumerate(detail):
                if item in ({}, [], None):
                    continue
                path = f"{prefix}.{index}" if prefix else str(index)
                for p, msgs in flatten_errors(item, path).items():
                    out.setdefault(p, []).extend(msgs)
    elif detail is not None:
        out.setdefault(prefix or "body", []).append(str(detail))
    return out


# --- DRF exception handler ----------------------------------------------------------------------------


def to_app_error(exc: Exception) -> AppError | None:
    """Map any exception a view can raise to an AppError; None for unexpected ones (the only
    exceptions that may become a 500)."""
    if isinstance(exc, AppError):
        return exc
    # Django refuses these while parsing the query string or body, wherever that first happens
    # (content negotiation reads the query string before authentication).
    if isinstance(exc, RequestDataTooBig):
        return BodyTooLarge()
    if isinstance(exc, TooManyFieldsSent):
        return TooManyFields()
    if isinstance(exc, TooManyFilesSent):
        return TooManyFiles()
    if isinstance(exc, SuspiciousOperation):
        return BadRequest()
    if isinstance(exc, drf_exceptions.ValidationError):
        return ValidationFailed("One or more fields are invalid.", errors=flatten_errors(exc.detail))
    if isinstance(exc, drf_exceptions.ParseError):
        # JSON bodies are parsed by StrictJSONParser, which raises InvalidJSON itself; a DRF
        # ParseError comes from another parser (multipart).
        return MalformedBody(str(exc.detail))
    if isinstance(exc, drf_exceptions.UnsupportedMediaType):
        return UnsupportedMediaType(str(exc.detail))
    if isinstance(exc, (drf_exceptions.NotAuthenticated, drf_exceptions.AuthenticationFailed)):
        return NotAuthenticated(str(exc.detail))
    if isinstance(exc, drf_exceptions.PermissionDenied | DjangoPermissionDenied):
        return Forbidden()
    if isinstance(exc, drf_exceptions.NotFound | Http404):
        return NotFound()
    if isinstance(exc, ObjectDoesNotExist):
        # A row the request named went away between its lookup and the write that locks it (deleted,
        # or its contact's erasure accepted meanwhile): the same 404 as a row that never existed.
        return NotFound()
    if isinstance(exc, drf_exceptions.MethodNotAllowed):
        return MethodNotAllowed(str(exc.detail))
    if isinstance(exc, drf_exceptions.NotAcceptable):
        return NotAcceptable(str(exc.detail))
    if isinstance(exc, drf_exceptions.Throttled):
        wait = int(exc.wait or 1)
        return RateLimited(headers={"Retry-After": str(max(1, wait))})
    if isinstance(exc, drf_exceptions.APIException):
        return error_for_status(exc.status_code)(str(exc.detail))
    if database_busy(exc):
        logger.warning("database unavailable: %s", exc)
        return ServiceUnavailable(
            "The database is busy or unavailable; nothing was changed. Retry later.", headers={"Retry-After": "1"}
        )
    return None


def database_busy(exc: BaseException) -> bool:
    """The database refused or dropped the connection, or is locked by another writer: a passing
    condition of the deployment (503 and Retry-After), not a fault of the request. PostgreSQL:
    `too many clients` (SQLSTATE 53300), the other connection-level refusals (no SQLSTATE: refused,
    reset, shut down) and 57P0x (the server shutting down); SQLite: `database is locked`. Any
    other database error (a deadlock, a constraint) stays a bug."""
    if not isinstance(exc, DatabaseOperationalError):
        return False
    cause = exc.__cause__
    sqlstate = getattr(cause, "sqlstate", "missing")
    if sqlstate is None or (isinstance(sqlstate, str) and (sqlstate == "53300" or sqlstate.startswith("57P0"))):
        return True
    return "database is locked" in str(exc)


def exception_handler(exc: Exception, context: dict) -> Response | None:
    err = to_app_error(exc)
    request = context.get("request")
    if err is None:
        logger.exception("unhandled error in %s", context.get("view").__class__.__name__)
        err = ServerError()
    path = request.path if request is not None else ""
    response = Response(problem_body(err, instance=path), status=err.status, headers=err.headers)
    response.content_type = PROBLEM_CONTENT_TYPE
    if isinstance(exc, drf_exceptions.MethodNotAllowed) and context.get("view") is not None:
        response["Allow"] = ", ".join(context["view"].allowed_methods)
    return response
