"""The AI app's embedder for the knowledge base (apps.ai.retrieval.KbHooks) against loopback fakes
speaking the vendors' wire formats: which credential embeds, the backup chain, failures, and the
retrieval the AI pipeline gets."""

import json

import pytest

from apps.ai.models import AiSettings
from apps.ai.tests.factories import AiOperatorFactory, AssistantFactory, CredentialFactory
from apps.kb.models import KbChunk
from apps.kb.tests.conftest import idem
from tests.llm_fake import EMBEDDING_DIMENSIONS, server_error, unauthorized

pytestmark = pytest.mark.django_db
RULES = "/api/v1/kb/rules"


@pytest.fixture(autouse=True)
def _loopback_resolves(monkeypatch):
    import ipaddress

    from apps.platform import outbound

    monkeypatch.setattr(outbound.policy, "resolve_host", lambda host, port: [ipaddress.ip_address("127.0.0.1")])


def credential(widget, fake, **kwargs):
    return CredentialFactory(
        widget=widget, provider=fake.flavor, api_key=fake.api_key, base_url=fake.base_url, **kwargs
    )


def embeddings_calls(fake):
    return [r for r in fake.api_requests if r.path.endswith("/embeddings")]


def write(kb, content="Доставка за один день"):
    return kb.post(RULES, {"content": content}, format="json", **idem())


def test_the_widget_wide_credential_embeds(kb, widget, llm_fake):
    fake = llm_fake("openai")
    credential(widget, fake)
    response = write(kb)
    assert response.status_code == 201, response.content
    call = embeddings_calls(fake)[-1]
    assert call.header("authorization") == f"Bearer {fake.api_key}"
    assert call.json()["input"] == ["Доставка за один день"] and call.json()["model"] == "text-embedding-3-small"
    rule = KbChunk.objects.get()
    assert rule.embedding_model == "openai:text-embedding-3-small"
    assert len(bytes(rule.embedding)) == 4 * EMBEDDING_DIMENSIONS


def test_without_a_widget_wide_one_the_default_enabled_assistant_credential_embeds(kb, widget, llm_fake):
    first, default, disabled = llm_fake("openai"), llm_fake("openai_compatible"), llm_fake("openai")
    credential(widget, first, assistant=AssistantFactory(widget=widget))
    credential(widget, default, assistant=AssistantFactory(widget=widget, is_default=True), model="nomic-embed-text")
    credential(widget, disabled, assistant=AssistantFactory(widget=widget, enabled=False))
    assert write(kb).status_code == 201
    assert embeddings_calls(default) and not embeddings_calls(first) and not embeddings_calls(disabled)
    assert KbChunk.objects.get().embedding_model == "openai_compatible:nomic-embed-text"


def test_an_operators_credential_never_embeds(kb, widget, llm_fake, assert_problem):
    fake = llm_fake("openai")
    operator = AiOperatorFactory(assistant=AssistantFactory(widget=widget))
    credential(widget, fake, operator=operator)
    assert_problem(write(kb), 502, "kb_embed_provider_failed")
    assert not embeddings_calls(fake) and not KbChunk.objects.exists()


def test_a_driver_that_cannot_embed_is_skipped(kb, widget, llm_fake):
    anthropic, openai = llm_fake("anthropic"), llm_fake("openai")
    credential(widget, anthropic)
    credential(widget, openai, assistant=AssistantFactory(widget=widget))
    assert write(kb).status_code == 201
    assert embeddings_calls(openai) and not anthropic.api_requests


def test_gigachat_embeds_in_its_wire_format(kb, widget, llm_fake):
    fake = llm_fake("gigachat")
    credential(widget, fake)
    assert write(kb).status_code == 201
    assert KbChunk.objects.get().embedding_model == "gigachat:Embeddings"


def test_the_backup_chain_applies(kb, widget, llm_fake):
    primary, backup = llm_fake("openai"), llm_fake("openai_compatible")
    spare = credential(widget, backup, assistant=AssistantFactory(widget=widget), model="bge-m3")
    credential(widget, primary, backup_credential=spare)
    primary.script(server_error(), server_error(), server_error())
    assert write(kb).status_code == 201
    assert embeddings_calls(primary) and embeddings_calls(backup)
    assert KbChunk.objects.get().embedding_model == "openai_compatible:bge-m3"


def test_a_refused_key_stops_at_once_and_releases_the_idempotency_key(kb, widget, llm_fake, assert_problem):
    primary, backup = llm_fake("openai"), llm_fake("openai")
    spare = credential(widget, backup, assistant=AssistantFactory(widget=widget))
    credential(widget, primary, backup_credential=spare)
    primary.script(unauthorized())
    headers = idem()
    assert_problem(kb.post(RULES, {"content": "x"}, format="json", **headers), 502, "kb_embed_provider_failed")
    assert not embeddings_calls(backup) and not KbChunk.objects.exists()
    assert kb.post(RULES, {"content": "x"}, format="json", **headers).status_code == 201


def test_status_names_the_current_vector_space_and_assistants(kb, widget, llm_fake):
    fake = llm_fake("openai")
    credential(widget, fake)
    assistant = AssistantFactory(widget=widget, is_default=True, rag_enabled=True)
    AiSettings.objects.create(widget=widget, enabled=True)
    write(kb)
    body = kb.get("/api/v1/kb/status").json()
    assert body["embedding_model"] == "openai:text-embedding-3-small" and body["indexed"] and body["in_use"]
    assert body["assistants"] == [
        {
            "id": assistant.pk,
            "name": assistant.name,
            "enabled": True,
            "is_default": True,
            "rag_enabled": True,
            "in_use": True,
        }
    ]


def test_the_ai_pipeline_gets_exactly_the_search_preview(kb, api, widget, llm_fake):
    fake = llm_fake("openai", text="Один день.")
    credential(widget, fake, model="gpt-4o-mini")
    assistant = AssistantFactory(widget=widget, rag_enabled=True)
    AiOperatorFactory(assistant=assistant)
    write(kb, "Доставка по Москве занимает один день.")
    write(kb, "Гарантия на технику 12 месяцев.")
    preview = kb.get("/api/v1/kb/search", {"q": "Сколько идёт доставка?"}).json()["data"]
    client = api(["ai:read", "ai:write", "ai:apply", "kb:read"])
    response = client.generic(
        "POST",
        f"/api/v1/ai/assistants/{assistant.pk}/test",
        json.dumps({"question": "Сколько идёт доставка?"}),
        "application/json",
        **idem(),
    )
    assert response.status_code == 200, response.content
    assert response.json()["data"]["rag_status"] == "included"
    system = [r for r in fake.api_requests if r.path.endswith("/chat/completions")][-1].json()["messages"][0]["content"]
    excerpt = system.split("Knowledge base excerpts:\n", 1)[1].split("\n\n", 1)[0]
    assert excerpt.split("\n---\n") == [h["content"] for h in preview]


@pytest.mark.parametrize("flavor", ["openai_compatible", "openai", "gigachat"])
def test_the_credentials_embedding_model_is_what_every_embedding_asks_for(kb, widget, llm_fake, flavor):
    fake = llm_fake(flavor)
    credential(widget, fake, model="chat-model", embedding_model="embed-model")
    assert write(kb).status_code == 201
    assert kb.get("/api/v1/kb/search", {"q": "доставка"}).status_code == 200
    calls = embeddings_calls(fake)
    assert len(calls) == 2 and {call.json()["model"] for call in calls} == {"embed-model"}
    assert KbChunk.objects.get().embedding_model == f"{flavor}:embed-model"
    assert kb.get("/api/v1/kb/status").json()["embedding_model"] == f"{flavor}:embed-model"
