"""The one retry policy: walk the chain, fall back only on retryable failures, within one budget.

- A member that fails with a transport error, a timeout, a 429 or a 5xx hands over to the next one;
  an auth or bad-request failure (or a refused address, or an unsupported operation) stops the walk
  at once: a backup must not hide a misconfigured credential.
- After a whole pass, the members that failed retryably get one more try (MAX_PASSES = 2), each not
  before its 429's Retry-After (else BACKOFF_SECONDS) has passed, and only when that moment falls
  within the deadline.
- `deadline` (an absolute time.monotonic() instant) bounds everything, waits included;
  `max_operations` bounds the provider HTTP operations (a GigaChat token exchange is one).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from django.conf import settings

from apps.platform import metrics
from apps.platform.outbound import OutboundBlocked, OutboundError, ai_private_hosts, check_url, pin_address

from . import drivers, transport
from .drivers.attempts import _Call
from .drivers.defaults import _OperationsSpent
from .transport import Budget
from .types import (
    ROLES,
    ChatMessage,
    Completion,
    ProviderConfig,
    ProviderError,
    can_embed,
)

T = TypeVar("T")

MAX_PASSES = 2
BACKOFF_SECONDS = 0.5
DEFAULT_DEADLINE_SECONDS = 60.0
DEFAULT_MAX_OPERATIONS = 10
# One operation waits at most this long for a connect or a read, so a hung member leaves time for its
# backups (under a 45 s deadline: 20 s for the first, the rest for the next ones).
DEFAULT_ATTEMPT_TIMEOUT_SECONDS = 20.0


def _budget(deadline: float | None, max_operations: int) -> Budget:
    attempt = float(getattr(settings, "AI_PROVIDER_ATTEMPT_TIMEOUT_SECONDS", DEFAULT_ATTEMPT_TIMEOUT_SECONDS))
    return Budget(_deadline(deadline), max_operations, attempt_timeout=attempt)


def _deadline(deadline: float | None) -> float:
    if deadline is not None:
        return deadline
    seconds = float(getattr(settings, "AI_PROVIDER_DEADLINE_SECONDS", DEFAULT_DEADLINE_SECONDS))
    return time.monotonic() + seconds


class _Walk:
    """The state of one chain walk, shared by the sync and async loops."""

    def __init__(self, chain: Sequence[ProviderConfig], budget: Budget) -> None:
        self.budget = budget
        self.call = _Call()
        self.pending: list[tuple[int, ProviderConfig, float]] = [(i, c, 0.0) for i, c in enumerate(chain)]
        self.failed: list[tuple[int, ProviderConfig, float]] = []
        self.last_error: ProviderError | None = None
        self.exhausted: str | None = None
        self.skipped = False  # a member's Retry-After fell past the deadline
        self.rate_limited_until: list[float] = []

    def next_pass(self) -> bool:
        """Queue the retryable failures for another pass; False when nothing is left to try."""
        self.pending, self.failed = self.failed, []
        return bool(self.pending)

    def stopped(self) -> bool:
        """True when the budget allows no further operation at all."""
        if self.budget.operations >= self.budget.max_operations:
            self.exhausted = "operations"
        elif time.monotonic() >= self.budget.deadline:
            self.exhausted = "deadline"
        return self.exhausted is not None

    def wait_for(self, not_before: float) -> float | None:
        """Seconds to wait before trying a member, or None to skip it (its moment is past the deadline)."""
        now = time.monotonic()
        wait = max(0.0, not_before - now)
        if now + wait >= self.budget.deadline:
            self.skipped = True
            return None
        return wait

    def failure(self, index: int, config: ProviderConfig, error: ProviderError) -> None:
        if isinstance(error, _OperationsSpent):
            self.exhausted = "operations"
            return
        metrics.count_provider_error(driver=config.provider, kind=error.kind)
        self.last_error = error
        if not error.retryable:
            raise error.with_attempts(tuple(self.call.attempts))
        wait = BACKOFF_SECONDS
        if error.kind == "rate_limited" and error.retry_after is not None:
            wait = error.retry_after
            self.rate_limited_until.append(time.monotonic() + wait)
        self.failed.append((index, config, time.monotonic() + wait))

    def final_error(self) -> ProviderError:
        attempts = tuple(self.call.attempts)
        exhausted = self.exhausted or ("deadline" if self.skipped else "chain")
        now = time.monotonic()
        # The soonest moment a rate-limiting member said it would answer again (for a Retry-After).
        retry_after = min((max(0.0, until - now) for until in self.rate_limited_until), default=None)
        error = self.last_error
        if error is None:
            return ProviderError("timeout", attempts=attempts, exhausted=exhausted, detail=f"{exhausted}_exhausted")
        return ProviderError(
            error.kind,
            provider=error.provider,
            status=error.status,
            retry_after=retry_after,
            attempts=attempts,
            exhausted=exhausted,
            detail=error.detail,
        )


def _run(
    chain: Sequence[ProviderConfig], budget: Budget, step: Callable[[_Call, ProviderConfig], T]
) -> tuple[T, int, _Call]:
    walk = _Walk(chain, budget)
    token = transport.current_budget.set(budget)
    try:
        for _ in range(MAX_PASSES):
            for index, config, not_before in walk.pending:
                if walk.stopped():
                    break
                wait = walk.wait_for(not_before)
                if wait is None:
                    continue
                if wait:
                    time.sleep(wait)
                try:
                    return step(walk.call, config), index, walk.call
                except ProviderError as error:
                    walk.failure(index, config, error)
            if walk.exhausted or not walk.next_pass():
                break
    finally:
        transport.current_budget.reset(token)
    raise walk.final_error()


async def _arun(
    chain: Sequence[ProviderConfig], budget: Budget, step: Callable[[_Call, ProviderConfig], Awaitable[T]]
) -> tuple[T, int, _Call]:
    walk = _Walk(chain, budget)
    token = transport.current_budget.set(budget)
    try:
        for _ in range(MAX_PASSES):
            for index, config, not_before in walk.pending:
                if walk.stopped():
                    break
                wait = walk.wait_for(not_before)
                if wait is None:
                    continue
                if wait:
                    await asyncio.sleep(wait)
                try:
                    return await step(walk.call, config), index, walk.call
                except ProviderError as error:
                    walk.failure(index, config, error)
            if walk.exhausted or not walk.next_pass():
                break
    finally:
        transport.current_budget.reset(token)
    raise walk.final_error()


def _check_chain(chain: Sequence[ProviderConfig]) -> None:
    if not chain:
        raise ValueError("the chain needs at least one provider")


def _check_messages(messages: Sequence[ChatMessage]) -> None:
    if not messages:
        raise ValueError("at least one message is needed")
    for message in messages:
        if message.role not in ROLES:
            raise ValueError(f"unknown role {message.role!r}")


def _completion(result: tuple[str, str, dict[str, int]], index: int, call: _Call, chain, started) -> Completion:
    text, model, usage = result
    config = chain[index]
    return Completion(
        text=text,
        provider=config.provider,
        model=model,
        credential_id=config.credential_id,
        latency_ms=(time.monotonic() - started) * 1000,
        usage=usage,
        fallback_used=index > 0,
        attempts=tuple(call.attempts),
    )


def complete(
    chain: Sequence[ProviderConfig],
    messages: Sequence[ChatMessage],
    *,
    max_tokens: int | None = None,
    temperature: float | None = None,
    deadline: float | None = None,
    max_operations: int = DEFAULT_MAX_OPERATIONS,
) -> Completion:
    """A chat completion from the first member of `chain` that answers (see the module text)."""
    _check_chain(chain)
    _check_messages(messages)
    started = time.monotonic()
    budget = _budget(deadline, max_operations)
    result, index, call = _run(
        chain, budget, lambda call, config: drivers.chat(call, config, messages, max_tokens, temperature)
    )
    return _completion(result, index, call, chain, started)


async def acomplete(
    chain: Sequence[ProviderConfig],
    messages: Sequence[ChatMessage],
    *,
    max_tokens: int | None = None,
    temperature: float | None = None,
    deadline: float | None = None,
    max_operations: int = DEFAULT_MAX_OPERATIONS,
) -> Completion:
    """`complete` on the SDKs' async clients over the async guarded transport: the event loop is
    never blocked, and the deadline cancels the await itself."""
    _check_chain(chain)
    _check_messages(messages)
    started = time.monotonic()
    budget = _budget(deadline, max_operations)
    result, index, call = await _arun(
        chain, budget, lambda call, config: drivers.achat(call, config, messages, max_tokens, temperature)
    )
    return _completion(result, index, call, chain, started)


def embed(
    chain: Sequence[ProviderConfig],
    texts: Sequence[str],
    *,
    deadline: float | None = None,
    max_operations: int = DEFAULT_MAX_OPERATIONS,
) -> list[list[float]]:
    """One vector per text, from the first member able to embed that answers; drivers that cannot
    embed are skipped (none able: ProviderError kind "unsupported")."""
    _check_chain(chain)
    able = [config for config in chain if can_embed(config.provider)]
    if not able:
        raise ProviderError("unsupported", provider=chain[0].provider, detail="no_embeddings")
    if not texts:
        return []
    budget = _budget(deadline, max_operations)
    vectors, _index, _call = _run(able, budget, lambda call, config: drivers.embed(call, config, texts))
    return vectors


def _single(config: ProviderConfig, deadline: float | None, step: Callable[[_Call, ProviderConfig], T]) -> T:
    budget = _budget(deadline, DEFAULT_MAX_OPERATIONS)
    result, _index, _call = _run([config], budget, step)
    return result


def check_base_url(url: str) -> None:
    """Refuse a credential's `base_url` at save time through the one address policy: https only, no
    userinfo, a host whose every resolved address is allowed (loopback only with
    OUTBOUND_ALLOW_LOOPBACK), with the AI_PRIVATE_HOSTS exception (listed ranges, `http://` to a
    listed host, on a listed port). Raises ProviderError kind "bad_request" (detail
    "base_url_query": a query or fragment, which would swallow the paths the drivers append),
    "refused_address" (detail: the policy's reason) or "transport" (detail "resolve_failed": the
    name does not resolve). Resolves the name (blocking); sends nothing."""
    if "?" in url or "#" in url:
        raise ProviderError("bad_request", detail="base_url_query")
    private = ai_private_hosts()
    try:
        parts = check_url(url, private_hosts=private)
        port = parts.port or (80 if parts.scheme.lower() == "http" else 443)
        pin_address(parts.hostname or "", port, private_hosts=private)
    except OutboundBlocked as exc:
        raise ProviderError("refused_address", detail=exc.reason) from None
    except OutboundError as exc:
        raise ProviderError("transport", detail=exc.reason) from None


def list_models(config: ProviderConfig, *, deadline: float | None = None) -> list[dict[str, Any]]:
    """The models the credential can use: [{"id", "owned_by"?, "display_name"?}] (one live call)."""
    return _single(config, deadline, drivers.list_models)


def transcribe(
    config: ProviderConfig,
    audio: bytes,
    *,
    filename: str,
    language: str | None = None,
    deadline: float | None = None,
) -> str:
    """Speech to text (openai only; other drivers: ProviderError kind "unsupported")."""
    return _single(config, deadline, lambda call, c: drivers.transcribe(call, c, audio, filename, language))


def synthesize(
    config: ProviderConfig,
    text: str,
    *,
    voice: str | None = None,
    response_format: str | None = None,
    deadline: float | None = None,
) -> bytes:
    """Text to speech, the audio bytes (openai only; other drivers: ProviderError "unsupported")."""
    return _single(config, deadline, lambda call, c: drivers.synthesize(call, c, text, voice, response_format))
