"""The classification of a driver's failure into a `ProviderError` that carries no secret and no
peer-supplied text."""

from __future__ import annotations

import asyncio
import email.utils
import time
from typing import Any

import gigachat
import gigachat.api.auth
import gigachat.exceptions
import gigachat.settings
import httpx
import httpx2
import pydantic

from apps.platform.outbound import OutboundBlocked, OutboundError

from ..answers import UnusableAnswer
from ..transport import BodyTooLarge, BodyTooLarge2, DeadlineExceeded, DeadlineExceeded2, OperationsExhausted
from ..types import ProviderError
from .defaults import _OperationsSpent
from .sdks import anthropic, openai

# --- classification ---------------------------------------------------------------------------------


def _retry_after(headers: Any) -> float | None:
    if not headers:
        return None
    try:
        millis = headers.get("retry-after-ms")
        if millis:
            return max(0.0, float(millis) / 1000)
    except (TypeError, ValueError):
        pass
    value = headers.get("retry-after")
    if not value:
        return None
    value = str(value).strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def kind_for_status(status: int) -> str:
    if status in (401, 403):
        return "auth"
    if status == 408:
        return "timeout"
    if status == 429:
        return "rate_limited"
    if status >= 500:
        return "server_error"
    return "bad_request"


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen and len(seen) < 10:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _sdk_errors(name: str) -> tuple[type, ...]:
    return openai.loaded(name) + anthropic.loaded(name)


def classify(exc: BaseException, provider: str) -> ProviderError | None:
    """The ProviderError for a failure an SDK call can raise (None: not a provider failure). Only
    class names and statuses are kept: SDK messages may quote the response body, and some vendors
    echo part of the key."""
    if isinstance(exc, ProviderError):
        return exc
    for item in _chain(exc):
        if isinstance(item, UnusableAnswer):
            return ProviderError(item.kind, provider=provider, detail=item.detail)
        if isinstance(item, OperationsExhausted):
            return _OperationsSpent(provider)
        if isinstance(item, OutboundBlocked):
            return ProviderError("refused_address", provider=provider, detail=item.reason)
        if isinstance(item, DeadlineExceeded | DeadlineExceeded2):
            return ProviderError("timeout", provider=provider, detail="deadline")
        if isinstance(item, BodyTooLarge | BodyTooLarge2):
            return ProviderError("transport", provider=provider, detail="body_too_large")
        if isinstance(item, OutboundError):
            kind = "timeout" if item.reason in ("timeout", "deadline_exceeded") else "transport"
            return ProviderError(kind, provider=provider, detail=item.reason)
    status: int | None = None
    headers: Any = None
    if isinstance(exc, _sdk_errors("APIStatusError")):
        status, headers = exc.status_code, exc.response.headers
    elif isinstance(exc, gigachat.exceptions.ResponseError):
        status, headers = exc.status_code, exc.headers
    if status is not None:
        kind = kind_for_status(status)
        retry_after = _retry_after(headers) if kind == "rate_limited" else None
        return ProviderError(kind, provider=provider, status=status, retry_after=retry_after)
    timeouts = (
        *_sdk_errors("APITimeoutError"),
        httpx.TimeoutException,
        httpx2.TimeoutException,
        TimeoutError,
        asyncio.TimeoutError,
    )
    if isinstance(exc, timeouts):
        return ProviderError("timeout", provider=provider, detail=type(exc).__name__)
    connection = (*_sdk_errors("APIConnectionError"), httpx.HTTPError, httpx2.HTTPError, OSError)
    if isinstance(exc, connection):
        return ProviderError("transport", provider=provider, detail=type(exc).__name__)
    invalid = (
        *_sdk_errors("APIResponseValidationError"),
        pydantic.ValidationError,
        ValueError,
        KeyError,
        IndexError,
        AttributeError,
    )
    if isinstance(exc, invalid):  # an answer that is not the vendor's format
        return ProviderError("transport", provider=provider, detail="invalid_response")
    return None  # not a provider failure: a bug, raised as it is
