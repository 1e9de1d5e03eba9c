"""The provider layer's value types: configuration, messages, results, attempts and the one error."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from apps.platform.outbound import safe_url

OPENAI = "openai"
ANTHROPIC = "anthropic"
GIGACHAT = "gigachat"
OPENAI_COMPATIBLE = "openai_compatible"

PROVIDERS: tuple[str, ...] = (OPENAI, ANTHROPIC, GIGACHAT, OPENAI_COMPATIBLE)

# Capabilities per driver (product-decisions.md "AI providers").
_EMBEDDING_DRIVERS = frozenset({OPENAI, GIGACHAT, OPENAI_COMPATIBLE})
_SPEECH_DRIVERS = frozenset({OPENAI})

ROLES = frozenset({"system", "user", "assistant"})

# ProviderError.kind values. The first four are worth a backup: the chain moves on after them.
RETRYABLE_KINDS = frozenset({"transport", "timeout", "rate_limited", "server_error"})
ERROR_KINDS = RETRYABLE_KINDS | {"auth", "bad_request", "unsupported", "refused_address"}


def can_embed(provider: str) -> bool:
    return provider in _EMBEDDING_DRIVERS


def can_speak(provider: str) -> bool:
    return provider in _SPEECH_DRIVERS


@dataclass(frozen=True)
class ProviderConfig:
    """One credential as a driver sees it. `api_key` is secret: never in a repr, log or error.

    `options` (all optional): `scope` and `auth_url` (gigachat), `embedding_model`,
    `transcription_model`, `speech_model`, `voice`.
    """

    provider: str  # one of PROVIDERS
    api_key: str = field(repr=False)
    base_url: str | None = None
    model: str | None = None  # the driver's default model when None
    credential_id: int | None = None
    options: Mapping[str, Any] = field(default_factory=dict, repr=False)

    def __repr__(self) -> str:
        base = safe_url(self.base_url) if self.base_url else None
        return (
            f"ProviderConfig(provider={self.provider!r}, base_url={base!r}, model={self.model!r}, "
            f"credential_id={self.credential_id!r})"
        )


@dataclass(frozen=True)
class ChatMessage:
    role: str  # "system" | "user" | "assistant"
    content: str


@dataclass(frozen=True)
class AttemptInfo:
    """One provider HTTP operation tried. `outcome` is "ok" or a ProviderError kind; `operation` is
    what was asked ("chat", "embeddings", "models", "transcription", "speech", or "token": the
    GigaChat access-token exchange, which is an HTTP operation of its own)."""

    provider: str
    credential_id: int | None
    outcome: str
    status: int | None
    duration_ms: float
    operation: str = "chat"


@dataclass(frozen=True)
class Completion:
    text: str
    provider: str
    model: str
    credential_id: int | None
    latency_ms: float  # the whole call, every attempt and wait included
    usage: Mapping[str, int]  # prompt_tokens, completion_tokens, total_tokens (as reported)
    fallback_used: bool  # True when a backup (not the chain's first member) answered
    attempts: tuple[AttemptInfo, ...]  # one per provider operation tried

    @property
    def operations(self) -> int:
        """Provider HTTP operations made (the detached test's `provider_http_operations`)."""
        return len(self.attempts)


class ProviderError(Exception):
    """A provider call failed. The message names the driver, the kind and the status only: never a
    key, a token, a request or response body, or an SDK's own message.

    kind: transport | timeout | rate_limited | server_error | auth | bad_request | unsupported |
    refused_address. `exhausted` says why a chain stopped after retryable failures: "chain" (every
    member tried), "deadline" or "operations" (the budget ran out); None for a stop at once.
    """

    def __init__(
        self,
        kind: str,
        *,
        provider: str | None = None,
        status: int | None = None,
        retry_after: float | None = None,
        attempts: tuple[AttemptInfo, ...] = (),
        exhausted: str | None = None,
        detail: str | None = None,
    ) -> None:
        self.kind = kind
        self.provider = provider
        self.status = status
        self.retry_after = retry_after
        self.attempts = attempts
        self.exhausted = exhausted
        self.detail = detail  # a class name or a fixed phrase, never peer-supplied text
        super().__init__(self._message())

    def _message(self) -> str:
        parts = [f"provider call failed: {self.kind}"]
        if self.provider:
            parts.append(f"provider={self.provider}")
        if self.status is not None:
            parts.append(f"status={self.status}")
        if self.exhausted:
            parts.append(f"exhausted={self.exhausted}")
        if self.detail:
            parts.append(f"({self.detail})")
        return " ".join(parts)

    def with_attempts(self, attempts: tuple[AttemptInfo, ...], exhausted: str | None = None) -> ProviderError:
        return ProviderError(
            self.kind,
            provider=self.provider,
            status=self.status,
            retry_after=self.retry_after,
            attempts=attempts,
            exhausted=exhausted if exhausted is not None else self.exhausted,
            detail=self.detail,
        )

    @property
    def retryable(self) -> bool:
        return self.kind in RETRYABLE_KINDS
