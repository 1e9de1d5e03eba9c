"""GET /v1/stats/sla: clocks met (by when they stopped) and breached (by when they ran out) in the
window, per kind, in total and per agent."""

from datetime import UTC, datetime, timedelta

import pytest

from apps.chats.tests.factories import ChatFactory
from apps.routing.models import SlaClock
from tests.support.factories import AgentFactory
from tests.support.plugin import assert_problem

from .sla_support import make_policy

pytestmark = pytest.mark.django_db

URL = "/api/v1/stats/sla"
DAY = datetime(2026, 11, 10, 12, 0, tzinfo=UTC)
WINDOW = {"from": "2026-11-10", "to": "2026-11-11"}  # Moscow days
KINDS = ("first_response", "next_response", "resolution")


def zero() -> dict:
    return {kind: {"met": 0, "breached": 0} for kind in KINDS}


def clock(widget, chat, kind, *, met=None, stopped=None, breached=None, agent=None):
    due = (breached or stopped or DAY) + timedelta(seconds=SlaClock.objects.count())  # unique per chat and kind
    return SlaClock.objects.create(
        widget=widget,
        chat=chat,
        policy_id=1,
        kind=kind,
        started_at=DAY - timedelta(hours=1),
        due_at=due,
        stopped_at=stopped,
        met=met,
        breached_at=breached,
        agent_id=agent.pk if agent else None,
    )


def test_the_figures_count_decisions_in_the_window(api, widget, other_widget):
    ann, bob = AgentFactory(widget=widget), AgentFactory(widget=widget)
    make_policy(widget)
    chat = ChatFactory(widget=widget)
    clock(widget, chat, "first_response", met=True, stopped=DAY, agent=ann)
    clock(widget, chat, "first_response", met=True, stopped=DAY + timedelta(minutes=1), agent=ann)
    clock(widget, chat, "first_response", met=False, breached=DAY, agent=bob)
    clock(widget, chat, "next_response", met=False, breached=DAY, stopped=DAY + timedelta(days=3), agent=ann)
    clock(widget, chat, "resolution", met=True, stopped=DAY)  # nobody assigned: total only
    # outside the window, undecided, or another widget's: not counted
    clock(widget, chat, "resolution", met=True, stopped=DAY + timedelta(days=2), agent=ann)
    clock(widget, chat, "resolution", met=False, breached=DAY - timedelta(days=2), agent=ann)
    clock(widget, chat, "first_response", met=None, stopped=DAY, agent=ann)  # closed unanswered in time
    clock(widget, chat, "next_response")  # still running
    clock(other_widget, ChatFactory(widget=other_widget), "first_response", met=True, stopped=DAY)

    data = api(scopes=["stats:read"]).get(URL, WINDOW).json()["data"]
    total = zero()
    total["first_response"] = {"met": 2, "breached": 1}
    total["next_response"] = {"met": 0, "breached": 1}
    total["resolution"] = {"met": 1, "breached": 0}
    assert data["total"] == total
    ann_row = {"agent_id": ann.pk, **zero()}
    ann_row["first_response"] = {"met": 2, "breached": 0}
    ann_row["next_response"] = {"met": 0, "breached": 1}
    bob_row = {"agent_id": bob.pk, **zero()}
    bob_row["first_response"] = {"met": 0, "breached": 1}
    assert data["agents"] == sorted([ann_row, bob_row], key=lambda r: r["agent_id"])
    assert data["from"].startswith("2026-11-10T00:00:00+03:00") and data["timezone"] == "Europe/Moscow"


def test_an_empty_window_answers_zeros(api, widget):
    data = api(scopes=["stats:read"]).get(URL, WINDOW).json()["data"]
    assert data["total"] == zero() and data["agents"] == []


def test_the_default_window_is_accepted(api, widget):
    assert api(scopes=["stats:read"]).get(URL).status_code == 200


@pytest.mark.parametrize(
    "params",
    [
        {"from": "yesterday"},
        {"from": "2026-11-11", "to": "2026-11-10"},
        {"from": "2026-11-10", "period": "week"},
        {"unknown": "1"},
        {"kind": "first_response"},
    ],
)
def test_bad_windows_are_422(api, widget, params):
    assert_problem(api(scopes=["stats:read"]).get(URL, params), 422)


def test_the_route_needs_stats_read(api, client, widget):
    assert_problem(client.get(URL), 401)
    assert_problem(api(scopes=["sla:read"]).get(URL), 403, "missing_scope")


def test_the_statements_do_not_grow_with_clocks(api, widget, django_assert_max_num_queries):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = api(scopes=["stats:read"])
    chat = ChatFactory(widget=widget)
    client.get(URL, WINDOW)
    with CaptureQueriesContext(connection) as one:
        client.get(URL, WINDOW)
    agents = [AgentFactory(widget=widget) for _ in range(5)]
    for i in range(30):
        clock(widget, chat, KINDS[i % 3], met=True, stopped=DAY, agent=agents[i % 5])
    with CaptureQueriesContext(connection) as many:
        assert len(client.get(URL, WINDOW).json()["data"]["agents"]) == 5
    assert len(many) == len(one)
