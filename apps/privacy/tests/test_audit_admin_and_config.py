"""The audit log records a widget's own fields (name, `api_enabled`) and token revocations from
Django admin with the staff user as actor, and assistants (the prompts' words never), AI operators,
custom channels, departments and canned responses through their services, from every entry point."""

from __future__ import annotations

import ipaddress
import json

import pytest

from apps.agents import services as agents
from apps.ai import services as ai
from apps.ai.tests.factories import AssistantFactory
from apps.audit.models import AuditEntry
from apps.canned import services as canned
from apps.channels import services as channels
from apps.core import services as core
from apps.core.models import ApiToken
from tests.support.admin import staff_client
from tests.support.factories import AgentFactory

pytestmark = pytest.mark.django_db


def rows(widget, target_type):
    return list(AuditEntry.objects.filter(widget=widget, target_type=target_type).order_by("at", "pk"))


def test_renaming_a_widget_and_switching_its_api_in_admin_is_audited_with_the_staff_user(widget):
    client = staff_client("core", "change_widget", "view_widget", account_of=widget)
    response = client.post(
        f"/admin/core/widget/{widget.pk}/change/",
        {"name": "Renamed", "account": widget.account_id},  # api_enabled unticked: switched off
    )
    assert response.status_code == 302, response.content[:2000]
    widget.refresh_from_db()
    assert (widget.name, widget.api_enabled) == ("Renamed", False)
    (row,) = rows(widget, "widget")
    assert (row.action, row.actor_type, row.actor_name) == ("widget.changed", "staff", widget.account.user.username)
    assert row.changes["name"]["to"] == "Renamed"
    assert row.changes["api_enabled"] == {"from": True, "to": False}


def test_deleting_a_token_in_admin_revokes_it_and_records_the_revocation(widget):
    token = core.issue_token(widget=widget, scopes=["chats:read"]).token
    client = staff_client("core", "delete_apitoken", "view_apitoken", account_of=widget)
    assert client.post(f"/admin/core/apitoken/{token.pk}/delete/", {"post": "yes"}).status_code == 302
    token = ApiToken.objects.get(pk=token.pk)
    assert token.revoked_at is not None
    row = AuditEntry.objects.get(widget=widget, action="token.revoked")
    assert row.actor_type == "staff" and row.target_id == token.prefix


def test_canned_responses_are_audited(widget):
    row = canned.create_canned_response(widget=widget, shortcut="hi", title="Hello", text="Hi there")
    canned.update_canned_response(widget=widget, canned=row, changes={"title": "Hello!"})
    canned.delete_canned_response(widget=widget, canned=row)
    made, changed, deleted = rows(widget, "canned_response")
    assert [made.action, changed.action, deleted.action] == [
        "canned_response.created",
        "canned_response.changed",
        "canned_response.deleted",
    ]
    assert changed.changes == {"title": {"from": "Hello", "to": "Hello!"}}
    assert deleted.changes["shortcut"] == {"from": "hi", "to": None}


def test_departments_are_audited_with_their_agents(widget):
    agent = AgentFactory(widget=widget)
    department = agents.create_department(widget=widget, name="Sales")
    agents.update_department(widget=widget, department=department, name="Sales EU")
    agents.set_department_agents(widget=widget, department=department, agents=[agent])
    agents.delete_department(widget=widget, department=department)
    actions = [r.action for r in rows(widget, "department")]
    assert actions == ["department.created", "department.changed", "department.changed", "department.deleted"]
    assert rows(widget, "department")[2].changes == {"agent_ids": {"from": [], "to": [agent.pk]}}


def test_custom_channels_are_audited_and_their_secret_hidden(widget, monkeypatch):
    from apps.platform import outbound

    monkeypatch.setattr(outbound.policy, "resolve_host", lambda host, port: [ipaddress.ip_address("93.184.216.34")])
    channel, secret = channels.register_custom_channel(widget=widget, name="CRM", url="https://crm.example/hook")
    channels.set_custom_channel_active(widget=widget, channel=channel, is_active=False)
    channels.delete_custom_channel(widget=widget, channel=channel)
    made, switched, deleted = rows(widget, "custom_channel")
    assert made.action == "custom_channel.created" and made.changes["secret"] == {"from": "[hidden]", "to": "[hidden]"}
    assert switched.changes == {"is_active": {"from": True, "to": False}}
    assert deleted.action == "custom_channel.deleted"
    assert secret not in json.dumps([r.changes for r in AuditEntry.objects.all()])


def test_assistants_and_ai_operators_are_audited_and_the_prompt_never_shown(widget):
    assistant = ai.create_assistant(widget=widget, fields={"name": "Helper", "system_prompt": "Code ZX-41 is ours"})
    ai.update_assistant(widget=widget, assistant=assistant, changes={"system_prompt": "Code ZX-42 is ours"})
    operator = ai.create_operator(widget=widget, assistant=assistant)
    ai.update_operator(widget=widget, operator=operator, changes={"status": "paused"})
    made, changed = rows(widget, "assistant")
    assert made.action == "assistant.created" and changed.action == "assistant.changed"
    assert changed.changes == {"system_prompt": {"from": "[changed]", "to": "[changed]"}}
    assert "ZX-4" not in json.dumps([r.changes for r in AuditEntry.objects.all()])
    created, paused = rows(widget, "ai_operator")
    assert created.changes["assistant_id"] == {"from": None, "to": assistant.pk}
    assert paused.changes == {"status": {"from": "active", "to": "paused"}}


def test_an_assistant_deleted_in_admin_is_audited(widget):
    assistant = AssistantFactory(widget=widget)
    ai.delete_assistant(widget=widget, assistant=assistant)
    assert [r.action for r in rows(widget, "assistant")] == ["assistant.deleted"]
