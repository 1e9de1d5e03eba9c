"""The operator's inbox under routing: each operator's own chats first (a search newest first), the
Unassigned view as the routing queue (order, positions, waiting times), the owner assigning from it,
SLA marks on the list and in the context panel, the `assigned` push, and the statements each costs."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.agents.tests.factories import HumanAgentFactory
from apps.chats.models import Chat
from apps.routing.models import ChatRouting, RoutingSettings, SlaClock

from .conftest import make_chat

pytestmark = pytest.mark.django_db


def routing_on(widget, mode="round_robin"):
    RoutingSettings.objects.update_or_create(widget=widget, defaults={"mode": mode})


def queued(widget, name, *, since, **kwargs):
    chat = make_chat(widget, name=name, **kwargs)
    ChatRouting.objects.create(chat=chat, widget=widget, queued_at=since, queue_since=since)
    return chat


def row_ids(html: str) -> list[int]:
    ids, at = [], 0
    while (at := html.find('class="chat-row', at)) >= 0:
        start = html.index('data-chat-id="', at) + len('data-chat-id="')
        ids.append(int(html[start : html.index('"', start)]))
        at = start
    return ids


def row(html: str, chat) -> str:
    start = html.index(f'data-chat-id="{chat.pk}"')
    return html[html.rindex("<li", 0, start) : html.index("</li>", start)]


def clock(chat, kind="first_response", *, due_in=None, breached=False, stopped=False):
    now = timezone.now()
    due = now + (due_in if due_in is not None else timedelta(minutes=10))
    return SlaClock.objects.create(
        widget_id=chat.widget_id,
        chat=chat,
        policy_id=1,
        kind=kind,
        started_at=now - timedelta(minutes=1),
        due_at=due,
        breached_at=now if breached else None,
        stopped_at=now if stopped else None,
        met=True if stopped and not breached else None,
    )


@pytest.fixture
def queue(widget):
    """Routing on; three chats in the queue (two queued at the same moment: the lower id first), one
    unassigned chat that is not queued, and one assigned chat."""
    routing_on(widget)
    now = timezone.now()
    first = queued(widget, "First", since=now - timedelta(minutes=10))
    later = now - timedelta(minutes=5)
    second = queued(widget, "Second", since=later)
    third = queued(widget, "Third", since=later, body="A question about delivery")
    idle = make_chat(widget, name="Idle")
    return {"first": first, "second": second, "third": third, "idle": idle}


# --- the list -------------------------------------------------------------------------------------------


def test_the_unassigned_view_is_the_queue_in_order_with_positions_and_waiting_times(console, widget, queue, operator):
    make_chat(widget, name="Taken", agent=operator)
    html = console.get("/console/", {"view": "unassigned"}).content.decode()
    assert row_ids(html) == [queue["first"].pk, queue["second"].pk, queue["third"].pk]
    assert "No. 1 in the queue" in row(html, queue["first"]) and "waiting 10\xa0minutes" in row(html, queue["first"])
    assert "No. 2 in the queue" in row(html, queue["second"]) and "No. 3 in the queue" in row(html, queue["third"])
    assert 'id="count-unassigned">3<' in html  # the queue's length, not every unowned chat
    assert 'aria-label="The queue, first served first"' in html


def test_a_position_counts_the_whole_queue_whatever_the_search(console, queue):
    html = console.get("/console/", {"view": "unassigned", "q": "delivery"}).content.decode()
    assert row_ids(html) == [queue["third"].pk]
    assert "No. 3 in the queue" in html


def test_without_routing_unassigned_lists_every_unowned_chat_newest_first(console, widget, queue):
    routing_on(widget, mode="manual")
    html = console.get("/console/", {"view": "unassigned"}).content.decode()
    assert set(row_ids(html)) == {c.pk for c in queue.values()}
    assert "in the queue" not in html.replace("Nobody is waiting in the queue.", "")


def test_each_operator_sees_their_own_chats_first(console, widget, operator, colleague):
    mine = make_chat(widget, name="Mine")
    Chat.objects.filter(pk=mine.pk).update(agent=operator, last_message_at=timezone.now() - timedelta(hours=2))
    theirs = make_chat(widget, name="Theirs", agent=colleague)
    nobody = make_chat(widget, name="Nobody")
    assert row_ids(console.get("/console/").content.decode()) == [mine.pk, nobody.pk, theirs.pk]


@pytest.mark.parametrize("q", ["ok", "order"])  # shorter than a trigram, and one the trigram index narrows
def test_a_search_lists_its_matches_newest_first_whoever_owns_them(console, widget, operator, colleague, q):
    mine = make_chat(widget, name="Mine", body="ok, the order is on its way")
    Chat.objects.filter(pk=mine.pk).update(agent=operator, last_message_at=timezone.now() - timedelta(hours=2))
    theirs = make_chat(widget, name="Theirs", agent=colleague, body="ok, where is my order?")
    make_chat(widget, name="Elsewhere", agent=operator, body="Hello there")
    html = console.get("/console/", {"view": "all", "status": "any", "q": q}).content.decode()
    assert row_ids(html) == [theirs.pk, mine.pk]


def test_a_queued_chat_says_so_in_the_other_views(console, queue):
    html = console.get("/console/").content.decode()
    assert "In the queue" in row(html, queue["first"]) and "In the queue" not in row(html, queue["idle"])


# --- the owner assigns from the queue ----------------------------------------------------------------------


def test_the_owner_sees_an_assign_action_on_each_queued_chat_and_operators_do_not(owner_console, console, queue):
    html = owner_console.get("/console/", {"view": "unassigned"}).content.decode()
    for chat in (queue["first"], queue["second"], queue["third"]):
        assert f'action="/console/chats/{chat.pk}/assign/"' in row(html, chat)
    assert "/assign/" not in console.get("/console/", {"view": "unassigned"}).content.decode()
    # outside the queue view the action is not offered
    assert "/assign/" not in owner_console.get("/console/").content.decode()


def test_the_owner_assigns_a_queued_chat_and_chat_assigned_says_by_agent(owner_htmx, queue, operator, captured_events):
    chat = queue["second"]
    response = owner_htmx.post(f"/console/chats/{chat.pk}/assign/", {"agent": operator.pk, "view": "unassigned"})
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<ul id="chat-list"')
    assert row_ids(html) == [queue["first"].pk, queue["third"].pk]  # it left the queue
    assert "No. 2 in the queue" in row(html, queue["third"])
    assert Chat.objects.get(pk=chat.pk).agent_id == operator.pk
    routing = ChatRouting.objects.get(chat_id=chat.pk)
    assert routing.queue_since is None and routing.assigned_by == "agent"
    assigned = [
        {key: data[key] for key in ("chat_id", "agent_id", "by")}
        for type, data in captured_events()
        if type == "chat.assigned"
    ]
    assert assigned == [{"chat_id": chat.pk, "agent_id": operator.pk, "by": "agent"}]


def test_a_plain_form_post_goes_back_to_the_queue(owner_console, queue, operator):
    chat = queue["first"]
    response = owner_console.post(f"/console/chats/{chat.pk}/assign/", {"agent": operator.pk, "view": "unassigned"})
    assert response.status_code == 303 and response["Location"] == "/console/?view=unassigned"
    assert Chat.objects.get(pk=chat.pk).agent_id == operator.pk


def test_an_operator_is_refused_the_assign_action(htmx, console, queue, operator, captured_events):
    chat = queue["first"]
    for client in (htmx, console):
        response = client.post(f"/console/chats/{chat.pk}/assign/", {"agent": operator.pk})
        assert response.status_code == 403
    assert Chat.objects.get(pk=chat.pk).agent_id is None
    assert ChatRouting.objects.get(chat_id=chat.pk).queue_since is not None
    assert not [t for t, _ in captured_events() if t == "chat.assigned"]


def test_a_bad_assignment_changes_nothing(owner_htmx, widget, other_widget, queue, operator, foreign_chat):
    chat = queue["first"]
    stranger = HumanAgentFactory(widget=other_widget)
    for data in ({}, {"agent": "x"}, {"agent": stranger.pk}, {"agent": 10**30}):
        response = owner_htmx.post(f"/console/chats/{chat.pk}/assign/", {**data, "view": "unassigned"})
        assert response.status_code == 422, data
        assert 'class="queue-error error" role="alert"' in response.content.decode()
    assert Chat.objects.get(pk=chat.pk).agent_id is None
    # a chat that left the queue meanwhile: 409; another widget's chat: 404
    taken = queue["second"]
    Chat.objects.filter(pk=taken.pk).update(agent=operator)
    ChatRouting.objects.filter(chat_id=taken.pk).update(queue_since=None)
    response = owner_htmx.post(f"/console/chats/{taken.pk}/assign/", {"agent": operator.pk})
    assert response.status_code == 409 and "This chat is no longer in the queue." in response.content.decode()
    idle = queue["idle"]  # unowned but never queued
    assert owner_htmx.post(f"/console/chats/{idle.pk}/assign/", {"agent": operator.pk}).status_code == 409
    assert Chat.objects.get(pk=idle.pk).agent_id is None
    assert owner_htmx.post(f"/console/chats/{foreign_chat.pk}/assign/", {"agent": operator.pk}).status_code == 404


def test_the_assignment_is_pushed_to_the_widgets_consoles(
    widget, queue, owner, operator, monkeypatch, django_capture_on_commit_callbacks
):
    from apps.console import realtime, services
    from apps.platform.realtime import widget_group

    sent = []
    monkeypatch.setattr(realtime, "push", lambda groups, frame: sent.append((groups, frame)))
    with django_capture_on_commit_callbacks(execute=True):
        services.assign_from_queue(owner=owner, chat=queue["first"], to_agent=operator)
    frame = {"event": "assigned", "chat_id": queue["first"].pk, "agent_id": operator.pk, "by": "agent"}
    assert ([widget_group(widget.pk)], frame) in sent


# --- SLA marks ------------------------------------------------------------------------------------------------


def test_a_running_clock_shows_its_countdown_and_a_breach_shows_red(console, widget):
    running = make_chat(widget, name="Running")
    clock(running, due_in=timedelta(minutes=3, seconds=30))
    clock(running, "resolution", due_in=timedelta(hours=5))
    breached = make_chat(widget, name="Breached")
    clock(breached, due_in=timedelta(minutes=-2), breached=True)
    clock(breached, "resolution", due_in=timedelta(hours=1))
    met = make_chat(widget, name="Met")
    clock(met, stopped=True)
    later = make_chat(widget, name="Later")
    clock(later, "resolution", due_in=timedelta(hours=3, minutes=5))
    html = console.get("/console/").content.decode()
    assert "SLA due in 4 min" in row(html, running) and "badge-warning" in row(html, running)
    assert 'class="sla-due"' in row(html, running) and "SLA breached" not in row(html, running)
    assert 'badge badge-danger sla-mark sla-breached">SLA breached<' in row(html, breached)
    assert "sla-mark" not in row(html, met)
    assert "SLA due in 3 h" in row(html, later) and "badge-warning" not in row(html, later)


def test_the_context_panel_shows_the_chats_routing_and_sla(console, widget, queue, operator):
    chat = queue["second"]
    clock(chat, due_in=timedelta(minutes=20))
    html = console.get(f"/console/chats/{chat.pk}/context/").content.decode()
    assert "In the queue since" in html and "No. 2 in the queue" in html and "waiting 5\xa0minutes" in html
    assert "SLA due in 20 min" in html and "Re-routed" in html and "0 times" in html
    ChatRouting.objects.filter(chat_id=chat.pk).update(
        queue_since=None, assigned_by="routing", assigned_at=timezone.now(), reroutes=2
    )
    Chat.objects.filter(pk=chat.pk).update(agent=operator)
    SlaClock.objects.filter(chat=chat).update(breached_at=timezone.now())
    html = console.get(f"/console/chats/{chat.pk}/context/").content.decode()
    assert "In the queue since" not in html and "Waited in the queue since" in html
    assert "Routing, automatically" in html and "2 times" in html and "SLA breached" in html
    ChatRouting.objects.filter(chat_id=chat.pk).update(assigned_by="agent")
    assert "A person in the console" in console.get(f"/console/chats/{chat.pk}/context/").content.decode()


def test_a_chat_that_never_queued_says_no_clock_runs(console, chat):
    html = console.get(f"/console/chats/{chat.pk}/context/").content.decode()
    assert "no clock running" in html and "In the queue since" not in html and "Assigned by" not in html


# --- statements ---------------------------------------------------------------------------------------------


def test_the_queue_and_its_sla_marks_cost_the_same_statements_however_long(owner_console, widget, operator):
    routing_on(widget)

    def statements(view: str) -> int:
        with CaptureQueriesContext(connection) as queries:
            assert owner_console.get("/console/", {"view": view}).status_code == 200
        return len(queries)

    now = timezone.now()
    clock(queued(widget, "Q0", since=now - timedelta(minutes=30)))
    few = {view: statements(view) for view in ("unassigned", "all", "mine")}
    for n in range(1, 25):
        chat = queued(widget, f"Q{n}", since=now - timedelta(minutes=30 - n))
        clock(chat, due_in=timedelta(minutes=n))
        clock(chat, "resolution", due_in=timedelta(hours=n), breached=n % 3 == 0)
        HumanAgentFactory(widget=widget, name=f"Agent {n}")
    assert {view: statements(view) for view in few} == few
    html = owner_console.get("/console/", {"view": "unassigned"}).content.decode()
    assert len(row_ids(html)) == 25 and html.count("<option value=") >= 25 * 25


def test_the_context_panel_costs_the_same_statements_queued_or_not(htmx, widget, chat, queue):
    def statements(target) -> int:
        with CaptureQueriesContext(connection) as queries:
            assert htmx.get(f"/console/chats/{target.pk}/context/").status_code == 200
        return len(queries)

    clock(queue["first"])
    assert statements(queue["first"]) == statements(chat)
