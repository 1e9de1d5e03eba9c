"""The visitor side of proactive messages: the config's `proactive_messages`, POST proactive/{id}/events
and a reply (`proactive_id`) that starts the chat with the proactive text as its first message."""

import json
from datetime import date

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.chats.models import Chat, Message
from apps.chats.tests.factories import AgentFactory
from apps.core.timeparse import business_tz
from apps.proactive import services
from apps.proactive.models import ProactiveCount, ProactiveMessage
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

RULES = {"url_patterns": [], "time_on_page_seconds": 0, "visits_at_least": 1, "attributes": {}, "only_when_open": False}


def url(widget, route: str) -> str:
    return f"/api/visitor/v1/{widget.button_guid}/{route}"


def post(client, widget, route, body, token=None, **extra):
    if token:
        extra["HTTP_AUTHORIZATION"] = f"Visitor {token}"
    return client.post(url(widget, route), json.dumps(body), content_type="application/json", **extra)


def session(client, widget, **body) -> dict:
    response = post(client, widget, "sessions", body)
    assert response.status_code == 201
    return response.json()


def message(widget, **kwargs) -> ProactiveMessage:
    values = {"name": "M", "text_i18n": {"en": "Need help?", "de": "Brauchen Sie Hilfe?"}, "rules": RULES, **kwargs}
    return services.create_message(widget=widget, data=values)


def today_counts(row) -> dict:
    day = timezone.now().astimezone(business_tz()).date()
    found = ProactiveCount.objects.filter(message=row, day=day).values("shown", "opened", "replied").first()
    return found or {"shown": 0, "opened": 0, "replied": 0}


# --- the config -------------------------------------------------------------------------------------------


def test_the_config_carries_the_enabled_messages_highest_priority_first(client, widget, other_widget):
    agent = AgentFactory(widget=widget, name="Olga")
    low = message(widget, name="Low", priority=1)
    high = message(widget, name="High", priority=5, agent_id=agent, frequency="always")
    message(widget, name="Off", enabled=False, priority=9)
    message(other_widget, name="Theirs")
    listed = client.get(url(widget, "config")).json()["proactive_messages"]
    assert [m["id"] for m in listed] == [high.pk, low.pk]
    assert listed[0] == {
        "id": high.pk,
        "name": "High",
        "text_i18n": {"en": "Need help?", "de": "Brauchen Sie Hilfe?"},
        "sender": {"name": "Olga", "avatar_url": None},
        "rules": RULES,
        "frequency": "always",
        "priority": 5,
    }
    assert listed[1]["sender"] == {"name": widget.name, "avatar_url": None}


def test_every_write_purges_the_cached_config(client, widget):
    row = message(widget, name="A")
    assert len(client.get(url(widget, "config")).json()["proactive_messages"]) == 1
    services.update_message(widget=widget, message=row, changes={"enabled": False})
    assert client.get(url(widget, "config")).json()["proactive_messages"] == []
    services.update_message(widget=widget, message=row, changes={"enabled": True, "priority": 3})
    assert client.get(url(widget, "config")).json()["proactive_messages"][0]["priority"] == 3
    services.delete_message(widget=widget, message=row)
    assert client.get(url(widget, "config")).json()["proactive_messages"] == []


def test_a_cached_config_read_costs_the_same_queries_with_proactive_messages(client, widget):
    client.get(url(widget, "config"))  # warm
    with CaptureQueriesContext(connection) as without:
        client.get(url(widget, "config"))
    for n in range(5):
        message(widget, name=f"M{n}", agent_id=AgentFactory(widget=widget))
    client.get(url(widget, "config"))  # rebuilt once
    with CaptureQueriesContext(connection) as with_them:
        assert len(client.get(url(widget, "config")).json()["proactive_messages"]) == 5
    assert len(with_them.captured_queries) == len(without.captured_queries)
    assert not [q for q in with_them.captured_queries if "proactive" in q["sql"]]


# --- events -----------------------------------------------------------------------------------------------


def test_shown_and_opened_are_counted_without_a_session(client, widget):
    row = message(widget)
    for kind in ("shown", "shown", "opened"):
        response = post(client, widget, f"proactive/{row.pk}/events", {"kind": kind})
        assert response.status_code == 204, response.content
    assert today_counts(row) == {"shown": 2, "opened": 1, "replied": 0}


def test_an_unknown_foreign_or_disabled_message_is_404_and_counts_nothing(client, widget, other_widget):
    off = message(widget, name="Off", enabled=False)
    theirs = message(other_widget, name="Theirs")
    for pk in (off.pk, theirs.pk, 999999):
        assert_problem(post(client, widget, f"proactive/{pk}/events", {"kind": "shown"}), 404)
    assert not ProactiveCount.objects.exists()


@pytest.mark.parametrize("bad", [{"kind": "replied"}, {"kind": "clicked"}, {}, {"kind": "shown", "extra": 1}])
def test_a_bad_event_is_422(client, widget, bad):
    row = message(widget)
    assert_problem(post(client, widget, f"proactive/{row.pk}/events", bad), 422)
    assert not ProactiveCount.objects.exists()


def test_events_are_rate_limited(client, widget, settings):
    settings.VISITOR_MESSAGES_PER_ADDRESS_PER_MINUTE = 1  # "actions": twice that
    row = message(widget)
    answers = [post(client, widget, f"proactive/{row.pk}/events", {"kind": "shown"}).status_code for _ in range(3)]
    assert answers[:2] == [204, 204]
    assert_problem(post(client, widget, f"proactive/{row.pk}/events", {"kind": "shown"}), 429, "rate_limited")
    assert today_counts(row)["shown"] == 2


# --- the reply ----------------------------------------------------------------------------------------------


def test_a_reply_starts_the_chat_with_the_proactive_text_first(client, widget, api):
    agent = AgentFactory(widget=widget, name="Olga")
    row = message(widget, agent_id=agent)
    token = session(client, widget, locale="de-DE")["session_token"]
    response = post(
        client, widget, "messages", {"type": "text", "body": "Yes, the prices", "proactive_id": row.pk}, token
    )
    assert response.status_code == 201, response.content
    chat = Chat.objects.get(pk=response.json()["chat_id"])
    first, reply = Message.objects.filter(chat=chat).order_by("id")
    assert (first.body, first.author_kind, first.agent_id, first.origin) == (
        "Brauchen Sie Hilfe?",
        "agent",
        agent.pk,
        "proactive",
    )
    assert (reply.body, reply.author_kind) == ("Yes, the prices", "client")
    assert chat.agent_id is None and chat.first_agent_reply_at is None  # not an answer
    assert today_counts(row)["replied"] == 1
    # the operator's API shows the proactive text first, then the reply
    listed = api(scopes=["messages:read"]).get(f"/api/v1/chats/{chat.pk}/messages").json()["data"]
    bodies = [m.get("body") or m.get("text") for m in sorted(listed, key=lambda m: m["id"])]
    assert bodies == ["Brauchen Sie Hilfe?", "Yes, the prices"]
    # and the visitor sees it from Olga
    seen = client.get(url(widget, "messages"), HTTP_AUTHORIZATION=f"Visitor {token}").json()["data"]
    assert [(m["body"], m["author"]["name"]) for m in seen][0] == ("Brauchen Sie Hilfe?", "Olga")


def test_without_an_agent_the_text_is_sent_in_the_widgets_name(client, widget):
    row = message(widget, text_i18n={"ru": "Привет"})
    token = session(client, widget, locale="en")["session_token"]
    post(client, widget, "messages", {"type": "text", "body": "Hi", "proactive_id": row.pk}, token)
    seen = client.get(url(widget, "messages"), HTTP_AUTHORIZATION=f"Visitor {token}").json()["data"]
    assert [(m["body"], m["author"]["kind"]) for m in seen] == [("Привет", "agent"), ("Hi", "client")]
    assert seen[0]["author"]["name"] == widget.name


def test_a_reply_into_an_existing_chat_adds_no_opening_and_counts_nothing(client, widget):
    row = message(widget)
    token = session(client, widget)["session_token"]
    post(client, widget, "messages", {"type": "text", "body": "Hello"}, token)
    post(client, widget, "messages", {"type": "text", "body": "Again", "proactive_id": row.pk}, token)
    assert list(Message.objects.filter(widget=widget).order_by("id").values_list("body", flat=True)) == [
        "Hello",
        "Again",
    ]
    assert today_counts(row)["replied"] == 0


@pytest.mark.parametrize("bad", ["1", 0, True])
def test_a_malformed_proactive_id_is_422_and_writes_nothing(client, widget, bad):
    token = session(client, widget)["session_token"]
    problem = assert_problem(
        post(client, widget, "messages", {"type": "text", "body": "Hi", "proactive_id": bad}, token), 422
    )
    assert "proactive_id" in problem["errors"]
    assert not Chat.objects.filter(widget=widget).exists()


def test_an_unknown_foreign_or_disabled_proactive_id_is_422_and_writes_nothing(client, widget, other_widget):
    off = message(widget, name="Off", enabled=False)
    theirs = message(other_widget, name="Theirs")
    token = session(client, widget)["session_token"]
    for pk in (off.pk, theirs.pk, 999999):
        body = {"type": "text", "body": "Hi", "proactive_id": pk}
        problem = assert_problem(post(client, widget, "messages", body, token), 422)
        assert problem["errors"]["proactive_id"] == ["Unknown proactive message."]
    assert not Message.objects.filter(widget=widget).exists()
    assert not ProactiveCount.objects.exists()


def test_counts_of_a_day_are_one_row(widget):
    row = message(widget)
    for kind in ("shown", "opened", "replied", "shown"):
        services.count(widget=widget, message_id=row.pk, kind=kind)
    assert ProactiveCount.objects.filter(message=row).count() == 1
    assert today_counts(row) == {"shown": 2, "opened": 1, "replied": 1}
    assert ProactiveCount.objects.get(message=row).day <= date.today().replace(year=date.today().year + 1)
