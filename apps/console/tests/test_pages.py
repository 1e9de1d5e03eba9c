"""The chat list and a chat's page: only the agent's widget, filters, the history as drawn (notes,
AI, keyboards, files), the fragments htmx and the socket ask for, and the list's query count."""

import pytest
from django.core.files.base import ContentFile
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.agents.tests.factories import AIAgentFactory, HumanAgentFactory
from apps.chats.models import Chat, Message
from apps.chats.tests.factories import MessageFactory
from apps.core.models import File
from apps.erasure.models import PendingErasure
from tests.support.factories import WidgetFactory

from .conftest import make_chat

pytestmark = pytest.mark.django_db


def test_the_list_needs_a_signed_in_operator(chat):
    from django.test import Client

    response = Client().get("/console/")
    assert response.status_code == 302 and response["Location"] == "/console/login/?next=%2Fconsole%2F"


def test_htmx_requests_of_a_signed_out_user_are_sent_to_the_login_by_hx_redirect(chat):
    from django.test import Client

    response = Client(headers={"HX-Request": "true"}).get("/console/")
    assert response.status_code == 200 and response["HX-Redirect"] == "/console/login/"


def test_the_list_shows_the_widgets_chats_only(console, chat, foreign_chat):
    html = console.get("/console/").content.decode()
    assert f'data-chat-id="{chat.pk}"' in html and "Hello there" in html
    assert f'data-chat-id="{foreign_chat.pk}"' not in html and "Not yours" not in html
    assert 'data-ws="/ws/agent/?widget=' in html


def test_the_list_is_newest_activity_first(console, widget):
    old = make_chat(widget, name="Old", body="first")
    new = make_chat(widget, name="New", body="second")
    MessageFactory(chat=old, body="old one again")  # old talks last
    html = console.get("/console/").content.decode()
    assert html.index(f'data-chat-id="{old.pk}"') < html.index(f'data-chat-id="{new.pk}"')


def test_filters(console, widget, operator):
    mine = make_chat(widget, name="Mine", body="about a refund", agent=operator)
    unassigned = make_chat(widget, name="Free", body="about delivery")
    closed = make_chat(widget, name="Closed", body="bye", status=Chat.Status.EXPIRED)
    telegram = make_chat(widget, name="Tg", body="from telegram", channel="tg")

    def ids(query):
        html = console.get("/console/", query).content.decode()
        return {c.pk for c in (mine, unassigned, closed, telegram) if f'data-chat-id="{c.pk}"' in html}

    # The views list open chats; the status filter shows the others.
    assert ids({}) == {mine.pk, unassigned.pk, telegram.pk}
    assert ids({"view": "all"}) == {mine.pk, unassigned.pk, telegram.pk}
    assert ids({"view": "mine"}) == {mine.pk}
    assert ids({"view": "unassigned"}) == {unassigned.pk, telegram.pk}
    assert ids({"view": "unassigned", "status": "any"}) == {unassigned.pk, closed.pk, telegram.pk}
    assert ids({"status": "expired"}) == {closed.pk}
    assert ids({"status": "any"}) == {mine.pk, unassigned.pk, closed.pk, telegram.pk}
    assert ids({"channel": "tg"}) == {telegram.pk}
    assert ids({"q": "REFUND"}) == {mine.pk}


def test_an_empty_room_is_not_listed_nor_counted(console, widget):
    talked = make_chat(widget, name="Talked")
    empty = make_chat(widget, name="Opened the widget only", body="", last_message_at=None)
    html = console.get("/console/", {"status": "any"}).content.decode()
    assert f'data-chat-id="{talked.pk}"' in html and f'data-chat-id="{empty.pk}"' not in html
    assert '<span class="count" id="count-all">1</span>' in html


def test_a_bad_filter_shows_its_error_and_is_left_out(console, chat):
    response = console.get("/console/", {"channel": "no spaces<", "status": "bogus"})
    html = response.content.decode()
    assert response.status_code == 200
    assert "A channel code holds letters, digits, _ and - only." in html
    assert "Select a valid choice." in html
    assert f'data-chat-id="{chat.pk}"' in html


def test_htmx_gets_the_list_fragment(htmx, chat):
    html = htmx.get("/console/", {"status": "active"}).content.decode()
    assert html.lstrip().startswith('<ul id="chat-list"')
    assert f'data-chat-id="{chat.pk}"' in html


def _count_list_queries(console) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert console.get("/console/").status_code == 200
    return len(queries)


def test_the_list_costs_the_same_queries_for_3_and_30_chats(console, widget, operator, colleague):
    for n in range(3):
        make_chat(widget, name=f"A{n}", agent=operator)
    few = _count_list_queries(console)
    for n in range(27):
        make_chat(widget, name=f"B{n}", agent=colleague if n % 2 else None)
    assert _count_list_queries(console) == few
    # session, user, agent rows, the widget's hours, the routing settings (whether Unassigned is the
    # queue), the page's chats (the operator's own, then the others: two reads of ids), those chats
    # (with contact, owner, last message, unread count, waiting time, page and queue time in the
    # same statement), the page's SLA marks, the page's labels, the views' counts, saved views, the
    # widget's labels (the label filter's choices), the header's count of unread mentions
    assert few <= 14


# --- a chat ---------------------------------------------------------------------------------------


def test_a_chat_page_shows_its_history(console, widget, chat, operator):
    ai = AIAgentFactory(widget=widget, name="Robo")
    MessageFactory(chat=chat, body="A reply", author_kind=Message.Author.AGENT, agent=operator)
    MessageFactory(chat=chat, body="Secret plan", author_kind=Message.Author.AGENT, agent=operator,
                   visibility=Message.Visibility.NOTE)  # fmt: skip
    MessageFactory(chat=chat, body="I am a bot", author_kind=Message.Author.AI, agent=ai)
    MessageFactory(
        chat=chat,
        type=Message.Type.KEYBOARD,
        body="Pick one",
        author_kind=Message.Author.AGENT,
        agent=operator,
        keyboard={
            "buttons": [
                {"label": "Track", "url": "https://shop.example/track", "style": "primary"},
                {"label": "Bad", "url": "javascript:alert(1)", "style": "secondary"},
            ]
        },
    )
    html = console.get(f"/console/chats/{chat.pk}/").content.decode()
    assert "Hello there" in html and "A reply" in html
    assert 'class="msg by-agent note"' in html and "Private note" in html and "Secret plan" in html
    assert 'class="tag tag-ai"' in html and "I am a bot" in html and "Robo" in html
    assert (
        '<a class="kb kb-primary" href="https://shop.example/track" target="_blank" rel="noopener noreferrer">Track</a>'
        in html
    )
    assert "javascript:" not in html
    assert 'aria-current="page"' in html


def test_files_and_images_are_drawn_with_signed_links(console, widget, chat):
    def stored(name, content_type):
        file = File(widget=widget, original_name=name, content_type=content_type, size=5)
        file.stored.save(name, ContentFile(b"hello"), save=False)
        file.save()
        return file

    doc = stored("invoice.pdf", "application/pdf")
    pic = stored("photo.png", "image/png")
    MessageFactory(chat=chat, type=Message.Type.FILE, body="", file=doc)
    MessageFactory(chat=chat, type=Message.Type.IMAGE, body="", file=pic)
    html = console.get(f"/console/chats/{chat.pk}/").content.decode()
    assert 'download="invoice.pdf"' in html and "/api/files/" in html
    assert '<img src="/api/files/' in html and 'alt="photo.png"' in html


def test_message_text_is_escaped(console, widget):
    chat = make_chat(widget, body="<script>alert(1)</script>")
    html = console.get(f"/console/chats/{chat.pk}/").content.decode()
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;" in html


@pytest.mark.parametrize("path", ["", "messages/?after=0", "panel/"])
def test_another_widgets_chat_is_a_404_like_a_missing_one(console, foreign_chat, path):
    assert console.get(f"/console/chats/{foreign_chat.pk}/{path}").status_code == 404
    assert console.get(f"/console/chats/999999999/{path}").status_code == 404
    assert console.get(f"/console/chats/99999999999999999999/{path}").status_code == 404


@pytest.mark.parametrize("path", ["", "messages/?after=0", "panel/"])
def test_a_chat_whose_contact_is_under_erasure_is_a_404_and_not_listed(console, widget, chat, path):
    # given an erasure of the chat's contact, accepted and not yet carried out by its job
    PendingErasure.objects.create(widget=widget, contact_id=chat.contact_id)
    # then the console reads the chat as missing, as the API does from that moment
    assert console.get(f"/console/chats/{chat.pk}/{path}").status_code == 404
    assert f'data-chat-id="{chat.pk}"' not in console.get("/console/").content.decode()


def test_messages_after_an_id_are_what_came_later(htmx, chat):
    first = chat.messages.get()
    later = MessageFactory(chat=chat, body="later one")
    html = htmx.get(f"/console/chats/{chat.pk}/messages/", {"after": first.pk}).content.decode()
    assert f'id="m-{later.pk}"' in html and f'id="m-{first.pk}"' not in html


def test_messages_needs_after_or_before(htmx, chat):
    assert htmx.get(f"/console/chats/{chat.pk}/messages/").status_code == 400
    assert htmx.get(f"/console/chats/{chat.pk}/messages/", {"after": "x"}).status_code == 400


def test_older_messages_page_backwards(htmx, chat, monkeypatch):
    from apps.console import selectors

    monkeypatch.setattr(selectors, "HISTORY_PAGE", 2)
    rows = [MessageFactory(chat=chat, body=f"n{n}") for n in range(4)]
    html = htmx.get(f"/console/chats/{chat.pk}/messages/", {"before": rows[2].pk}).content.decode()
    assert f'id="m-{rows[1].pk}"' in html and f'id="m-{rows[0].pk}"' in html
    assert f'id="m-{rows[2].pk}"' not in html
    assert "Load earlier messages" in html  # the first message of the chat is older still


def test_an_operator_of_two_widgets_switches_between_them(console, operator, widget):
    second = WidgetFactory()
    HumanAgentFactory(widget=second, user=operator.user, email=operator.email)
    there = make_chat(second, name="There", body="over there")
    assert f'data-chat-id="{there.pk}"' not in console.get("/console/").content.decode()
    assert console.get(f"/console/chats/{there.pk}/").status_code == 404
    assert console.post("/console/widget/", {"widget": second.pk}).status_code == 302
    assert f'data-chat-id="{there.pk}"' in console.get("/console/").content.decode()
    assert console.get(f"/console/chats/{there.pk}/").status_code == 200


def test_switching_to_a_widget_one_does_not_serve_is_a_404(console, other_widget):
    assert console.post("/console/widget/", {"widget": other_widget.pk}).status_code == 404
    assert console.post("/console/widget/", {"widget": "x"}).status_code == 404


def test_a_chat_page_costs_the_same_queries_for_3_and_30_messages(console, widget, chat, operator):
    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert console.get(f"/console/chats/{chat.pk}/").status_code == 200
        return len(queries)

    for n in range(2):
        MessageFactory(chat=chat, body=f"a{n}", author_kind=Message.Author.AGENT, agent=operator)
    few = count()
    for n in range(27):
        MessageFactory(chat=chat, body=f"b{n}", author_kind=Message.Author.AGENT, agent=operator)
    assert count() == few


# --- a chat handed to people by the AI -----------------------------------------------------------------


def _hand_over(widget, chat):
    from apps.chats import services as chat_services

    return chat_services.await_human(widget=widget, chat=chat, reason="ai_handoff")


def test_a_chat_handed_over_by_the_ai_is_badged_in_the_list_and_the_panel(console, widget, chat):
    other = make_chat(widget, name="Boris", body="No hand-over here")
    _hand_over(widget, chat)
    listing = console.get("/console/").content.decode()
    rows = {c: listing[listing.index(f'data-chat-id="{c.pk}"') :].split("</li>", 1)[0] for c in (chat, other)}
    assert "Waiting for a person" in rows[chat] and "Waiting for a person" not in rows[other]
    panel = console.get(f"/console/chats/{chat.pk}/").content.decode()
    assert 'id="chat-waiting"' in panel and "handed over by the AI" in panel
    assert 'id="chat-waiting"' not in console.get(f"/console/chats/{other.pk}/").content.decode()


def test_the_badge_goes_when_a_person_answers(htmx, console, widget, chat):
    _hand_over(widget, chat)
    assert htmx.post(f"/console/chats/{chat.pk}/reply/", {"body": "I am here"}).status_code == 200
    chat.refresh_from_db()
    assert chat.awaiting_human_since is None
    assert "Waiting for a person" not in console.get("/console/").content.decode()
    assert 'id="chat-waiting"' not in console.get(f"/console/chats/{chat.pk}/").content.decode()


def test_the_hand_over_pushes_a_chat_frame_to_the_consoles(
    widget, chat, monkeypatch, django_capture_on_commit_callbacks
):
    from apps.chats import realtime
    from apps.platform.realtime import widget_group

    pushed = []
    monkeypatch.setattr(realtime, "push", lambda groups, frame: pushed.append((groups, frame)))
    with django_capture_on_commit_callbacks(execute=True):
        _hand_over(widget, chat)
    assert ([widget_group(widget.pk)], {"event": "chat", "chat_id": chat.pk, "status": chat.status}) in pushed
    # a chat already waiting: nothing again
    pushed.clear()
    with django_capture_on_commit_callbacks(execute=True):
        _hand_over(widget, chat)
    assert pushed == []


def test_the_list_costs_the_same_queries_with_chats_waiting_for_a_person(console, widget, operator):
    for n in range(3):
        _hand_over(widget, make_chat(widget, name=f"A{n}", agent=operator))
    few = _count_list_queries(console)
    for n in range(12):
        _hand_over(widget, make_chat(widget, name=f"B{n}"))
    assert _count_list_queries(console) == few


def test_a_chat_whose_last_message_is_the_visitors_is_marked_awaiting_a_reply(console, widget, operator):
    asked = make_chat(widget, name="Asked", body="Is it in stock?")
    answered = make_chat(widget, name="Answered", body="Hi")
    MessageFactory(chat=answered, body="Yes, it is", author_kind=Message.Author.AGENT, agent=operator)
    closed = make_chat(widget, name="Closed", body="Thanks, bye", status=Chat.Status.EXPIRED)
    html = console.get("/console/", {"status": "any"}).content.decode()

    def row(chat) -> str:
        start = html.index(f'data-chat-id="{chat.pk}"')
        return html[html.rindex("<li", 0, start) : html.index("</li>", start)]

    assert "awaiting-reply" in row(asked) and "waiting 0" in row(asked)
    assert "waiting" not in row(answered) and "awaiting-reply" not in row(answered)
    assert "waiting" not in row(closed)  # nothing to answer in a closed chat
