"""The fake provider's realistic timing (tests.llm_fake): a lognormal delay per chat completion, the
same for the same prompt, and OpenAI-format streaming when a completion asks for it."""

from __future__ import annotations

import statistics
import time

from tests.llm_fake import llm_fake, provider_delay, sdk_floor_client  # noqa: F401 (the fixture)


def test_provider_delays_are_lognormal_around_their_median_and_fixed_per_prompt():
    delays = [provider_delay(f"Question {i}?", median=0.8, sigma=0.5) for i in range(2000)]
    assert provider_delay("Question 7?", median=0.8, sigma=0.5) == delays[7]
    assert 0.74 < statistics.median(delays) < 0.86
    # a lognormal's 99th percentile is median * exp(2.326 sigma): about 2.56 s here
    assert 2.2 < sorted(delays)[1979] < 2.9
    assert min(delays) > 0
    assert provider_delay("anything", median=0, sigma=0.5) == 0.0


def test_a_completion_waits_its_prompts_delay_and_the_fake_records_it(llm_fake):  # noqa: F811
    fake = llm_fake("openai", text="Two days.")
    fake.delay_median, fake.delay_sigma = 0.2, 0.5
    client = sdk_floor_client(fake.base_url, fake.api_key)
    started = time.perf_counter()
    answer = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "When?"}])
    took = time.perf_counter() - started
    expected = provider_delay("When?", median=0.2, sigma=0.5)
    assert answer.choices[0].message.content == "Two days."
    assert fake.delays == {"When?": expected}
    assert expected <= took < expected + 1.0


def test_a_streamed_completion_arrives_in_chunks_the_first_after_a_quarter_of_its_delay(llm_fake):  # noqa: F811
    fake = llm_fake("openai", text="Delivery takes two days.")
    fake.delay_median, fake.delay_sigma = 0.4, 0.3
    client = sdk_floor_client(fake.base_url, fake.api_key)
    delay = provider_delay("How long?", median=0.4, sigma=0.3)
    started = time.perf_counter()
    stream = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "How long?"}], stream=True
    )
    arrivals, text = [], ""
    for chunk in stream:
        arrivals.append(time.perf_counter() - started)
        text += chunk.choices[0].delta.content or ""
    assert text == "Delivery takes two days."
    assert len(arrivals) == 5  # the role, then a word each
    assert delay / 4 <= arrivals[0] < delay / 4 + 0.5
    assert arrivals[-1] >= delay * 0.95
    assert stream.response.headers["content-type"] == "text/event-stream"


def test_without_a_median_every_answer_waits_the_fixed_delay_only(llm_fake):  # noqa: F811
    fake = llm_fake("openai")
    client = sdk_floor_client(fake.base_url, fake.api_key)
    client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}])
    assert fake.delays == {}
