"""The knowledge-base routes that embed on the request path (search, rule writes) wait on the provider
in one of the widget's provider-wait slots and under the request's embedding deadline
(apps.core.provider_waits): more at once are 429 `provider_busy`, a slow provider is the route's 502
quickly, and a slot is freed whatever the answer."""

from __future__ import annotations

import time

import pytest
from django.core.cache import cache

from apps.ai.tests.factories import CredentialFactory
from apps.core import provider_waits
from apps.kb.models import KbChunk
from apps.kb.tests.conftest import idem
from tests.llm_fake import unauthorized
from tests.support.factories import WidgetFactory

pytestmark = pytest.mark.django_db
RULES = "/api/v1/kb/rules"
SEARCH = "/api/v1/kb/search"


@pytest.fixture(autouse=True)
def _loopback_resolves(monkeypatch):
    import ipaddress

    from apps.platform import outbound

    monkeypatch.setattr(outbound.policy, "resolve_host", lambda host, port: [ipaddress.ip_address("127.0.0.1")])


@pytest.fixture
def fake(widget, llm_fake):
    fake = llm_fake("openai")
    CredentialFactory(widget=widget, provider="openai", api_key=fake.api_key, base_url=fake.base_url)
    return fake


def slots_taken(widget, settings) -> list[bool]:
    held = provider_waits.slots(settings.AI_REQUEST_EMBED_DEADLINE_SECONDS)
    return [cache.get(held.key(widget.pk, index=i)) is not None for i in range(held.count)]


def hold_every_slot(widget, settings):
    held = provider_waits.slots(settings.AI_REQUEST_EMBED_DEADLINE_SECONDS)
    return held, [held.acquire(widget.pk) for _ in range(held.count)]


def test_a_search_while_the_widgets_slots_are_taken_is_429_with_retry_after(kb, widget, fake, settings, assert_problem):
    assert kb.post(RULES, {"content": "Delivery takes a day."}, format="json", **idem()).status_code == 201
    held, taken = hold_every_slot(widget, settings)
    assert all(taken) and len(taken) == settings.AI_REQUEST_PROVIDER_SLOTS == 2
    calls = len(fake.api_requests)
    response = kb.get(SEARCH, {"q": "delivery"})
    assert_problem(response, 429, "provider_busy")
    assert response["Retry-After"] == "1"
    assert len(fake.api_requests) == calls  # the provider was not called
    held.release(taken[0])
    assert kb.get(SEARCH, {"q": "delivery"}).status_code == 200


def test_another_widgets_slots_do_not_count(kb, widget, fake, settings):
    other = WidgetFactory()
    hold_every_slot(other, settings)
    assert kb.post(RULES, {"content": "Delivery takes a day."}, format="json", **idem()).status_code == 201
    assert kb.get(SEARCH, {"q": "delivery"}).status_code == 200


def test_a_rule_write_while_the_slots_are_taken_is_429_stores_nothing_and_keeps_the_key_free(
    kb, widget, fake, settings, assert_problem
):
    held, taken = hold_every_slot(widget, settings)
    headers = idem()
    assert_problem(kb.post(RULES, {"content": "x"}, format="json", **headers), 429, "provider_busy")
    assert not KbChunk.objects.exists() and not fake.api_requests
    for slot in taken:
        held.release(slot)
    assert kb.post(RULES, {"content": "x"}, format="json", **headers).status_code == 201


def test_the_slot_is_freed_after_a_success_and_after_a_failure(kb, widget, fake, settings, assert_problem):
    assert kb.post(RULES, {"content": "Delivery takes a day."}, format="json", **idem()).status_code == 201
    assert kb.get(SEARCH, {"q": "delivery"}).status_code == 200
    assert slots_taken(widget, settings) == [False, False]
    fake.script(unauthorized(), unauthorized())
    assert_problem(kb.get(SEARCH, {"q": "delivery"}), 502, "kb_embed_provider_failed")
    assert_problem(kb.post(RULES, {"content": "y"}, format="json", **idem()), 502, "kb_embed_provider_failed")
    assert slots_taken(widget, settings) == [False, False]


def test_a_slow_embedding_provider_is_the_routes_502_at_the_request_deadline(
    kb, widget, fake, settings, assert_problem
):
    assert kb.post(RULES, {"content": "Delivery takes a day."}, format="json", **idem()).status_code == 201
    settings.AI_REQUEST_EMBED_DEADLINE_SECONDS = 1.0
    fake.delay = 8.0
    started = time.monotonic()
    assert_problem(kb.get(SEARCH, {"q": "delivery"}), 502, "kb_embed_provider_failed")
    assert_problem(kb.post(RULES, {"content": "z"}, format="json", **idem()), 502, "kb_embed_provider_failed")
    assert time.monotonic() - started < 12.0  # two requests of one 1 s deadline each, not 2 x 8 s
    assert slots_taken(widget, settings) == [False, False]
    assert KbChunk.objects.count() == 1


def test_a_search_while_the_processs_slots_are_taken_by_other_widgets_is_429(
    kb, widget, fake, settings, assert_problem
):
    assert kb.post(RULES, {"content": "Delivery takes a day."}, format="json", **idem()).status_code == 201
    settings.AI_REQUEST_PROVIDER_PROCESS_SLOTS = 1
    calls = len(fake.api_requests)
    with provider_waits.wait(WidgetFactory().pk, seconds=1.0):
        response = kb.get(SEARCH, {"q": "delivery"})
        assert_problem(response, 429, "provider_busy")
        assert response["Retry-After"] == "1"
        assert len(fake.api_requests) == calls  # the provider was not called
        assert not any(slots_taken(widget, settings))  # the widget's own slots were left alone
    assert kb.get(SEARCH, {"q": "delivery"}).status_code == 200
