"""Rules at work: every event, every field read from the chat, every action through a rule, no loops,
a refused action, the regular expression's time limit, tenancy, the run log and the web process's
share (product-decisions.md "Team work", automation rules)."""

import json

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.agents.tests.factories import DepartmentFactory
from apps.automation import handlers, runtime, selectors, services, tasks
from apps.automation.models import RUNS_KEPT, AutomationEvaluation, AutomationRule, RuleSet, RuleSetMember
from apps.chats import services as chat_services
from apps.chats.models import Chat, ChatLabel, Message, VisitorSession
from apps.chats.tests.factories import ChatFactory, ContactFactory, MessageFactory
from apps.core import events
from apps.core.errors import ValidationFailed
from apps.webhooks.models import Delivery, Subscription
from tests.support.factories import AgentFactory

from .conftest import event_data, runs

pytestmark = pytest.mark.django_db

NOTE = {"type": "add_note", "text": "rule ran"}


def notes(chat) -> list[str]:
    return list(Message.objects.filter(chat=chat, visibility=Message.Visibility.NOTE).values_list("body", flat=True))


def label(widget, name):
    return chat_services.create_label(widget=widget, name=name)


# --- events -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "event",
    ["chat.created", "message.created", "chat.closed", "chat.assigned", "sla.breached", "offline_message.created"],
)
def test_every_event_runs_its_rules_and_only_its_rules(widget, chat, rule, fire, event):
    mine = rule(event=event, actions=[{"type": "add_note", "text": event}])
    other = rule(event="chat.closed" if event != "chat.closed" else "chat.created")
    fire(widget, event, **event_data(event, chat))
    assert notes(chat) == [event]
    assert runs(mine) == [("matched", "1 action(s) ran.")] and runs(other) == []


def test_an_operators_message_does_not_run_message_rules(widget, chat, rule, fire):
    mine = rule(event="message.created")
    fire(widget, "message.created", **{**event_data("message.created", chat), "author_type": "OPERATOR"})
    assert runs(mine) == [] and notes(chat) == []


def test_a_visitors_message_through_the_service_runs_the_rule_after_the_commit(
    widget, rule, django_capture_on_commit_callbacks
):
    mine = rule(
        event="message.created",
        conditions=[{"field": "message.text", "op": "contains", "value": "refund"}],
        actions=[{"type": "add_note", "text": "refund asked"}],
    )
    contact = ContactFactory(widget=widget)
    with django_capture_on_commit_callbacks(execute=False) as pending:
        message = chat_services.post_client_message(
            widget=widget, contact=contact, data=chat_services.MessageInput(body="Refund please")
        )
        assert runs(mine) == []  # nothing before the commit
    for callback in pending:
        callback()
    assert notes(message.chat) == ["refund asked"] and runs(mine)[0][0] == "matched"


def test_rules_run_in_order_of_id_and_a_disabled_one_never(widget, chat, rule, fire):
    rule(actions=[{"type": "add_note", "text": "first"}])
    off = rule(actions=[{"type": "add_note", "text": "off"}], enabled=False)
    rule(actions=[{"type": "add_note", "text": "second"}])
    fire(widget, "chat.created", **event_data("chat.created", chat))
    assert notes(chat) == ["first", "second"] and runs(off) == []


def test_a_rule_not_matching_is_logged_and_changes_nothing(widget, chat, rule, fire):
    mine = rule(conditions=[{"field": "channel", "op": "equals", "value": "telegram"}])
    fire(widget, "chat.created", **event_data("chat.created", chat))
    assert runs(mine) == [("not_matched", "")] and notes(chat) == []


# --- fields read from the chat ---------------------------------------------------------------------------


def run_with(widget, chat, rule, fire, conditions, event="chat.created", **data):
    mine = rule(event=event, conditions=conditions)
    fire(widget, event, **{**event_data(event, chat), **data})
    return runs(mine)[0][0]


def test_channel_department_language_and_attributes_come_from_the_chat(widget, rule, fire):
    department = DepartmentFactory(widget=widget)
    chat = ChatFactory(
        contact=ContactFactory(widget=widget, locale="de", attributes={"plan": "vip"}),
        channel="telegram",
        department=department,
    )
    conditions = [
        {"field": "channel", "op": "equals", "value": "telegram"},
        {"field": "department_id", "op": "equals", "value": department.pk},
        {"field": "language", "op": "in", "value": ["de", "fr"]},
        {"field": "contact.attributes.plan", "op": "equals", "value": "VIP"},
    ]
    assert run_with(widget, chat, rule, fire, conditions) == "matched"


def test_page_url_is_the_contacts_latest_page(widget, chat, rule, fire):
    VisitorSession.objects.create(widget=widget, contact=chat.contact, token_hash="a" * 64, page_url="https://x/old")
    VisitorSession.objects.create(
        widget=widget, contact=chat.contact, token_hash="b" * 64, page_url="https://x/pricing"
    )
    AutomationRule.objects.all().delete()
    conditions = [{"field": "page_url", "op": "contains", "value": "/pricing"}]
    assert run_with(widget, chat, rule, fire, conditions) == "matched"


def test_message_text_is_the_events_message(widget, chat, rule, fire):
    message = MessageFactory(chat=chat, body="Where is my refund?")
    conditions = [{"field": "message.text", "op": "matches", "value": r"(?i)\brefund"}]
    assert run_with(widget, chat, rule, fire, conditions, event="message.created", message_id=message.pk) == "matched"


def test_labels_are_the_chats_labels(widget, chat, rule, fire):
    names = [label(widget, name).name for name in ("Billing", "VIP", "Late")]
    chat_services.add_chat_labels(widget=widget, chat=chat, names=names, by="agent")
    assert run_with(widget, chat, rule, fire, [{"field": "labels", "op": "equals", "value": "vip"}]) == "matched"


@pytest.mark.parametrize("is_open", [True, False])
def test_business_hours_open_is_the_widgets_state_now(widget, chat, rule, fire, monkeypatch, is_open):
    state = type("State", (), {"open": is_open})()
    monkeypatch.setattr(runtime.widget_selectors, "business_hours_state", lambda widget: state)
    conditions = [{"field": "business_hours.open", "op": "equals", "value": False}]
    assert run_with(widget, chat, rule, fire, conditions) == ("not_matched" if is_open else "matched")


# --- every action through a rule ------------------------------------------------------------------------


def test_send_message_and_add_note(widget, chat, rule, fire):
    rule(actions=[{"type": "send_message", "text": "Hello {{contact.name|there}}"}, NOTE])
    fire(widget, "chat.created", **event_data("chat.created", chat))
    public = Message.objects.filter(chat=chat, visibility=Message.Visibility.PUBLIC).values_list("body", flat=True)
    assert list(public) == [f"Hello {chat.contact.name}"] and notes(chat) == ["rule ran"]


def test_add_labels_and_remove_labels(widget, chat, rule, fire, captured_events):
    vip, spam = label(widget, "VIP"), label(widget, "Spam")
    chat_services.add_chat_labels(widget=widget, chat=chat, names=["Spam"], by="agent")
    rule(actions=[{"type": "add_labels", "labels": ["vip"]}, {"type": "remove_labels", "labels": ["spam"]}])
    fire(widget, "chat.created", **event_data("chat.created", chat))
    assert list(ChatLabel.objects.filter(chat=chat).values_list("label", flat=True)) == [vip.pk]
    assert spam.pk


def test_assign_agent_and_assign_department(widget, chat, rule, fire, captured_events):
    agent, department = AgentFactory(widget=widget), DepartmentFactory(widget=widget)
    rule(
        actions=[
            {"type": "assign_department", "department_id": department.pk},
            {"type": "assign_agent", "agent_id": agent.pk},
        ]
    )
    fire(widget, "chat.created", **event_data("chat.created", chat))
    chat.refresh_from_db()
    assert (chat.agent_id, chat.department_id) == (agent.pk, department.pk)
    assert (
        "chat.assigned",
        {"chat_id": chat.pk, "agent_id": agent.pk, "by": "automation", "button_guid": widget.button_guid},
    ) in captured_events()


def test_close(widget, chat, rule, fire):
    rule(actions=[{"type": "close"}])
    fire(widget, "chat.created", **event_data("chat.created", chat))
    chat.refresh_from_db()
    assert chat.status == Chat.Status.EXPIRED


def test_send_webhook_queues_one_signed_call_to_the_subscriptions_url(widget, chat, rule, fire):
    subscription = Subscription.objects.create(
        widget=widget, url="https://hooks.example/vip", events=[], secret_encrypted="token"
    )
    mine = rule(name="VIP writes", actions=[{"type": "send_webhook", "url": "https://hooks.example/vip"}])
    fire(widget, "chat.created", **event_data("chat.created", chat))
    [call] = Delivery.objects.filter(widget=widget)
    body = json.loads(call.body)
    assert call.endpoint.url == subscription.url and call.endpoint.secret_encrypted == "token"
    assert body["type"] == "automation.rule_matched" and body["id"] == str(call.key)
    assert body["data"] == {
        "button_guid": widget.button_guid,
        "rule_id": mine.pk,
        "rule_name": "VIP writes",
        "event": "chat.created",
        "chat_id": chat.pk,
        "source": "visitor",
    }


def test_a_webhook_url_without_a_subscription_is_refused(widget, rule):
    with pytest.raises(ValidationFailed) as caught:
        rule(actions=[{"type": "send_webhook", "url": "https://hooks.example/none"}])
    assert list(caught.value.errors) == ["actions.0.url"]


# --- no loops -----------------------------------------------------------------------------------------


def test_what_a_rules_actions_cause_never_triggers_rules(widget, chat, rule, fire, captured_events):
    agent = AgentFactory(widget=widget)
    label(widget, "Looped")
    first = rule(event="chat.created", actions=[{"type": "assign_agent", "agent_id": agent.pk}, {"type": "close"}])
    second = rule(event="chat.assigned", actions=[{"type": "add_labels", "labels": ["Looped"]}])
    third = rule(event="chat.closed", actions=[NOTE])
    fire(widget, "chat.created", **event_data("chat.created", chat))
    types = [type for type, _ in captured_events()]
    assert "chat.assigned" in types and "chat.closed" in types  # the actions did emit them
    assert runs(first)[0][0] == "matched" and runs(second) == [] and runs(third) == []
    assert not ChatLabel.objects.filter(chat=chat).exists() and notes(chat) == []


def test_the_handler_skips_at_emit_time_while_a_rules_actions_run(widget, chat, monkeypatch):
    from apps.automation.context import caused_by_rule

    sent = []
    monkeypatch.setattr(handlers, "_send", sent.append)
    with transaction.atomic(), caused_by_rule():
        events.emit(widget, "chat.closed", chat_id=chat.pk, reason="automation")
    assert sent == []


# --- failures ---------------------------------------------------------------------------------------------


def test_a_refused_action_logs_failed_with_the_refusal_and_leaves_the_chat_unchanged(widget, chat, rule, fire):
    agent = AgentFactory(widget=widget)
    label(widget, "VIP")
    mine = rule(
        actions=[{"type": "add_labels", "labels": ["VIP"]}, NOTE, {"type": "assign_agent", "agent_id": agent.pk}]
    )
    agent.delete()  # gone since the rule was saved: the third action is refused at run time
    fire(widget, "chat.created", **event_data("chat.created", chat))
    [(outcome, detail)] = runs(mine)
    assert outcome == "failed" and detail.startswith("Action 3 (assign_agent) was refused")
    assert not ChatLabel.objects.filter(chat=chat).exists() and notes(chat) == []


def test_a_catastrophic_regular_expression_is_stopped_and_logged_failed(widget, chat, rule, fire):
    message = MessageFactory(chat=chat, body="a" * 40 + "b")
    mine = rule(event="message.created", conditions=[{"field": "message.text", "op": "matches", "value": "^(a|aa)+$"}])
    after = rule(event="message.created")
    fire(widget, "message.created", **{**event_data("message.created", chat), "message_id": message.pk})
    [(outcome, detail)] = runs(mine)
    assert outcome == "failed" and "ran out of time" in detail and notes(chat) == ["rule ran"]
    assert runs(after)[0][0] == "matched"  # the rules after it still ran


# --- tenancy ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "path"),
    [
        ({"type": "assign_agent", "agent_id": "agent"}, "actions.0.agent_id"),
        ({"type": "assign_department", "department_id": "department"}, "actions.0.department_id"),
        ({"type": "add_labels", "labels": ["label"]}, "actions.0.labels.0"),
        ({"type": "remove_labels", "labels": ["label"]}, "actions.0.labels.0"),
    ],
)
def test_another_widgets_ids_in_actions_are_refused_like_missing_ones(widget, other_widget, rule, action, path):
    foreign = {
        "agent": AgentFactory(widget=other_widget).pk,
        "department": DepartmentFactory(widget=other_widget).pk,
        "label": chat_services.create_label(widget=other_widget, name="Theirs").name,
    }
    member = next(k for k in action if k != "type")
    value = action[member]
    action = {**action, member: [foreign[value[0]]] if isinstance(value, list) else foreign[value]}
    with pytest.raises(ValidationFailed) as caught:
        rule(actions=[action])
    assert path in caught.value.errors


def test_a_rule_never_acts_on_another_widgets_chat(widget, other_widget, rule, fire):
    mine = rule()
    foreign = ChatFactory(contact=ContactFactory(widget=other_widget))
    fire(other_widget, "chat.created", **event_data("chat.created", foreign))
    fire(widget, "chat.created", **event_data("chat.created", foreign))  # a foreign id handed by hand
    assert runs(mine) == [] and notes(foreign) == []


# --- the run log ---------------------------------------------------------------------------------------------


def chat_event(widget, chat, times=1):
    for _ in range(times):
        runtime.run_event(widget_id=widget.pk, event_type="chat.created", data={"chat_id": chat.pk})


def test_one_event_is_one_row_naming_the_rules_that_matched_or_failed(widget, chat, rule, fire):
    agent = AgentFactory(widget=widget)
    matched = rule(actions=[{"type": "add_note", "text": "ran"}])
    failed = rule(actions=[{"type": "assign_agent", "agent_id": agent.pk}])
    skipped = rule(conditions=[{"field": "channel", "op": "equals", "value": "telegram"}])
    agent.delete()
    fire(widget, "chat.created", **event_data("chat.created", chat))
    [row] = AutomationEvaluation.objects.all()
    assert (row.widget_id, row.event, row.chat_id) == (widget.pk, "chat.created", chat.pk)
    assert set(row.results) == {str(matched.pk), str(failed.pk)}
    assert runs(matched) == [("matched", "1 action(s) ran.")] and runs(skipped) == [("not_matched", "")]
    [(outcome, detail)] = runs(failed)
    assert outcome == "failed" and detail.startswith("Action 1 (assign_agent) was refused")
    [run] = selectors.list_runs(widget=widget, rule=matched)
    assert run.chat_id == chat.pk and run.at == row.at


def test_a_rule_made_after_an_event_has_no_run_of_it(widget, chat, rule):
    first = rule()
    chat_event(widget, chat)
    later = rule()
    assert runs(first) == [("matched", "1 action(s) ran.")] and runs(later) == []
    chat_event(widget, chat)
    assert len(runs(first)) == 2 and runs(later) == [("matched", "1 action(s) ran.")]


def test_a_rule_of_another_event_or_moved_to_another_event_runs_only_on_its_own(widget, chat, rule):
    moved = rule()
    chat_event(widget, chat)
    services.update_rule(widget=widget, rule=moved, changes={"event": "chat.closed"})
    chat_event(widget, chat, times=2)  # not its event any more
    assert runs(moved) == [("matched", "1 action(s) ran.")]
    runtime.run_event(widget_id=widget.pk, event_type="chat.closed", data={"chat_id": chat.pk})
    assert len(runs(moved)) == 2


def test_a_disabled_rule_keeps_its_runs_and_gets_none_while_off(widget, chat, rule):
    on = rule(conditions=[{"field": "channel", "op": "equals", "value": "telegram"}])
    paused = rule(conditions=[{"field": "channel", "op": "equals", "value": "telegram"}])
    chat_event(widget, chat, times=2)
    services.update_rule(widget=widget, rule=paused, changes={"enabled": False})
    chat_event(widget, chat, times=3)
    assert len(runs(on)) == 5 and runs(paused) == [("not_matched", "")] * 2
    services.update_rule(widget=widget, rule=paused, changes={"enabled": True})
    chat_event(widget, chat)
    assert len(runs(on)) == 6 and len(runs(paused)) == 3


def test_a_deleted_rule_takes_its_membership_along_and_the_others_keep_their_runs(widget, chat, rule):
    kept, gone = rule(), rule()
    chat_event(widget, chat, times=2)
    services.delete_rule(widget=widget, rule=gone)
    assert not RuleSetMember.objects.filter(rule_id=gone.pk).exists()
    assert len(runs(kept)) == 2 and AutomationEvaluation.objects.count() == 2


def test_the_trim_keeps_each_rules_newest_hundred_runs(widget, chat, rule):
    first, second = rule(), rule()
    chat_event(widget, chat, times=5)
    third = rule()
    chat_event(widget, chat, times=RUNS_KEPT)
    before = {r.pk: selectors.list_runs(widget=widget, rule=r) for r in (first, second, third)}
    assert [len(found) for found in before.values()] == [RUNS_KEPT] * 3
    oldest = set(AutomationEvaluation.objects.order_by("id").values_list("pk", flat=True)[:5])

    assert tasks.trim_runs() == 5
    assert not AutomationEvaluation.objects.filter(pk__in=oldest).exists()
    assert {r.pk: selectors.list_runs(widget=widget, rule=r) for r in (first, second, third)} == before
    assert tasks.trim_runs() == 0


def test_the_trim_keeps_a_paused_rules_last_runs_until_the_rule_goes(widget, chat, rule):
    on, paused = rule(), rule()
    chat_event(widget, chat, times=5)
    services.update_rule(widget=widget, rule=paused, changes={"enabled": False})
    chat_event(widget, chat, times=RUNS_KEPT)
    assert tasks.trim_runs() == 0  # the paused rule's 5 runs are its newest
    assert len(runs(paused)) == 5 and len(runs(on)) == RUNS_KEPT  # the API reads the newest 100
    services.delete_rule(widget=widget, rule=paused)
    assert tasks.trim_runs() == 5
    assert [len(runs(on)), AutomationEvaluation.objects.count()] == [RUNS_KEPT, RUNS_KEPT]


def test_the_trim_forgets_the_members_of_versions_long_superseded_with_nothing_logged(widget, chat, rule):
    mine = rule()
    chat_event(widget, chat)
    services.update_rule(widget=widget, rule=mine, changes={"name": "Renamed"})  # a new version, nothing ran at it
    services.update_rule(widget=widget, rule=mine, changes={"name": "Again"})
    logged, superseded, current = (
        AutomationEvaluation.objects.get().version,
        *RuleSetMember.objects.filter(rule=mine).order_by("id").values_list("version", flat=True)[1:],
    )
    tasks.trim_runs()
    assert RuleSetMember.objects.filter(rule=mine).count() == 3  # superseded just now: kept
    RuleSet.objects.filter(widget=widget).update(changed_at=timezone.now() - services.VERSION_GRACE)
    tasks.trim_runs()
    assert set(RuleSetMember.objects.filter(rule=mine).values_list("version", flat=True)) == {logged, current}
    assert superseded not in {logged, current} and runs(mine) == [("matched", "1 action(s) ran.")]


# --- the compiled rules -----------------------------------------------------------------------------------


def test_rules_are_compiled_once_per_version(widget, chat, rule):
    mine = rule()
    runtime.run_event(widget_id=widget.pk, event_type="chat.created", data={"chat_id": chat.pk})
    with CaptureQueriesContext(connection) as queries:
        runtime.run_event(widget_id=widget.pk, event_type="chat.created", data={"chat_id": chat.pk})
    assert not [q for q in queries.captured_queries if "automation_automationrule" in q["sql"]]
    services.update_rule(widget=widget, rule=mine, changes={"enabled": False})
    runtime.run_event(widget_id=widget.pk, event_type="chat.created", data={"chat_id": chat.pk})
    assert len(runs(mine)) == 2  # the change reached the worker's cache: the disabled rule did not run


def test_a_visitor_message_costs_the_web_process_no_statement_for_rules(
    widget, chat, rule, monkeypatch, django_capture_on_commit_callbacks
):
    rule(event="message.created")
    sent = []
    monkeypatch.setattr(handlers, "_send", sent.append)
    event = events.Event(widget=widget, type="message.created", data=event_data("message.created", chat))
    selectors.rule_events(widget)  # the first reader after the rule's write fills the cache
    with CaptureQueriesContext(connection) as queries, django_capture_on_commit_callbacks(execute=True):
        handlers.hand_off(event)
    assert queries.captured_queries == [] and sent == [
        (widget.pk, "message.created", {"chat_id": chat.pk, "message_id": 0, "source": "visitor"})
    ]


def test_an_event_no_enabled_rule_reacts_to_is_not_handed_to_a_worker(
    widget, chat, rule, monkeypatch, django_capture_on_commit_callbacks
):
    sent = []
    monkeypatch.setattr(handlers, "_send", sent.append)

    def hand_off(type):
        with django_capture_on_commit_callbacks(execute=True):
            handlers.hand_off(events.Event(widget=widget, type=type, data=event_data(type, chat)))
        return [args[1] for args in sent]

    assert hand_off("message.created") == []  # no rule at all
    mine = rule(event="chat.closed")
    assert hand_off("message.created") == []  # a rule of another event
    assert hand_off("chat.closed") == ["chat.closed"]  # the rule's write reached the cache at once
    services.update_rule(widget=widget, rule=mine, changes={"enabled": False})
    assert hand_off("chat.closed") == ["chat.closed"]  # disabled: nothing more
    services.update_rule(widget=widget, rule=mine, changes={"enabled": True, "event": "message.created"})
    assert hand_off("message.created") == ["chat.closed", "message.created"]
    services.delete_rule(widget=widget, rule=mine)
    assert hand_off("message.created") == ["chat.closed", "message.created"]


def test_with_the_cache_down_every_rule_event_is_handed_to_the_worker(
    widget, chat, monkeypatch, django_capture_on_commit_callbacks
):
    sent = []
    monkeypatch.setattr(handlers, "_send", sent.append)

    def down(widget):
        raise ConnectionError("the cache is down")

    monkeypatch.setattr(selectors, "rule_events", down)
    with django_capture_on_commit_callbacks(execute=True):
        handlers.hand_off(events.Event(widget=widget, type="chat.closed", data=event_data("chat.closed", chat)))
    assert [args[1] for args in sent] == ["chat.closed"]


def test_a_visitor_message_costs_the_worker_two_statements_whatever_the_rules_read(
    widget, chat, rule, django_assert_num_queries
):
    """The event's row (with the chat's labels and the contact's page) and the log's insert: each
    rule more costs no statement. The bench's figure (bench/automation.py) rests on this."""
    chat_services.add_chat_labels(widget=widget, chat=chat, names=[label(widget, "Spam").name], by="agent")
    message = MessageFactory(chat=chat, body="Where is my parcel?")
    data = {"chat_id": chat.pk, "message_id": message.pk, "source": "visitor"}
    for i in range(20):
        rule(
            event="message.created",
            conditions=[
                {"field": "message.text", "op": "contains", "value": f"refund {i}"},
                {"field": "page_url", "op": "contains", "value": "/pricing"},
            ],
        )
    runtime.run_event(widget_id=widget.pk, event_type="message.created", data=data)  # compiles the rules
    with django_assert_num_queries(2):
        logged = runtime.run_event(widget_id=widget.pk, event_type="message.created", data=data)
    assert len(logged.rule_ids) == 20 and logged.results == {}
    # a rule reading the labels, which the cached rules did not: the first event reads them apart,
    # the next ones with the event's row (read or not, the chat's label Spam keeps it from matching)
    clean = rule(event="message.created", conditions=[{"field": "labels", "op": "not_equals", "value": "spam"}])
    runtime.run_event(widget_id=widget.pk, event_type="message.created", data=data)
    with django_assert_num_queries(2):
        logged = runtime.run_event(widget_id=widget.pk, event_type="message.created", data=data)
    assert len(logged.rule_ids) == 21 and logged.results == {}
    assert runs(clean) == [("not_matched", "")] * 2
