"""Odd provider answers are provider failures: every driver, the loopback fakes sending the shapes
gateways and broken vendors send (tests.llm_fake.odd_answer), bodies decoded by their charset."""

import asyncio
import gzip
import json

import pytest

from apps.ai.providers import ChatMessage, ProviderError, acomplete, complete, embed
from tests.llm_fake import FLAVORS, ODD_SHAPES, Reply, odd_answer, ok

MESSAGES = [ChatMessage("user", "Hello")]
# The operations of one call (GigaChat's token exchange is one of its own).
ONE_CALL = {"openai": 1, "openai_compatible": 1, "anthropic": 1, "gigachat": 2}


@pytest.mark.parametrize("flavor", FLAVORS)
@pytest.mark.parametrize("shape", ODD_SHAPES)
def test_an_unusable_chat_answer_is_a_provider_failure(llm_fake, flavor, shape):
    fake = llm_fake(flavor)
    fake.script(odd_answer(flavor, shape))
    with pytest.raises(ProviderError) as failure:
        complete([fake.config()], MESSAGES, max_operations=ONE_CALL[flavor])
    expected = "server_error" if shape == "error_only" else "transport"
    assert failure.value.kind == expected
    assert failure.value.detail in ("invalid_response", "body_too_large", "error_body")


@pytest.mark.parametrize("shape", ODD_SHAPES)
def test_an_unusable_answer_fails_the_async_chat_too(llm_fake, shape):
    fake = llm_fake("openai")
    fake.script(odd_answer("openai", shape))
    with pytest.raises(ProviderError):
        asyncio.run(acomplete([fake.config()], MESSAGES, max_operations=1))


def test_an_unusable_answer_moves_the_chain_to_the_backup(llm_fake):
    broken, backup = llm_fake("openai_compatible"), llm_fake("openai", text="Backup here.")
    broken.script(odd_answer("openai_compatible", "error_only"), odd_answer("openai_compatible", "error_only"))
    answer = complete([broken.config(), backup.config()], MESSAGES)
    assert answer.text == "Backup here." and answer.fallback_used


@pytest.mark.parametrize("flavor", ["openai", "gigachat", "openai_compatible"])
@pytest.mark.parametrize(
    "body",
    [
        {"object": "list", "data": None},
        {"object": "list", "data": [{"index": 0, "embedding": "AAAA"}]},
        {"object": "list", "data": [{"index": 0, "embedding": [1.0, {"x": 1}]}]},
        {"object": "list", "data": [{"index": 5, "embedding": [1.0]}]},
        {"object": "list", "data": []},
        {"error": "quota"},
    ],
    ids=["null", "string", "object_in_vector", "bad_index", "too_few", "error_only"],
)
def test_an_unusable_embedding_answer_is_a_provider_failure(llm_fake, flavor, body):
    fake = llm_fake(flavor)
    fake.script(Reply(200, body=json.dumps(body).encode()), path="embeddings")
    with pytest.raises(ProviderError):
        embed([fake.config()], ["one text"], max_operations=ONE_CALL[flavor])


def test_a_non_finite_vector_is_a_provider_failure(llm_fake):
    fake = llm_fake("openai")
    fake.script(Reply(200, body=b'{"data": [{"index": 0, "embedding": [1.0, NaN]}]}'), path="embeddings")
    with pytest.raises(ProviderError):
        embed([fake.config()], ["one text"], max_operations=1)


@pytest.mark.parametrize("flavor", ["openai", "anthropic", "gigachat"])
def test_a_body_is_decoded_by_its_declared_charset(llm_fake, flavor):
    fake = llm_fake(flavor)
    if flavor == "anthropic":
        body = {"type": "message", "content": [{"type": "text", "text": "Привет, Ёлка"}], "model": "m"}
    else:
        body = {
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": "Привет, Ёлка"}, "finish_reason": "stop"}
            ],
            "created": 1,
            "model": "m",
            "object": "chat.completion",
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    raw = json.dumps(body, ensure_ascii=False).encode("windows-1251")
    fake.script(Reply(200, body=raw, content_type="application/json; charset=windows-1251"))
    assert complete([fake.config()], MESSAGES).text == "Привет, Ёлка"


def test_a_body_without_charset_is_utf8(llm_fake):
    fake = llm_fake("openai")
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "Привет"}}]}
    fake.script(Reply(200, body=json.dumps(body, ensure_ascii=False).encode("utf-8")))
    assert complete([fake.config()], MESSAGES).text == "Привет"


def test_an_ordinary_gzip_answer_is_read(llm_fake):
    fake = llm_fake("openai")
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "Packed."}}]}
    fake.script(Reply(200, body=gzip.compress(json.dumps(body).encode()), headers=(("Content-Encoding", "gzip"),)))
    assert complete([fake.config()], MESSAGES).text == "Packed."
    assert fake.api_requests[-1].header("accept-encoding") == "gzip, deflate"


def test_content_parts_are_joined_and_a_null_content_is_empty(llm_fake):
    fake = llm_fake("openai_compatible")
    parts = {"choices": [{"message": {"content": [{"type": "text", "text": "One "}, {"type": "text", "text": "two"}]}}]}
    fake.script(Reply(200, body=json.dumps(parts).encode()), ok("plain"))
    assert complete([fake.config()], MESSAGES).text == "One two"
    assert complete([fake.config()], MESSAGES).text == "plain"


def test_an_error_status_keeps_its_meaning_whatever_its_body(llm_fake):
    fake = llm_fake("openai")
    fake.script(Reply(401, body=b'{"error": ' + b"[" * 5000))
    with pytest.raises(ProviderError) as failure:
        complete([fake.config()], MESSAGES, max_operations=1)
    assert (failure.value.kind, failure.value.status) == ("auth", 401)
