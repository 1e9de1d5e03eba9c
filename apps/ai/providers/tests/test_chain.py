"""The one retry policy: fall back on transport errors, timeouts, 429 and 5xx, stop at once on
401/400; Retry-After honoured within the deadline; the deadline and the operation budget bound the
whole walk; the body cap."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from apps.ai.providers import ChatMessage, ProviderError, acomplete, complete, embed, transport
from tests.llm_fake import Reply, bad_request, closed, rate_limited, server_error, slow, trickling, unauthorized

HI = [ChatMessage("user", "hi")]


@pytest.fixture(autouse=True)
def short_attempts(settings):
    settings.AI_PROVIDER_ATTEMPT_TIMEOUT_SECONDS = 0.5


@pytest.mark.parametrize(
    ("reply", "kind", "status"),
    [
        (closed(), "transport", None),
        (slow(3), "timeout", None),
        (rate_limited(0), "rate_limited", 429),
        (server_error(500), "server_error", 500),
        (server_error(503), "server_error", 503),
    ],
    ids=["closed-connection", "timeout", "429", "500", "503"],
)
@pytest.mark.parametrize("primary_flavor", ["openai", "anthropic", "gigachat"])
def test_retryable_failures_fall_back_to_the_backup(llm_fake, reply, kind, status, primary_flavor):
    primary = llm_fake(primary_flavor)
    backup = llm_fake("openai_compatible", text="from the backup")
    primary.script(reply)
    answer = complete([primary.config(credential_id=1), backup.config(credential_id=2)], HI)

    assert (answer.text, answer.provider, answer.credential_id, answer.fallback_used) == (
        "from the backup",
        "openai_compatible",
        2,
        True,
    )
    failed = [a for a in answer.attempts if a.credential_id == 1 and a.operation == "chat"]
    assert [(a.outcome, a.status) for a in failed] == [(kind, status)]
    assert answer.attempts[-1].outcome == "ok" and answer.attempts[-1].credential_id == 2
    assert len(backup.requests) == 1


@pytest.mark.parametrize(
    ("reply", "kind", "status"), [(unauthorized(), "auth", 401), (bad_request(), "bad_request", 400)]
)
@pytest.mark.parametrize("primary_flavor", ["openai", "anthropic", "gigachat", "openai_compatible"])
def test_auth_and_bad_request_stop_at_once(llm_fake, reply, kind, status, primary_flavor):
    primary = llm_fake(primary_flavor)
    backup = llm_fake("openai")
    primary.script(reply)
    with pytest.raises(ProviderError) as failure:
        complete([primary.config(credential_id=1), backup.config(credential_id=2)], HI)
    error = failure.value
    assert (error.kind, error.status, error.provider, error.exhausted) == (kind, status, primary_flavor, None)
    assert [(a.credential_id, a.outcome) for a in error.attempts if a.operation == "chat"] == [(1, kind)]
    assert backup.requests == []


def test_a_failure_of_the_token_exchange_falls_back_too(llm_fake):
    giga = llm_fake("gigachat")
    backup = llm_fake("openai")
    giga.script(server_error(502), path="oauth")
    answer = complete([giga.config(), backup.config()], HI)
    assert answer.fallback_used
    assert [(a.provider, a.operation, a.outcome) for a in answer.attempts] == [
        ("gigachat", "token", "server_error"),
        ("openai", "chat", "ok"),
    ]
    assert giga.api_requests == []


def test_exhausted_chain_reports_every_attempt_after_a_second_pass(llm_fake):
    first = llm_fake("openai")
    second = llm_fake("anthropic")
    first.script(*[server_error(500)] * 2)
    second.script(*[server_error(503)] * 2)
    with pytest.raises(ProviderError) as failure:
        complete([first.config(credential_id=1), second.config(credential_id=2)], HI)
    error = failure.value
    assert (error.kind, error.status, error.exhausted) == ("server_error", 503, "chain")
    assert [(a.credential_id, a.status) for a in error.attempts] == [(1, 500), (2, 503), (1, 500), (2, 503)]


def test_second_pass_recovers_a_member(llm_fake):
    fake = llm_fake("openai", text="second time lucky")
    fake.script(server_error(500))
    started = time.monotonic()
    answer = complete([fake.config()], HI)
    assert answer.text == "second time lucky" and not answer.fallback_used
    assert [a.outcome for a in answer.attempts] == ["server_error", "ok"]
    assert time.monotonic() - started >= 0.5  # the backoff before trying it again


def test_retry_after_is_honoured_within_the_deadline(llm_fake):
    fake = llm_fake("openai")
    fake.script(rate_limited(0.4))
    started = time.monotonic()
    answer = complete([fake.config()], HI, deadline=time.monotonic() + 5)
    assert time.monotonic() - started >= 0.4
    assert [a.outcome for a in answer.attempts] == ["rate_limited", "ok"]
    gap = fake.requests[1].at - fake.requests[0].at
    assert gap >= 0.4


def test_retry_after_beyond_the_deadline_is_not_waited_for(llm_fake):
    fake = llm_fake("anthropic")
    fake.script(rate_limited(30))
    started = time.monotonic()
    with pytest.raises(ProviderError) as failure:
        complete([fake.config()], HI, deadline=time.monotonic() + 3)
    assert time.monotonic() - started < 3  # not the 30 s asked
    error = failure.value
    assert (error.kind, error.status, error.exhausted) == ("rate_limited", 429, "deadline")
    assert 29 <= error.retry_after <= 30
    assert len(fake.requests) == 1


def test_a_member_waiting_past_the_deadline_does_not_stop_the_others(llm_fake):
    limited = llm_fake("openai")
    flaky = llm_fake("gigachat", text="second pass")
    limited.script(rate_limited(30))
    flaky.script(server_error(503), path="chat")
    answer = complete(
        [limited.config(credential_id=1), flaky.config(credential_id=2)], HI, deadline=time.monotonic() + 5
    )
    assert answer.text == "second pass" and answer.credential_id == 2
    assert len(limited.requests) == 1  # not tried again before its Retry-After
    assert [(a.credential_id, a.operation, a.outcome) for a in answer.attempts] == [
        (1, "chat", "rate_limited"),
        (2, "token", "ok"),
        (2, "chat", "server_error"),
        (2, "chat", "ok"),
    ]


def test_http_date_retry_after_is_read(llm_fake):
    from email.utils import formatdate

    fake = llm_fake("openai")
    fake.script(rate_limited(formatdate(time.time() + 60, usegmt=True)))
    with pytest.raises(ProviderError) as failure:
        complete([fake.config()], HI, deadline=time.monotonic() + 2)
    assert 55 <= failure.value.retry_after <= 61


def test_the_deadline_bounds_a_hung_provider(llm_fake, settings):
    settings.AI_PROVIDER_ATTEMPT_TIMEOUT_SECONDS = 30
    fake = llm_fake("openai")
    backup = llm_fake("openai")
    fake.script(slow(5))
    started = time.monotonic()
    with pytest.raises(ProviderError) as failure:
        complete([fake.config(), backup.config()], HI, deadline=time.monotonic() + 0.6)
    elapsed = time.monotonic() - started
    assert 0.5 <= elapsed < 3  # not the 5 s the peer takes
    assert (failure.value.kind, failure.value.exhausted) == ("timeout", "deadline")
    assert backup.requests == []


def test_the_deadline_bounds_an_async_hung_provider(llm_fake, settings):
    settings.AI_PROVIDER_ATTEMPT_TIMEOUT_SECONDS = 30
    fake = llm_fake("anthropic")
    fake.script(slow(5))
    started = time.monotonic()
    with pytest.raises(ProviderError) as failure:
        asyncio.run(acomplete([fake.config()], HI, deadline=time.monotonic() + 0.6))
    assert 0.5 <= time.monotonic() - started < 3
    assert failure.value.kind == "timeout"


@pytest.mark.parametrize("flavor", ["openai", "anthropic"])
def test_the_deadline_stops_a_trickling_answer(llm_fake, flavor):
    fake = llm_fake(flavor)
    fake.script(trickling(0.02))  # each read arrives in time; the whole answer would take seconds
    started = time.monotonic()
    with pytest.raises(ProviderError) as failure:
        complete([fake.config()], HI, deadline=time.monotonic() + 0.8)
    assert time.monotonic() - started < 3  # the whole body would take seconds more
    assert failure.value.kind == "timeout"


def test_a_deadline_already_passed_sends_nothing(llm_fake):
    fake = llm_fake("openai")
    with pytest.raises(ProviderError) as failure:
        complete([fake.config()], HI, deadline=time.monotonic() - 1)
    assert (failure.value.kind, failure.value.exhausted, failure.value.attempts) == ("timeout", "deadline", ())
    assert fake.requests == []


def test_max_operations_bounds_the_walk(llm_fake):
    fakes = [llm_fake("openai") for _ in range(3)]
    for fake in fakes:
        fake.script(server_error(500))
    with pytest.raises(ProviderError) as failure:
        complete([f.config(credential_id=i) for i, f in enumerate(fakes)], HI, max_operations=2)
    error = failure.value
    assert (error.kind, error.exhausted) == ("server_error", "operations")
    assert len(error.attempts) == 2
    assert [len(f.requests) for f in fakes] == [1, 1, 0]


def test_the_gigachat_token_exchange_counts_as_an_operation(llm_fake):
    fake = llm_fake("gigachat")
    with pytest.raises(ProviderError) as failure:
        complete([fake.config()], HI, max_operations=1)
    assert failure.value.exhausted == "operations"
    assert [a.operation for a in failure.value.attempts] == ["token"]
    assert fake.api_requests == []  # refused before sending: not an attempt


def test_the_detached_test_budget_ten_operations_under_one_deadline(llm_fake):
    fakes = [llm_fake("openai") for _ in range(6)]
    for fake in fakes:
        fake.script(*[server_error(500)] * 2)
    with pytest.raises(ProviderError) as failure:
        complete([f.config() for f in fakes], HI, max_operations=10, deadline=time.monotonic() + 45)
    assert len(failure.value.attempts) == 10
    assert sum(len(f.requests) for f in fakes) == 10


def test_async_walk_falls_back_and_honours_retry_after(llm_fake):
    first = llm_fake("gigachat")
    second = llm_fake("openai", text="async backup")
    first.script(rate_limited(0), path="chat")

    answer = asyncio.run(acomplete([first.config(), second.config()], HI))
    assert answer.text == "async backup" and answer.fallback_used
    assert [(a.provider, a.operation, a.outcome) for a in answer.attempts] == [
        ("gigachat", "token", "ok"),
        ("gigachat", "chat", "rate_limited"),
        ("openai", "chat", "ok"),
    ]


def test_embeddings_fall_back_along_the_able_members(llm_fake):
    first = llm_fake("openai")
    second = llm_fake("gigachat")
    first.script(server_error(500))
    assert len(embed([first.config(), second.config()], ["a"])[0]) == 16
    assert len(second.api_requests) == 1


def test_response_body_over_the_cap_is_a_transport_error(llm_fake, monkeypatch):
    monkeypatch.setattr(transport, "MAX_RESPONSE_BYTES", 2048)
    fake = llm_fake("openai")
    big = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "x" * 5000}, "finish_reason": "stop"}]}
    fake.script(Reply(200, body=json.dumps(big).encode()))
    with pytest.raises(ProviderError) as failure:
        complete([fake.config()], HI, max_operations=1)
    assert (failure.value.kind, failure.value.detail) == ("transport", "body_too_large")


def test_bad_calls_are_programming_errors(llm_fake):
    fake = llm_fake("openai")
    with pytest.raises(ValueError):
        complete([], HI)
    with pytest.raises(ValueError):
        complete([fake.config()], [ChatMessage("tool", "x")])
    with pytest.raises(ValueError):
        complete([fake.config()], [])
    assert fake.requests == []


def test_a_bug_is_not_a_provider_failure(llm_fake, monkeypatch):
    import openai

    primary = llm_fake("openai")
    backup = llm_fake("openai_compatible")

    def broken(self, *args, **kwargs):
        raise RuntimeError("a bug, not the provider")

    monkeypatch.setattr(openai.OpenAI, "post", broken)
    with pytest.raises(RuntimeError):
        complete([primary.config(), backup.config()], HI)
    assert backup.requests == []
