"""The SDK clients, on the guarded transport with every SDK retry off, cached per driver, base URL and key."""

from __future__ import annotations

import asyncio
import hashlib
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from .. import transport
from ..types import ANTHROPIC, GIGACHAT, OPENAI, ProviderConfig, ProviderError
from .defaults import ANTHROPIC_BASE_URL, GIGACHAT_BASE_URL, OPENAI_BASE_URL
from .sdks import anthropic, openai

# --- SDK clients -------------------------------------------------------------------------------------
# Kept per (driver, base_url, key) so connections and the SDKs' set-up are reused; async ones per event
# loop. Keys are held as digests in the cache key (the clients themselves hold the key, in memory).

_CACHE_SIZE = 64
_cache_lock = threading.Lock()
_sync_clients: OrderedDict[tuple, Any] = OrderedDict()
_async_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, OrderedDict[tuple, Any]] = (
    weakref.WeakKeyDictionary()
)


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _cached(cache: OrderedDict[tuple, Any], key: tuple, build: Callable[[], Any]) -> Any:
    client = cache.get(key)
    if client is not None:
        cache.move_to_end(key)
        return client
    client = build()
    cache[key] = client
    while len(cache) > _CACHE_SIZE:
        cache.popitem(last=False)
    return client


def _client_key(driver: str, base_url: str, config: ProviderConfig) -> tuple:
    return (driver, base_url, _digest(config.api_key), transport._ca_key())


VENDOR_BASE_URLS = {OPENAI: OPENAI_BASE_URL, ANTHROPIC: ANTHROPIC_BASE_URL, GIGACHAT: GIGACHAT_BASE_URL}


def endpoint_of(provider: str, base_url: str | None) -> str | None:
    """The address a credential's calls go to: its `base_url`, else its vendor's; None for a
    compatible-API credential without one (it cannot be called)."""
    if base_url:
        return base_url.rstrip("/")
    return VENDOR_BASE_URLS.get(provider)


def _base_url(config: ProviderConfig) -> str:
    endpoint = endpoint_of(config.provider, config.base_url)
    if endpoint is None:
        raise ProviderError("bad_request", provider=config.provider, detail="base_url_required")
    if "?" in endpoint or "#" in endpoint:
        # The SDKs append the API's paths to base_url; a query or fragment would swallow them.
        raise ProviderError("bad_request", provider=config.provider, detail="base_url_query")
    return endpoint


def _openai_client(config: ProviderConfig, *, is_async: bool) -> Any:
    base = _base_url(config)
    key = _client_key("openai", base, config)

    def build() -> Any:
        cls = openai.AsyncOpenAI if is_async else openai.OpenAI
        http_client = transport.async_httpx2_client() if is_async else transport.httpx2_client()
        client = cls(api_key=config.api_key, base_url=base, max_retries=0, http_client=http_client)
        # The SDK fills these from OPENAI_ORG_ID / OPENAI_PROJECT_ID: never send the operator's to a
        # tenant's endpoint.
        client.organization = None
        client.project = None
        return client

    if is_async:
        with _cache_lock:
            per_loop = _async_clients.setdefault(asyncio.get_running_loop(), OrderedDict())
            return _cached(per_loop, key, build)
    with _cache_lock:
        return _cached(_sync_clients, key, build)


# The version of Anthropic's API the drivers speak (request and answer shapes), sent on every call
# rather than the SDK's default, so an SDK upgrade cannot move it.
ANTHROPIC_API_VERSION = "2023-06-01"


def _anthropic_headers(config: ProviderConfig) -> dict[str, Any]:
    """Anthropic's API takes an API key in `x-api-key` (a bearer token is its OAuth path, which
    refuses an API key); the pinned SDK sends `api_key` as a bearer token, so the key goes in
    `x-api-key` and the SDK's `Authorization` is left out."""
    return {"x-api-key": config.api_key, "anthropic-version": ANTHROPIC_API_VERSION, "Authorization": anthropic.omit}


def _anthropic_client(config: ProviderConfig, *, is_async: bool) -> Any:
    base = _base_url(config)
    key = _client_key("anthropic", base, config)

    def build() -> Any:
        cls = anthropic.AsyncAnthropic if is_async else anthropic.Anthropic
        http_client = transport.async_httpx2_client() if is_async else transport.httpx2_client()
        # api_key is passed too: without an explicit credential the SDK reads the operator's
        # ANTHROPIC_* environment and profiles, which must never reach a tenant's endpoint.
        return cls(
            api_key=config.api_key,
            base_url=base,
            max_retries=0,
            http_client=http_client,
            default_headers=_anthropic_headers(config),
        )

    if is_async:
        with _cache_lock:
            per_loop = _async_clients.setdefault(asyncio.get_running_loop(), OrderedDict())
            return _cached(per_loop, key, build)
    with _cache_lock:
        return _cached(_sync_clients, key, build)
