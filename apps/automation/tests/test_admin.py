"""Automation rules in Django admin follow the API's rules and write through the services."""

import json

import pytest

from apps.audit.models import AuditEntry
from apps.automation.models import AutomationRule

pytestmark = pytest.mark.django_db

ADD = "/admin/automation/automationrule/add/"


def form(widget, **overrides) -> dict:
    return {
        "widget": widget.pk,
        "name": "Refunds",
        "enabled": "on",
        "event": "message.created",
        "conditions": json.dumps([{"field": "message.text", "op": "contains", "value": "refund"}]),
        "actions": json.dumps([{"type": "add_note", "text": "Refund"}]),
        **overrides,
    }


def test_admin_creates_a_rule_through_the_service(admin_client, widget):
    response = admin_client.post(ADD, form(widget))
    assert response.status_code == 302, response.content.decode()[:2000]
    rule = AutomationRule.objects.get()
    assert rule.conditions == [{"field": "message.text", "op": "contains", "value": "refund"}]
    assert AuditEntry.objects.filter(action="automation_rule.created", target_id=str(rule.pk)).exists()


@pytest.mark.parametrize(
    "bad",
    [
        {"conditions": json.dumps([{"field": "message.text", "op": "matches", "value": "(a"}])},
        {"actions": json.dumps([{"type": "assign_agent", "agent_id": 10**9}])},
        {"actions": json.dumps([])},
    ],
)
def test_admin_refuses_what_the_api_refuses(admin_client, widget, bad):
    response = admin_client.post(ADD, form(widget, **bad))
    assert response.status_code == 200
    assert not AutomationRule.objects.exists()


def test_another_accounts_rules_are_neither_listed_nor_changed(widget, other_widget):
    from tests.support.admin import staff_client

    theirs = AutomationRule.objects.create(
        widget=other_widget, name="Theirs", event="chat.created", actions=[{"type": "close"}]
    )
    client = staff_client("automation", "view_automationrule", "change_automationrule", account_of=widget)
    assert "Theirs" not in client.get("/admin/automation/automationrule/").content.decode()
    response = client.post(f"/admin/automation/automationrule/{theirs.pk}/change/", form(other_widget, name="Mine"))
    assert response.status_code == 302 and response["Location"] == "/admin/"
    theirs.refresh_from_db()
    assert theirs.name == "Theirs"


def test_a_rules_page_shows_its_last_runs_and_the_log_is_listed(admin_client, widget):
    from apps.automation import services

    from .conftest import log_run

    rule = services.create_rule(
        widget=widget, name="Refunds", event="chat.created", conditions=[], actions=[{"type": "close"}]
    )
    log_run(rule, outcome="failed", detail="Action 1 was refused", chat_id=770077)
    log_run(rule, chat_id=780078)
    page = admin_client.get(f"/admin/automation/automationrule/{rule.pk}/change/").content.decode()
    assert "Action 1 was refused" in page and "not_matched" in page and page.index("780078") < page.index("770077")
    listed = admin_client.get("/admin/automation/automationevaluation/")
    assert listed.status_code == 200 and "Action 1 was refused" in listed.content.decode()
