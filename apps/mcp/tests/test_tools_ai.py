"""suggest_reply and search_knowledge_base through the official MCP client, against the loopback
OpenAI fake: the same answers as their REST twins, nothing posted, the same refusals."""

from __future__ import annotations

import ipaddress

import pytest

from apps.ai.models import AiSettings
from apps.ai.tests.factories import AiOperatorFactory, AssistantFactory, CredentialFactory
from apps.chats import services as chat_services
from apps.chats.models import Chat, Message
from apps.chats.tests.factories import ContactFactory
from apps.kb import hooks as kb_hooks
from apps.kb import services as kb_services
from tests.llm_fake import llm_fake  # noqa: F401 (the fixture)

from .tool_calls import call_tool, call_tools, rest_problem

pytestmark = pytest.mark.django_db(transaction=True)

ANSWER = "It ships within two days."
RULE = "Tea ships from Yunnan within two days."


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
    rule = kb_services.create_rule(
        widget=widget, content=RULE, doc_id="Shipping", embedded=kb_hooks.embed(widget, [RULE])
    )
    return type("Bot", (), {"fake": fake, "assistant": assistant, "rule": rule})


def visitor_chat(widget) -> Chat:
    message = chat_services.post_client_message(
        widget=widget,
        contact=ContactFactory(widget=widget),
        data=chat_services.MessageInput(body="When does my tea ship from Yunnan?"),
    )
    return Chat.objects.get(pk=message.chat_id)


def test_suggest_reply_answers_the_routes_suggestion_and_posts_nothing(make_token, api, widget, bot, captured_events):
    chat = visitor_chat(widget)
    before, messages = captured_events(), Message.objects.filter(chat=chat).count()
    got = call_tool(make_token(scopes=["chats:write"]), "suggest_reply", {"chat_id": chat.pk})
    rest = api(scopes=["chats:write"]).post(f"/api/v1/chats/{chat.pk}/suggest-reply")
    assert not got.is_error, got.problem
    assert (
        got.data
        == rest.json()
        == {
            "text": ANSWER,
            "sources": [{"source_ref": f"manual:{bot.rule.pk}", "title": "Shipping", "url": None}],
        }
    )
    assert Message.objects.filter(chat=chat).count() == messages
    assert captured_events() == before


def test_search_knowledge_base_answers_the_routes_hits(make_token, api, bot):
    arguments = {"q": "When does tea ship?", "limit": 3}
    got = call_tool(make_token(scopes=["kb:read"]), "search_knowledge_base", arguments)
    rest = api(scopes=["kb:read"]).get("/api/v1/kb/search", arguments).json()
    assert not got.is_error, got.problem
    assert got.data == rest
    assert [hit["content"] for hit in got.data["data"]] == [RULE]


def test_a_blank_question_is_the_routes_422(make_token, api, bot):
    got = call_tool(make_token(scopes=["kb:read"]), "search_knowledge_base", {"q": "   "})
    rest = api(scopes=["kb:read"]).get("/api/v1/kb/search", {"q": "   "})
    assert rest.status_code == 422 and got.is_error and got.problem == rest_problem(rest)
    assert got.problem["errors"]["q"]


def test_another_widgets_assistant_is_refused_as_a_missing_one(make_token, other_widget, bot):
    foreign = AssistantFactory(widget=other_widget)
    foreign_refusal, missing_refusal = call_tools(
        make_token(scopes=["kb:read"]),
        [
            ("search_knowledge_base", {"q": "tea", "assistant_id": foreign.pk}),
            ("search_knowledge_base", {"q": "tea", "assistant_id": foreign.pk + 99}),
        ],
    )
    assert foreign_refusal.is_error and foreign_refusal.problem == missing_refusal.problem
    assert foreign_refusal.problem["status"] == 404
