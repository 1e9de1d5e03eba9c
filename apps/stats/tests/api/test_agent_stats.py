"""GET /v1/agents/stats and GET /v1/agents/{id}/stats."""

import pytest

from apps.agents.models import Agent
from apps.stats import selectors
from tests.support.factories import AgentFactory
from tests.support.plugin import assert_problem

from ..conftest import msk

pytestmark = pytest.mark.django_db

LIST = "/api/v1/agents/stats"
JAN15 = {"from": "2025-01-15", "to": "2025-01-16"}
ZERO = {
    "chats_total": 0,
    "avg_response_time_seconds": None,
    "messages_total": 0,
    "rating_average": None,
    "rating_distribution": {"1": 0, "2": 0, "3": 0, "4": 0, "5": 0},
    "chats_accepted": 0,
    "chats_handled": 0,
    "chats_transferred_out": 0,
    "chats_transferred_in": 0,
    "chats_missed": 0,
}


def detail(agent) -> str:
    return f"/api/v1/agents/{agent.pk}/stats"


@pytest.fixture
def day(talk):
    chat = talk.at(msk(2025, 1, 15, 10)).visitor()
    talk.at(msk(2025, 1, 15, 10, 2)).reply(chat, talk.human)
    talk.at(msk(2025, 1, 15, 10, 3)).rate(chat, 4)
    talk.at(msk(2025, 1, 15, 10, 4)).transfer(chat, talk.other)
    bot = talk.at(msk(2025, 1, 15, 11)).visitor()
    talk.at(msk(2025, 1, 15, 11, 0, 5)).reply(bot, talk.ai)
    return talk


def test_every_agent_is_present_zero_filled_with_null_averages(api, day, widget):
    banned = AgentFactory(widget=widget, name="Gone", status=Agent.Status.BANNED)
    body = api(scopes=["stats:read"]).get(LIST, JAN15).json()
    assert body["next_cursor"] is None and body["timezone"] == "Europe/Moscow"
    assert body["from"] == "2025-01-15T00:00:00+03:00" and body["to"] == "2025-01-16T00:00:00+03:00"
    rows = {row["agent_id"]: row for row in body["data"]}
    assert [row["agent_id"] for row in body["data"]] == sorted(rows)
    assert rows[banned.pk] == {"agent_id": banned.pk, "name": "Gone", "type": "human", "metrics": ZERO}
    human, other, ai = (rows[a.pk]["metrics"] for a in (day.human, day.other, day.ai))
    assert human == {
        **ZERO,
        "messages_total": 1,
        "rating_average": 4.0,
        "rating_distribution": {**ZERO["rating_distribution"], "4": 1},
        "chats_accepted": 1,
        "chats_transferred_out": 1,
    }
    assert other == {
        **ZERO,
        "chats_total": 1,
        "avg_response_time_seconds": 120.0,
        "chats_handled": 1,
        "chats_transferred_in": 1,
    }
    assert rows[day.ai.pk]["type"] == "ai"
    assert ai == {**ZERO, "messages_total": 1, "chats_accepted": 1, "chats_handled": 1}


def test_the_ai_operator_never_has_missed_chats(api, day, widget):
    day.at(msk(2025, 1, 15, 12)).visitor()  # missed, no owner
    row = api().get(detail(day.ai), {**JAN15, "metric": "chats_missed"}).json()["data"]
    assert row["metrics"] == {"chats_missed": 0}


def test_pages_by_cursor_cover_every_agent_once(api, day, widget):
    AgentFactory.create_batch(3, widget=widget)
    client, seen, cursor = api(), [], None
    while True:
        params = {**JAN15, "limit": 2, "metric": "chats_total", **({"cursor": cursor} if cursor else {})}
        body = client.get(LIST, params).json()
        seen += [row["agent_id"] for row in body["data"]]
        assert all(list(row["metrics"]) == ["chats_total"] for row in body["data"])
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert seen == sorted(Agent.objects.filter(widget=widget).values_list("pk", flat=True))


def test_other_widgets_agents_are_not_listed(api, day, other_widget):
    foreign = AgentFactory(widget=other_widget)
    ids = [row["agent_id"] for row in api().get(LIST, {"limit": 100}).json()["data"]]
    assert foreign.pk not in ids and day.human.pk in ids


def test_the_list_runs_a_fixed_number_of_queries(api, day, widget, django_assert_max_num_queries):
    client = api()
    client.get(LIST, JAN15)  # warm the token's caches
    AgentFactory.create_batch(10, widget=widget)
    with django_assert_max_num_queries(12):
        assert client.get(LIST, {**JAN15, "limit": 100}).status_code == 200


def test_the_list_with_a_partial_day_matches_whole_days(api, day):
    whole = api().get(LIST, JAN15).json()["data"]
    edges = api().get(LIST, {"from": "2025-01-15T09:59:00", "to": "2025-01-15T11:01:00"}).json()["data"]
    assert [r["metrics"] for r in edges] == [r["metrics"] for r in whole]


@pytest.mark.parametrize(
    "params, field",
    [
        ({"limit": "0"}, "limit"),
        ({"limit": "101"}, "limit"),
        ({"cursor": "forged"}, "cursor"),
        ({"metric": "chats_total,chats_ai_to_human"}, "metric"),
        ({"period": "week", "from": "2025-01-01"}, "period"),
        ({"interval": "day"}, "interval"),
    ],
)
def test_the_list_refuses_bad_input_with_422(api, widget, params, field):
    assert field in assert_problem(api().get(LIST, params), 422)["errors"]


def test_one_agent(api, day):
    body = api(scopes=["stats:read"]).get(detail(day.other), {**JAN15, "metric": "chats_total,chats_transferred_in"})
    assert body.json() == {
        "data": {
            "agent_id": day.other.pk,
            "name": day.other.name,
            "type": "human",
            "metrics": {"chats_total": 1, "chats_transferred_in": 1},
            "from": "2025-01-15T00:00:00+03:00",
            "to": "2025-01-16T00:00:00+03:00",
            "timezone": "Europe/Moscow",
        }
    }
    assert list(api().get(detail(day.other)).json()["data"]["metrics"]) == list(selectors.AGENT_METRICS)


def test_one_agent_foreign_or_missing_id_is_404(api, day, other_widget):
    assert_problem(api().get(detail(AgentFactory(widget=other_widget))), 404, "not_found")
    assert_problem(api().get("/api/v1/agents/999999999/stats"), 404, "not_found")


def test_one_agent_401_and_403(api, client, day):
    assert_problem(client.get(detail(day.human)), 401)
    assert_problem(api(scopes=["agents:read"]).get(detail(day.human)), 403, "missing_scope")


@pytest.mark.parametrize(
    "params, field",
    [({"metric": "bogus"}, "metric"), ({"cursor": "x"}, "cursor"), ({"period": "today", "to": "2025-01-01"}, "period")],
)
def test_one_agent_refuses_bad_input_with_422(api, day, params, field):
    assert field in assert_problem(api().get(detail(day.human), params), 422)["errors"]
