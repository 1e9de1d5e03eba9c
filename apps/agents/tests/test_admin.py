"""The agents admin: an agent row with a user opens the operator console of its widget, so a staff
user reaches only the widgets an API token could be issued for (apps.core.services.issuable_widgets)."""

import json

import pytest
from django.utils import timezone

from apps.agents import events_log, services
from apps.agents.models import Agent, AgentEvent, Department, Invitation
from apps.agents.tests.factories import (
    AgentEventFactory,
    AIAgentFactory,
    DepartmentFactory,
    HumanAgentFactory,
    InvitationFactory,
)
from tests.support.admin import staff_client
from tests.support.factories import WidgetFactory

pytestmark = pytest.mark.django_db

PERMS = (
    "add_agent",
    "change_agent",
    "delete_agent",
    "view_agent",
    "view_invitation",
    "add_department",
    "change_department",
    "view_department",
    "view_agentevent",
)


def staff(account_of, extra=()):
    return staff_client("agents", *PERMS, *extra, account_of=account_of)


def agent_form(widget, user) -> dict:
    return {
        "widget": widget.pk,
        "user": user.pk,
        "name": "Mallory",
        "surname": "",
        "email": "mallory@example.com",
        "role": "operator",
        "type": "human",
        "status": "active",
        "show_in_header": "on",
        "created_at_0": "2026-01-01",
        "created_at_1": "00:00:00",
    }


def test_agents_are_not_added_here(widget):
    client = staff(account_of=widget)
    me = widget.account.user
    assert client.get("/admin/agents/agent/add/").status_code == 403
    response = client.post("/admin/agents/agent/add/", agent_form(widget, me))
    assert response.status_code == 403
    assert not Agent.objects.filter(widget=widget, user=me).exists()


def test_another_accounts_agents_are_neither_listed_nor_changed(widget, other_widget):
    theirs = HumanAgentFactory(widget=other_widget, name="Theirs", email="theirs@example.com")
    client = staff(account_of=widget)
    assert "theirs@example.com" not in client.get("/admin/agents/agent/?q=theirs").content.decode()
    response = client.post(f"/admin/agents/agent/{theirs.pk}/change/", agent_form(other_widget, widget.account.user))
    assert response.status_code == 302 and response["Location"] == "/admin/"  # "does not exist"
    theirs.refresh_from_db()
    assert theirs.user_id != widget.account.user_id


@pytest.mark.parametrize("page", ["invitation", "department"])
def test_another_accounts_invitations_and_departments_are_not_listed(widget, other_widget, page):
    InvitationFactory(widget=other_widget, email="invited-elsewhere@example.com")
    DepartmentFactory(widget=other_widget, name="Elsewhere desk")
    InvitationFactory(widget=widget, email="invited-here@example.com")
    DepartmentFactory(widget=widget, name="Home desk")
    html = staff(account_of=widget).get(f"/admin/agents/{page}/").content.decode()
    assert "elsewhere" not in html.lower()
    assert ("invited-here@example.com" if page == "invitation" else "Home desk") in html


def test_the_own_accounts_agents_are_listed(widget):
    HumanAgentFactory(widget=widget, name="Mine", email="mine@example.com")
    assert "Mine" in staff(account_of=widget).get("/admin/agents/agent/").content.decode()


# --- changes go through the agents services ------------------------------------------------------------


def change(client, agent, **fields):
    body = {"status": agent.status, "_save": "Save"}
    if agent.show_in_header:
        body["show_in_header"] = "on"
    body.update(fields)
    if body.get("show_in_header") is False:
        del body["show_in_header"]
    return client.post(f"/admin/agents/agent/{agent.pk}/change/", body)


def kinds(agent) -> list[str]:
    return [events_log.slug_of(e.type_code) for e in AgentEvent.objects.filter(agent=agent).order_by("pk")]


def test_suspending_here_is_suspend_agent(widget, purges):
    agent = HumanAgentFactory(widget=widget)
    response = change(staff(account_of=widget), agent, status="banned")
    assert response.status_code == 302
    agent.refresh_from_db()
    assert agent.status == Agent.Status.BANNED
    assert kinds(agent) == ["suspended"]
    assert widget.pk in purges


def test_restoring_without_a_free_seat_is_a_form_error_and_changes_nothing(widget):
    client = staff(account_of=widget)
    widget.account.seats = 1
    widget.account.save()
    HumanAgentFactory(widget=widget)
    agent = HumanAgentFactory(widget=widget, status=Agent.Status.BANNED)
    response = change(client, agent, status="active")
    assert response.status_code == 200 and "seats of the account are in use" in response.content.decode()
    agent.refresh_from_db()
    assert agent.status == Agent.Status.BANNED and kinds(agent) == []


def test_restoring_with_a_free_seat_is_restore_agent(widget):
    agent = HumanAgentFactory(widget=widget, status=Agent.Status.BANNED)
    assert change(staff(account_of=widget), agent, status="active").status_code == 302
    agent.refresh_from_db()
    assert agent.status == Agent.Status.ACTIVE and kinds(agent) == ["restored"]


def test_a_banned_agent_is_restored_before_a_break(widget):
    agent = HumanAgentFactory(widget=widget, status=Agent.Status.BANNED)
    response = change(staff(account_of=widget), agent, status="relaxation")
    assert response.status_code == 200 and "must be restored first" in response.content.decode()
    agent.refresh_from_db()
    assert agent.status == Agent.Status.BANNED and kinds(agent) == []


def test_a_break_is_the_consoles_status_switch(widget):
    agent = HumanAgentFactory(widget=widget)
    assert change(staff(account_of=widget), agent, status="relaxation").status_code == 302
    agent.refresh_from_db()
    assert agent.status == Agent.Status.RELAXATION and kinds(agent) == ["status_relaxation"]


def test_an_ai_operators_break_is_refused(widget):
    agent = AIAgentFactory(widget=widget)
    response = change(staff(account_of=widget), agent, status="relaxation")
    assert response.status_code == 200 and "Only a human operator" in response.content.decode()
    agent.refresh_from_db()
    assert agent.status == Agent.Status.ACTIVE and kinds(agent) == []


def test_show_in_header_is_set_show_in_header(widget, purges):
    agent = HumanAgentFactory(widget=widget, show_in_header=True)
    assert change(staff(account_of=widget), agent, show_in_header=False).status_code == 302
    agent.refresh_from_db()
    assert agent.show_in_header is False and kinds(agent) == ["show_in_header_off"]
    assert widget.pk in purges


def test_a_refused_status_keeps_show_in_header_too(widget):
    agent = HumanAgentFactory(widget=widget, status=Agent.Status.BANNED, show_in_header=True)
    response = change(staff(account_of=widget), agent, status="relaxation", show_in_header=False)
    assert response.status_code == 200
    agent.refresh_from_db()
    assert agent.show_in_header is True and kinds(agent) == []


def test_user_role_owner_flag_name_and_type_are_read_only(widget, other_widget):
    stranger = HumanAgentFactory(widget=other_widget).user
    agent = HumanAgentFactory(widget=widget, name="Alice")
    response = change(
        staff(account_of=widget),
        agent,
        user=stranger.pk,
        role="owner",
        is_owner="on",
        name="Mallory",
        type="webhook",
        widget=other_widget.pk,
    )
    assert response.status_code == 302
    stored = Agent.objects.get(pk=agent.pk)
    assert (stored.user_id, stored.role, stored.is_owner, stored.name, stored.type, stored.widget_id) == (
        agent.user_id,
        "operator",
        False,
        "Alice",
        "human",
        widget.pk,
    )
    assert kinds(agent) == []


# --- deleting is the API's DELETE -----------------------------------------------------------------------


def test_deleting_here_is_the_apis_soft_delete(widget):
    agent = HumanAgentFactory(widget=widget)
    response = staff(account_of=widget).post(f"/admin/agents/agent/{agent.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    agent.refresh_from_db()
    assert agent.status == Agent.Status.BANNED and kinds(agent) == ["deleted"]


@pytest.mark.parametrize("kind", ["owner", "ai"])
def test_the_owners_row_and_the_ai_operator_are_not_deleted(widget, kind):
    agent = (
        HumanAgentFactory(widget=widget, is_owner=True, role="owner")
        if kind == "owner"
        else AIAgentFactory(widget=widget)
    )
    client = staff(account_of=widget)
    response = client.post(f"/admin/agents/agent/{agent.pk}/delete/", {"post": "yes"}, follow=True)
    assert "cannot be deleted" in response.content.decode()
    stored = Agent.objects.get(pk=agent.pk)
    assert stored.status == agent.status and kinds(agent) == []


def test_there_is_no_bulk_delete(widget):
    agent = HumanAgentFactory(widget=widget)
    client = staff(account_of=widget)
    assert "delete_selected" not in client.get("/admin/agents/agent/").content.decode()
    response = client.post(
        "/admin/agents/agent/", {"action": "delete_selected", "_selected_action": [agent.pk], "post": "yes"}
    )
    assert response.status_code in (200, 302)
    agent.refresh_from_db()
    assert agent.status == Agent.Status.ACTIVE


# --- departments: the API's rules and services ---------------------------------------------------------


def department_form(department, **fields) -> dict:
    body = {
        "name": department.name,
        "channels": json.dumps(department.channels),
        "schedule": json.dumps(department.schedule),
        "agents": [agent.pk for agent in department.agents.all()],
        "_save": "Save",
    }
    body.update(fields)
    return body


def test_a_department_lists_no_agent_of_another_account(widget, other_widget):
    HumanAgentFactory(widget=other_widget, name="Zebediah")
    HumanAgentFactory(widget=widget, name="Homegrown")
    department = DepartmentFactory(widget=widget)
    html = staff(account_of=widget).get(f"/admin/agents/department/{department.pk}/change/").content.decode()
    assert "Zebediah" not in html and "Homegrown" in html


def test_a_department_takes_no_agent_of_another_widget(widget, other_widget):
    client = staff(account_of=widget)
    theirs = HumanAgentFactory(widget=other_widget)
    sibling = HumanAgentFactory(widget=WidgetFactory(account=widget.account))  # reachable, another widget
    department = DepartmentFactory(widget=widget)
    for agent, message in ((theirs, "Select a valid choice"), (sibling, "Unknown id.")):
        response = client.post(
            f"/admin/agents/department/{department.pk}/change/", department_form(department, agents=[agent.pk])
        )
        assert response.status_code == 200 and message in response.content.decode()
        assert not department.agents.exists()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"schedule": json.dumps("garbage")}, "Must be an object keyed by day name"),
        ({"schedule": json.dumps({"Monday": {"from": "18:00", "to": "09:00"}})}, "Must be later than"),
        ({"channels": json.dumps(["nowhere"])}, "Unknown channel"),
        ({"name": "\u202eevil"}, "U+202E"),
    ],
)
def test_a_department_value_the_api_refuses_is_a_form_error(widget, fields, message):
    department = DepartmentFactory(widget=widget, name="Desk")
    before = (department.name, department.channels, department.schedule)
    response = staff(account_of=widget).post(
        f"/admin/agents/department/{department.pk}/change/", department_form(department, **fields)
    )
    assert response.status_code == 200 and message in response.content.decode()
    department.refresh_from_db()
    assert (department.name, department.channels, department.schedule) == before


def test_a_department_is_changed_and_added_as_the_api_stores_it(widget):
    client = staff(account_of=widget)
    agent = HumanAgentFactory(widget=widget)
    department = DepartmentFactory(widget=widget)
    monday = {"Monday": {"from": "09:00", "to": "18:00"}}
    response = client.post(
        f"/admin/agents/department/{department.pk}/change/",
        department_form(department, name="Sales", agents=[agent.pk], schedule=json.dumps(monday)),
    )
    assert response.status_code == 302
    department.refresh_from_db()
    assert department.name == "Sales" and list(department.agents.all()) == [agent]
    assert department.schedule == services.full_week(monday)  # an omitted day is closed, as on PUT
    response = client.post(
        "/admin/agents/department/add/",
        {
            "widget": widget.pk,
            "name": "Support",
            "channels": '["smb"]',
            "schedule": json.dumps(monday),
            "_save": "Save",
        },
    )
    assert response.status_code == 302
    added = Department.objects.get(widget=widget, name="Support")
    assert added.schedule == services.full_week(monday) and added.channels == ["smb"]


# --- invitations: read here, revoked through the service ----------------------------------------------


def test_a_sent_invitations_address_and_expiry_do_not_change_here(widget):
    invitation = InvitationFactory(widget=widget, email="invitee@example.com")
    client = staff(account_of=widget, extra=("add_invitation", "change_invitation"))
    response = client.post(
        f"/admin/agents/invitation/{invitation.pk}/change/",
        {
            "email": "victim@example.com",
            "expires_at_0": "2099-01-01",
            "expires_at_1": "00:00:00",
            "revoked_at_0": "",
            "revoked_at_1": "",
            "_save": "Save",
        },
    )
    assert response.status_code == 302
    stored = Invitation.objects.get(pk=invitation.pk)
    assert (stored.email, stored.expires_at) == ("invitee@example.com", invitation.expires_at)
    assert client.get("/admin/agents/invitation/add/").status_code == 403


def test_the_revoke_action_is_the_apis_revoke(widget):
    pending = InvitationFactory(widget=widget)
    accepted = InvitationFactory(widget=widget, accepted_at=timezone.now())
    client = staff(account_of=widget, extra=("change_invitation",))
    response = client.post(
        "/admin/agents/invitation/", {"action": "revoke", "_selected_action": [pending.pk, accepted.pk]}
    )
    assert response.status_code == 302
    assert Invitation.objects.get(pk=pending.pk).state() == "revoked"
    assert Invitation.objects.get(pk=accepted.pk).state() == "accepted"


def test_an_invitation_is_revoked_here_never_deleted(widget):
    invitation = InvitationFactory(widget=widget)
    client = staff(account_of=widget, extra=("change_invitation", "delete_invitation"))
    assert client.post(f"/admin/agents/invitation/{invitation.pk}/delete/", {"post": "yes"}).status_code == 403
    assert Invitation.objects.filter(pk=invitation.pk).exists()


def test_a_department_without_channels_is_saved_as_the_api_stores_it(widget):
    client = staff(account_of=widget)
    department = DepartmentFactory(widget=widget, channels=["smb"])
    response = client.post(
        f"/admin/agents/department/{department.pk}/change/", department_form(department, channels="[]")
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    department.refresh_from_db()
    assert department.channels == []


def test_the_agent_event_log_is_read_only(widget):
    event = AgentEventFactory(agent=HumanAgentFactory(widget=widget))
    client = staff(account_of=widget, extra=("add_agentevent", "change_agentevent", "delete_agentevent"))
    assert client.get(f"/admin/agents/agentevent/{event.pk}/change/").status_code == 200
    assert client.get("/admin/agents/agentevent/add/").status_code == 403
    client.post(f"/admin/agents/agentevent/{event.pk}/change/", {"type_code": 99, "extra": "{}", "_save": "Save"})
    assert client.post(f"/admin/agents/agentevent/{event.pk}/delete/", {"post": "yes"}).status_code == 403
    stored = AgentEvent.objects.get(pk=event.pk)
    assert stored.type_code == event.type_code
