"""Reads of automation rules, of their run log and of the facts the rules of one event read."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Aggregate, Exists, F, OuterRef, QuerySet, Subquery, TextField, Value
from django.db.models.functions import Coalesce

from apps.chats.models import Chat, ChatLabel, Message, VisitorSession
from apps.core.models import Widget
from apps.platform.statements import Slot, Statement
from apps.widget import selectors as widget_selectors

from .models import RUNS_KEPT, AutomationEvaluation, AutomationRule, Outcome, RuleSet, RuleSetMember


def list_rules(widget: Widget) -> QuerySet[AutomationRule]:
    return AutomationRule.objects.filter(widget=widget).order_by("id")


def get_rule(*, widget: Widget, rule_id: int) -> AutomationRule | None:
    return AutomationRule.objects.filter(widget=widget, pk=rule_id).first()


# How long a process trusts its cached rule events (a rule's write purges them at once).
RULE_EVENTS_TTL = 3600


def rule_events(widget: Widget) -> frozenset[str]:
    """The events the widget's enabled rules react to, read with the widget config's cache (every
    rule write purges it), so an event no rule reacts to is never handed to a worker."""
    return frozenset(
        widget_selectors.cached_for_config(
            widget=widget,
            name="automation-events",
            build=lambda: sorted(
                set(AutomationRule.objects.filter(widget=widget, enabled=True).values_list("event", flat=True))
            ),
            ttl=RULE_EVENTS_TTL,
        )
    )


# --- the run log ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """One evaluation of one rule (the API's `{at, chat_id, outcome, detail}`)."""

    at: datetime
    chat_id: int | None
    outcome: str
    detail: str


NOT_MATCHED = (Outcome.NOT_MATCHED.value, "")


def list_runs(*, widget: Widget, rule: AutomationRule) -> list[Run]:
    """The rule's newest RUNS_KEPT runs, newest first: the widget's evaluations of the rule's event
    at the versions the rule was a member of, each `not_matched` unless it names the rule (the beat
    job `automation.trim_runs` cuts the tail)."""
    ran = RuleSetMember.objects.filter(rule_id=rule.pk, version=OuterRef("version"), event=OuterRef("event"))
    rows = (
        AutomationEvaluation.objects.filter(Exists(ran), widget=widget)
        .order_by("-id")
        .values_list("at", "chat_id", "results")[:RUNS_KEPT]
    )
    key = str(rule.pk)
    return [Run(at, chat_id, *(results.get(key) or NOT_MATCHED)) for at, chat_id, results in rows]


# --- the facts of one event (the rules' worker: compiled once) -------------------------------------------


# Label names never hold control characters (apps.core.api.serializers.normalize_label refuses them).
LABEL_SEPARATOR = "\x1f"


class _LabelNames(Aggregate):
    """The names joined by LABEL_SEPARATOR, in no set order: STRING_AGG, GROUP_CONCAT on SQLite."""

    function = "STRING_AGG"
    output_field = TextField()

    def __init__(self, expression, **extra):
        super().__init__(expression, Value(LABEL_SEPARATOR), **extra)

    def as_sqlite(self, compiler, connection, **extra_context):
        return self.as_sql(compiler, connection, function="GROUP_CONCAT", **extra_context)


def _event_row(by_message: bool, with_page: bool, with_labels: bool):
    """The event's chat (by its message, or by itself) with what the conditions read of it and of its
    contact, the widget's rule-set version and, `with_page`, the contact's latest page and,
    `with_labels`, the chat's label names."""
    widget = Slot("widget", Widget._meta.pk)
    if by_message:
        rows = Message.objects.filter(pk=Slot("id", Message._meta.pk), widget_id=widget)
        chat, text = "chat__", {"message_body": F("body")}
    else:
        rows = Chat.objects.filter(pk=Slot("id", Chat._meta.pk), widget_id=widget)
        chat, text = "", {}
    labels = (
        ChatLabel.objects.filter(chat_id=OuterRef(f"{chat}id"))
        .order_by()
        .values("chat_id")
        .annotate(names=_LabelNames("label__name"))
        .values("names")
    )
    page = (
        VisitorSession.objects.filter(widget_id=OuterRef("widget_id"), contact_id=OuterRef(f"{chat}contact_id"))
        .order_by("-last_seen_at")
        .values("page_url")[:1]
    )
    extra = {"contact_page_url": Coalesce(Subquery(page), Value(""))} if with_page else {}
    if with_labels:
        extra["label_names"] = Coalesce(Subquery(labels), Value(""), output_field=TextField())
    return rows.values(
        chat_pk=F(f"{chat}id"),
        chat_channel=F(f"{chat}channel"),
        chat_department_id=F(f"{chat}department_id"),
        contact_locale=F(f"{chat}contact__locale"),
        contact_attributes=F(f"{chat}contact__attributes"),
        rules_version=Subquery(RuleSet.objects.filter(widget_id=OuterRef("widget_id")).values("version")[:1]),
        **text,
        **extra,
    )[:1]


_EVENT_ROW = Statement(_event_row)
_CHAT_LABELS = Statement(lambda: ChatLabel.objects.filter(chat_id=Slot("chat", Chat._meta.pk)).values("label__name"))


def event_row(
    *, widget_id: int, message_id: int | None, chat_id: int | None, with_page: bool, with_labels: bool
) -> dict | None:
    """One statement: the event's row (by `message_id` when given, else `chat_id`) of the widget:
    chat_pk, chat_channel, chat_department_id, contact_locale, contact_attributes, rules_version
    (None for a widget that never had a rule), message_body (by a message), contact_page_url
    (`with_page`) and label_names (`with_labels`, a tuple of names); None when it is not the widget's."""
    if message_id:
        found = _EVENT_ROW.rows((True, with_page, with_labels), widget=widget_id, id=message_id)
    elif chat_id:
        found = _EVENT_ROW.rows((False, with_page, with_labels), widget=widget_id, id=chat_id)
    else:
        return None
    if not found:
        return None
    row = found[0]
    if with_labels:
        row["label_names"] = tuple(row["label_names"].split(LABEL_SEPARATOR)) if row["label_names"] else ()
    return row


def chat_label_names(chat_id: int) -> tuple[str, ...]:
    return tuple(name for (name,) in _CHAT_LABELS.tuples(chat=chat_id))
