"""The console's mentions: a note written in the console mentions, the header's count, the Mentions
page (own mentions, unread first), opening one (read, then the chat at the note) and the picker's
operators."""

import pytest
from django.test import Client

from apps.agents.tests.factories import AIAgentFactory, HumanAgentFactory
from apps.mentions.models import Mention
from apps.mentions.tests.factories import MentionFactory, NoteFactory

from .conftest import make_chat

pytestmark = pytest.mark.django_db


def signed_in(agent) -> Client:
    client = Client()
    client.force_login(agent.user)
    return client


def mention_of(agent, *, by, chat, body="@Olga look", read=False):
    row = MentionFactory(message=NoteFactory(chat=chat, agent=by, body=body), agent=agent, by_agent=by)
    if read:
        Mention.objects.filter(pk=row.pk).update(read_at=row.created_at)
    return row


def test_a_note_written_in_the_console_mentions_the_operator_it_names(console, htmx, chat, operator, colleague):
    assert htmx.post(f"/console/chats/{chat.pk}/note/", {"body": "@Pavel can you call them?"}).status_code == 200
    row = Mention.objects.get()
    assert (row.agent_id, row.by_agent_id, row.chat_id) == (colleague.pk, operator.pk, chat.pk)


def test_the_header_counts_the_operators_unread_mentions(console, widget, chat, operator, colleague):
    mention_of(operator, by=colleague, chat=chat)
    mention_of(operator, by=colleague, chat=chat, read=True)
    mention_of(colleague, by=operator, chat=chat, body="@Pavel")
    html = console.get("/console/").content.decode()
    assert 'id="mentions-count" class="badge badge-count"><span class="mentions-n">1</span>' in html


def test_the_page_lists_own_mentions_unread_first(console, widget, chat, operator, colleague):
    read = mention_of(operator, by=colleague, chat=chat, body="@Olga first, read", read=True)
    unread = mention_of(operator, by=colleague, chat=chat, body="@Olga second, unread")
    mention_of(colleague, by=operator, chat=chat, body="@Pavel not for Olga")
    response = console.get("/console/mentions/")
    html = response.content.decode()
    assert response.status_code == 200
    assert html.index(f"/console/mentions/{unread.pk}/open/") < html.index(f"/console/mentions/{read.pk}/open/")
    assert "not for Olga" not in html
    assert 'href="/console/mentions/" id="mentions-nav" aria-current="page"' in html


def test_the_page_says_when_there_is_nothing(console):
    assert "Nobody has mentioned you yet." in console.get("/console/mentions/").content.decode()


def test_opening_a_mention_reads_it_and_shows_the_chat_at_the_note(console, chat, operator, colleague):
    row = mention_of(operator, by=colleague, chat=chat)
    response = console.post(f"/console/mentions/{row.pk}/open/")
    assert response.status_code == 303
    assert response["Location"] == f"/console/chats/{chat.pk}/#m-{row.message_id}"
    assert Mention.objects.get(pk=row.pk).read_at is not None
    assert console.post(f"/console/mentions/{row.pk}/open/").status_code == 303  # again: still fine


def test_another_operators_or_another_widgets_mention_is_404(console, widget, other_widget, chat, operator, colleague):
    theirs = mention_of(colleague, by=operator, chat=chat, body="@Pavel")
    stranger = HumanAgentFactory(widget=other_widget, name="Olga")
    foreign = mention_of(stranger, by=HumanAgentFactory(widget=other_widget), chat=make_chat(other_widget))
    for row in (theirs, foreign):
        assert console.post(f"/console/mentions/{row.pk}/open/").status_code == 404
        assert Mention.objects.get(pk=row.pk).read_at is None
    assert console.post("/console/mentions/99999999999999999999/open/").status_code == 404
    assert console.get(f"/console/mentions/{theirs.pk}/open/").status_code == 405


def test_the_picker_lists_the_widgets_human_operators_but_not_oneself(console, widget, other_widget, colleague):
    AIAgentFactory(widget=widget, name="Robo")
    HumanAgentFactory(widget=other_widget, name="Zed")
    HumanAgentFactory(widget=widget, name="Anna", surname="Petrova")
    items = console.get("/console/mentions/operators/").json()["items"]
    assert [item["name"] for item in items] == ["Anna Petrova", "Pavel"]


def test_the_note_box_carries_the_picker(console, chat):
    html = console.get(f"/console/chats/{chat.pk}/").content.decode()
    assert 'id="mention-list" class="canned mention-list" role="listbox"' in html
    assert 'data-url="/console/mentions/operators/"' in html


def test_the_mentions_pages_need_a_signed_in_operator(client, chat):
    for url in ("/console/mentions/", "/console/mentions/operators/"):
        response = client.get(url)
        assert response.status_code == 302 and "/console/login/" in response["Location"]
