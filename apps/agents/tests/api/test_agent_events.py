"""GET /v1/agents/{id}/events: the agent event log."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.agents import events_log
from apps.agents.api.serializers import AgentEventDoc, event_payload
from apps.agents.models import Agent
from apps.agents.services import record_agent_event
from apps.agents.tests.conftest import idem
from apps.agents.tests.factories import AgentEventFactory, AgentFactory, HumanAgentFactory
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db


def events_url(agent):
    return f"/api/v1/agents/{agent.pk}/events"


def test_rows_have_type_type_code_message_and_time_newest_first(api, widget):
    agent = AgentFactory(widget=widget)
    now = timezone.now()
    AgentEventFactory(agent=agent, type_code=events_log.code_of("suspended"), created_at=now - timedelta(minutes=2))
    AgentEventFactory(agent=agent, type_code=events_log.code_of("chat_accepted"), extra={"chat_id": 77}, created_at=now)
    data = api(scopes=["agents:events:read"]).get(events_url(agent)).json()["data"]
    assert [set(row) for row in data] == [set(AgentEventDoc().fields)] * 2
    assert [(r["type"], r["type_code"]) for r in data] == [
        ("chat_accepted", events_log.code_of("chat_accepted")),
        ("suspended", events_log.code_of("suspended")),
    ]
    assert data[0]["message"] == "Принял чат №77"
    assert data[1]["message"] == "Оператор приостановлен"


def test_an_action_without_a_slug_arrives_as_unknown_with_its_raw_code(api, widget):
    agent = AgentFactory(widget=widget)
    record_agent_event(widget=widget, agent=agent, type_code=9999)
    row = api().get(events_url(agent)).json()["data"][0]
    assert row["type"] == "unknown" and row["type_code"] == 9999 and "9999" in row["message"]


@pytest.mark.parametrize("slug", ["suspended", "chat_transferred_in", "unknown"])
def test_filter_by_type(api, widget, slug):
    agent = AgentFactory(widget=widget)
    for code in (events_log.code_of("suspended"), events_log.code_of("chat_transferred_in"), 9999):
        AgentEventFactory(agent=agent, type_code=code)
    data = api().get(events_url(agent), {"type": slug}).json()["data"]
    assert [r["type"] for r in data] == [slug]


@pytest.mark.parametrize("params", [{"type": "fired"}, {"type": "12"}, {"kind": "suspended"}, {"limit": 0}])
def test_unknown_filter_values_are_422(api, widget, params):
    agent = AgentFactory(widget=widget)
    body = assert_problem(api().get(events_url(agent), params), 422)
    assert set(body["errors"]) == set(params)


def test_only_this_agents_events_are_listed(api, widget):
    agent, other = AgentFactory(widget=widget), AgentFactory(widget=widget)
    AgentEventFactory(agent=other)
    assert api().get(events_url(agent)).json() == {"data": [], "next_cursor": None}


def test_the_api_actions_are_recorded(api, widget):
    agent = HumanAgentFactory(widget=widget, show_in_header=True)
    client = api()
    client.patch(f"/api/v1/agents/{agent.pk}", {"show_in_header": False}, format="json", **idem())
    client.patch(f"/api/v1/agents/{agent.pk}", {"show_in_header": True}, format="json", **idem())
    client.post(f"/api/v1/agents/{agent.pk}/suspend", **idem())
    client.post(f"/api/v1/agents/{agent.pk}/restore", **idem())
    client.delete(f"/api/v1/agents/{agent.pk}")
    types = [r["type"] for r in client.get(events_url(agent)).json()["data"]]
    assert types == ["deleted", "restored", "suspended", "show_in_header_on", "show_in_header_off"]


def test_a_banned_agents_log_stays_readable(api, widget):
    agent = AgentFactory(widget=widget, status=Agent.Status.BANNED)
    AgentEventFactory(agent=agent)
    assert len(api().get(events_url(agent)).json()["data"]) == 1


def test_pagination(api, widget):
    agent = AgentFactory(widget=widget)
    AgentEventFactory.create_batch(3, agent=agent)
    client = api()
    page = client.get(events_url(agent), {"limit": 2}).json()
    rest = client.get(events_url(agent), {"limit": 2, "cursor": page["next_cursor"]}).json()
    assert len(page["data"]) == 2 and len(rest["data"]) == 1 and rest["next_cursor"] is None


def test_foreign_agent_is_404(api, other_widget):
    agent = AgentFactory(widget=other_widget)
    AgentEventFactory(agent=agent)
    assert_problem(api().get(events_url(agent)), 404, "not_found")


def test_needs_agents_events_read_not_agents_read(api, widget):
    agent = AgentFactory(widget=widget)
    assert_problem(api(scopes=["agents:read"]).get(events_url(agent)), 403, "missing_scope")


def test_query_count_does_not_grow_with_rows(api, widget):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    agent = AgentFactory(widget=widget)
    client = api()
    client.get(events_url(agent))

    def count():
        with CaptureQueriesContext(connection) as ctx:
            client.get(events_url(agent), {"limit": 50})
        return len(ctx.captured_queries)

    one = count()
    AgentEventFactory.create_batch(20, agent=agent)
    assert count() == one


def test_payload_builder_matches_the_documented_shape(widget):
    assert set(event_payload(AgentEventFactory(agent=AgentFactory(widget=widget)))) == set(AgentEventDoc().fields)
