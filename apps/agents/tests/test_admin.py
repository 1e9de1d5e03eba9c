"""The agents admin: an agent row with a user opens the operator console of its widget, so a staff
user reaches only the widgets an API token could be issued for (apps.core.services.issuable_widgets)."""

import pytest

from apps.agents.models import Agent
from apps.agents.tests.factories import DepartmentFactory, HumanAgentFactory, InvitationFactory
from apps.core.testing.admin import staff_client

pytestmark = pytest.mark.django_db

PERMS = ("add_agent", "change_agent", "view_agent", "view_invitation", "view_department", "view_agentevent")


def staff(account_of):
    return staff_client("agents", *PERMS, account_of=account_of)


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


def test_an_agent_row_on_another_accounts_widget_is_refused(widget, other_widget):
    client = staff(account_of=widget)
    me = widget.account.user
    response = client.post("/admin/agents/agent/add/", agent_form(other_widget, me))
    assert response.status_code == 200 and "Select a valid choice" in response.content.decode()
    assert not Agent.objects.filter(widget=other_widget, user=me).exists()


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
