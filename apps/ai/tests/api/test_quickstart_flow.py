"""The AI quick start (docs/ai/quickstart.md) through the API, on the fake it starts: the four calls,
then a rule, retrieval switched on, and the detached test answering from that rule."""

import json

import pytest
from django.core.cache import cache

from apps.ai.tests.conftest import idem

pytestmark = pytest.mark.django_db


def call(client, method, path, body):
    return client.generic(method, path, json.dumps(body), "application/json", **idem())


def test_the_quick_starts_assistant_answers_from_a_knowledge_base_rule(client, llm_fake):
    cache.clear()
    fake = llm_fake("openai_compatible", from_knowledge=True)
    credential = {
        "provider": "openai_compatible",
        "api_key": fake.api_key,
        "base_url": fake.base_url,
        "model": "fake-model",
        "embedding_model": "fake-embedder",
    }
    assert call(client, "POST", "/api/v1/ai/credentials", credential).status_code == 201
    assert call(client, "PATCH", "/api/v1/ai/settings", {"enabled": True}).status_code == 200
    assistant = call(
        client,
        "POST",
        "/api/v1/ai/assistants",
        {"name": "Shop assistant", "is_default": True, "system_prompt": "You answer questions about our tea shop."},
    ).json()["id"]
    assert (
        call(client, "POST", "/api/v1/ai/operators", {"assistant_id": assistant, "name": "Tea bot"}).status_code == 201
    )

    # step 7
    rule = "We ship green and black tea across Europe within 3 days."
    assert call(client, "POST", "/api/v1/kb/rules", {"content": rule}).status_code == 201
    assert call(client, "PATCH", f"/api/v1/ai/assistants/{assistant}", {"rag_enabled": True}).status_code == 200
    answer = call(client, "POST", f"/api/v1/ai/assistants/{assistant}/test", {"question": "How fast do you ship?"})

    assert answer.status_code == 200, answer.content
    assert answer.json()["data"]["answer"] == f"From what I know: {rule}"
    assert any(r.path.endswith("/embeddings") for r in fake.requests)
