"""The requests and the answers of each driver: the SDK call's arguments and the raw answer read by
`answers`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx2

from .. import answers
from ..types import OPENAI, OPENAI_COMPATIBLE, PROVIDERS, ChatMessage, ProviderConfig, ProviderError
from .defaults import ANTHROPIC_DEFAULT_MAX_TOKENS, DEFAULT_EMBEDDING_MODELS, DEFAULT_MODELS

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
