"""GigaChat's access token (fetched, cached until shortly before it lapses, forgotten on a 401) and the
run of one GigaChat operation with it."""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

import gigachat
import gigachat.api.auth
import gigachat.exceptions
import gigachat.settings

from .. import transport
from ..types import ProviderConfig, ProviderError
from .attempts import _Call
from .clients import _base_url, _digest
from .defaults import GIGACHAT_AUTH_URL, GIGACHAT_SCOPE, TOKEN_EXPIRY_BUFFER_SECONDS
from .sdks import T

# --- GigaChat: the access token ----------------------------------------------------------------------

_tokens: dict[str, tuple[str, float]] = {}  # digest -> (access token, expires at, epoch seconds)
_tokens_lock = threading.Lock()


def _gigachat_auth_url(config: ProviderConfig) -> str:
    explicit = config.options.get("auth_url")
    if explicit:
        return str(explicit)
    if config.base_url:
        # A proxy or a fake standing in for the vendor serves the token exchange at its origin.
        parts = urlsplit(config.base_url)
        return f"{parts.scheme}://{parts.netloc}/api/v2/oauth"
    return GIGACHAT_AUTH_URL


def _gigachat_token_key(config: ProviderConfig) -> str:
    scope = str(config.options.get("scope") or GIGACHAT_SCOPE)
    return _digest(f"{_gigachat_auth_url(config)}\0{scope}\0{config.api_key}")


def _cached_token(config: ProviderConfig) -> str | None:
    entry = _tokens.get(_gigachat_token_key(config))
    if entry is None or entry[1] - TOKEN_EXPIRY_BUFFER_SECONDS <= time.time():
        return None
    return entry[0]


def _store_token(config: ProviderConfig, token: Any) -> str:
    expires_at = float(token.expires_at)
    if expires_at > 1e11:  # GigaChat answers in milliseconds
        expires_at /= 1000
    with _tokens_lock:
        _tokens[_gigachat_token_key(config)] = (token.access_token, expires_at)
    return token.access_token


def forget_token(config: ProviderConfig) -> None:
    with _tokens_lock:
        _tokens.pop(_gigachat_token_key(config), None)


def clear_token_cache() -> None:
    """Drop every cached GigaChat access token (tests)."""
    with _tokens_lock:
        _tokens.clear()


def _gigachat_token_args(config: ProviderConfig) -> dict[str, str]:
    return {
        "url": _gigachat_auth_url(config),
        "credentials": config.api_key,
        "scope": str(config.options.get("scope") or GIGACHAT_SCOPE),
    }


def _gigachat_client(config: ProviderConfig, access_token: str, *, is_async: bool) -> Any:
    base = _base_url(config)
    cls = gigachat.GigaChatAsyncClient if is_async else gigachat.GigaChatSyncClient
    client = cls(base_url=base, access_token=access_token, max_retries=0, timeout=60.0)
    # The token is ours to exchange (cached across calls, counted as an operation): the SDK must not
    # exchange one itself, whatever GIGACHAT_* environment variables say.
    client._settings.credentials = None  # noqa: SLF001
    client._settings.user = None  # noqa: SLF001
    client._settings.password = None  # noqa: SLF001
    # SECURITY: the SDK builds its own httpx clients on first use; ours (on the guarded transport)
    # are installed first. Fail closed if the SDK's internals move.
    if is_async:
        guarded = transport.async_httpx_client(base_url=base)
        client._aclient_instance = guarded  # noqa: SLF001
        client._auth_aclient_instance = guarded  # noqa: SLF001
        installed = client._aclient is guarded  # noqa: SLF001
    else:
        guarded = transport.httpx_client(base_url=base)
        client._client_instance = guarded  # noqa: SLF001
        client._auth_client_instance = guarded  # noqa: SLF001
        installed = client._client is guarded  # noqa: SLF001
    if not installed or client._use_auth:  # noqa: SLF001
        raise RuntimeError("gigachat SDK internals changed: the guarded transport cannot be installed")
    return client


def _gigachat_run(call: _Call, config: ProviderConfig, operation: str, fn: Callable[[Any], T]) -> T:
    token = _cached_token(config)
    fresh = token is None
    if token is None:
        access = call.timed(
            config,
            "token",
            lambda: gigachat.api.auth.auth_sync(transport.httpx_client(), **_gigachat_token_args(config)),
        )
        token = _store_token(config, access)
    try:
        return call.timed(config, operation, lambda: fn(_gigachat_client(config, token, is_async=False)))
    except ProviderError as error:
        if error.status != 401 or fresh:
            raise
    # The cached token was refused (revoked, or lapsed early): exchange a new one, once.
    forget_token(config)
    access = call.timed(
        config, "token", lambda: gigachat.api.auth.auth_sync(transport.httpx_client(), **_gigachat_token_args(config))
    )
    token = _store_token(config, access)
    return call.timed(config, operation, lambda: fn(_gigachat_client(config, token, is_async=False)))


async def _agigachat_run(call: _Call, config: ProviderConfig, operation: str, fn: Callable[[Any], Awaitable[T]]) -> T:
    async def exchange() -> str:
        access = await call.atimed(
            config,
            "token",
            lambda: gigachat.api.auth.auth_async(transport.async_httpx_client(), **_gigachat_token_args(config)),
        )
        return _store_token(config, access)

    token = _cached_token(config)
    fresh = token is None
    if token is None:
        token = await exchange()
    try:
        return await call.atimed(config, operation, lambda: fn(_gigachat_client(config, token, is_async=True)))
    except ProviderError as error:
        if error.status != 401 or fresh:
            raise
    forget_token(config)
    token = await exchange()
    return await call.atimed(config, operation, lambda: fn(_gigachat_client(config, token, is_async=True)))
