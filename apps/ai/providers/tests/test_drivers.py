"""Each driver against its loopback fake: the request as the vendor receives it, field by field
(authentication included, and GigaChat's token exchange and its cache), and the answer as read."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
import uuid

import pytest

from apps.ai.providers import (
    PROVIDERS,
    ChatMessage,
    ProviderError,
    acomplete,
    can_embed,
    can_speak,
    complete,
    embed,
    list_models,
    synthesize,
    transcribe,
)
from tests.llm_fake import hash_embedding, ok, unauthorized

MESSAGES = [
    ChatMessage("system", "You are the shop's assistant."),
    ChatMessage("user", "Do you ship to Riga?"),
    ChatMessage("assistant", "Yes, in three days."),
    ChatMessage("user", "And to Tallinn?"),
]
PLAIN = [{"role": m.role, "content": m.content} for m in MESSAGES]


def test_capabilities_follow_the_drivers_table():
    assert PROVIDERS == ("openai", "anthropic", "gigachat", "openai_compatible")
    assert [p for p in PROVIDERS if can_embed(p)] == ["openai", "gigachat", "openai_compatible"]
    assert [p for p in PROVIDERS if can_speak(p)] == ["openai"]
    assert not can_embed("nope") and not can_speak("nope")


def test_openai_chat_request_and_answer(llm_fake, monkeypatch):
    monkeypatch.setenv("OPENAI_ORG_ID", "org-operator")  # never sent to a credential's endpoint
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-operator")
    fake = llm_fake("openai", text="Yes, Tallinn too.")
    answer = complete([fake.config(credential_id=7)], MESSAGES, max_tokens=120, temperature=0.3)

    [hit] = fake.requests
    assert (hit.method, hit.path) == ("POST", "/v1/chat/completions")
    assert hit.header("authorization") == f"Bearer {fake.api_key}"
    assert hit.header("content-type") == "application/json"
    assert hit.header("openai-organization") is None and hit.header("openai-project") is None
    assert hit.json() == {
        "model": "gpt-4o-mini",
        "messages": PLAIN,
        "max_completion_tokens": 120,
        "temperature": 0.3,
    }
    assert answer.text == "Yes, Tallinn too."
    assert (answer.provider, answer.model, answer.credential_id) == ("openai", "gpt-4o-mini", 7)
    assert answer.usage["total_tokens"] == answer.usage["prompt_tokens"] + answer.usage["completion_tokens"]
    assert answer.fallback_used is False
    [attempt] = answer.attempts
    assert (attempt.provider, attempt.credential_id, attempt.outcome, attempt.status, attempt.operation) == (
        "openai",
        7,
        "ok",
        200,
        "chat",
    )
    assert answer.latency_ms >= attempt.duration_ms > 0


@pytest.mark.parametrize("flavor", ["openai", "openai_compatible"])
def test_openai_chat_is_the_request_the_sdks_create_sends(llm_fake, monkeypatch, flavor):
    """The chat goes through the SDK's `client.post` (no parameter transform): the vendor receives
    byte for byte what `chat.completions.create` sends, and an admin key in the operator's
    environment (OPENAI_ADMIN_KEY) reaches no credential's endpoint."""
    from apps.ai.providers import drivers

    monkeypatch.setenv("OPENAI_ADMIN_KEY", "sk-admin-operator")
    fake = llm_fake(flavor, text="Yes.")
    config = fake.config(model="gpt-4o-mini")
    complete([config], MESSAGES, max_tokens=40, temperature=0.5)
    ours = fake.api_requests[-1]
    kwargs = drivers.payloads._openai_chat_kwargs(config, MESSAGES, 40, 0.5)
    drivers.clients._openai_client(config, is_async=False).chat.completions.create(**kwargs)
    sdk = fake.api_requests[-1]

    assert (ours.method, ours.path, ours.body) == (sdk.method, sdk.path, sdk.body)
    assert ours.headers == sdk.headers
    assert ours.header("authorization") == f"Bearer {fake.api_key}"
    assert "sk-admin-operator" not in json.dumps(ours.headers)


def test_openai_compatible_sends_max_tokens_and_its_model(llm_fake):
    fake = llm_fake("openai_compatible")
    answer = complete([fake.config(model="yandexgpt-lite")], MESSAGES, max_tokens=50)
    [hit] = fake.requests
    assert hit.path == "/v1/chat/completions"
    assert hit.header("authorization") == f"Bearer {fake.api_key}"
    assert hit.json() == {"model": "yandexgpt-lite", "messages": PLAIN, "max_tokens": 50}
    assert answer.provider == "openai_compatible"


@pytest.mark.parametrize(
    ("overrides", "detail"),
    [({"base_url": None}, "base_url_required"), ({"model": None}, "model_required")],
)
def test_openai_compatible_needs_a_base_url_and_a_model(llm_fake, overrides, detail):
    fake = llm_fake("openai_compatible")
    with pytest.raises(ProviderError) as failure:
        complete([fake.config(**overrides)], MESSAGES)
    assert (failure.value.kind, failure.value.detail) == ("bad_request", detail)
    assert fake.requests == []


def test_anthropic_messages_request_and_answer(llm_fake):
    fake = llm_fake("anthropic", text="Ja.")
    answer = complete([fake.config(model="claude-haiku-5-5")], MESSAGES, temperature=0.9)

    [hit] = fake.requests
    assert (hit.method, hit.path) == ("POST", "/v1/messages")
    # As Anthropic's API expects: the key in x-api-key (never as a bearer token), a documented version.
    assert hit.header("x-api-key") == fake.api_key
    assert hit.header("authorization") is None
    assert hit.header("anthropic-version") == "2023-06-01"
    body = hit.json()
    assert body == {
        "model": "claude-haiku-5-5",
        "max_tokens": 1024,
        "system": "You are the shop's assistant.",
        "messages": PLAIN[1:],
    }
    assert (answer.text, answer.provider, answer.model) == ("Ja.", "anthropic", "claude-haiku-5-5")
    assert set(answer.usage) == {"prompt_tokens", "completion_tokens", "total_tokens"}


def test_anthropic_max_tokens_is_passed_through(llm_fake):
    fake = llm_fake("anthropic")
    complete([fake.config()], [ChatMessage("user", "hi")], max_tokens=33)
    assert fake.requests[0].json()["max_tokens"] == 33
    assert "system" not in fake.requests[0].json()


def test_gigachat_exchanges_the_authorization_key_then_chats_with_the_token(llm_fake):
    fake = llm_fake("gigachat", text="Да.")
    answer = complete([fake.config(credential_id=3)], MESSAGES, max_tokens=64, temperature=0.1)

    token_hit, chat_hit = fake.requests
    assert (token_hit.method, token_hit.path) == ("POST", "/api/v2/oauth")
    assert token_hit.header("authorization") == f"Basic {fake.api_key}"
    assert uuid.UUID(token_hit.header("rquid")).version == 4
    assert token_hit.header("content-type") == "application/x-www-form-urlencoded"
    assert token_hit.form() == {"scope": "GIGACHAT_API_PERS"}

    [token] = fake.issued_tokens
    assert (chat_hit.method, chat_hit.path) == ("POST", "/api/v1/chat/completions")
    assert chat_hit.header("authorization") == f"Bearer {token}"
    assert chat_hit.json() == {"model": "GigaChat", "messages": PLAIN, "max_tokens": 64, "temperature": 0.1}

    assert (answer.text, answer.provider, answer.model, answer.credential_id) == ("Да.", "gigachat", "GigaChat", 3)
    assert [(a.operation, a.outcome) for a in answer.attempts] == [("token", "ok"), ("chat", "ok")]
    assert answer.operations == 2


def test_gigachat_token_is_cached_until_it_lapses(llm_fake):
    fake = llm_fake("gigachat")
    config = fake.config()
    complete([config], MESSAGES)
    second = complete([config], MESSAGES)
    models = list_models(config)
    assert len(fake.token_requests) == 1
    assert [(a.operation, a.outcome) for a in second.attempts] == [("chat", "ok")]
    assert {m["id"] for m in models} == {"GigaChat", "GigaChat-Pro", "Embeddings"}

    # A token within a minute of lapsing is not used: a new one is exchanged.
    short = llm_fake("gigachat", token_ttl=30)
    complete([short.config()], MESSAGES)
    complete([short.config()], MESSAGES)
    assert len(short.token_requests) == 2


def test_gigachat_refused_cached_token_is_exchanged_again_once(llm_fake):
    fake = llm_fake("gigachat")
    config = fake.config()
    complete([config], MESSAGES)
    fake.expire_tokens()  # revoked server-side: the cached token now answers 401

    answer = complete([config], MESSAGES)
    assert [(a.operation, a.outcome, a.status) for a in answer.attempts] == [
        ("chat", "auth", 401),
        ("token", "ok", 200),
        ("chat", "ok", 200),
    ]
    assert len(fake.token_requests) == 2


def test_gigachat_scope_and_auth_url_come_from_options(llm_fake):
    fake = llm_fake("gigachat")
    other = llm_fake("gigachat", api_key=fake.api_key)  # the token endpoint on another host
    config = fake.config(options={"scope": "GIGACHAT_API_CORP", "auth_url": other.origin + "/api/v2/oauth"})
    with pytest.raises(ProviderError) as failure:
        complete([config], MESSAGES)
    # The token came from `other`, which `fake` never issued: a fresh token refused is an auth error.
    assert failure.value.kind == "auth"
    assert [hit.form() for hit in other.token_requests] == [{"scope": "GIGACHAT_API_CORP"}] * 1
    assert fake.token_requests == []


def test_gigachat_wrong_authorization_key_is_an_auth_error_before_any_api_call(llm_fake):
    fake = llm_fake("gigachat")
    wrong = base64.b64encode(b"someone:else").decode()
    with pytest.raises(ProviderError) as failure:
        complete([fake.config(api_key=wrong)], MESSAGES)
    assert (failure.value.kind, failure.value.status) == ("auth", 401)
    assert [a.operation for a in failure.value.attempts] == ["token"]
    assert fake.api_requests == []


@pytest.mark.parametrize("flavor", ["openai", "gigachat", "openai_compatible"])
def test_embeddings(llm_fake, flavor):
    fake = llm_fake(flavor)
    vectors = embed([fake.config()], ["red shoes", "blue socks"])
    assert vectors == [hash_embedding("red shoes"), hash_embedding("blue socks")]
    hit = fake.api_requests[-1]
    assert hit.path.endswith("/embeddings")
    expected_model = {"openai": "text-embedding-3-small", "gigachat": "Embeddings", "openai_compatible": "llama3.1:8b"}
    assert hit.json()["model"] == expected_model[flavor]
    assert hit.json()["input"] == ["red shoes", "blue socks"]


def test_embeddings_model_option(llm_fake):
    fake = llm_fake("openai_compatible")
    embed([fake.config(options={"embedding_model": "nomic-embed-text"})], ["x"])
    assert fake.requests[0].json()["model"] == "nomic-embed-text"


def test_embeddings_skip_drivers_that_cannot_embed(llm_fake):
    claude = llm_fake("anthropic")
    gpt = llm_fake("openai")
    assert embed([claude.config(), gpt.config()], ["hello"]) == [hash_embedding("hello")]
    assert claude.requests == []
    with pytest.raises(ProviderError) as failure:
        embed([claude.config()], ["hello"])
    assert failure.value.kind == "unsupported"
    assert claude.requests == []


@pytest.mark.parametrize("flavor", PROVIDERS)
def test_models_list(llm_fake, flavor):
    fake = llm_fake(flavor)
    models = list_models(fake.config())
    assert [m["id"] for m in models] == fake.models
    hit = fake.api_requests[-1]
    assert (hit.method, hit.path) == ("GET", "/v1/models" if flavor != "gigachat" else "/api/v1/models")
    if flavor != "anthropic":
        assert all("owned_by" in m for m in models)


def test_anthropic_models_list_sends_the_key_as_anthropics_api_expects(llm_fake):
    # the fake answers as the API does: 401 without x-api-key, 400 for an undocumented version
    fake = llm_fake("anthropic")
    assert [m["id"] for m in list_models(fake.config())] == fake.models
    [hit] = fake.api_requests
    assert (hit.method, hit.path) == ("GET", "/v1/models")
    assert (hit.header("x-api-key"), hit.header("authorization")) == (fake.api_key, None)
    assert hit.header("anthropic-version") == "2023-06-01"


def test_transcription_and_speech_on_openai(llm_fake):
    fake = llm_fake("openai", text="Hello there")
    assert transcribe(fake.config(), b"RIFF-fake-audio", filename="voice.ogg") == "Hello there"
    hit = fake.requests[-1]
    assert (hit.method, hit.path) == ("POST", "/v1/audio/transcriptions")
    assert hit.header("content-type").startswith("multipart/form-data; boundary=")
    assert hit.header("authorization") == f"Bearer {fake.api_key}"
    assert b'filename="voice.ogg"' in hit.body and b"RIFF-fake-audio" in hit.body
    assert b'name="model"' in hit.body and b"whisper-1" in hit.body

    audio = synthesize(fake.config(), "Good evening", voice="nova")
    assert audio.startswith(b"ID3")
    hit = fake.requests[-1]
    assert hit.path == "/v1/audio/speech"
    assert hit.json() == {"model": "gpt-4o-mini-tts", "voice": "nova", "input": "Good evening"}


@pytest.mark.parametrize("flavor", ["anthropic", "gigachat", "openai_compatible"])
def test_speech_is_openai_only(llm_fake, flavor):
    fake = llm_fake(flavor)
    for call in (
        lambda: transcribe(fake.config(), b"x", filename="a.wav"),
        lambda: synthesize(fake.config(), "x"),
    ):
        with pytest.raises(ProviderError) as failure:
            call()
        assert failure.value.kind == "unsupported"
    assert fake.requests == []


@pytest.mark.parametrize("flavor", PROVIDERS)
def test_async_completion_matches_the_sync_request(llm_fake, flavor):
    fake = llm_fake(flavor, text="async answer")
    answer = asyncio.run(acomplete([fake.config(credential_id=1)], MESSAGES, max_tokens=10))
    assert (answer.text, answer.provider, answer.credential_id) == ("async answer", flavor, 1)
    async_body = fake.api_requests[-1].json()
    complete([fake.config()], MESSAGES, max_tokens=10)
    assert fake.api_requests[-1].json() == async_body
    assert answer.attempts[-1].outcome == "ok"


def test_async_gigachat_exchanges_and_refreshes_the_token(llm_fake):
    fake = llm_fake("gigachat")
    config = fake.config()

    async def run():
        first = await acomplete([config], MESSAGES)
        fake.expire_tokens()
        second = await acomplete([config], MESSAGES)
        return first, second

    first, second = asyncio.run(run())
    assert [a.operation for a in first.attempts] == ["token", "chat"]
    assert [(a.operation, a.status) for a in second.attempts] == [("chat", 401), ("token", 200), ("chat", 200)]
    assert fake.token_requests[0].header("authorization") == f"Basic {config.api_key}"


def test_scripted_text_and_a_raw_answer(llm_fake):
    fake = llm_fake("openai")
    fake.script(ok("scripted"))
    assert complete([fake.config()], MESSAGES).text == "scripted"
    fake.script(unauthorized())
    with pytest.raises(ProviderError) as failure:
        complete([fake.config()], MESSAGES)
    assert (failure.value.kind, failure.value.status) == ("auth", 401)
    body = json.dumps({"choices": []}).encode()
    from tests.llm_fake import Reply

    fake.script(Reply(200, body=body))
    with pytest.raises(ProviderError) as failure:
        complete([fake.config()], MESSAGES, max_operations=1)
    assert (failure.value.kind, failure.value.detail) == ("transport", "invalid_response")


def test_classifying_a_failure_imports_no_sdk_the_call_did_not_use():
    """An openai call that timed out is classified without importing anthropic: that import takes
    seconds, which would be spent after the call's deadline, holding the caller's thread."""
    code = (
        "import sys, django, httpx2\n"
        "django.setup()\n"
        "from apps.ai.providers import drivers\n"
        "error = drivers.classify(httpx2.ReadTimeout('read timed out'), 'openai')\n"
        "assert error.kind == 'timeout', error\n"
        "print(sorted(name for name in ('openai', 'anthropic') if name in sys.modules))\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"
