"""The Automation area (/console/settings/automation/): the rules' list with an on/off switch, the
form of condition and action rows, a rule's last runs and deletion, over apps.automation.services
with the API's serializers: the API's refusals in its words, audit rows with the owner as actor,
another widget's ids 404."""

import itertools
from html import unescape

import pytest

from apps.agents.tests.factories import DepartmentFactory
from apps.audit.models import AuditEntry
from apps.automation import services
from apps.automation.models import AutomationEvaluation, AutomationRule, RuleSet
from apps.chats import services as chat_services
from apps.console.settings.automation.forms import RuleForm, rule_body
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

LIST = "/console/settings/automation/"
NEW = f"{LIST}new/"
API = "/api/v1/automation-rules"
_keys = itertools.count()


def idem() -> dict:
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"automation-page-{next(_keys)}"}


def text(response) -> str:
    return unescape(response.content.decode())


def make_rule(widget, **overrides) -> AutomationRule:
    values = {"name": "Refunds", "event": "message.created", "actions": [{"type": "add_note", "text": "Refund"}]}
    return AutomationRule.objects.create(widget=widget, **{**values, **overrides})


def posted(**overrides) -> dict:
    """A filled form: two conditions and two actions in the rows, the rest blank."""
    return {
        "name": "Telegram refunds",
        "event": "message.created",
        "enabled": "on",
        "condition_rows": "3",
        "action_rows": "3",
        "c0_field": "channel",
        "c0_op": "equals",
        "c0_value": "telegram",
        "c1_field": "message.text",
        "c1_op": "matches",
        "c1_value": r"(?i)\brefund",
        "a0_type": "add_note",
        "a0_text": "Refund asked",
        "a1_type": "close",
        **overrides,
    }


def audited(owner, action: str) -> AuditEntry:
    entry = AuditEntry.objects.get(action=action)
    assert (entry.actor_type, entry.actor_id) == ("agent", str(owner.pk))
    return entry


def test_the_list_shows_the_widgets_rules_only(owner_console, widget, other_widget):
    make_rule(widget, name="Ours")
    make_rule(other_widget, name="Theirs")
    page = text(owner_console.get(LIST))
    assert "Ours" in page and "Theirs" not in page and 'role="switch"' in page


def test_the_new_rule_page_renders_rows_without_json(owner_console):
    page = text(owner_console.get(NEW))
    assert 'name="c0_field"' in page and 'name="a0_type"' in page and "Condition 1" in page
    assert "{" not in page.split("<form", 1)[1].split("</form>")[0].replace("{{", "")


def test_the_owner_creates_a_rule_from_rows_audited_as_the_owner(owner_console, owner, widget):
    department = DepartmentFactory(widget=widget)
    chat_services.create_label(widget=widget, name="Refund")
    response = owner_console.post(
        NEW,
        posted(
            c2_field="contact.attributes",
            c2_key="plan",
            c2_op="in",
            c2_value="gold, vip",
            a1_type="add_labels",
            a1_labels="refund",
            a2_type="assign_department",
            a2_department=str(department.pk),
        ),
    )
    assert response.status_code == 303, text(response)[:2000]
    rule = AutomationRule.objects.get(widget=widget)
    assert rule.conditions == [
        {"field": "channel", "op": "equals", "value": "telegram"},
        {"field": "message.text", "op": "matches", "value": r"(?i)\brefund"},
        {"field": "contact.attributes.plan", "op": "in", "value": ["gold", "vip"]},
    ]
    assert rule.actions == [
        {"type": "add_note", "text": "Refund asked"},
        {"type": "add_labels", "labels": ["Refund"]},
        {"type": "assign_department", "department_id": department.pk},
    ]
    assert audited(owner, "automation_rule.created").target_id == str(rule.pk)


def test_add_row_draws_one_more_row_and_saves_nothing(owner_console):
    response = owner_console.post(NEW, posted(add_row="condition"))
    assert response.status_code == 200 and 'name="c3_field"' in text(response)
    assert not AutomationRule.objects.exists()


@pytest.mark.parametrize(
    "overrides",
    [
        {"c1_value": "(unclosed"},
        {"event": "chat.transferred"},
        {"name": ""},
        {"c0_field": "contact.attributes", "c0_key": "Bad Key"},
        {"c0_field": "department_id", "c0_value": "sales"},
        {"c0_field": "business_hours.open", "c0_value": "maybe"},
        {"a0_type": "add_labels", "a0_labels": "nope"},
        {"a0_type": "send_webhook", "a0_url": "https://unknown.example/"},
        {"a0_type": "", "a1_type": ""},
    ],
)
def test_a_refused_rule_shows_the_apis_messages_and_changes_nothing(owner_console, api, widget, overrides):
    form = posted(**overrides)
    body, _ = rule_body(RuleForm(form, widget=widget))  # the same input, as the API's body
    problem = assert_problem(api().post(API, body, format="json", **idem()), 422)
    response = owner_console.post(NEW, form)
    assert response.status_code == 422
    page = text(response)
    for messages in problem["errors"].values():
        for message in messages:
            assert message in page, (message, problem)
    assert not AutomationRule.objects.exists()


def test_the_edit_page_shows_the_rule_in_its_rows(owner_console, widget):
    rule = make_rule(
        widget,
        conditions=[{"field": "contact.attributes.plan", "op": "in", "value": ["gold", "vip"]}],
        actions=[{"type": "send_message", "text": "Hello"}],
    )
    page = text(owner_console.get(f"{LIST}{rule.pk}/"))
    assert 'value="plan"' in page and 'value="gold, vip"' in page and "Hello</textarea>" in page


def test_the_owner_edits_a_rule_audited_as_the_owner(owner_console, owner, widget):
    rule = make_rule(widget)
    response = owner_console.post(f"{LIST}{rule.pk}/", posted(name="Renamed"))
    assert response.status_code == 303
    rule.refresh_from_db()
    assert rule.name == "Renamed" and len(rule.conditions) == 2
    audited(owner, "automation_rule.changed")


def test_the_switch_turns_a_rule_off_and_on(owner_console, owner, widget):
    rule = make_rule(widget)
    assert owner_console.post(f"{LIST}{rule.pk}/toggle/", {"enabled": "false"}).status_code == 303
    rule.refresh_from_db()
    assert rule.enabled is False
    owner_console.post(f"{LIST}{rule.pk}/toggle/", {"enabled": "true"})
    rule.refresh_from_db()
    assert rule.enabled is True
    assert AuditEntry.objects.filter(action="automation_rule.changed").count() == 2


def test_the_runs_page_shows_the_last_runs(owner_console, widget):
    rule = services.create_rule(
        widget=widget, name="Refunds", event="message.created", conditions=[], actions=[{"type": "close"}]
    )
    AutomationEvaluation.objects.create(
        widget=widget,
        version=RuleSet.objects.get(widget=widget).version,
        event=rule.event,
        chat_id=77,
        results={str(rule.pk): ["failed", "Action 1 was refused"]},
    )
    page = text(owner_console.get(f"{LIST}{rule.pk}/runs/"))
    assert "Action 1 was refused" in page and "#77" in page and "Failed" in page


def test_the_owner_deletes_a_rule_after_confirming(owner_console, owner, widget):
    rule = make_rule(widget)
    assert owner_console.get(f"{LIST}{rule.pk}/delete/").status_code == 200
    assert owner_console.post(f"{LIST}{rule.pk}/delete/").status_code == 303
    assert not AutomationRule.objects.exists()
    audited(owner, "automation_rule.deleted")


@pytest.mark.parametrize("tail", ["", "toggle/", "runs/", "delete/"])
def test_another_widgets_rule_is_404_in_every_page(owner_console, other_widget, tail):
    rule = make_rule(other_widget)
    method = owner_console.post if tail == "toggle/" else owner_console.get
    assert method(f"{LIST}{rule.pk}/{tail}").status_code == 404
    assert owner_console.post(f"{LIST}{rule.pk}/", posted()).status_code == 404
    assert AutomationRule.objects.get(pk=rule.pk).name == "Refunds"
