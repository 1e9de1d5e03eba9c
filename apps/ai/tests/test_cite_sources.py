"""Answers with sources: an assistant with `cite_sources` answering from the knowledge base keeps the
documents its chunks came from with the AI message (`Message.sources`), shown by the REST API, the
visitor API and the websocket frames. Against the loopback provider fake, which also embeds."""

import json

import pytest
from django.db import transaction
from django.test import Client

from apps.ai import runtime
from apps.ai.models import AiSettings
from apps.ai.tests.factories import AiOperatorFactory, AssistantFactory, CredentialFactory
from apps.chats import realtime
from apps.chats import services as chat_services
from apps.chats.models import Message
from apps.chats.tests.factories import ContactFactory
from apps.chats.visitor import services as visitor_services
from apps.kb import selectors as kb_selectors
from apps.kb import services as kb_services
from apps.kb.models import KbDocument

pytestmark = pytest.mark.django_db

QUESTION = "How long does tea delivery take?"
ANSWER = "Tea delivery takes two days."
PAGE = "https://shop.example/delivery"


@pytest.fixture
def bot(widget, llm_fake):
    """AI on, an assistant with knowledge retrieval and `cite_sources`, its AI operator, a widget-wide
    credential on the fake (which answers and embeds)."""
    fake = llm_fake("openai", text=ANSWER)
    AiSettings.objects.create(widget=widget, enabled=True)
    assistant = AssistantFactory(widget=widget, is_default=True, rag_enabled=True, cite_sources=True)
    operator = AiOperatorFactory(assistant=assistant)
    CredentialFactory(widget=widget, api_key=fake.api_key, base_url=fake.base_url, model="gpt-4o-mini")
    return type("Bot", (), {"fake": fake, "assistant": assistant, "operator": operator})


def store(widget, text: str, *, source_ref: str, document=None, doc_id=None) -> None:
    embedded = kb_services.embed_texts(widget=widget, texts=[text])
    with transaction.atomic():
        kb_services.store_chunks(
            widget=widget,
            texts=[text],
            vectors=embedded.vectors,
            model=embedded.model,
            source_ref=source_ref,
            document=document,
            doc_id=doc_id,
        )


def upload(widget, name: str, text: str) -> KbDocument:
    document = KbDocument.objects.create(
        widget=widget, name=name, format="pdf", size=len(text), sha256=name.ljust(64, "0")[:64], state="ready"
    )
    store(widget, text, source_ref=f"upload:{document.pk}", document=document)
    return document


def crawled(widget, url: str, text: str) -> None:
    store(widget, text, source_ref=f"crawl:{url}", doc_id=url[:200])


def answered(widget, question: str = QUESTION, contact=None) -> Message:
    message = chat_services.post_client_message(
        widget=widget, contact=contact or ContactFactory(widget=widget), data=chat_services.MessageInput(body=question)
    )
    assert runtime.answer(message_id=message.pk) == "answered"
    return Message.objects.get(chat_id=message.chat_id, author_kind="ai")


def by_title(sources):
    return sorted(sources, key=lambda s: s["title"])


def test_an_answer_from_the_knowledge_base_keeps_its_documents(bot, widget):
    upload(widget, "Shipping terms.pdf", "Tea delivery takes two days from the Yunnan warehouse.")
    crawled(widget, PAGE, "Tea delivery: two days, free over 50 euros.")
    reply = answered(widget)
    assert reply.body == ANSWER
    assert by_title(reply.sources) == [
        {"title": "Shipping terms.pdf", "url": None},
        {"title": PAGE, "url": PAGE},
    ]
    # the knowledge the sources name was in the prompt
    assert "Yunnan warehouse" in bot.fake.requests[-1].json()["messages"][0]["content"]


def test_a_document_is_cited_once_however_many_of_its_chunks_were_used(bot, widget):
    crawled(widget, PAGE, "Tea delivery takes two days.")
    crawled(widget, PAGE + "?page=2", "Tea delivery is free over 50 euros.")
    store(widget, "Tea delivery is tracked.", source_ref=f"crawl:{PAGE}", doc_id=PAGE)
    assert [s["title"] for s in by_title(answered(widget).sources)] == [PAGE, PAGE + "?page=2"]


def test_without_cite_sources_an_answer_carries_none(bot, widget):
    bot.assistant.cite_sources = False
    bot.assistant.save()
    crawled(widget, PAGE, "Tea delivery takes two days.")
    assert answered(widget).sources is None


def test_hand_written_rules_and_an_empty_knowledge_base_cite_nothing(bot, widget):
    assert answered(widget).sources is None  # nothing retrieved
    embedded = kb_services.embed_texts(widget=widget, texts=["Tea delivery takes two days."])
    kb_services.create_rule(widget=widget, content="Tea delivery takes two days.", doc_id=None, embedded=embedded)
    assert answered(widget).sources is None


def test_a_hand_over_carries_no_sources(bot, widget):
    crawled(widget, PAGE, "Tea delivery takes two days.")
    bot.assistant.escalation_triggers = ["refund"]
    bot.assistant.save()
    message = chat_services.post_client_message(
        widget=widget, contact=ContactFactory(widget=widget), data=chat_services.MessageInput(body="tea refund")
    )
    assert runtime.answer(message_id=message.pk) == "handed_off"
    assert not Message.objects.filter(chat_id=message.chat_id, author_kind="ai").exclude(sources=None).exists()


@pytest.mark.parametrize(
    "address", ["javascript:alert(document.cookie)", "data:text/html,<script>alert(1)</script>", "ftp://x.example/a"]
)
def test_a_source_that_is_not_http_is_never_a_link(bot, widget, address):
    crawled(widget, address, "Tea delivery takes two days.")
    assert answered(widget).sources == [{"title": address, "url": None}]


def test_cited_sources_reads_the_upload_names_in_one_query(widget, django_assert_num_queries, llm_fake):
    fake = llm_fake("openai", text=ANSWER)
    CredentialFactory(widget=widget, api_key=fake.api_key, base_url=fake.base_url)
    first = upload(widget, "A.pdf", "Tea delivery.")
    second = upload(widget, "B.pdf", "Tea prices.")
    chunks = list(kb_selectors.rules(widget).order_by("id"))
    with django_assert_num_queries(1):
        sources = kb_selectors.chunk_sources(widget, chunks)
    assert sources == [
        {"source_ref": f"upload:{first.pk}", "title": "A.pdf", "url": None},
        {"source_ref": f"upload:{second.pk}", "title": "B.pdf", "url": None},
    ]


# --- where the sources are read --------------------------------------------------------------------------


def test_the_rest_api_and_the_visitor_api_show_the_sources(bot, widget, api):
    crawled(widget, PAGE, "Tea delivery takes two days.")
    session, token = visitor_services.start_session(widget=widget, name="Anna")
    reply = answered(widget, contact=session.contact)
    listed = api(["messages:read"]).get(f"/api/v1/chats/{reply.chat_id}/messages").json()["data"]
    by_id = {m["id"]: m for m in listed}
    assert by_id[reply.pk]["sources"] == [{"title": PAGE, "url": PAGE}]
    assert all(m["sources"] is None for m in listed if m["id"] != reply.pk)

    response = Client().get(f"/api/visitor/v1/{widget.button_guid}/messages", HTTP_AUTHORIZATION=f"Visitor {token}")
    assert response.status_code == 200, response.content
    seen = {m["id"]: m for m in response.json()["data"]}
    assert seen[reply.pk]["sources"] == [{"title": PAGE, "url": PAGE}]
    assert all(m["sources"] is None for m in seen.values() if m["id"] != reply.pk)


def test_the_websocket_frames_carry_the_sources(bot, widget, monkeypatch, django_capture_on_commit_callbacks):
    pushed = []
    monkeypatch.setattr(realtime, "push", lambda groups, frame: pushed.append((groups, frame)))
    crawled(widget, PAGE, "Tea delivery takes two days.")
    message = chat_services.post_client_message(
        widget=widget, contact=ContactFactory(widget=widget), data=chat_services.MessageInput(body=QUESTION)
    )
    with django_capture_on_commit_callbacks(execute=True):
        assert runtime.answer(message_id=message.pk) == "answered"
    [(groups, frame)] = [
        (g, f) for g, f in pushed if f["event"] == "message" and f["message"]["author"]["kind"] == "ai"
    ]
    # one frame to the visitor's room and the operators' consoles alike
    assert set(groups) == {f"chat.{message.chat_id}", f"widget.{widget.pk}"}
    assert frame["message"]["sources"] == [{"title": PAGE, "url": PAGE}]
    json.dumps(frame)


# --- the assistant's field -----------------------------------------------------------------------------


def test_cite_sources_is_read_and_written_with_the_other_assistant_fields(widget, api):
    client = api(["ai:read", "ai:write"])
    headers = {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": "cite-1"}
    created = client.post("/api/v1/ai/assistants", {"name": "Tea"}, format="json", **headers)
    assert created.status_code == 201, created.content
    assert created.json()["cite_sources"] is False
    pk = created.json()["id"]
    changed = client.patch(
        f"/api/v1/ai/assistants/{pk}", {"cite_sources": True}, format="json", HTTP_X_SERVICE_IDEMPOTENCY_KEY="cite-2"
    )
    assert changed.status_code == 200 and changed.json()["cite_sources"] is True
    assert client.get(f"/api/v1/ai/assistants/{pk}").json()["cite_sources"] is True


def test_cite_sources_must_be_a_boolean(widget, api, assert_problem):
    client = api(["ai:read", "ai:write"])
    response = client.post(
        "/api/v1/ai/assistants",
        {"name": "Tea", "cite_sources": "yes"},
        format="json",
        HTTP_X_SERVICE_IDEMPOTENCY_KEY="c3",
    )
    body = assert_problem(response, 422)
    assert "cite_sources" in json.dumps(body)
