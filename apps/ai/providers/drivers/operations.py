"""The driver operations (chat, embed, list models, transcribe, synthesize), sync and async."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from .. import answers
from ..types import ANTHROPIC, GIGACHAT, OPENAI, ChatMessage, ProviderConfig, ProviderError
from .attempts import _Call
from .clients import _anthropic_client, _openai_client
from .defaults import DEFAULT_SPEECH_MODEL, DEFAULT_TRANSCRIPTION_MODEL, DEFAULT_VOICE
from .gigachat_token import _agigachat_run, _gigachat_run
from .payloads import (
    _anthropic_answer,
    _anthropic_kwargs,
    _embedding_model,
    _gigachat_answer,
    _gigachat_payload,
    _openai_answer,
    _openai_chat_kwargs,
    _openai_create,
    _raw,
    check_provider,
)
from .sdks import T

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
