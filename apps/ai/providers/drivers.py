"""The four drivers on the vendors' official SDKs, every SDK on the guarded transport, every SDK
retry off (the chain in `calls` is the one retry policy), and the classification of their failures.

Each driver operation runs through `_Call.timed` / `_Call.atimed`, which records one `AttemptInfo`
per provider HTTP operation and turns any failure into a `ProviderError` whose text carries no
secret and no peer-supplied text. Answers are taken raw from the OpenAI and Anthropic SDKs (the
GigaChat SDK's validated models as data) and read by `answers`, never by attribute access on an
SDK's unvalidated objects.
"""

from __future__ import annotations

import asyncio
import email.utils
import hashlib
import importlib
import logging
import sys
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit

import gigachat
import gigachat.api.auth
import gigachat.exceptions
import gigachat.settings
import httpx
import httpx2
import pydantic

from apps.core.outbound import OutboundBlocked, OutboundError

from . import answers, transport
from .answers import UnusableAnswer
from .transport import BodyTooLarge, BodyTooLarge2, DeadlineExceeded, DeadlineExceeded2, OperationsExhausted
from .types import (
    ANTHROPIC,
    GIGACHAT,
    OPENAI,
    OPENAI_COMPATIBLE,
    PROVIDERS,
    AttemptInfo,
    ChatMessage,
    ProviderConfig,
    ProviderError,
)

logger = logging.getLogger("apps.ai.providers")

T = TypeVar("T")


class _ImportedOnFirstUse:
    """An SDK module imported when one of its names is first used (`importlib.import_module`: the
    import system's own lock makes the first use from several threads safe). Importing anthropic and
    openai at start-up is a large part of every process's start (each `manage.py` command, and the
    web, worker, beat and ai processes of `make run`), though most processes never call a model."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attribute: str):
        return getattr(importlib.import_module(self._name), attribute)

    def load(self) -> None:
        importlib.import_module(self._name)

    def loaded(self, attribute: str) -> tuple[type, ...]:
        """The SDK's class `attribute` when the SDK is imported, else nothing: an exception of an SDK
        that was never imported cannot exist, and importing one to classify a failure would spend
        seconds past the call's deadline."""
        module = sys.modules.get(self._name)
        return (getattr(module, attribute),) if module is not None else ()


anthropic = _ImportedOnFirstUse("anthropic")
openai = _ImportedOnFirstUse("openai")
_SDK_OF = {"openai": openai, "openai_compatible": openai, "anthropic": anthropic}


def load_sdks(chain: Sequence[ProviderConfig]) -> None:
    """Import now the SDKs the chain's drivers use (the first use in a process takes a second or two
    of CPU): a caller takes its deadline after this, so a short deadline counts the provider's time."""
    for config in chain:
        sdk = _SDK_OF.get(config.provider)
        if sdk is not None:
            sdk.load()


OPENAI_BASE_URL = "https://api.openai.com/v1"
ANTHROPIC_BASE_URL = "https://api.anthropic.com"
GIGACHAT_BASE_URL = gigachat.settings.BASE_URL
GIGACHAT_AUTH_URL = gigachat.settings.AUTH_URL
GIGACHAT_SCOPE = gigachat.settings.SCOPE

DEFAULT_MODELS = {OPENAI: "gpt-4o-mini", ANTHROPIC: "claude-sonnet-5-5", GIGACHAT: "GigaChat"}
DEFAULT_EMBEDDING_MODELS = {OPENAI: "text-embedding-3-small", GIGACHAT: "Embeddings"}
DEFAULT_TRANSCRIPTION_MODEL = "whisper-1"
DEFAULT_SPEECH_MODEL = "gpt-4o-mini-tts"
DEFAULT_VOICE = "alloy"
ANTHROPIC_DEFAULT_MAX_TOKENS = 1024
# A GigaChat access token is refreshed this long before it lapses (the SDK's own buffer).
TOKEN_EXPIRY_BUFFER_SECONDS = 60.0


class _OperationsSpent(ProviderError):
    """Internal: the operation budget ran out before anything was sent (no attempt recorded)."""

    def __init__(self, provider: str | None) -> None:
        super().__init__("timeout", provider=provider, exhausted="operations", detail="operations_exhausted")


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


# --- one walk's attempts -------------------------------------------------------------------------


class _Call:
    """The attempts of one public call (a chain walk)."""

    def __init__(self) -> None:
        self.attempts: list[AttemptInfo] = []

    def _record(self, config: ProviderConfig, operation: str, outcome: str, status: int | None, started: float):
        info = AttemptInfo(
            provider=config.provider,
            credential_id=config.credential_id,
            outcome=outcome,
            status=status,
            duration_ms=(time.monotonic() - started) * 1000,
            operation=operation,
        )
        self.attempts.append(info)
        logger.info(
            "ai provider %s %s: %s",
            config.provider,
            operation,
            outcome,
            extra={
                "ai_provider": config.provider,
                "ai_credential_id": config.credential_id,
                "ai_operation": operation,
                "ai_outcome": outcome,
                "ai_status": status,
                "ai_duration_ms": round(info.duration_ms, 1),
            },
        )

    def timed(self, config: ProviderConfig, operation: str, fn: Callable[[], T]) -> T:
        started = time.monotonic()
        try:
            result = fn()
        except Exception as exc:
            error = classify(exc, config.provider)
            if error is None:
                raise
            if not isinstance(error, _OperationsSpent):
                self._record(config, operation, error.kind, error.status, started)
            raise error from None
        self._record(config, operation, "ok", 200, started)
        return result

    async def atimed(self, config: ProviderConfig, operation: str, fn: Callable[[], Awaitable[T]]) -> T:
        started = time.monotonic()
        budget = transport.current_budget.get()
        try:
            if budget is not None:
                # Cancels the await itself at the deadline, whatever the peer does.
                async with asyncio.timeout(max(budget.remaining(), 0.0)):
                    result = await fn()
            else:
                result = await fn()
        except Exception as exc:
            error = classify(exc, config.provider)
            if error is None:
                raise
            if not isinstance(error, _OperationsSpent):
                self._record(config, operation, error.kind, error.status, started)
            raise error from None
        self._record(config, operation, "ok", 200, started)
        return result


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


def _anthropic_client(config: ProviderConfig, *, is_async: bool) -> Any:
    base = _base_url(config)
    key = _client_key("anthropic", base, config)

    def build() -> Any:
        if is_async:
            return anthropic.AsyncAnthropic(
                api_key=config.api_key, base_url=base, max_retries=0, http_client=transport.async_httpx2_client()
            )
        return anthropic.Anthropic(
            api_key=config.api_key, base_url=base, max_retries=0, http_client=transport.httpx2_client()
        )

    if is_async:
        with _cache_lock:
            per_loop = _async_clients.setdefault(asyncio.get_running_loop(), OrderedDict())
            return _cached(per_loop, key, build)
    with _cache_lock:
        return _cached(_sync_clients, key, build)


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


# --- requests and answers, per driver ----------------------------------------------------------------


def _model(config: ProviderConfig) -> str:
    if config.model:
        return config.model
    default = DEFAULT_MODELS.get(config.provider)
    if default is None:
        raise ProviderError("bad_request", provider=config.provider, detail="model_required")
    return default


def _embedding_model(config: ProviderConfig) -> str:
    explicit = config.options.get("embedding_model")
    if explicit:
        return str(explicit)
    default = DEFAULT_EMBEDDING_MODELS.get(config.provider)
    if default is not None:
        return default
    return _model(config)


def _openai_chat_kwargs(
    config: ProviderConfig, messages: Sequence[ChatMessage], max_tokens: int | None, temperature: float | None
) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "model": _model(config),
        "messages": [{"role": m.role, "content": m.content} for m in messages],
    }
    if max_tokens is not None:
        # The vendor's current name; compatible servers (Ollama, vLLM, YandexGPT...) know max_tokens.
        kwargs["max_completion_tokens" if config.provider == OPENAI else "max_tokens"] = max_tokens
    if temperature is not None:
        kwargs["temperature"] = temperature
    return kwargs


def _openai_create(client: Any, kwargs: dict[str, Any]) -> Any:
    """`client.chat.completions.create(**kwargs)` through the SDK's documented `client.post` for
    requests it has no typed method for: the same request (path, JSON body, auth, errors; the raw
    response, read by `answers.openai_chat`), without the SDK's parameter transform. That transform
    walks each message through the union of every message TypedDict, a large share of the AI
    operator's CPU per answer; our messages are already the wire's plain `{role, content}` strings,
    which it leaves unchanged. Sync clients only: the async chat (the detached test) keeps `create`.

    Auth as `create` sends it: the bearer key only (the SDK's default security would fall back to an
    admin key taken from OPENAI_ADMIN_KEY, the operator's, for a credential without a key)."""
    return client.post(
        "/chat/completions",
        body=kwargs,
        cast_to=httpx2.Response,
        options={"security": {"bearer_auth": True}},
    )


def _raw(response: Any) -> dict[str, Any]:
    """The JSON object of a raw SDK response (`cast_to=httpx2.Response`, or `with_raw_response`'s)."""
    return answers.json_of(getattr(response, "http_response", response))


def _openai_answer(response: Any, model: str) -> tuple[str, str, dict[str, int]]:
    return answers.openai_chat(_raw(response), model)


def _anthropic_kwargs(
    config: ProviderConfig, messages: Sequence[ChatMessage], max_tokens: int | None, temperature: float | None
) -> dict[str, Any]:
    system = "\n\n".join(m.content for m in messages if m.role == "system")
    kwargs: dict[str, Any] = {
        "model": _model(config),
        "max_tokens": max_tokens or ANTHROPIC_DEFAULT_MAX_TOKENS,
        "messages": [{"role": m.role, "content": m.content} for m in messages if m.role != "system"],
    }
    if system:
        kwargs["system"] = system
    # `temperature` is not sent: the Messages API of the pinned SDK no longer takes it.
    return kwargs


def _anthropic_answer(response: Any, model: str) -> tuple[str, str, dict[str, int]]:
    return answers.anthropic_chat(_raw(response), model)


def _gigachat_payload(
    config: ProviderConfig, messages: Sequence[ChatMessage], max_tokens: int | None, temperature: float | None
) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "model": _model(config),
        "messages": [{"role": m.role, "content": m.content} for m in messages],
    }
    if max_tokens is not None:
        payload["max_tokens"] = max_tokens
    if temperature is not None:
        payload["temperature"] = temperature
    return payload


def _gigachat_answer(response: Any, model: str) -> tuple[str, str, dict[str, int]]:
    # The GigaChat SDK validated the answer into its models: read back as data, by the same reader.
    return answers.openai_chat(response.model_dump(), model)


def check_provider(config: ProviderConfig) -> None:
    if config.provider not in PROVIDERS:
        raise ProviderError("unsupported", provider=None, detail="unknown_driver")
    if config.provider == OPENAI_COMPATIBLE and not config.base_url:
        raise ProviderError("bad_request", provider=config.provider, detail="base_url_required")


# --- operations (sync) --------------------------------------------------------------------------------


def chat(
    call: _Call,
    config: ProviderConfig,
    messages: Sequence[ChatMessage],
    max_tokens: int | None,
    temperature: float | None,
) -> tuple[str, str, dict[str, int]]:
    check_provider(config)
    if config.provider == ANTHROPIC:
        kwargs = _anthropic_kwargs(config, messages, max_tokens, temperature)
        client = _anthropic_client(config, is_async=False)
        create = client.messages.with_raw_response.create
        return call.timed(config, "chat", lambda: _anthropic_answer(create(**kwargs), kwargs["model"]))
    if config.provider == GIGACHAT:
        payload = _gigachat_payload(config, messages, max_tokens, temperature)
        return _gigachat_run(
            call, config, "chat", lambda client: _gigachat_answer(client.chat(payload), payload["model"])
        )
    kwargs = _openai_chat_kwargs(config, messages, max_tokens, temperature)
    client = _openai_client(config, is_async=False)
    return call.timed(config, "chat", lambda: _openai_answer(_openai_create(client, kwargs), kwargs["model"]))


def embed(call: _Call, config: ProviderConfig, texts: Sequence[str]) -> list[list[float]]:
    check_provider(config)
    model = _embedding_model(config)
    if config.provider == GIGACHAT:
        return _gigachat_run(
            call,
            config,
            "embeddings",
            lambda c: answers.vectors(c.embeddings(list(texts), model=model).model_dump(), len(texts)),
        )
    if config.provider == ANTHROPIC:
        raise ProviderError("unsupported", provider=config.provider, detail="no_embeddings")
    client = _openai_client(config, is_async=False)
    # Floats asked for explicitly: the SDK's default (base64) is decoded by its parser, which a raw
    # answer skips, and compatible servers may not know it.
    create = client.embeddings.with_raw_response.create
    return call.timed(
        config,
        "embeddings",
        lambda: answers.vectors(_raw(create(model=model, input=list(texts), encoding_format="float")), len(texts)),
    )


def list_models(call: _Call, config: ProviderConfig) -> list[dict[str, Any]]:
    check_provider(config)
    if config.provider == GIGACHAT:
        return _gigachat_run(call, config, "models", lambda client: answers.models(client.get_models().model_dump()))
    if config.provider == ANTHROPIC:
        client = _anthropic_client(config, is_async=False)
        return call.timed(
            config, "models", lambda: answers.models(_raw(client.models.with_raw_response.list(limit=1000)))
        )
    client = _openai_client(config, is_async=False)
    return call.timed(config, "models", lambda: answers.models(_raw(client.models.with_raw_response.list())))


def transcribe(call: _Call, config: ProviderConfig, audio: bytes, filename: str, language: str | None = None) -> str:
    check_provider(config)
    if config.provider != OPENAI:
        raise ProviderError("unsupported", provider=config.provider, detail="no_speech")
    client = _openai_client(config, is_async=False)
    model = str(config.options.get("transcription_model") or DEFAULT_TRANSCRIPTION_MODEL)
    extra = {"language": language} if language else {}
    return call.timed(
        config,
        "transcription",
        lambda: answers.transcript(
            _raw(client.audio.transcriptions.with_raw_response.create(model=model, file=(filename, audio), **extra))
        ),
    )


def synthesize(
    call: _Call, config: ProviderConfig, text: str, voice: str | None, response_format: str | None = None
) -> bytes:
    check_provider(config)
    if config.provider != OPENAI:
        raise ProviderError("unsupported", provider=config.provider, detail="no_speech")
    client = _openai_client(config, is_async=False)
    model = str(config.options.get("speech_model") or DEFAULT_SPEECH_MODEL)
    chosen = voice or str(config.options.get("voice") or DEFAULT_VOICE)
    extra = {"response_format": response_format} if response_format else {}
    return call.timed(
        config,
        "speech",
        lambda: bytes(client.audio.speech.create(model=model, voice=chosen, input=text, **extra).content),
    )


# --- operations (async) ------------------------------------------------------------------------------


async def _aanswer(pending: Awaitable[Any], answer: Callable[[Any, str], T], model: str) -> T:
    return answer(await pending, model)


async def achat(
    call: _Call,
    config: ProviderConfig,
    messages: Sequence[ChatMessage],
    max_tokens: int | None,
    temperature: float | None,
) -> tuple[str, str, dict[str, int]]:
    check_provider(config)
    if config.provider == ANTHROPIC:
        kwargs = _anthropic_kwargs(config, messages, max_tokens, temperature)
        client = _anthropic_client(config, is_async=True)
        create = client.messages.with_raw_response.create
        return await call.atimed(config, "chat", lambda: _aanswer(create(**kwargs), _anthropic_answer, kwargs["model"]))
    if config.provider == GIGACHAT:
        payload = _gigachat_payload(config, messages, max_tokens, temperature)
        return await _agigachat_run(
            call, config, "chat", lambda client: _aanswer(client.achat(payload), _gigachat_answer, payload["model"])
        )
    kwargs = _openai_chat_kwargs(config, messages, max_tokens, temperature)
    client = _openai_client(config, is_async=True)
    create = client.chat.completions.with_raw_response.create
    return await call.atimed(config, "chat", lambda: _aanswer(create(**kwargs), _openai_answer, kwargs["model"]))
