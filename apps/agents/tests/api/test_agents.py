"""GET/PATCH/DELETE /v1/agents..., suspend and restore."""

import pytest

from apps.agents import selectors
from apps.agents.api.serializers import AgentDoc, agent_payload
from apps.agents.models import Agent, AgentEvent
from apps.agents.tests.conftest import idem
from apps.agents.tests.factories import AgentFactory, AIAgentFactory, DepartmentFactory, HumanAgentFactory
from apps.chats.tests.factories import ChatFactory, ContactFactory
from tests.support.factories import WidgetFactory
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

AGENTS = "/api/v1/agents"


def url(agent, suffix=""):
    return f"{AGENTS}/{agent.pk}{suffix}"


def events_of(agent):
    from apps.agents.events_log import slug_of

    return [slug_of(e.type_code) for e in AgentEvent.objects.filter(agent=agent).order_by("id")]


# --- list ------------------------------------------------------------------------------------------------


def test_list_shape_has_every_member(api, widget):
    # given
    department = DepartmentFactory(widget=widget)
    agent = HumanAgentFactory(widget=widget, surname="Petrov", show_in_header=False)
    department.agents.add(agent)
    # when
    row = api(scopes=["agents:read"]).get(AGENTS).json()["data"][0]
    # then
    assert set(row) == set(AgentDoc().fields)
    assert row["id"] == agent.pk and row["user_id"] == agent.user_id
    assert row["name"] == agent.name and row["surname"] == "Petrov" and row["email"] == agent.email
    assert row["avatar_url"] is None and row["role"] == "operator" and row["type"] == "human"
    assert row["status"] == "active" and row["online"] is False and row["show_in_header"] is False
    assert row["ai_assistant_id"] is None and row["departments"] == [department.pk]
    assert row["created_at"]


def test_list_is_newest_first_and_excludes_banned_by_default(api, widget):
    first = AgentFactory(widget=widget)
    AgentFactory(widget=widget, status=Agent.Status.BANNED)
    resting = AgentFactory(widget=widget, status=Agent.Status.RELAXATION)
    data = api().get(AGENTS).json()["data"]
    assert [a["id"] for a in data] == [resting.pk, first.pk]


def test_list_never_shows_other_widgets(api, other_widget):
    AgentFactory(widget=other_widget)
    assert api().get(AGENTS).json() == {"data": [], "next_cursor": None}


@pytest.mark.parametrize("status", ["active", "relaxation", "banned"])
def test_filter_by_status_includes_banned_when_asked(api, widget, status):
    for s in ("active", "relaxation", "banned"):
        AgentFactory(widget=widget, status=s)
    data = api().get(AGENTS, {"status": status}).json()["data"]
    assert [a["status"] for a in data] == [status]


@pytest.mark.parametrize("kind", ["human", "ai", "webhook"])
def test_filter_by_type(api, widget, kind):
    for t in ("human", "ai", "webhook"):
        AgentFactory(widget=widget, type=t)
    data = api().get(AGENTS, {"type": kind}).json()["data"]
    assert [a["type"] for a in data] == [kind]


def test_filter_by_department(api, widget):
    department = DepartmentFactory(widget=widget)
    member = AgentFactory(widget=widget)
    AgentFactory(widget=widget)
    department.agents.add(member)
    data = api().get(AGENTS, {"department_id": department.pk}).json()["data"]
    assert [a["id"] for a in data] == [member.pk]


def test_empty_department_gives_an_empty_list(api, widget):
    department = DepartmentFactory(widget=widget)
    AgentFactory(widget=widget)
    assert api().get(AGENTS, {"department_id": department.pk}).json()["data"] == []


def test_foreign_or_missing_department_is_404_never_an_empty_list(api, widget, other_widget):
    foreign = DepartmentFactory(widget=other_widget)
    foreign.agents.add(AgentFactory(widget=other_widget))
    client = api()
    a = assert_problem(client.get(AGENTS, {"department_id": foreign.pk}), 404, "not_found")
    b = assert_problem(client.get(AGENTS, {"department_id": foreign.pk + 1000}), 404, "not_found")
    assert a["detail"] == b["detail"]


@pytest.mark.parametrize("department_id", ["0", "9223372036854775808", "9999999999999999999", "1" * 40])
def test_an_id_past_any_department_is_404_like_a_missing_one(api, department_id):
    missing = assert_problem(api().get(AGENTS, {"department_id": "999999"}), 404, "not_found")
    too_large = assert_problem(api().get(AGENTS, {"department_id": department_id}), 404, "not_found")
    assert too_large["detail"] == missing["detail"]


def test_online_filter_and_member_come_from_live_presence(api, widget, presence):
    online = AgentFactory(widget=widget, status=Agent.Status.RELAXATION)
    offline = AgentFactory(widget=widget)
    presence({online.pk})
    client = api()
    assert [(a["id"], a["online"]) for a in client.get(AGENTS, {"online": 1}).json()["data"]] == [(online.pk, True)]
    assert [(a["id"], a["online"]) for a in client.get(AGENTS, {"online": 0}).json()["data"]] == [(offline.pk, False)]


def test_nobody_is_online_until_presence_is_wired(widget):
    AgentFactory(widget=widget)
    assert selectors.online_agent_ids(widget) == set()


@pytest.mark.parametrize(
    "params",
    [
        {"type": "bot"},
        {"status": "deleted"},
        {"online": "yes"},
        {"online": "true"},
        {"department_id": "abc"},
        {"department_id": "²"},
        {"department_id": "５"},
        {"department_id": "-1"},
        {"department_id": " 1"},
        {"colour": "red"},
        {"limit": 0},
        {"limit": 101},
        {"cursor": "forged"},
    ],
)
def test_bad_filters_are_422(api, params):
    body = assert_problem(api().get(AGENTS, params), 422)
    assert set(body["errors"]) == set(params)


def test_repeated_filter_is_422(api):
    assert_problem(api().get(f"{AGENTS}?type=human&type=ai"), 422)


def test_pagination_walks_every_agent_once(api, widget):
    agents = [AgentFactory(widget=widget) for _ in range(5)]
    client = api()
    page = client.get(AGENTS, {"limit": 2}).json()
    seen = [a["id"] for a in page["data"]]
    while page["next_cursor"]:
        page = client.get(AGENTS, {"limit": 2, "cursor": page["next_cursor"]}).json()
        seen += [a["id"] for a in page["data"]]
    assert seen == [a.pk for a in reversed(agents)]


def _queries(client, path, params=None) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as ctx:
        assert client.get(path, params or {}).status_code == 200
    return len([q for q in ctx.captured_queries if not q["sql"].startswith(("SAVEPOINT", "RELEASE"))])


def test_list_query_count_does_not_grow_with_rows(api, widget):
    client = api()
    department = DepartmentFactory(widget=widget)
    department.agents.add(HumanAgentFactory(widget=widget))
    client.get(AGENTS)  # warm the token's last_used_at
    one = _queries(client, AGENTS, {"limit": 50})
    for _ in range(20):
        agent = HumanAgentFactory(widget=widget)
        DepartmentFactory(widget=widget).agents.add(agent)
        department.agents.add(agent)
    assert _queries(client, AGENTS, {"limit": 50}) == one
    # token lookup + the page + the department ids (+ 3 for the database rate-limit budget, + 1 for its
    # advisory lock on PostgreSQL)
    assert one <= 7


def test_list_needs_agents_read(api, client):
    assert_problem(client.get(AGENTS), 401)
    assert_problem(api(scopes=["agents:write"]).get(AGENTS), 403, "missing_scope")


def test_payload_builder_matches_the_documented_shape(widget):
    agent = AgentFactory(widget=widget)
    agent = selectors.with_department_ids(Agent.objects.filter(pk=agent.pk)).get()
    assert set(agent_payload(agent, online_ids=set())) == set(AgentDoc().fields)


# --- read -------------------------------------------------------------------------------------------------


def test_read_includes_banned_agents(api, widget):
    agent = AgentFactory(widget=widget, status=Agent.Status.BANNED)
    body = api(scopes=["agents:read"]).get(url(agent)).json()
    assert body["id"] == agent.pk and body["status"] == "banned"


def test_read_of_ai_operator_shows_its_assistant(api, widget):
    agent = AIAgentFactory(widget=widget)
    body = api().get(url(agent)).json()
    assert body["type"] == "ai" and body["ai_assistant_id"] == agent.ai_assistant_id


def test_foreign_and_missing_agents_are_the_same_404(api, other_widget):
    foreign = AgentFactory(widget=other_widget)
    client = api()
    a = assert_problem(client.get(url(foreign)), 404, "not_found")
    b = assert_problem(client.get(f"{AGENTS}/{foreign.pk + 1000}"), 404, "not_found")
    a.pop("instance"), b.pop("instance")
    assert a == b


def test_read_needs_agents_read(api, widget):
    agent = AgentFactory(widget=widget)
    assert_problem(api(scopes=["agents:events:read"]).get(url(agent)), 403, "missing_scope")


# --- PATCH -------------------------------------------------------------------------------------------------


def test_patch_show_in_header_purges_the_cache_and_logs(api, widget, purges):
    agent = AgentFactory(widget=widget, show_in_header=True)
    response = api(scopes=["agents:write"]).patch(url(agent), {"show_in_header": False}, format="json", **idem())
    assert response.status_code == 200
    assert response.json()["show_in_header"] is False
    agent.refresh_from_db()
    assert agent.show_in_header is False
    assert widget.pk in purges
    assert events_of(agent) == ["show_in_header_off"]


def test_patch_to_the_same_value_changes_nothing(api, widget, purges):
    agent = AgentFactory(widget=widget, show_in_header=True)
    response = api().patch(url(agent), {"show_in_header": True}, format="json", **idem())
    assert response.status_code == 200 and response.json()["show_in_header"] is True
    assert purges == [] and events_of(agent) == []


def test_patch_moves_the_served_cache_generation(api, widget):
    from apps.widget.cache import generation

    agent = AgentFactory(widget=widget, show_in_header=True)
    before = generation(widget.pk)
    api().patch(url(agent), {"show_in_header": False}, format="json", **idem())
    assert generation(widget.pk) > before


@pytest.mark.parametrize(
    "member", ["name", "surname", "email", "status", "role", "type", "ai_assistant_id", "departments", "online", "id"]
)
def test_patch_refuses_every_other_agent_member_by_name(api, widget, member):
    agent = AgentFactory(widget=widget)
    body = assert_problem(api().patch(url(agent), {"show_in_header": False, member: "x"}, format="json", **idem()), 422)
    assert body["errors"] == {member: ["Read-only field; it cannot be written."]}
    agent.refresh_from_db()
    assert agent.show_in_header is True


def test_patch_refuses_unknown_members_by_name(api, widget):
    agent = AgentFactory(widget=widget)
    body = assert_problem(api().patch(url(agent), {"colour": "red"}, format="json", **idem()), 422)
    assert "colour" in body["errors"]


@pytest.mark.parametrize("value", ["true", 1, None, "yes"])
def test_patch_show_in_header_must_be_a_json_boolean(api, widget, value):
    agent = AgentFactory(widget=widget)
    body = assert_problem(api().patch(url(agent), {"show_in_header": value}, format="json", **idem()), 422)
    assert "show_in_header" in body["errors"]


def test_patch_without_show_in_header_is_422(api, widget):
    agent = AgentFactory(widget=widget)
    assert "show_in_header" in assert_problem(api().patch(url(agent), {}, format="json", **idem()), 422)["errors"]


def test_patch_needs_an_idempotency_key_and_refuses_reuse(api, widget):
    agent = AgentFactory(widget=widget)
    client = api()
    assert_problem(client.patch(url(agent), {"show_in_header": False}, format="json"), 400, "idempotency_key_missing")
    key = idem()
    assert client.patch(url(agent), {"show_in_header": False}, format="json", **key).status_code == 200
    assert_problem(
        client.patch(url(agent), {"show_in_header": True}, format="json", **key), 409, "idempotency_key_reused"
    )
    agent.refresh_from_db()
    assert agent.show_in_header is False


def test_put_is_not_a_method_of_an_agent(api, widget):
    agent = AgentFactory(widget=widget)
    assert_problem(api().put(url(agent), {"show_in_header": False}, format="json", **idem()), 405)


def test_patch_foreign_agent_is_404(api, other_widget):
    foreign = AgentFactory(widget=other_widget, show_in_header=True)
    assert_problem(api().patch(url(foreign), {"show_in_header": False}, format="json", **idem()), 404)
    foreign.refresh_from_db()
    assert foreign.show_in_header is True


def test_patch_needs_agents_write(api, widget):
    agent = AgentFactory(widget=widget)
    assert_problem(
        api(scopes=["agents:read"]).patch(url(agent), {"show_in_header": False}, format="json", **idem()),
        403,
        "missing_scope",
    )


# --- DELETE --------------------------------------------------------------------------------------------


def test_delete_is_a_soft_delete_that_releases_the_seat(api, widget, purges):
    agent = HumanAgentFactory(widget=widget)
    used = selectors.seats_used(widget.account)
    response = api(scopes=["agents:write"]).delete(url(agent))  # no idempotency key: 204/404/409 only
    assert response.status_code == 204
    agent.refresh_from_db()
    assert agent.status == Agent.Status.BANNED
    assert selectors.seats_used(widget.account) == used - 1
    assert widget.pk in purges
    assert events_of(agent) == ["deleted"]


def test_deleted_agent_keeps_chats_ratings_and_event_log_readable(api, widget):
    from apps.chats.models import Rating

    agent = HumanAgentFactory(widget=widget)
    chat = ChatFactory(contact=ContactFactory(widget=widget), agent=agent)
    Rating.objects.create(widget=widget, chat=chat, agent=agent, value=5)
    client = api()
    assert client.delete(url(agent)).status_code == 204
    assert client.get(f"/api/v1/chats/{chat.pk}").json()["agent_id"] == agent.pk
    assert Rating.objects.get(chat=chat).agent_id == agent.pk
    assert client.get(url(agent)).json()["status"] == "banned"
    assert [e["type"] for e in client.get(url(agent, "/events")).json()["data"]] == ["deleted"]


def test_delete_refuses_the_ai_operator(api, widget):
    agent = AIAgentFactory(widget=widget)
    assert_problem(api().delete(url(agent)), 409, "agent_not_deletable")
    agent.refresh_from_db()
    assert agent.status == Agent.Status.ACTIVE


def test_delete_refuses_the_owners_own_row(api, widget):
    owner = HumanAgentFactory(widget=widget, is_owner=True, role=Agent.Role.OWNER)
    assert_problem(api().delete(url(owner)), 409, "agent_not_deletable")
    owner.refresh_from_db()
    assert owner.status == Agent.Status.ACTIVE


def test_delete_of_a_banned_agent_changes_nothing(api, widget, purges):
    agent = AgentFactory(widget=widget, status=Agent.Status.BANNED)
    assert api().delete(url(agent)).status_code == 204
    assert purges == [] and events_of(agent) == []


def test_delete_foreign_agent_is_404(api, other_widget):
    foreign = AgentFactory(widget=other_widget)
    assert_problem(api().delete(url(foreign)), 404)
    foreign.refresh_from_db()
    assert foreign.status == Agent.Status.ACTIVE


def test_delete_needs_agents_write(api, widget):
    assert_problem(api(scopes=["agents:read"]).delete(url(AgentFactory(widget=widget))), 403, "missing_scope")


# --- suspend / restore ------------------------------------------------------------------------------------


def test_suspend_bans_and_answers_the_agent(api, widget, purges):
    agent = AgentFactory(widget=widget, status=Agent.Status.RELAXATION)
    response = api(scopes=["agents:write"]).post(url(agent, "/suspend"), **idem())
    assert response.status_code == 200
    assert response.json()["id"] == agent.pk and response.json()["status"] == "banned"
    assert widget.pk in purges
    assert events_of(agent) == ["suspended"]


def test_suspended_agent_leaves_the_default_list_but_stays_readable(api, widget):
    agent = AgentFactory(widget=widget)
    client = api()
    client.post(url(agent, "/suspend"), **idem())
    assert client.get(AGENTS).json()["data"] == []
    assert client.get(url(agent)).json()["status"] == "banned"


def test_suspended_agent_stays_in_its_departments(api, widget):
    department = DepartmentFactory(widget=widget)
    agent = AgentFactory(widget=widget)
    department.agents.add(agent)
    client = api()
    assert client.post(url(agent, "/suspend"), **idem()).json()["departments"] == [department.pk]
    assert client.get(f"/api/v1/departments/{department.pk}").json()["agent_ids"] == [agent.pk]


def test_suspend_refuses_a_body(api, widget):
    agent = AgentFactory(widget=widget)
    assert_problem(api().post(url(agent, "/suspend"), {"reason": "x"}, format="json", **idem()), 422)


def test_suspend_needs_an_idempotency_key(api, widget):
    agent = AgentFactory(widget=widget)
    assert_problem(api().post(url(agent, "/suspend")), 400, "idempotency_key_missing")
    agent.refresh_from_db()
    assert agent.status == Agent.Status.ACTIVE


def test_suspend_foreign_agent_is_404(api, other_widget):
    assert_problem(api().post(url(AgentFactory(widget=other_widget), "/suspend"), **idem()), 404)


def test_suspend_and_restore_need_agents_write(api, widget):
    agent = AgentFactory(widget=widget)
    client = api(scopes=["agents:read"])
    assert_problem(client.post(url(agent, "/suspend"), **idem()), 403, "missing_scope")
    assert_problem(client.post(url(agent, "/restore"), **idem()), 403, "missing_scope")


def test_restore_returns_a_banned_agent_to_active(api, widget, purges):
    agent = HumanAgentFactory(widget=widget, status=Agent.Status.BANNED)
    response = api().post(url(agent, "/restore"), **idem())
    assert response.status_code == 200 and response.json()["status"] == "active"
    assert widget.pk in purges
    assert events_of(agent) == ["restored"]


def test_restore_is_refused_when_no_seat_is_free(api, widget):
    widget.account.seats = 2
    widget.account.save()
    HumanAgentFactory.create_batch(2, widget=widget)
    agent = HumanAgentFactory(widget=widget, status=Agent.Status.BANNED)
    assert_problem(api().post(url(agent, "/restore"), **idem()), 409, "seat_limit_reached")
    agent.refresh_from_db()
    assert agent.status == Agent.Status.BANNED and events_of(agent) == []


def test_seats_are_counted_across_the_accounts_widgets(api, widget):
    widget.account.seats = 2
    widget.account.save()
    sibling = WidgetFactory(account=widget.account)
    HumanAgentFactory.create_batch(2, widget=sibling)
    agent = HumanAgentFactory(widget=widget, status=Agent.Status.BANNED)
    assert_problem(api().post(url(agent, "/restore"), **idem()), 409, "seat_limit_reached")


def test_ai_webhook_and_banned_agents_use_no_seat(api, widget):
    widget.account.seats = 1
    widget.account.save()
    AIAgentFactory(widget=widget)
    AgentFactory(widget=widget, type=Agent.Type.WEBHOOK)
    AgentFactory(widget=widget, status=Agent.Status.BANNED)
    agent = HumanAgentFactory(widget=widget, status=Agent.Status.BANNED)
    assert api().post(url(agent, "/restore"), **idem()).json()["status"] == "active"


def test_restore_of_an_ai_operator_needs_no_seat(api, widget):
    widget.account.seats = 0
    widget.account.save()
    agent = AIAgentFactory(widget=widget, status=Agent.Status.BANNED)
    assert api().post(url(agent, "/restore"), **idem()).json()["status"] == "active"


def test_restore_of_an_active_agent_changes_nothing(api, widget, purges):
    agent = AgentFactory(widget=widget, status=Agent.Status.RELAXATION)
    assert api().post(url(agent, "/restore"), **idem()).json()["status"] == "relaxation"
    assert purges == [] and events_of(agent) == []


def test_restore_foreign_agent_is_404(api, other_widget):
    agent = AgentFactory(widget=other_widget, status=Agent.Status.BANNED)
    assert_problem(api().post(url(agent, "/restore"), **idem()), 404)


def test_non_numeric_agent_ids_are_404(api):
    assert_problem(api().get(f"{AGENTS}/abc"), 404)
