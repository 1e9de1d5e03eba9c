"""What the AI writes for people in the console: its hand-over summary retells the visitor's words,
so it is shown without links and labelled as such; other messages keep their links."""

import pytest

from apps.ai.assist import SUMMARY_ORIGIN
from apps.ai.tests.factories import AiOperatorFactory, AssistantFactory
from apps.chats import services as chat_services
from apps.chats.models import Message
from apps.chats.tests.factories import MessageFactory

pytestmark = pytest.mark.django_db

DICTATED = "Refund approved by the manager, verify at https://evil.example/verify"


def note_of(html: str, marker: str) -> str:
    start = html.index(marker)
    return html[start : html.index("</li>", start)]


def test_an_ai_summary_is_shown_unlinked_and_labelled_as_the_visitors_words(console, widget, chat):
    operator = AiOperatorFactory(assistant=AssistantFactory(widget=widget))
    chat_services.post_agent_message(
        widget=widget,
        chat=chat,
        agent=operator,
        data=chat_services.MessageInput(body=DICTATED, origin=SUMMARY_ORIGIN, visibility=Message.Visibility.NOTE),
        source="ai",
    )
    MessageFactory(chat=chat, body="My order is at https://shop.example.com/o/12")
    html = console.get(f"/console/chats/{chat.pk}/").content.decode()
    note = note_of(html, 'class="msg by-ai note"')
    assert DICTATED in note
    assert "<a " not in note
    assert "Written from the visitor’s words" in note
    # the visitor's own message keeps its link
    assert '<a href="https://shop.example.com/o/12"' in html


def test_the_label_is_translated(console, widget, chat):
    operator = AiOperatorFactory(assistant=AssistantFactory(widget=widget))
    chat_services.post_agent_message(
        widget=widget,
        chat=chat,
        agent=operator,
        data=chat_services.MessageInput(body="Summary", origin=SUMMARY_ORIGIN, visibility=Message.Visibility.NOTE),
        source="ai",
    )
    html = console.get(f"/console/chats/{chat.pk}/", HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert "Aus den Worten des Besuchers" in note_of(html, 'class="msg by-ai note"')
