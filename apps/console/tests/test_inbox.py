"""The inbox's reads and words: the views' counts of open chats, who a visitor is, unread counts and
waiting time on the rows, read receipts for what the operator has open, a chat's state said on it,
and the confirmation a destructive action asks for."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone, translation

from apps.chats.models import Chat, Contact, Message, VisitorSession
from apps.chats.tests.factories import ChatFactory, ContactFactory, MessageFactory
from apps.console import present

from .conftest import make_chat

pytestmark = pytest.mark.django_db


def row(html: str, chat) -> str:
    start = html.index(f'data-chat-id="{chat.pk}"')
    return html[html.rindex("<li", 0, start) : html.index("</li>", start)]


def counts(html: str) -> dict[str, str]:
    found = {}
    for view in ("mine", "unassigned", "all"):
        start = html.index(f'id="count-{view}"')
        found[view] = html[html.index(">", start) + 1 : html.index("<", start)]
    return found


# --- the views -------------------------------------------------------------------------------------


def test_the_views_count_the_open_chats_of_the_widget(console, widget, operator, colleague, other_widget):
    make_chat(widget, agent=operator)
    make_chat(widget, agent=colleague)
    make_chat(widget)
    make_chat(widget)
    make_chat(widget, status=Chat.Status.EXPIRED)  # closed: in no count
    make_chat(widget, status=Chat.Status.SPAM)
    make_chat(other_widget)  # another widget's
    assert counts(console.get("/console/").content.decode()) == {"mine": "1", "unassigned": "2", "all": "4"}


def test_the_list_fragment_carries_the_counts_out_of_band(htmx, widget):
    make_chat(widget)
    html = htmx.get("/console/", {"view": "mine"}).content.decode()
    assert html.lstrip().startswith('<ul id="chat-list"')
    assert '<span id="count-all" class="count" hx-swap-oob="true">1</span>' in html
    assert '<span id="count-mine" class="count" hx-swap-oob="true">0</span>' in html


def test_the_chosen_view_stays_chosen(console, widget):
    html = console.get("/console/", {"view": "unassigned"}).content.decode()
    assert 'value="unassigned" id="view-unassigned" checked' in html
    assert 'value="all" id="view-all" checked' not in html


def test_an_empty_view_says_what_it_lacks(console):
    assert "No open chats are assigned to you." in console.get("/console/", {"view": "mine"}).content.decode()
    assert "Nobody is waiting in the queue." in console.get("/console/", {"view": "unassigned"}).content.decode()


# --- a row ------------------------------------------------------------------------------------------


def test_who_the_visitor_is(console, widget):
    def chat_of(**fields):
        contact = ContactFactory(widget=widget, **{"name": "", "email": "", "phone": "", **fields})
        chat = ChatFactory(contact=contact)
        MessageFactory(chat=chat, body="hi")
        return chat

    named = chat_of(name="Anna Berg", email="anna@example.com")
    mailed = chat_of(email="kim@example.com", phone="+1 555 0100")
    phoned = chat_of(phone="+1 555 0199")
    paged = chat_of()
    VisitorSession.objects.create(
        widget=widget, contact=paged.contact, token_hash="p" * 64, page_url="https://shop.example/pricing?x=1"
    )
    unknown = chat_of()
    html = console.get("/console/").content.decode()
    assert "<bdi>Anna Berg</bdi>" in row(html, named) and ">A</span>" in row(html, named)
    assert "<bdi>kim@example.com</bdi>" in row(html, mailed)
    assert "<bdi>+1 555 0199</bdi>" in row(html, phoned)
    assert "<bdi>Visitor from shop.example/pricing</bdi>" in row(html, paged)
    assert "<bdi>Visitor</bdi>" in row(html, unknown)
    # the avatar's colour stays with the contact
    assert f"hue-{named.contact_id % 8}" in row(html, named)


def test_a_row_shows_the_channel_unread_count_and_waiting_time(console, widget, operator):
    chat = make_chat(widget, body="", channel="tg")
    start = timezone.now() - timedelta(minutes=12)
    MessageFactory(chat=chat, body="first", created_at=start)
    MessageFactory(chat=chat, body="answer", author_kind=Message.Author.AGENT, agent=operator, created_at=start)
    MessageFactory(chat=chat, body="still there?", created_at=start + timedelta(minutes=2))
    MessageFactory(chat=chat, body="hello?", created_at=start + timedelta(minutes=4))
    html = row(console.get("/console/").content.decode(), chat)
    assert 'title="Telegram"' in html and ">TG</span>" in html
    assert "3 unread messages" in html  # every visitor message nobody marked seen
    assert "waiting 10\xa0minutes" in html  # since the first unanswered one, not the last
    assert "<bdi>hello?</bdi>" in html


@pytest.mark.parametrize(
    ("count", "said"),
    [(1, "1 непрочитанное сообщение"), (3, "3 непрочитанных сообщения"), (5, "5 непрочитанных сообщений")],
)
def test_a_rows_unread_count_and_wait_are_said_in_the_consoles_language(count, said):
    now = timezone.now()
    with translation.override("ru"):
        assert present.unread_label(count) == said
        assert present.waiting_label(now - timedelta(minutes=10), now=now) == "ждёт 10\xa0минут"


def test_an_answered_chat_shows_no_waiting_time(console, widget, operator):
    chat = make_chat(widget, body="question")
    MessageFactory(chat=chat, body="answer", author_kind=Message.Author.AGENT, agent=operator)
    assert "waiting" not in row(console.get("/console/").content.decode(), chat)


def test_the_list_costs_the_same_statements_with_anonymous_visitors_and_unread_messages(console, widget):
    def list_statements() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert console.get("/console/").status_code == 200
        return len(queries)

    make_chat(widget, name="Anna")
    few = list_statements()
    for n in range(20):
        contact = ContactFactory(widget=widget, name="", email="")
        VisitorSession.objects.create(
            widget=widget, contact=contact, token_hash=f"{n:064d}", page_url=f"https://a.example/{n}"
        )
        chat = ChatFactory(contact=contact, channel="widget")
        MessageFactory(chat=chat, body="one")
        MessageFactory(chat=chat, body="two")
    assert list_statements() == few


# --- read receipts ---------------------------------------------------------------------------------


def test_seen_marks_the_visitors_messages_and_tells_the_visitor(htmx, widget, chat, monkeypatch):
    from apps.core import events

    emitted = []
    emit = events.emit
    monkeypatch.setattr(
        events, "emit", lambda w, type, **data: (emitted.append((type, data)), emit(w, type, **data))[1]
    )
    newest = MessageFactory(chat=chat, body="are you there?")
    assert htmx.post(f"/console/chats/{chat.pk}/seen/").status_code == 204
    visitor_messages = Message.objects.filter(chat=chat, author_kind=Message.Author.CLIENT)
    assert visitor_messages.filter(seen_at__isnull=True).count() == 0
    assert emitted == [(events.MESSAGES_SEEN, {"chat_id": chat.pk, "message_id": newest.pk, "by": "agent"})]
    # nothing new to mark: nothing is said again
    assert htmx.post(f"/console/chats/{chat.pk}/seen/").status_code == 204
    assert len(emitted) == 1


def test_seen_in_a_spam_chat_changes_nothing(htmx, widget):
    chat = make_chat(widget, status=Chat.Status.SPAM)
    assert htmx.post(f"/console/chats/{chat.pk}/seen/").status_code == 204
    assert Message.objects.filter(chat=chat, seen_at__isnull=False).count() == 0


# --- a chat's state, said on it ---------------------------------------------------------------------


def _state_line(console, chat) -> str:
    html = console.get(f"/console/chats/{chat.pk}/").content.decode()
    start = html.index('id="chat-state"')
    return html[start : html.index("</p>", start)]


def test_an_open_chat_says_it_closes_by_itself(console, chat):
    line = _state_line(console, chat)
    assert ">open</span>" in line and "Closes by itself 7 minutes after the last message." in line


def test_a_chat_closed_right_after_talking_says_it_reads_open_again(console, widget):
    chat = make_chat(widget, status=Chat.Status.EXPIRED)
    line = _state_line(console, chat)
    assert ">closed</span>" in line and "Reopens if the visitor writes." in line
    assert "shows it as open again until it has been quiet for 7 minutes" in line


def test_a_chat_closed_long_after_its_last_message_only_says_it_reopens(console, widget):
    chat = make_chat(widget, status=Chat.Status.EXPIRED)
    Chat.objects.filter(pk=chat.pk).update(last_message_at=timezone.now() - timedelta(minutes=8))
    line = _state_line(console, chat)
    assert "Reopens if the visitor writes." in line and "open again" not in line


def test_ready_and_spam_say_what_they_mean(console, widget):
    assert "the next check (every 5 minutes)" in _state_line(console, make_chat(widget, status=Chat.Status.READY))
    assert "stays out of the views" in _state_line(console, make_chat(widget, status=Chat.Status.SPAM))


# --- actions by weight ------------------------------------------------------------------------------


def test_send_is_the_one_primary_action_and_spam_waits_in_the_menu(console, chat):
    html = console.get(f"/console/chats/{chat.pk}/").content.decode()
    assert html.count("btn-primary") == 2  # Send, and Add note on the composer's other tab
    assert 'class="btn btn-primary">Send</button>' in html
    menu = html[html.index('<details class="menu">') : html.index("</details>", html.index('<details class="menu">'))]
    assert "Mark as spam…" in menu and "<form" not in menu  # a link to the question, not the action


@pytest.mark.parametrize("path", ["", "panel/"])
def test_marking_as_spam_asks_first(console, chat, path):
    html = console.get(f"/console/chats/{chat.pk}/{path}", {"confirm": "spam"}).content.decode()
    assert "Mark this chat as spam?" in html
    assert f'action="/console/chats/{chat.pk}/spam/"' in html and 'class="btn btn-danger"' in html
    assert Chat.objects.get(pk=chat.pk).status == Chat.Status.ACTIVE  # asking changes nothing
    plain = console.get(f"/console/chats/{chat.pk}/{path}").content.decode()
    assert "Mark this chat as spam?" not in plain and f'action="/console/chats/{chat.pk}/spam/"' not in plain


def test_a_contact_with_nothing_known_is_named_visitor(widget):
    from apps.console.present import visitor_name

    assert visitor_name(Contact(widget=widget, name="", email="", phone="")) == "Visitor"
