"""The composer's "Suggest": offered only when the widget has an assistant; it fills the reply box
with what apps.ai.assist.suggest_reply answers (against the loopback OpenAI fake) and never sends."""

import ipaddress

import pytest

from apps.ai.models import AiSettings
from apps.ai.tests.factories import AiOperatorFactory, AssistantFactory, CredentialFactory
from apps.chats.models import Message
from tests.llm_fake import llm_fake  # noqa: F401 (the fixture)

pytestmark = pytest.mark.django_db

ANSWER = "Your tea ships within two days."


@pytest.fixture(autouse=True)
def loopback_resolves(monkeypatch):
    from apps.platform import outbound

    monkeypatch.setattr(outbound.policy, "resolve_host", lambda host, port: [ipaddress.ip_address("127.0.0.1")])


@pytest.fixture
def assistant(widget, llm_fake):  # noqa: F811
    fake = llm_fake("openai", text=ANSWER)
    AiSettings.objects.create(widget=widget, enabled=True)
    assistant = AssistantFactory(widget=widget, is_default=True)
    AiOperatorFactory(assistant=assistant)
    CredentialFactory(widget=widget, api_key=fake.api_key, base_url=fake.base_url, model="gpt-4o-mini")
    assistant.fake = fake
    return assistant


def url(chat):
    return f"/console/chats/{chat.pk}/suggest/"


def test_the_button_is_offered_only_when_the_widget_has_an_assistant(console, widget, chat):
    assert f'formaction="{url(chat)}"' not in console.get(f"/console/chats/{chat.pk}/").content.decode()
    assistant = AssistantFactory(widget=widget)
    assert f'formaction="{url(chat)}"' in console.get(f"/console/chats/{chat.pk}/").content.decode()
    assistant.enabled = False
    assistant.save()
    assert f'formaction="{url(chat)}"' not in console.get(f"/console/chats/{chat.pk}/").content.decode()


def test_suggest_fills_the_reply_box_and_sends_nothing(htmx, assistant, chat, captured_events):
    before = list(Message.objects.filter(chat=chat).values_list("pk", flat=True))
    response = htmx.post(url(chat))
    assert response.status_code == 200
    page = response.content.decode()
    assert 'id="composer"' in page
    assert f'id="reply_body">\n{ANSWER}</textarea>' in page
    assert list(Message.objects.filter(chat=chat).values_list("pk", flat=True)) == before
    assert captured_events() == []
    [completion] = [r for r in assistant.fake.api_requests if r.path.endswith("/chat/completions")]
    assert completion.json()["messages"][-1] == {"role": "user", "content": "Hello there"}


def test_a_plain_post_gets_the_chat_page_with_the_reply_filled(console, assistant, chat):
    response = console.post(url(chat))
    assert response.status_code == 200 and f">\n{ANSWER}</textarea>" in response.content.decode()


def test_without_an_assistant_the_refusal_is_shown_and_nothing_changes(htmx, widget, chat):
    response = htmx.post(url(chat))
    assert response.status_code == 409
    assert "no assistant or provider key" in response.content.decode()


def test_another_widgets_chat_is_404(htmx, assistant, foreign_chat):
    assert htmx.post(url(foreign_chat)).status_code == 404
    assert assistant.fake.api_requests == []


def test_suggest_needs_a_post_and_a_signed_in_operator(assistant, chat):
    from django.test import Client

    response = Client().post(url(chat))
    assert response.status_code in (302, 303) and "/console/login/" in response["Location"]


def test_an_ai_answer_shows_its_sources_as_safe_links(console, chat):
    from apps.chats.tests.factories import MessageFactory

    MessageFactory(
        chat=chat,
        author_kind=Message.Author.AI,
        body="Returns take 14 days.",
        sources=[{"title": "Returns", "url": "https://shop.example/returns"}, {"title": "Price list.pdf", "url": None}],
    )
    page = console.get(f"/console/chats/{chat.pk}/").content.decode()
    assert '<a href="https://shop.example/returns" target="_blank" rel="noopener noreferrer">Returns</a>' in page
    assert "Price list.pdf</p>" in page
