"""Running a widget's rules for one event, on a worker (apps.automation.tasks.run_rules).

The rules are compiled once per process and rule-set version (`RuleSet.version`, the AI
configuration's pattern: the version is read with the task's first statement, the compiled set is
reused while it is unchanged). The rules of the event run in order of id; each is evaluated on the
facts read once for the event (before any rule acts), and a matching rule's actions run through the
action engine, all or nothing, inside `caused_by_rule()` so that nothing they cause triggers rules
again. The event's evaluation is logged in one row (apps.automation.models.AutomationEvaluation):
the version its rules were compiled at, and the rules that matched or failed.

A visitor message none of whose rules matches costs two statements: the event's row with what the
rules read of the chat, its contact and labels (selectors.event_row, guessed from the rules cached:
a fact the guess missed costs one more) and the log's insert. The chat's model instance is read
only for a rule that matches (its actions act on it) or for the business hours.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from django.db.models import OuterRef, Subquery

from apps.chats.models import Chat, VisitorSession
from apps.core.errors import AppError
from apps.core.models import Widget
from apps.widget import selectors as widget_selectors

from . import selectors, webhook
from .actions import MacroActionRefused, run_actions
from .conditions import Facts, MatchTimedOut, Test, compile_condition, needs
from .context import caused_by_rule
from .models import AutomationEvaluation, AutomationRule, Outcome, RuleSet

logger = logging.getLogger(__name__)

DETAIL_MAX = 500


@dataclass(frozen=True)
class CompiledRule:
    rule: AutomationRule
    tests: tuple[Test, ...]
    needs: frozenset[str]
    key: str  # the rule's key in an evaluation's results


@dataclass(frozen=True)
class CompiledSet:
    version: int
    by_event: dict[str, tuple[CompiledRule, ...]] = field(default_factory=dict)
    # event -> the facts its rules read beyond the chat row
    needs: dict[str, frozenset[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Evaluated:
    """What run_event logged: the rules it evaluated (ids, in order) and the results of those that
    matched or failed ({"<rule id>": [outcome, detail]}); every other one did not match."""

    rule_ids: tuple[int, ...] = ()
    results: dict[str, list[str]] = field(default_factory=dict)


NOTHING = Evaluated()

_lock = threading.Lock()
_cache: dict[int, CompiledSet] = {}  # widget id -> its enabled rules, compiled


def compiled_rules(widget_id: int, *, version: int) -> CompiledSet:
    """The widget's enabled rules at `version`, compiled at most once per process and version.

    The rules are read with the version they belong to, in one statement: when a write committed
    since `version` was read, the set is the newer one and is cached under the newer version (the
    event is logged at the version whose rules it ran)."""
    with _lock:
        entry = _cache.get(widget_id)
    if entry is not None and entry.version == version:
        return entry
    current = RuleSet.objects.filter(widget_id=OuterRef("widget_id")).values("version")[:1]
    rows = AutomationRule.objects.filter(widget_id=widget_id, enabled=True).annotate(rules_version=Subquery(current))
    by_event: dict[str, list[CompiledRule]] = {}
    for rule in rows.order_by("id"):
        version = rule.rules_version
        compiled = CompiledRule(
            rule=rule,
            tests=tuple(compile_condition(condition) for condition in rule.conditions),
            needs=frozenset(needs(rule.conditions)),
            key=str(rule.pk),
        )
        by_event.setdefault(rule.event, []).append(compiled)
    entry = CompiledSet(
        version=version,
        by_event={event: tuple(rules) for event, rules in by_event.items()},
        needs={event: frozenset().union(*(rule.needs for rule in rules)) for event, rules in by_event.items()},
    )
    with _lock:
        _cache[widget_id] = entry
    return entry


def clear_cache() -> None:
    with _lock:
        _cache.clear()


def run_event(*, widget_id: int, event_type: str, data: dict) -> Evaluated:
    """Evaluate the widget's rules of `event_type` for one event, run those that match and log the
    evaluation; returns what was logged (nothing when the widget has no rule for the event or the
    chat is not the widget's)."""
    with _lock:
        cached = _cache.get(widget_id)
    guess = cached.needs.get(event_type, frozenset()) if cached else frozenset({"page_url", "labels"})
    row = selectors.event_row(
        widget_id=widget_id,
        message_id=data.get("message_id"),
        chat_id=data.get("chat_id"),
        with_page="page_url" in guess,
        with_labels="labels" in guess,
    )
    if row is None or row["rules_version"] is None:
        return NOTHING
    compiled = compiled_rules(widget_id, version=row["rules_version"])
    rules = compiled.by_event.get(event_type, ())
    if not rules:
        return NOTHING
    event = _Event(widget_id, event_type, data, row["chat_pk"])
    facts = _facts(row, compiled.needs.get(event_type, frozenset()), event)
    results: dict[str, list[str]] = {}
    for rule in rules:
        try:
            for test in rule.tests:
                if not test(facts):
                    break
            else:
                results[rule.key] = _act(rule.rule, event)
        except MatchTimedOut as exc:
            results[rule.key] = [Outcome.FAILED.value, str(exc)[:DETAIL_MAX]]
    AutomationEvaluation.objects.create(
        widget_id=widget_id, version=compiled.version, event=event_type, chat_id=event.chat_id, results=results
    )
    return Evaluated(rule_ids=tuple(rule.rule.pk for rule in rules), results=results)


class _Event:
    """The event's chat, read as a model instance (with its contact and widget) only when a rule's
    actions or the business hours need it, once."""

    def __init__(self, widget_id: int, event_type: str, data: dict, chat_id: int):
        self.widget_id, self.type, self.data, self.chat_id = widget_id, event_type, data, chat_id
        self._chat: Chat | None = None

    @property
    def chat(self) -> Chat:
        if self._chat is None:
            self._chat = Chat.objects.select_related("contact", "widget").get(pk=self.chat_id, widget_id=self.widget_id)
        return self._chat


def _facts(row: dict, wanted: frozenset[str], event: _Event) -> Facts:
    page_url = row.get("contact_page_url")
    if "page_url" in wanted and page_url is None:  # the rules changed since the guess
        page_url = _page_url(event.chat)
    labels = row.get("label_names", ()) if "labels" in wanted else ()
    if "labels" in wanted and "label_names" not in row:  # the rules changed since the guess
        labels = selectors.chat_label_names(event.chat_id)
    hours_open = "business_hours" in wanted and widget_selectors.business_hours_state(event.chat.widget).open
    attributes = row["contact_attributes"]
    return Facts(
        channel=row["chat_channel"],
        department_id=row["chat_department_id"],
        language=row["contact_locale"],
        page_url=page_url or "",
        message_text=row.get("message_body") or "",
        labels=labels,
        attributes=attributes if isinstance(attributes, dict) else {},
        business_hours_open=bool(hours_open),
    )


def _page_url(chat: Chat) -> str:
    return (
        VisitorSession.objects.filter(widget_id=chat.widget_id, contact_id=chat.contact_id)
        .order_by("-last_seen_at")
        .values_list("page_url", flat=True)
        .first()
        or ""
    )


def _webhook(widget: Widget, rule: AutomationRule, event: _Event) -> Callable[[Chat, dict], None]:
    def send(chat: Chat, action: dict) -> None:
        webhook.send(widget=widget, url=action["url"], rule=rule, event_type=event.type, data=event.data)

    return send


def _act(rule: AutomationRule, event: _Event) -> list[str]:
    """Run a matching rule's actions: its result [outcome, detail]."""
    try:
        chat = event.chat
        with caused_by_rule():
            count = run_actions(
                widget=chat.widget,
                chat=chat,
                actions=rule.actions,
                actor=None,
                by="automation",
                webhook=_webhook(chat.widget, rule, event),
            )
    except (MacroActionRefused, AppError) as exc:
        return [Outcome.FAILED.value, exc.detail[:DETAIL_MAX]]
    except Exception:  # one rule's fault must not cost the others their turn
        logger.exception("automation rule failed", extra={"rule_id": rule.pk})
        return [Outcome.FAILED.value, "An internal error stopped the actions; it has been logged."]
    return [Outcome.MATCHED.value, f"{count} action(s) ran."]
