"""What the owners' routing page (docs/owners/routing.md) promises: how each mode picks, what makes an
operator eligible (online, active, below capacity, inside business hours, in an open department that
lists the chat's channel), the queue waiting for an eligible operator, and the rules of the routing
settings and agent capacity routes.

The flows run with real commits (`transaction=True`): routing serves its queue in on-commit handlers,
as in production. "Online" is the live presence (`apps.agents.selectors.PRESENCE_SOURCE`), and an
operator coming online is the `agent.online` event the console socket's presence emits."""

from __future__ import annotations

import itertools
import json
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from apps.agents import selectors as agent_selectors
from apps.agents import services as agent_services
from apps.agents.models import Agent
from apps.agents.tests.factories import HumanAgentFactory
from apps.chats import services as chat_services
from apps.chats.models import Chat
from apps.chats.visitor import services as visitor_services
from apps.core import events
from apps.routing import selectors, services
from apps.routing.models import ChatRouting, OperatorRouting, RoutingSettings
from apps.widget import services as widget_services

_keys = itertools.count()
DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
CLOSED_WEEK = {
    "enabled": True,
    "timezone": "UTC",
    "weekly": {day: [] for day in DAYS},
    "holidays": [],
    "outside_hours": "offline_form",
}
ALWAYS_OPEN = {**CLOSED_WEEK, "weekly": {day: [["00:00", "24:00"]] for day in DAYS}}


def idem() -> dict:
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"routing-rules-{next(_keys)}"}


@pytest.fixture
def online(monkeypatch):
    """`online(agent, ...)`: exactly these operators have a console socket open from now on."""

    def set_online(*agents):
        ids = {a.pk for a in agents}
        monkeypatch.setattr(agent_selectors, "PRESENCE_SOURCE", lambda widget: set(ids))

    return set_online


def comes_online(widget, agent) -> None:
    """The presence's announcement of the operator's first console socket."""
    with transaction.atomic():
        events.emit(widget, events.AGENT_ONLINE, operator_id=agent.pk)


def set_mode(widget, mode: str, *, default_capacity: int = 3) -> None:
    services.put_settings(
        widget=widget,
        data={
            "mode": mode,
            "default_capacity": default_capacity,
            "reroute_after_seconds": None,
            "show_queue_position": True,
        },
    )


def visitor_writes(widget, name: str = "Anna") -> Chat:
    session, _ = visitor_services.start_session(widget=widget, name=name)
    message = chat_services.post_client_message(
        widget=widget, contact=session.contact, data=chat_services.MessageInput(body="Hello")
    )
    return Chat.objects.get(pk=message.chat_id)


def owner_of(chat: Chat) -> int | None:
    return Chat.objects.filter(pk=chat.pk).values_list("agent_id", flat=True).get()


def open_load(agent: Agent) -> int:
    return Chat.objects.filter(agent=agent, status=Chat.Status.ACTIVE).count()


def last_assigned(widget, agent: Agent, *, ago: timedelta) -> None:
    OperatorRouting.objects.update_or_create(
        agent=agent, defaults={"widget": widget, "last_assigned_at": timezone.now() - ago}
    )


def queued_ids(widget) -> list[int]:
    return [chat_id for chat_id, _ in selectors.queue(widget)]


# --- how each mode picks --------------------------------------------------------------------------------

flow = pytest.mark.django_db(transaction=True)


@flow
def test_round_robin_gives_each_chat_to_the_operator_assigned_longest_ago(widget, online):
    anna, boris, chen = (HumanAgentFactory(widget=widget) for _ in range(3))
    last_assigned(widget, anna, ago=timedelta(hours=1))
    last_assigned(widget, boris, ago=timedelta(hours=2))
    last_assigned(widget, chen, ago=timedelta(minutes=10))
    online(anna, boris, chen)
    set_mode(widget, RoutingSettings.Mode.ROUND_ROBIN)

    first, second, third, fourth = (visitor_writes(widget, name) for name in ("v1", "v2", "v3", "v4"))

    # Boris waited longest, then Anna, then Chen; then Boris again (assigned longest ago once more),
    # whatever their loads are.
    assert [owner_of(c) for c in (first, second, third, fourth)] == [boris.pk, anna.pk, chen.pk, boris.pk]
    assert ChatRouting.objects.get(chat=first).assigned_by == ChatRouting.By.ROUTING


@flow
def test_round_robin_starts_with_operators_never_assigned(widget, online):
    veteran, newcomer = HumanAgentFactory(widget=widget), HumanAgentFactory(widget=widget)
    last_assigned(widget, veteran, ago=timedelta(days=30))
    online(veteran, newcomer)
    set_mode(widget, RoutingSettings.Mode.ROUND_ROBIN)

    assert owner_of(visitor_writes(widget)) == newcomer.pk


@flow
def test_least_busy_gives_the_chat_to_fewest_open_chats_ties_to_the_one_assigned_longest_ago(widget, online):
    busy, calm, calmer_recently = (HumanAgentFactory(widget=widget) for _ in range(3))
    # Chats opened while routing was off, then owned by the operators: busy 2, the others 1 each.
    for agent, count in ((busy, 2), (calm, 1), (calmer_recently, 1)):
        for _ in range(count):
            Chat.objects.filter(pk=visitor_writes(widget).pk).update(agent=agent)
    last_assigned(widget, busy, ago=timedelta(days=1))
    last_assigned(widget, calm, ago=timedelta(hours=2))
    last_assigned(widget, calmer_recently, ago=timedelta(minutes=5))
    online(busy, calm, calmer_recently)
    set_mode(widget, RoutingSettings.Mode.LEAST_BUSY, default_capacity=10)

    chat = visitor_writes(widget)
    # calm and calmer_recently tie at one open chat; calm was assigned longer ago. busy, assigned
    # longest ago of all, has more open chats.
    assert owner_of(chat) == calm.pk
    # Now calm has two, calmer_recently one: the fewest wins over the longest ago.
    assert owner_of(visitor_writes(widget)) == calmer_recently.pk


@flow
def test_manual_assigns_nothing_and_queues_nothing(widget, online):
    anna = HumanAgentFactory(widget=widget)
    online(anna)
    chat = visitor_writes(widget)  # mode manual: the default
    assert selectors.routing_settings(widget).mode == RoutingSettings.Mode.MANUAL
    assert owner_of(chat) is None
    assert queued_ids(widget) == []
    comes_online(widget, anna)
    assert owner_of(chat) is None


# --- capacity and the queue -----------------------------------------------------------------------------


@flow
def test_capacity_own_and_default_is_never_exceeded_and_the_rest_waits_in_order(widget, online):
    small, default = HumanAgentFactory(widget=widget, capacity=1), HumanAgentFactory(widget=widget)
    online(small, default)
    set_mode(widget, RoutingSettings.Mode.ROUND_ROBIN, default_capacity=2)

    chats = [visitor_writes(widget, f"v{i}") for i in range(5)]

    assert open_load(small) == 1  # its own capacity
    assert open_load(default) == 2  # the widget's default
    waiting = [c.pk for c in chats if owner_of(c) is None]
    assert len(waiting) == 2
    assert queued_ids(widget) == waiting  # first in, first out

    # A closed chat frees a slot: the head of the queue takes it, and capacity still holds.
    freed = Chat.objects.filter(agent=default, status=Chat.Status.ACTIVE).first()
    chat_services.close_chat(widget=widget, chat=freed)
    assert owner_of(Chat(pk=waiting[0])) == default.pk
    assert queued_ids(widget) == waiting[1:]
    assert (open_load(small), open_load(default)) == (1, 2)


@flow
def test_a_chat_waits_with_nobody_online_and_goes_to_the_operator_who_comes_online(widget, online):
    anna = HumanAgentFactory(widget=widget)
    online()
    set_mode(widget, RoutingSettings.Mode.LEAST_BUSY)

    chat = visitor_writes(widget)
    assert owner_of(chat) is None
    assert queued_ids(widget) == [chat.pk]
    row = ChatRouting.objects.get(chat=chat)
    assert row.queued_at is not None and row.assigned_at is None

    online(anna)
    comes_online(widget, anna)

    assert owner_of(chat) == anna.pk
    assert queued_ids(widget) == []
    row.refresh_from_db()
    assert row.assigned_by == ChatRouting.By.ROUTING
    assert row.wait_seconds is not None and row.wait_seconds >= 0


@flow
def test_a_suspended_operator_is_not_eligible_until_restored(widget, online):
    anna = HumanAgentFactory(widget=widget)
    agent_services.suspend_agent(widget=widget, agent=anna)
    online(anna)  # a socket may linger; the status decides
    set_mode(widget, RoutingSettings.Mode.ROUND_ROBIN)

    chat = visitor_writes(widget)
    assert owner_of(chat) is None

    agent_services.restore_agent(widget=widget, agent=Agent.objects.get(pk=anna.pk))
    assert owner_of(chat) == anna.pk


@flow
def test_an_away_operator_is_not_eligible(widget, online):
    away = HumanAgentFactory(widget=widget, status=Agent.Status.RELAXATION)
    online(away)
    set_mode(widget, RoutingSettings.Mode.ROUND_ROBIN)
    assert owner_of(visitor_writes(widget)) is None


@flow
def test_the_ai_operator_is_never_chosen(widget, online):
    from apps.agents.tests.factories import AIAgentFactory

    robot = AIAgentFactory(widget=widget)
    online(robot)
    set_mode(widget, RoutingSettings.Mode.ROUND_ROBIN)
    chat = visitor_writes(widget)
    assert owner_of(chat) is None


@flow
def test_a_larger_capacity_takes_the_next_waiting_chat(widget, online):
    anna = HumanAgentFactory(widget=widget, capacity=1)
    online(anna)
    set_mode(widget, RoutingSettings.Mode.ROUND_ROBIN)
    first, second = visitor_writes(widget, "v1"), visitor_writes(widget, "v2")
    assert (owner_of(first), owner_of(second)) == (anna.pk, None)

    agent_services.set_capacity(widget=widget, agent=anna, capacity=2)

    assert owner_of(second) == anna.pk
    assert queued_ids(widget) == []


@flow
def test_an_operator_taking_a_waiting_chat_takes_it_out_of_the_queue(widget, online):
    anna = HumanAgentFactory(widget=widget)
    online()
    set_mode(widget, RoutingSettings.Mode.ROUND_ROBIN)
    chat = visitor_writes(widget)
    assert queued_ids(widget) == [chat.pk]

    chat_services.accept_chat(widget=widget, chat=chat, agent=anna)

    assert owner_of(chat) == anna.pk
    assert queued_ids(widget) == []
    assert ChatRouting.objects.get(chat=chat).assigned_by == ChatRouting.By.AGENT


@flow
def test_chats_of_manual_mode_join_the_queue_at_the_visitors_next_message(widget, online):
    anna = HumanAgentFactory(widget=widget)
    online(anna)
    session, _ = visitor_services.start_session(widget=widget, name="Anna")

    def says():
        return chat_services.post_client_message(
            widget=widget, contact=session.contact, data=chat_services.MessageInput(body="Hello?")
        )

    chat = Chat.objects.get(pk=says().chat_id)  # mode manual
    set_mode(widget, RoutingSettings.Mode.ROUND_ROBIN)
    assert owner_of(chat) is None  # turning routing on does not reach back

    says()
    assert owner_of(chat) == anna.pk


@flow
def test_turning_a_mode_on_serves_the_chats_already_waiting(widget, online):
    anna = HumanAgentFactory(widget=widget)
    online()
    set_mode(widget, RoutingSettings.Mode.ROUND_ROBIN)
    chat = visitor_writes(widget)
    set_mode(widget, RoutingSettings.Mode.MANUAL)
    online(anna)
    comes_online(widget, anna)
    assert owner_of(chat) is None  # manual: the queue waits

    set_mode(widget, RoutingSettings.Mode.LEAST_BUSY)
    assert owner_of(chat) == anna.pk


# --- departments and business hours ---------------------------------------------------------------------


@flow
def test_a_department_listing_smb_restricts_widget_chats_to_its_members(widget, online):
    outsider = HumanAgentFactory(widget=widget)  # lower id: round robin's pick without the department
    member = HumanAgentFactory(widget=widget)
    agent_services.create_department(widget=widget, name="Site", channels=["smb"], agents=[member])
    online(outsider, member)
    set_mode(widget, RoutingSettings.Mode.ROUND_ROBIN)

    assert [owner_of(visitor_writes(widget, f"v{i}")) for i in range(2)] == [member.pk, member.pk]
    assert open_load(outsider) == 0


@flow
def test_no_department_listing_the_channel_means_anyone(widget, online):
    anyone = HumanAgentFactory(widget=widget)
    telegram_only = HumanAgentFactory(widget=widget)
    agent_services.create_department(widget=widget, name="Telegram", channels=["telegram"], agents=[telegram_only])
    online(anyone, telegram_only)
    set_mode(widget, RoutingSettings.Mode.ROUND_ROBIN)

    owners = {owner_of(visitor_writes(widget, f"v{i}")) for i in range(2)}
    assert owners == {anyone.pk, telegram_only.pk}


@flow
def test_a_closed_departments_members_are_not_eligible(widget, online):
    member = HumanAgentFactory(widget=widget)
    outsider = HumanAgentFactory(widget=widget)
    closed = {day: None for day in ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")}
    department = agent_services.create_department(
        widget=widget, name="Site", channels=["smb"], agents=[member], schedule=closed
    )
    online(member, outsider)
    set_mode(widget, RoutingSettings.Mode.ROUND_ROBIN)

    chat = visitor_writes(widget)
    # The channel is listed, so only members serve it; the only department listing it is closed.
    assert owner_of(chat) is None
    assert queued_ids(widget) == [chat.pk]

    agent_services.set_department_schedule(
        widget=widget, department=department, schedule={day: "full" for day in closed}
    )
    services.serve(widget)
    assert owner_of(chat) == member.pk


@flow
def test_outside_business_hours_nobody_is_eligible(widget, online):
    anna = HumanAgentFactory(widget=widget)
    widget_services.set_business_hours(widget=widget, body=CLOSED_WEEK)
    online(anna)
    set_mode(widget, RoutingSettings.Mode.ROUND_ROBIN)

    chat = visitor_writes(widget)
    comes_online(widget, anna)
    assert owner_of(chat) is None
    assert queued_ids(widget) == [chat.pk]

    # The hours change (a widget config change) serves the queue.
    widget_services.set_business_hours(widget=widget, body=ALWAYS_OPEN)
    assert owner_of(chat) == anna.pk


# --- PUT /api/v1/routing ----------------------------------------------------------------------------------

DEFAULTS = {"mode": "manual", "default_capacity": 3, "reroute_after_seconds": None, "show_queue_position": True}
VALID = {"mode": "least_busy", "default_capacity": 5, "reroute_after_seconds": 60, "show_queue_position": False}


def put(client, body, **headers):
    return client.put("/api/v1/routing", data=json.dumps(body), content_type="application/json", **headers)


@pytest.mark.django_db
def test_get_routing_answers_the_defaults_before_any_put(api):
    response = api(["routing:read"]).get("/api/v1/routing")
    assert response.status_code == 200
    assert response.json() == {"data": DEFAULTS}


@pytest.mark.django_db
def test_put_routing_replaces_the_whole_resource(api, widget):
    client = api(["routing:read", "routing:write"])
    response = put(client, VALID, **idem())
    assert response.status_code == 200, response.content
    assert response.json() == {"data": VALID}
    assert client.get("/api/v1/routing").json() == {"data": VALID}
    back = {**VALID, "mode": "round_robin", "reroute_after_seconds": None}
    assert put(client, back, **idem()).json() == {"data": back}


@pytest.mark.django_db
@pytest.mark.parametrize("member", sorted(VALID))
def test_put_routing_refuses_a_missing_member_by_name_and_changes_nothing(api, assert_problem, member):
    client = api(["routing:read", "routing:write"])
    body = {k: v for k, v in VALID.items() if k != member}
    problem = assert_problem(put(client, body, **idem()), 422, "validation_failed")
    assert member in problem["errors"]
    assert client.get("/api/v1/routing").json() == {"data": DEFAULTS}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("member", "value"),
    [
        ("mode", "fifo"),
        ("mode", None),
        ("default_capacity", 0),
        ("default_capacity", 51),
        ("default_capacity", "3"),
        ("default_capacity", None),
        ("reroute_after_seconds", 14),
        ("reroute_after_seconds", 901),
        ("reroute_after_seconds", 0),
        ("reroute_after_seconds", "60"),
        ("show_queue_position", "yes"),
        ("show_queue_position", 1),
        ("show_queue_position", None),
    ],
)
def test_put_routing_refuses_out_of_range_values_by_name_and_changes_nothing(api, assert_problem, member, value):
    client = api(["routing:read", "routing:write"])
    put(client, VALID, **idem())
    problem = assert_problem(put(client, {**VALID, "mode": "round_robin", member: value}, **idem()), 422)
    assert list(problem["errors"]) == [member]
    assert client.get("/api/v1/routing").json() == {"data": VALID}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("member", "value"),
    [("default_capacity", 1), ("default_capacity", 50), ("reroute_after_seconds", 15), ("reroute_after_seconds", 900)],
)
def test_put_routing_accepts_the_range_ends(api, member, value):
    response = put(api(["routing:write"]), {**VALID, member: value}, **idem())
    assert response.status_code == 200
    assert response.json()["data"][member] == value


@pytest.mark.django_db
def test_put_routing_refuses_an_unknown_member(api, assert_problem):
    client = api(["routing:read", "routing:write"])
    problem = assert_problem(put(client, {**VALID, "strategy": "x"}, **idem()), 422)
    assert "strategy" in problem["errors"]
    assert client.get("/api/v1/routing").json() == {"data": DEFAULTS}


@pytest.mark.django_db
def test_routing_scopes(api, assert_problem):
    assert_problem(api(["routing:write"]).get("/api/v1/routing"), 403, "missing_scope")
    assert_problem(put(api(["routing:read"]), VALID, **idem()), 403, "missing_scope")
    reader = api(["routing:read"])
    assert reader.get("/api/v1/routing").json() == {"data": DEFAULTS}


@pytest.mark.django_db
def test_put_routing_needs_an_idempotency_key(api, assert_problem):
    client = api(["routing:read", "routing:write"])
    assert_problem(put(client, VALID), 400, "idempotency_key_missing")
    assert client.get("/api/v1/routing").json() == {"data": DEFAULTS}


@pytest.mark.django_db
def test_routing_settings_are_the_tokens_widget_own(api, widget, other_widget):
    put(api(["routing:write"], w=other_widget), VALID, **idem())
    assert api(["routing:read"]).get("/api/v1/routing").json() == {"data": DEFAULTS}


# --- PATCH /api/v1/agents/{id} capacity ---------------------------------------------------------------------


def patch_agent(client, agent, body, **headers):
    return client.patch(f"/api/v1/agents/{agent.pk}", data=json.dumps(body), content_type="application/json", **headers)


@pytest.mark.django_db
@pytest.mark.parametrize("value", [1, 50, None])
def test_patch_agent_capacity_accepts_1_to_50_or_null(api, widget, value):
    anna = HumanAgentFactory(widget=widget, capacity=7)
    client = api(["agents:read", "agents:write"])
    response = patch_agent(client, anna, {"capacity": value}, **idem())
    assert response.status_code == 200, response.content
    assert client.get(f"/api/v1/agents/{anna.pk}").json()["capacity"] == value
    assert Agent.objects.get(pk=anna.pk).capacity == value


@pytest.mark.django_db
@pytest.mark.parametrize("value", [0, 51, -1, "3", 2.5, True])
def test_patch_agent_capacity_refuses_anything_else_and_changes_nothing(api, widget, assert_problem, value):
    anna = HumanAgentFactory(widget=widget, capacity=7)
    problem = assert_problem(patch_agent(api(["agents:write"]), anna, {"capacity": value}, **idem()), 422)
    assert list(problem["errors"]) == ["capacity"]
    assert Agent.objects.get(pk=anna.pk).capacity == 7


@pytest.mark.django_db
def test_patch_agent_capacity_of_another_widgets_agent_is_404(api, other_widget, assert_problem):
    stranger = HumanAgentFactory(widget=other_widget, capacity=7)
    assert_problem(patch_agent(api(["agents:write"]), stranger, {"capacity": 2}, **idem()), 404)
    assert Agent.objects.get(pk=stranger.pk).capacity == 7
