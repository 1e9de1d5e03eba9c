"""GET/POST/PATCH/DELETE /v1/departments..., PUT /agents and PUT /schedule."""

import pytest

from apps.agents import selectors
from apps.agents.api.serializers import DepartmentDoc, department_payload
from apps.agents.models import Agent, Department
from apps.agents.services import DAYS
from apps.agents.tests.conftest import idem
from apps.agents.tests.factories import AgentFactory, DepartmentFactory
from apps.chats.models import Chat
from apps.chats.tests.factories import ChatFactory, ContactFactory
from apps.core.models import IdempotencyKey
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

DEPARTMENTS = "/api/v1/departments"
FULL_WEEK = {day: "full" for day in DAYS}
CLOSED_WEEK = {day: None for day in DAYS}


def url(department, suffix=""):
    return f"{DEPARTMENTS}/{department.pk}{suffix}"


def create(client, body, **headers):
    return client.post(DEPARTMENTS, body, format="json", **{**idem(), **headers})


# --- create ------------------------------------------------------------------------------------------------


def test_create_with_name_only_is_open_every_day(api, widget):
    response = create(api(scopes=["departments:write"]), {"name": "Sales"})
    assert response.status_code == 201
    body = response.json()
    assert set(body) == set(DepartmentDoc().fields)
    assert body["name"] == "Sales" and body["channels"] == [] and body["agent_ids"] == []
    assert body["schedule"] == FULL_WEEK and list(body["schedule"]) == list(DAYS)
    assert body["avatar_url"] is None and body["created_at"] and body["updated_at"]
    assert Department.objects.get(pk=body["id"]).widget_id == widget.pk


def test_create_with_everything(api, widget):
    a, b = AgentFactory(widget=widget), AgentFactory(widget=widget, status=Agent.Status.BANNED)
    body = create(
        api(),
        {
            "name": "Support",
            "channels": ["tg", "vk", "wa", "vb", "fb", "ok", "smb"],
            "agent_ids": [b.pk, a.pk],
            "schedule": {"Monday": {"from": "09:00", "to": "18:00"}, "Saturday": "full", "Sunday": None},
        },
    ).json()
    assert body["channels"] == ["tg", "vk", "wa", "vb", "fb", "ok", "smb"]
    assert body["agent_ids"] == sorted([a.pk, b.pk])
    assert body["schedule"] == {
        **CLOSED_WEEK,
        "Monday": {"from": "09:00", "to": "18:00"},
        "Saturday": "full",
    }


@pytest.mark.parametrize(
    "body, path",
    [
        ({}, "name"),
        ({"name": ""}, "name"),
        ({"name": "   "}, "name"),
        ({"name": 5}, "name"),
        ({"name": "x" * 201}, "name"),
        ({"name": "x", "channels": "tg"}, "channels"),
        ({"name": "x", "channels": ["telegram"]}, "channels.0"),
        ({"name": "x", "channels": ["tg", "tg"]}, "channels.1"),
        ({"name": "x", "channels": ["smb", 5]}, "channels.1"),
        ({"name": "x", "channels": ["av__"]}, "channels.0"),
        ({"name": "x", "agent_ids": ["1"]}, "agent_ids.0"),
        ({"name": "x", "agent_ids": [True]}, "agent_ids.0"),
        ({"name": "x", "schedule": []}, "schedule"),
        ({"name": "x", "id": 5}, "id"),
        ({"name": "x", "avatar_url": "https://x"}, "avatar_url"),
        ({"name": "x", "created_at": "2026-01-01"}, "created_at"),
        ({"name": "x", "updated_at": "2026-01-01"}, "updated_at"),
        ({"name": "x", "colour": "red"}, "colour"),
    ],
)
def test_create_refuses_bad_input_at_its_path(api, body, path):
    problem = assert_problem(create(api(), body), 422, "validation_failed")
    assert path in problem["errors"], problem["errors"]
    assert not Department.objects.exists()


def test_read_only_members_are_refused_by_name(api):
    problem = assert_problem(create(api(), {"name": "x", "created_at": "2026-01-01"}), 422)
    assert problem["errors"] == {"created_at": ["Read-only field; it cannot be written."]}


def test_unknown_foreign_agent_ids_and_av_channels_report_identically(api, widget, other_widget):
    foreign = AgentFactory(widget=other_widget)
    client = api()
    unknown = assert_problem(create(client, {"name": "x", "agent_ids": [foreign.pk + 1000]}), 422)
    cross = assert_problem(create(client, {"name": "x", "agent_ids": [foreign.pk]}), 422)
    cabinet = assert_problem(create(client, {"name": "x", "channels": ["av__12345"]}), 422)
    for problem in (unknown, cross, cabinet):
        problem.pop("instance")
    assert unknown == cross
    assert unknown["errors"] == {"agent_ids.0": ["Unknown id."]}
    assert cabinet["errors"] == {"channels.0": ["Unknown id."]}
    assert {k: v for k, v in cabinet.items() if k != "errors"} == {k: v for k, v in unknown.items() if k != "errors"}
    assert not Department.objects.exists()


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 2**101])
def test_an_id_past_the_64_bit_range_is_an_unknown_id(api, widget, value):
    # found by schemathesis: SQLite cannot bind such an integer in an IN list (it was a 500)
    client = api()
    problem = assert_problem(create(client, {"name": "x", "agent_ids": [value]}), 422)
    assert problem["errors"] == {"agent_ids.0": ["Unknown id."]}
    assert not Department.objects.exists()


def test_av_channel_of_this_widgets_cabinet_is_accepted_once_cabinets_exist(api, widget, monkeypatch):
    monkeypatch.setattr(selectors, "AD_CABINET_SOURCE", lambda w: {42} if w.pk == widget.pk else set())
    client = api()
    assert create(client, {"name": "x", "channels": ["av__42"]}).json()["channels"] == ["av__42"]
    assert assert_problem(create(client, {"name": "y", "channels": ["av__43"]}), 422)["errors"] == {
        "channels.0": ["Unknown id."]
    }


def test_create_needs_an_idempotency_key(api):
    assert_problem(api().post(DEPARTMENTS, {"name": "x"}, format="json"), 400, "idempotency_key_missing")
    assert not Department.objects.exists()


def test_create_refuses_a_reused_key(api):
    client = api()
    key = idem()
    assert create(client, {"name": "x"}, **key).status_code == 201
    assert_problem(create(client, {"name": "y"}, **key), 409, "idempotency_key_reused")
    assert Department.objects.count() == 1


def test_create_needs_departments_write(api, client):
    assert_problem(client.post(DEPARTMENTS, {"name": "x"}, format="json"), 401)
    assert_problem(create(api(scopes=["departments:read"]), {"name": "x"}), 403, "missing_scope")


# --- schedule rules (POST and PUT share them) ---------------------------------------------------------------


@pytest.mark.parametrize(
    "schedule, path",
    [
        ({"Monday": {"from": "18:00", "to": "09:00"}}, "schedule.Monday.to"),  # overnight
        ({"Monday": {"from": "09:00", "to": "09:00"}}, "schedule.Monday.to"),  # not strictly earlier
        ({"Monday": {"from": "9:00", "to": "18:00"}}, "schedule.Monday.from"),
        ({"Monday": {"from": "09:00", "to": "24:00"}}, "schedule.Monday.to"),
        ({"Monday": {"from": "09:00"}}, "schedule.Monday.to"),
        ({"Monday": {"from": "09:00", "to": "18:00", "tz": "UTC"}}, "schedule.Monday.tz"),
        ({"Monday": {"from": 900, "to": "18:00"}}, "schedule.Monday.from"),
        ({"Monday": "closed"}, "schedule.Monday"),
        ({"Monday": "FULL"}, "schedule.Monday"),
        ({"Monday": True}, "schedule.Monday"),
        ({"monday": "full"}, "schedule.monday"),
        ({"Mon": "full"}, "schedule.Mon"),
        ("full", "schedule"),
    ],
)
def test_bad_schedules_are_422_at_their_path(api, widget, schedule, path):
    department = DepartmentFactory(widget=widget, schedule=FULL_WEEK)
    client = api()
    problem = assert_problem(
        client.put(url(department, "/schedule"), {"schedule": schedule}, format="json", **idem()), 422
    )
    assert path in problem["errors"], problem["errors"]
    department.refresh_from_db()
    assert department.schedule == FULL_WEEK
    assert path in assert_problem(create(client, {"name": "x", "schedule": schedule}), 422)["errors"]


def test_put_schedule_replaces_the_week_and_omitted_days_are_closed(api, widget):
    department = DepartmentFactory(widget=widget, schedule=FULL_WEEK)
    response = api(scopes=["departments:write"]).put(
        url(department, "/schedule"),
        {"schedule": {"Tuesday": {"from": "00:00", "to": "23:59"}, "Friday": "full", "Sunday": None}},
        format="json",
        **idem(),
    )
    assert response.status_code == 200
    expected = {**CLOSED_WEEK, "Tuesday": {"from": "00:00", "to": "23:59"}, "Friday": "full"}
    assert response.json()["schedule"] == expected
    department.refresh_from_db()
    assert department.schedule == expected


def test_put_an_empty_schedule_closes_every_day(api, widget):
    department = DepartmentFactory(widget=widget, schedule=FULL_WEEK)
    body = api().put(url(department, "/schedule"), {"schedule": {}}, format="json", **idem()).json()
    assert body["schedule"] == CLOSED_WEEK


def test_put_schedule_needs_the_schedule_member(api, widget):
    department = DepartmentFactory(widget=widget)
    assert (
        "schedule"
        in assert_problem(api().put(url(department, "/schedule"), {}, format="json", **idem()), 422)["errors"]
    )


def test_put_schedule_on_a_foreign_department_is_404(api, other_widget):
    department = DepartmentFactory(widget=other_widget, schedule=FULL_WEEK)
    assert_problem(api().put(url(department, "/schedule"), {"schedule": {}}, format="json", **idem()), 404)
    department.refresh_from_db()
    assert department.schedule == FULL_WEEK


def test_put_schedule_needs_a_key_and_the_scope(api, widget):
    department = DepartmentFactory(widget=widget)
    assert_problem(api().put(url(department, "/schedule"), {"schedule": {}}, format="json"), 400)
    assert_problem(
        api(scopes=["departments:read"]).put(url(department, "/schedule"), {"schedule": {}}, format="json", **idem()),
        403,
        "missing_scope",
    )


# --- read and list -------------------------------------------------------------------------------------------


def test_read_includes_agent_ids_and_all_seven_days(api, widget):
    department = DepartmentFactory(widget=widget, schedule={"Monday": "full"})
    agent = AgentFactory(widget=widget)
    department.agents.add(agent)
    body = api(scopes=["departments:read"]).get(url(department)).json()
    assert body["agent_ids"] == [agent.pk]
    assert body["schedule"] == {**CLOSED_WEEK, "Monday": "full"}


def test_read_foreign_and_missing_is_the_same_404(api, other_widget):
    foreign = DepartmentFactory(widget=other_widget)
    client = api()
    a = assert_problem(client.get(url(foreign)), 404)
    b = assert_problem(client.get(f"{DEPARTMENTS}/{foreign.pk + 100}"), 404)
    a.pop("instance"), b.pop("instance")
    assert a == b


def test_list_newest_first_only_this_widget(api, widget, other_widget):
    first, second = DepartmentFactory(widget=widget), DepartmentFactory(widget=widget)
    DepartmentFactory(widget=other_widget)
    body = api(scopes=["departments:read"]).get(DEPARTMENTS).json()
    assert [d["id"] for d in body["data"]] == [second.pk, first.pk] and body["next_cursor"] is None


def test_list_refuses_unknown_parameters(api):
    assert_problem(api().get(DEPARTMENTS, {"name": "x"}), 422)
    assert_problem(api().get(DEPARTMENTS, {"limit": 0}), 422)


def test_list_query_count_does_not_grow_with_rows(api, widget):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = api()
    client.get(DEPARTMENTS)

    def count():
        with CaptureQueriesContext(connection) as ctx:
            assert client.get(DEPARTMENTS, {"limit": 50}).status_code == 200
        return len(ctx.captured_queries)

    DepartmentFactory(widget=widget).agents.add(AgentFactory(widget=widget))
    one = count()
    for _ in range(15):
        DepartmentFactory(widget=widget).agents.add(AgentFactory(widget=widget), AgentFactory(widget=widget))
    assert count() == one


def test_read_and_list_need_departments_read(api, widget):
    department = DepartmentFactory(widget=widget)
    client = api(scopes=["departments:write"])
    assert_problem(client.get(DEPARTMENTS), 403, "missing_scope")
    assert_problem(client.get(url(department)), 403, "missing_scope")


def test_payload_builder_matches_the_documented_shape(widget):
    department = selectors.with_agent_ids(Department.objects.filter(pk=DepartmentFactory(widget=widget).pk)).get()
    assert set(department_payload(department)) == set(DepartmentDoc().fields)


# --- PATCH ---------------------------------------------------------------------------------------------------


def test_patch_name_and_channels(api, widget):
    department = DepartmentFactory(widget=widget, name="Old", channels=["smb"])
    before = department.updated_at
    response = api(scopes=["departments:write"]).patch(
        url(department), {"name": "New", "channels": ["tg"]}, format="json", **idem()
    )
    assert response.status_code == 200
    body = response.json()
    assert body["name"] == "New" and body["channels"] == ["tg"]
    department.refresh_from_db()
    assert department.updated_at > before


def test_patch_keeps_what_it_does_not_name(api, widget):
    department = DepartmentFactory(widget=widget, name="Old", channels=["smb", "vk"])
    body = api().patch(url(department), {"name": "New"}, format="json", **idem()).json()
    assert body["channels"] == ["smb", "vk"]


@pytest.mark.parametrize("member, value", [("agent_ids", []), ("schedule", {})])
def test_patch_refuses_agent_ids_and_schedule_by_name(api, widget, member, value):
    department = DepartmentFactory(widget=widget, name="Old")
    problem = assert_problem(api().patch(url(department), {"name": "New", member: value}, format="json", **idem()), 422)
    assert list(problem["errors"]) == [member] and "PUT" in problem["errors"][member][0]
    department.refresh_from_db()
    assert department.name == "Old"


def test_patch_reports_every_problem_at_once(api, widget):
    department = DepartmentFactory(widget=widget)
    problem = assert_problem(
        api().patch(url(department), {"schedule": {}, "channels": ["xx"], "id": 1}, format="json", **idem()), 422
    )
    assert {"schedule", "id"} <= set(problem["errors"])


@pytest.mark.parametrize(
    "body, path",
    [
        ({"name": ""}, "name"),
        ({"channels": ["av__1"]}, "channels.0"),
        ({"updated_at": "x"}, "updated_at"),
        ([], "body"),
    ],
)
def test_patch_bad_input_is_422(api, widget, body, path):
    department = DepartmentFactory(widget=widget)
    assert path in assert_problem(api().patch(url(department), body, format="json", **idem()), 422)["errors"]


def test_patch_foreign_is_404_and_needs_key_and_scope(api, widget, other_widget):
    foreign = DepartmentFactory(widget=other_widget, name="Theirs")
    assert_problem(api().patch(url(foreign), {"name": "Mine"}, format="json", **idem()), 404)
    foreign.refresh_from_db()
    assert foreign.name == "Theirs"
    own = DepartmentFactory(widget=widget)
    assert_problem(api().patch(url(own), {"name": "x"}, format="json"), 400, "idempotency_key_missing")
    assert_problem(
        api(scopes=["departments:read"]).patch(url(own), {"name": "x"}, format="json", **idem()), 403, "missing_scope"
    )


def test_put_on_the_department_itself_is_not_a_route(api, widget):
    assert_problem(api().put(url(DepartmentFactory(widget=widget)), {"name": "x"}, format="json", **idem()), 405)


# --- DELETE --------------------------------------------------------------------------------------------------


def test_delete_takes_no_idempotency_key_and_keeps_the_chats(api, widget):
    department = DepartmentFactory(widget=widget)
    chat = ChatFactory(contact=ContactFactory(widget=widget), department=department)
    response = api(scopes=["departments:write"]).delete(url(department))
    assert response.status_code == 204
    assert not Department.objects.filter(pk=department.pk).exists()
    assert Chat.objects.filter(pk=chat.pk).exists()
    assert not IdempotencyKey.objects.filter(widget=widget).exists()


def test_delete_keeps_the_agents(api, widget):
    department = DepartmentFactory(widget=widget)
    agent = AgentFactory(widget=widget)
    department.agents.add(agent)
    api().delete(url(department))
    assert Agent.objects.filter(pk=agent.pk).exists()


def test_delete_foreign_or_missing_is_404(api, other_widget):
    foreign = DepartmentFactory(widget=other_widget)
    client = api()
    assert_problem(client.delete(url(foreign)), 404)
    assert_problem(client.delete(f"{DEPARTMENTS}/{foreign.pk + 100}"), 404)
    assert Department.objects.filter(pk=foreign.pk).exists()


def test_delete_needs_departments_write(api, widget):
    assert_problem(api(scopes=["departments:read"]).delete(url(DepartmentFactory(widget=widget))), 403, "missing_scope")


# --- PUT /agents ---------------------------------------------------------------------------------------------


def test_put_agents_replaces_the_set(api, widget):
    department = DepartmentFactory(widget=widget)
    old, new_a, new_b = AgentFactory(widget=widget), AgentFactory(widget=widget), AgentFactory(widget=widget)
    department.agents.add(old)
    response = api(scopes=["departments:write"]).put(
        url(department, "/agents"), {"agent_ids": [new_b.pk, new_a.pk]}, format="json", **idem()
    )
    assert response.status_code == 200
    assert response.json()["agent_ids"] == sorted([new_a.pk, new_b.pk])
    assert set(department.agents.values_list("pk", flat=True)) == {new_a.pk, new_b.pk}


def test_put_an_empty_array_empties_the_set(api, widget):
    department = DepartmentFactory(widget=widget)
    department.agents.add(AgentFactory(widget=widget))
    assert api().put(url(department, "/agents"), {"agent_ids": []}, format="json", **idem()).json()["agent_ids"] == []
    assert not department.agents.exists()


def test_a_suspended_agent_can_be_kept_in_the_set(api, widget):
    department = DepartmentFactory(widget=widget)
    suspended = AgentFactory(widget=widget, status=Agent.Status.BANNED)
    body = api().put(url(department, "/agents"), {"agent_ids": [suspended.pk]}, format="json", **idem()).json()
    assert body["agent_ids"] == [suspended.pk]


def test_put_agents_refuses_unknown_and_foreign_ids_identically(api, widget, other_widget):
    department = DepartmentFactory(widget=widget)
    kept = AgentFactory(widget=widget)
    department.agents.add(kept)
    foreign = AgentFactory(widget=other_widget)
    client = api()
    cross = assert_problem(
        client.put(url(department, "/agents"), {"agent_ids": [kept.pk, foreign.pk]}, format="json", **idem()), 422
    )
    unknown = assert_problem(
        client.put(url(department, "/agents"), {"agent_ids": [kept.pk, foreign.pk + 999]}, format="json", **idem()),
        422,
    )
    cross.pop("instance"), unknown.pop("instance")
    assert cross == unknown and cross["errors"] == {"agent_ids.1": ["Unknown id."]}
    assert list(department.agents.values_list("pk", flat=True)) == [kept.pk]


@pytest.mark.parametrize(
    "body", [{}, {"agent_ids": None}, {"agent_ids": "1"}, {"agent_ids": [1, 1]}, {"agent_ids": [], "x": 1}]
)
def test_put_agents_bad_input_is_422(api, widget, body):
    department = DepartmentFactory(widget=widget)
    AgentFactory(widget=widget)
    assert_problem(api().put(url(department, "/agents"), body, format="json", **idem()), 422)


def test_put_agents_on_a_foreign_department_is_404(api, widget, other_widget):
    department = DepartmentFactory(widget=other_widget)
    agent = AgentFactory(widget=widget)
    assert_problem(api().put(url(department, "/agents"), {"agent_ids": [agent.pk]}, format="json", **idem()), 404)
    assert not department.agents.exists()


def test_put_agents_needs_a_key_and_the_scope(api, widget):
    department = DepartmentFactory(widget=widget)
    assert_problem(api().put(url(department, "/agents"), {"agent_ids": []}, format="json"), 400)
    assert_problem(
        api(scopes=["departments:read"]).put(url(department, "/agents"), {"agent_ids": []}, format="json", **idem()),
        403,
        "missing_scope",
    )


def test_the_agents_list_filters_by_the_new_set(api, widget):
    department = DepartmentFactory(widget=widget)
    agent = AgentFactory(widget=widget)
    client = api()
    client.put(url(department, "/agents"), {"agent_ids": [agent.pk]}, format="json", **idem())
    data = client.get("/api/v1/agents", {"department_id": department.pk}).json()["data"]
    assert [a["id"] for a in data] == [agent.pk] and data[0]["departments"] == [department.pk]
