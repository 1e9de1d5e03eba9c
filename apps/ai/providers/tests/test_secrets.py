"""Secrets (API keys, GigaChat authorization keys and access tokens) never appear in an exception's
text, an attempt, a repr, or any log record, even when the vendor echoes them in an error body."""

from __future__ import annotations

import asyncio
import json
import logging
import traceback

import pytest

from apps.ai.providers import PROVIDERS, ChatMessage, ProviderError, acomplete, complete, list_models
from tests.llm_fake import Reply, closed, server_error

HI = [ChatMessage("user", "hi")]


def _texts_of(caplog) -> str:
    parts = []
    for record in caplog.records:
        parts.append(record.getMessage())
        parts.append(repr(record.__dict__))
        if record.exc_info:
            parts.append("".join(traceback.format_exception(*record.exc_info)))
    return "\n".join(parts)


def _assert_clean(secret: str, error: BaseException, caplog) -> None:
    rendered = "".join(traceback.format_exception(error))
    for text in (str(error), repr(error), repr(getattr(error, "attempts", ())), rendered, _texts_of(caplog)):
        assert secret not in text


@pytest.mark.parametrize("flavor", PROVIDERS)
@pytest.mark.parametrize("status", [400, 401, 429, 500])
def test_key_echoed_by_the_vendor_never_leaks(llm_fake, caplog, flavor, status):
    caplog.set_level(logging.DEBUG)
    fake = llm_fake(flavor)
    echo = json.dumps({"error": {"message": f"Incorrect API key provided: {fake.api_key}"}}).encode()
    fake.script(*[Reply(status, body=echo)] * 2)
    config = fake.config(credential_id=9)
    assert fake.api_key not in repr(config)
    with pytest.raises(ProviderError) as failure:
        complete([config], HI, max_operations=4)
    _assert_clean(fake.api_key, failure.value, caplog)
    assert failure.value.status == status


def test_gigachat_access_token_never_leaks(llm_fake, caplog):
    caplog.set_level(logging.DEBUG)
    fake = llm_fake("gigachat")
    complete([fake.config()], HI)
    [token] = fake.issued_tokens
    fake.script(closed(), closed())
    with pytest.raises(ProviderError) as failure:
        complete([fake.config()], HI)
    for secret in (token, fake.api_key):
        _assert_clean(secret, failure.value, caplog)


@pytest.mark.parametrize("flavor", PROVIDERS)
def test_successful_calls_log_no_secret(llm_fake, caplog, flavor):
    caplog.set_level(logging.DEBUG)
    fake = llm_fake(flavor)
    complete([fake.config()], HI)
    asyncio.run(acomplete([fake.config()], HI))
    list_models(fake.config())
    logged = _texts_of(caplog)
    assert fake.api_key not in logged
    for token in fake.issued_tokens:
        assert token not in logged
    assert "ai provider" in logged  # the attempts are logged, without secrets


def test_exception_does_not_chain_the_sdk_error(llm_fake):
    fake = llm_fake("openai")
    fake.script(server_error(500), server_error(500))
    with pytest.raises(ProviderError) as failure:
        complete([fake.config()], HI)
    assert failure.value.__cause__ is None
