"""GET /v1/stats/routing and the chats export's routing columns, over a seeded day: chats routing
assigned from the queue, one re-routed, one a person took from the queue by hand, one whose SLA clock
ran out."""

import csv
import io
import json
from types import SimpleNamespace

import pytest

from apps.agents import selectors as agent_selectors
from apps.routing import selectors as routing_selectors
from apps.routing import services as routing
from apps.routing.models import ChatRouting, RoutingSettings, SlaClock
from apps.stats import facts, routing_facts
from apps.stats.models import AssignmentFact
from tests.support.plugin import assert_problem

from ..conftest import msk

pytestmark = pytest.mark.django_db

ROUTING = "/api/v1/stats/routing"
EXPORT = "/api/v1/chats/export"
JAN15 = {"from": "2025-01-15", "to": "2025-01-16"}


@pytest.fixture
def online(monkeypatch):
    """Who the presence store says is online (the operators' console sockets)."""
    ids: set[int] = set()
    monkeypatch.setattr(agent_selectors, "PRESENCE_SOURCE", lambda widget: set(ids))
    return ids


@pytest.fixture
def routed_day(talk, clock, online, widget, monkeypatch):
    """Jan 15 (Moscow), round robin, re-route after 60 s:
    - A queues at 10:00, routing assigns it at 10:00:30 (30 s wait); its operator stays silent and
      at 10:01:31 it is re-routed to the other operator;
    - B queues at 10:01, routing assigns it at 10:02 (60 s); its first response clock ran out;
    - C queues at 10:05 with nobody online; a person takes it in the console at 10:06:40 (100 s);
    - D, the next day, is routed too (outside the window)."""
    for module in (routing, routing_selectors, routing_facts):
        monkeypatch.setattr(module, "timezone", SimpleNamespace(now=clock.now))
    RoutingSettings.objects.create(widget=widget, mode="round_robin", default_capacity=3, reroute_after_seconds=60)
    online.update({talk.human.pk, talk.other.pk})

    a = talk.at(msk(2025, 1, 15, 10)).visitor()
    talk.at(msk(2025, 1, 15, 10, 0, 30))
    assert routing.serve(widget) == 1
    b = talk.at(msk(2025, 1, 15, 10, 1)).visitor()
    talk.at(msk(2025, 1, 15, 10, 1, 31))
    assert routing.reroute(widget=widget, chat_id=a.pk, now=clock.now()) is True
    talk.at(msk(2025, 1, 15, 10, 2))
    assert routing.serve(widget) == 1

    online.clear()
    c = talk.at(msk(2025, 1, 15, 10, 5)).visitor()
    assert routing.serve(widget) == 0
    talk.at(msk(2025, 1, 15, 10, 6, 40)).accept(c, talk.human)

    b.refresh_from_db()
    SlaClock.objects.create(
        widget=widget,
        chat=b,
        kind=SlaClock.Kind.FIRST_RESPONSE,
        started_at=msk(2025, 1, 15, 10, 1),
        due_at=msk(2025, 1, 15, 10, 6),
        breached_at=msk(2025, 1, 15, 10, 6),
        agent_id=b.agent_id,
    )
    SlaClock.objects.create(
        widget=widget,
        chat=c,
        kind=SlaClock.Kind.FIRST_RESPONSE,
        started_at=msk(2025, 1, 15, 10, 5),
        due_at=msk(2025, 1, 15, 10, 10),
        stopped_at=msk(2025, 1, 15, 10, 7),
        met=True,
    )

    online.update({talk.human.pk, talk.other.pk})
    talk.at(msk(2025, 1, 16, 9)).visitor()
    talk.at(msk(2025, 1, 16, 9, 0, 10))
    assert routing.serve(widget) == 1
    for chat in (a, b, c):
        chat.refresh_from_db()
    return SimpleNamespace(a=a, b=b, c=c)


def test_routing_figures_of_the_day(api, talk, routed_day):
    a, b = routed_day.a, routed_day.b
    # A went to one operator first and was re-routed to the other; B then went to the first (round
    # robin: assigned longest ago).
    first = ({talk.human.pk, talk.other.pk} - {a.agent_id}).pop()
    assert b.agent_id == first
    body = api(scopes=["stats:read"]).get(ROUTING, JAN15).json()
    assert body == {
        "data": {
            "from": "2025-01-15T00:00:00+03:00",
            "to": "2025-01-16T00:00:00+03:00",
            "timezone": "Europe/Moscow",
            "chats_routed": 3,
            "chats_rerouted": 1,
            "time_to_assignment": {"average_seconds": 63.333, "count": 3},
            "agents": sorted(
                [{"agent_id": first, "chats_routed": 2}, {"agent_id": a.agent_id, "chats_routed": 1}],
                key=lambda row: row["agent_id"],
            ),
        }
    }


def test_a_window_edge_inside_the_day_counts_only_what_happened_after_it(api, routed_day):
    a, b = routed_day.a, routed_day.b
    body = api().get(ROUTING, {"from": "2025-01-15T10:00:45", "to": "2025-01-16T09:00:05"}).json()["data"]
    # A's first routing (10:00:30) is before the window and D's (Jan 16, 09:00:10) after it.
    assert (body["chats_routed"], body["chats_rerouted"]) == (2, 1)
    assert body["time_to_assignment"] == {"average_seconds": 80.0, "count": 2}
    assert body["agents"] == sorted(
        [{"agent_id": a.agent_id, "chats_routed": 1}, {"agent_id": b.agent_id, "chats_routed": 1}],
        key=lambda row: row["agent_id"],
    )


def test_the_rebuild_gives_the_same_figures(api, widget, routed_day):
    before = api().get(ROUTING, JAN15).json()
    edge = api().get(ROUTING, {"from": "2025-01-15T10:00:45", "to": "2025-01-16T12:00"}).json()
    snapshot = {row.pk: (row.reroutes, row.assignment_wait_ms) for row in facts.ChatFacts.objects.all()}
    facts.rebuild_widget_facts(widget_id=widget.pk)
    assert api().get(ROUTING, JAN15).json() == before
    assert api().get(ROUTING, {"from": "2025-01-15T10:00:45", "to": "2025-01-16T12:00"}).json() == edge
    assert {row.pk: (row.reroutes, row.assignment_wait_ms) for row in facts.ChatFacts.objects.all()} == snapshot
    assert snapshot[routed_day.a.pk] == (1, 30_000)


def test_an_event_seen_again_counts_nothing(api, widget, routed_day):
    before = api().get(ROUTING, JAN15).json()
    facts_before = AssignmentFact.objects.count()
    b = routed_day.b
    routing_facts.assigned(chat=b, agent_id=b.agent_id, by=ChatRouting.By.AGENT)
    assert AssignmentFact.objects.count() == facts_before
    assert api().get(ROUTING, JAN15).json() == before


def test_export_says_who_assigned_and_whether_an_sla_was_breached(api, routed_day):
    a, b, c = routed_day.a, routed_day.b, routed_day.c
    rows = [
        json.loads(line)
        for line in b"".join(api(scopes=["chats:read"]).get(EXPORT, {**JAN15, "format": "jsonl"}).streaming_content)
        .decode()
        .splitlines()
    ]
    assert [(row["id"], row["assigned_by"], row["sla_breached"]) for row in rows] == [
        (a.pk, "routing", False),
        (b.pk, "routing", True),
        (c.pk, "agent", False),
    ]
    table = list(csv.DictReader(io.StringIO(b"".join(api().get(EXPORT, JAN15).streaming_content).decode())))
    assert [(row["assigned_by"], row["sla_breached"]) for row in table] == [
        ("routing", "false"),
        ("routing", "true"),
        ("agent", "false"),
    ]


def test_routing_stats_need_stats_read_and_a_valid_window(api):
    assert_problem(api(scopes=["chats:read"]).get(ROUTING, JAN15), 403)
    assert_problem(api().get(ROUTING, {"from": "2025-01-16", "to": "2025-01-15"}), 422)
    assert_problem(api().get(ROUTING, {"period": "week", "from": "2025-01-15"}), 422)
    assert_problem(api().get(ROUTING, {"period": "fortnight"}), 422)


def test_no_routing_answers_zeros(api):
    body = api().get(ROUTING, JAN15).json()["data"]
    assert body["chats_routed"] == body["chats_rerouted"] == 0
    assert body["time_to_assignment"] == {"average_seconds": None, "count": 0}
    assert body["agents"] == []
