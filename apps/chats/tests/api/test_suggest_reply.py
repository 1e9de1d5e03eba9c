"""POST /api/v1/chats/{id}/suggest-reply: the effective assistant's reply with its knowledge-base
sources, posted nowhere, against the loopback OpenAI fake."""

import ipaddress

import pytest

from apps.ai.models import AiSettings, Credential
from apps.ai.tests.factories import AiOperatorFactory, AssistantFactory, CredentialFactory
from apps.chats import services as chat_services
from apps.chats.models import Chat, Message
from apps.chats.tests.factories import ContactFactory
from apps.kb import hooks as kb_hooks
from apps.kb import services as kb_services
from tests.llm_fake import llm_fake, ok, server_error  # noqa: F401, F811 (llm_fake: the fixture)
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

ANSWER = "It ships within two days."


@pytest.fixture(autouse=True)
def loopback_resolves(monkeypatch):
    from apps.platform import outbound

    monkeypatch.setattr(outbound.policy, "resolve_host", lambda host, port: [ipaddress.ip_address("127.0.0.1")])


@pytest.fixture
def bot(widget, llm_fake):  # noqa: F811
    fake = llm_fake("openai", text=ANSWER)
    AiSettings.objects.create(widget=widget, enabled=True, rag_enabled=True)
    assistant = AssistantFactory(widget=widget, is_default=True, system_prompt="You sell tea.")
    AiOperatorFactory(assistant=assistant)
    CredentialFactory(widget=widget, api_key=fake.api_key, base_url=fake.base_url, model="gpt-4o-mini")
    return type("Bot", (), {"fake": fake, "assistant": assistant})


@pytest.fixture
def client(api):
    return api(["chats:write"])


def chat_of(widget, text="When does my tea ship from Yunnan?"):
    message = chat_services.post_client_message(
        widget=widget, contact=ContactFactory(widget=widget), data=chat_services.MessageInput(body=text)
    )
    return Chat.objects.get(pk=message.chat_id)


def suggest(client, chat_id, **extra):
    return client.post(f"/api/v1/chats/{chat_id}/suggest-reply", **extra)


def test_the_suggestion_is_grounded_in_a_rule_cites_it_and_posts_nothing(client, bot, widget, captured_events):
    content = "Tea ships from Yunnan within two days."
    rule = kb_services.create_rule(
        widget=widget, content=content, doc_id="Shipping", embedded=kb_hooks.embed(widget, [content])
    )
    chat = chat_of(widget)
    before = captured_events()
    r = suggest(client, chat.pk)  # no idempotency key: it changes nothing
    assert r.status_code == 200, r.content
    assert r.json() == {
        "text": ANSWER,
        "sources": [{"source_ref": f"manual:{rule.pk}", "title": "Shipping", "url": None}],
    }
    [completion] = [q for q in bot.fake.api_requests if q.path.endswith("/chat/completions")]
    assert content in completion.json()["messages"][0]["content"]
    assert Message.objects.filter(chat_id=chat.pk).count() == 1
    assert captured_events() == before


def test_an_upload_is_cited_by_its_document_name(client, bot, widget):
    from apps.kb.models import KbChunk, KbDocument

    content = "Tea ships from Yunnan within two days."
    document = KbDocument.objects.create(
        widget=widget, name="shipping.pdf", format="pdf", size=10, sha256="0" * 64, state="ready"
    )
    embedded = kb_hooks.embed(widget, [content])
    kb_services.store_chunks(
        widget=widget,
        texts=[content],
        vectors=embedded.vectors,
        model=embedded.model,
        source_ref=f"upload:{document.pk}",
        doc_id=None,
    )
    assert KbChunk.objects.filter(source_ref=f"upload:{document.pk}").exists()
    r = suggest(client, chat_of(widget).pk)
    assert r.json()["sources"] == [{"source_ref": f"upload:{document.pk}", "title": "shipping.pdf", "url": None}]


def test_without_an_assistant_it_is_409_ai_unavailable(client, bot, widget):
    bot.assistant.enabled = False
    bot.assistant.save()
    assert_problem(suggest(client, chat_of(widget).pk), 409, "ai_unavailable")


def test_without_a_usable_credential_it_is_409_ai_unavailable(client, bot, widget):
    Credential.objects.filter(widget=widget).update(is_active=False)
    assert_problem(suggest(client, chat_of(widget).pk), 409, "ai_unavailable")
    assert bot.fake.api_requests == []


def test_the_31st_suggestion_in_a_minute_is_429_with_retry_after(client, bot, widget):
    AiSettings.objects.filter(widget=widget).update(rag_enabled=False)
    chat = chat_of(widget)
    for _ in range(30):
        assert suggest(client, chat.pk).status_code == 200
    r = suggest(client, chat.pk)
    assert_problem(r, 429, "rate_limited")
    assert int(r["Retry-After"]) >= 1


def test_another_widgets_chat_is_the_same_404_as_a_missing_one(client, bot, widget, other_widget):
    foreign = chat_of(other_widget)
    assert_problem(suggest(client, foreign.pk), 404, "not_found")
    assert_problem(suggest(client, 999999999), 404, "not_found")
    assert bot.fake.api_requests == []


def test_scope_auth_and_body(api, bot, widget):
    chat = chat_of(widget)
    assert_problem(suggest(api(["chats:read"]), chat.pk), 403)
    from rest_framework.test import APIClient

    assert_problem(suggest(APIClient(), chat.pk), 401)
    assert_problem(suggest(api(["chats:write"]), chat.pk, data={"x": 1}, format="json"), 422)


def test_a_failing_provider_is_502_and_alerts(client, bot, widget):
    from apps.ai.models import Alert

    AiSettings.objects.filter(widget=widget).update(rag_enabled=False)
    bot.fake.script(*[server_error(503)] * 5)
    assert_problem(suggest(client, chat_of(widget).pk), 502, "provider_failure")
    assert Alert.objects.filter(widget=widget, kind="provider_failing").exists()


def test_a_second_suggestion_answers_again(client, bot, widget):
    AiSettings.objects.filter(widget=widget).update(rag_enabled=False)
    bot.fake.script(ok("First."), ok("Second."))
    chat = chat_of(widget)
    assert [suggest(client, chat.pk).json()["text"] for _ in range(2)] == ["First.", "Second."]


def test_a_crawled_page_is_cited_with_its_address(client, bot, widget):
    content = "Tea ships from Yunnan within two days."
    embedded = kb_hooks.embed(widget, [content])
    page = "https://example.com/delivery"
    kb_services.store_chunks(
        widget=widget, texts=[content], vectors=embedded.vectors, model=embedded.model, source_ref=f"crawl:{page}"
    )
    r = suggest(client, chat_of(widget).pk)
    assert r.json()["sources"] == [{"source_ref": f"crawl:{page}", "title": page, "url": page}]


def test_an_empty_json_object_is_no_body(client, bot, widget):
    chat = chat_of(widget)
    r = client.post(f"/api/v1/chats/{chat.pk}/suggest-reply", {}, format="json")
    assert r.status_code == 200, r.content
    assert r.json()["text"] == ANSWER
    problem = assert_problem(client.post(f"/api/v1/chats/{chat.pk}/suggest-reply", {"a": 1}, format="json"), 422)
    assert problem["errors"] == {"body": ["This operation takes no body."]}
