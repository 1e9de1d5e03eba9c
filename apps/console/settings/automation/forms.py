"""The rule form: draws rows of conditions (field, operator, value) and of actions (a type and its
inputs) and turns what was posted into the API's body, remembering which input each API member came
from so a refusal lands beside it. It decides nothing: AutomationRuleInput and the services do."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from apps.agents.models import Agent, Department
from apps.automation.models import EVENTS

ATTRIBUTE = "contact.attributes"
MAX_CONDITIONS, MAX_ACTIONS = 20, 10
EXTRA_ROWS = 2


def event_names() -> dict[str, str]:
    return {
        "chat.created": _("A chat starts"),
        "message.created": _("A visitor writes"),
        "chat.closed": _("A chat is closed"),
        "chat.assigned": _("A chat is assigned"),
        "sla.breached": _("An SLA target is missed"),
        "offline_message.created": _("An offline message arrives"),
    }


def field_choices() -> list[tuple[str, str]]:
    return [
        ("", _("(no condition)")),
        ("channel", _("Channel")),
        ("department_id", _("Department id")),
        ("language", _("Visitor's language")),
        ("page_url", _("Page address")),
        ("message.text", _("Message text")),
        ("labels", _("Chat labels")),
        (ATTRIBUTE, _("Contact attribute")),
        ("business_hours.open", _("Within business hours")),
    ]


def op_choices() -> list[tuple[str, str]]:
    return [
        ("equals", _("equals")),
        ("not_equals", _("does not equal")),
        ("contains", _("contains")),
        ("starts_with", _("starts with")),
        ("in", _("is one of")),
        ("matches", _("matches the regular expression")),
    ]


def action_choices() -> list[tuple[str, str]]:
    return [
        ("", _("(no action)")),
        ("send_message", _("Send a message to the visitor")),
        ("add_note", _("Add a private note")),
        ("add_labels", _("Add labels")),
        ("remove_labels", _("Remove labels")),
        ("assign_agent", _("Assign to an operator")),
        ("assign_department", _("Move to a department")),
        ("close", _("Close the chat")),
        ("send_webhook", _("Send a webhook")),
    ]


def _select(choices) -> forms.CharField:
    # a CharField drawn as a select: what was posted is the API's to judge, in the API's words
    return forms.CharField(required=False, widget=forms.Select(choices=choices))


def _count(raw, existing: int, maximum: int) -> int:
    try:
        value = int(raw)
    except (TypeError, ValueError):
        value = existing + EXTRA_ROWS
    return max(1, min(maximum, value))


class RuleForm(forms.Form):
    name = forms.CharField(label=_("Name"), required=False)
    event = forms.CharField(label=_("When"), required=False)
    enabled = forms.BooleanField(label=_("On"), required=False)

    def __init__(self, data=None, *, widget, rule=None, initial=None):
        initial = initial or {"enabled": True}
        super().__init__(data, initial=initial)
        self.fields["event"].widget = forms.Select(choices=[(name, label) for name, label in event_names().items()])
        source = data if data is not None else {}
        conditions = len(rule.conditions) if rule else 0
        actions = len(rule.actions) if rule else 0
        self.condition_count = _count(source.get("condition_rows"), conditions, MAX_CONDITIONS)
        self.action_count = _count(source.get("action_rows"), actions, MAX_ACTIONS)
        if data is not None and data.get("add_row") == "condition":
            self.condition_count = min(MAX_CONDITIONS, self.condition_count + 1)
        if data is not None and data.get("add_row") == "action":
            self.action_count = min(MAX_ACTIONS, self.action_count + 1)
        agents = Agent.objects.filter(widget=widget, type=Agent.Type.HUMAN).exclude(status=Agent.Status.BANNED)
        agent_choices = [("", "—"), *[(str(a.pk), a.name or a.email) for a in agents.order_by("name", "id")]]
        departments = Department.objects.filter(widget=widget).order_by("name", "id")
        department_choices = [("", "—"), *[(str(d.pk), d.name) for d in departments]]
        for i in range(self.condition_count):
            self.fields[f"c{i}_field"] = _select(field_choices())
            self.fields[f"c{i}_key"] = forms.CharField(
                required=False, widget=forms.TextInput(attrs={"dir": "ltr", "autocomplete": "off"})
            )
            self.fields[f"c{i}_op"] = _select(op_choices())
            self.fields[f"c{i}_value"] = forms.CharField(required=False, strip=False)
        for i in range(self.action_count):
            self.fields[f"a{i}_type"] = _select(action_choices())
            self.fields[f"a{i}_text"] = forms.CharField(
                required=False, strip=False, widget=forms.Textarea(attrs={"rows": 2})
            )
            self.fields[f"a{i}_labels"] = forms.CharField(required=False)
            self.fields[f"a{i}_agent"] = _select(agent_choices)
            self.fields[f"a{i}_department"] = _select(department_choices)
            self.fields[f"a{i}_url"] = forms.CharField(
                required=False, widget=forms.URLInput(attrs={"dir": "ltr", "autocomplete": "off"})
            )

    def condition_rows_fields(self) -> list[dict]:
        return [
            {
                "number": i + 1,
                "field": self[f"c{i}_field"],
                "key": self[f"c{i}_key"],
                "op": self[f"c{i}_op"],
                "value": self[f"c{i}_value"],
            }
            for i in range(self.condition_count)
        ]

    def action_rows_fields(self) -> list[dict]:
        return [
            {
                "number": i + 1,
                "type": self[f"a{i}_type"],
                "text": self[f"a{i}_text"],
                "labels": self[f"a{i}_labels"],
                "agent": self[f"a{i}_agent"],
                "department": self[f"a{i}_department"],
                "url": self[f"a{i}_url"],
            }
            for i in range(self.action_count)
        ]


def _list(raw: str) -> list[str]:
    return [item.strip() for item in raw.split(",") if item.strip()]


def _id_or_raw(raw: str):
    raw = raw.strip()
    return int(raw) if raw.isascii() and raw.isdigit() and len(raw) < 19 else raw


def _condition_value(field: str, op: str, raw: str):
    if field == "department_id":
        return [_id_or_raw(item) for item in _list(raw)] if op == "in" else _id_or_raw(raw)
    if field == "business_hours.open":
        return {"true": True, "false": False}.get(raw.strip().casefold(), raw)
    if op == "in":
        return _list(raw)
    return raw


def rule_body(form: RuleForm) -> tuple[dict, dict[str, str]]:
    """(the API's body, {API member: the form input it came from}). Blank rows are left out."""
    data = form.data
    rows: dict[str, str] = {}
    conditions = []
    for i in range(form.condition_count):
        field = data.get(f"c{i}_field", "")
        if not field:
            continue
        index = len(conditions)
        at = f"conditions.{index}"
        if field == ATTRIBUTE:
            field = f"{ATTRIBUTE}.{data.get(f'c{i}_key', '').strip()}"
            rows[f"{at}.field"] = f"c{i}_key"
        else:
            rows[f"{at}.field"] = f"c{i}_field"
        rows.update({at: f"c{i}_field", f"{at}.op": f"c{i}_op", f"{at}.value": f"c{i}_value"})
        op = data.get(f"c{i}_op", "")
        conditions.append({"field": field, "op": op, "value": _condition_value(field, op, data.get(f"c{i}_value", ""))})
    actions = []
    for i in range(form.action_count):
        kind = data.get(f"a{i}_type", "")
        if not kind:
            continue
        at = f"actions.{len(actions)}"
        rows.update({at: f"a{i}_type", f"{at}.type": f"a{i}_type"})
        action: dict = {"type": kind}
        if kind in ("send_message", "add_note"):
            action["text"] = data.get(f"a{i}_text", "")
            rows[f"{at}.text"] = f"a{i}_text"
        elif kind in ("add_labels", "remove_labels"):
            action["labels"] = _list(data.get(f"a{i}_labels", ""))
            rows[f"{at}.labels"] = f"a{i}_labels"
            rows.update({f"{at}.labels.{n}": f"a{i}_labels" for n in range(len(action["labels"]))})
        elif kind == "assign_agent":
            action["agent_id"] = _id_or_raw(data.get(f"a{i}_agent", ""))
            rows[f"{at}.agent_id"] = f"a{i}_agent"
        elif kind == "assign_department":
            action["department_id"] = _id_or_raw(data.get(f"a{i}_department", ""))
            rows[f"{at}.department_id"] = f"a{i}_department"
        elif kind == "send_webhook":
            action["url"] = data.get(f"a{i}_url", "").strip()
            rows[f"{at}.url"] = f"a{i}_url"
        actions.append(action)
    body = {
        "name": data.get("name", ""),
        "event": data.get("event", ""),
        "enabled": data.get("enabled") in ("on", "true", "1"),
        "conditions": conditions,
        "actions": actions,
    }
    return body, rows


def rule_initial(rule) -> dict:
    """The form's values for a stored rule (lists joined with commas, ids as the selects' values)."""
    initial: dict = {"name": rule.name, "event": rule.event, "enabled": rule.enabled}
    for i, condition in enumerate(rule.conditions):
        field, value = condition["field"], condition["value"]
        if field.startswith(f"{ATTRIBUTE}."):
            initial[f"c{i}_field"], initial[f"c{i}_key"] = ATTRIBUTE, field[len(ATTRIBUTE) + 1 :]
        else:
            initial[f"c{i}_field"] = field
        initial[f"c{i}_op"] = condition["op"]
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, list):
            value = ", ".join(str(item) for item in value)
        initial[f"c{i}_value"] = str(value)
    for i, action in enumerate(rule.actions):
        initial[f"a{i}_type"] = action["type"]
        initial[f"a{i}_text"] = action.get("text", "")
        initial[f"a{i}_labels"] = ", ".join(action.get("labels", []))
        initial[f"a{i}_agent"] = str(action.get("agent_id", ""))
        initial[f"a{i}_department"] = str(action.get("department_id", ""))
        initial[f"a{i}_url"] = action.get("url", "")
    return initial


__all__ = ["EVENTS", "RuleForm", "event_names", "rule_body", "rule_initial"]
