"""Running a widget's rules for one event, on a worker (apps.automation.tasks.run_rules).

The rules are compiled once per process and rule-set version (`RuleSet.version`, the AI
configuration's pattern: the version is read with the task's first statement, the compiled set is
reused while it is unchanged). The rules of the event run in order of id; each is evaluated on the
facts read once for the event (before any rule acts), and a matching rule's actions run through the
action engine, all or nothing, inside `caused_by_rule()` so that nothing they cause triggers rules
again. Every evaluation is logged as a run (matched, not_matched, failed), in one statement.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from apps.chats.models import Chat, ChatLabel, Message, VisitorSession
from apps.core.errors import AppError
from apps.core.models import Widget
from apps.widget import selectors as widget_selectors

from . import services, webhook
from .actions import MacroActionRefused, run_actions
from .conditions import Facts, MatchTimedOut, Test, compile_condition, needs
from .context import caused_by_rule
from .models import AutomationRule, AutomationRun, RuleSet

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CompiledRule:
    rule: AutomationRule
    tests: tuple[Test, ...]
    needs: frozenset[str]


@dataclass(frozen=True)
class CompiledSet:
    version: int
    by_event: dict[str, tuple[CompiledRule, ...]] = field(default_factory=dict)


_lock = threading.Lock()
_cache: dict[int, CompiledSet] = {}  # widget id -> its enabled rules, compiled


def compiled_rules(widget_id: int, *, version: int) -> CompiledSet:
    """The widget's enabled rules at `version`, compiled at most once per process and version."""
    with _lock:
        entry = _cache.get(widget_id)
    if entry is not None and entry.version == version:
        return entry
    # Read after the version: what is cached is at least as new as the version it is cached under.
    by_event: dict[str, list[CompiledRule]] = {}
    for rule in AutomationRule.objects.filter(widget_id=widget_id, enabled=True).order_by("id"):
        compiled = CompiledRule(
            rule=rule,
            tests=tuple(compile_condition(condition) for condition in rule.conditions),
            needs=frozenset(needs(rule.conditions)),
        )
        by_event.setdefault(rule.event, []).append(compiled)
    entry = CompiledSet(version=version, by_event={event: tuple(rules) for event, rules in by_event.items()})
    with _lock:
        _cache[widget_id] = entry
    return entry


def clear_cache() -> None:
    with _lock:
        _cache.clear()


def run_event(*, widget_id: int, event_type: str, data: dict) -> list[AutomationRun]:
    """Evaluate the widget's rules of `event_type` for one event and run those that match; returns
    the runs logged (none when the widget has no rule for the event or the chat is gone)."""
    version = RuleSet.objects.filter(widget_id=widget_id).values_list("version", flat=True).first()
    if version is None:
        return []
    rules = compiled_rules(widget_id, version=version).by_event.get(event_type, ())
    if not rules:
        return []
    wanted = frozenset().union(*(rule.needs for rule in rules))
    chat, text = _load(widget_id, data, wanted)
    if chat is None:
        return []
    facts = _facts(chat, text, wanted)
    hook = _webhook_hook(chat.widget, event_type, data)
    runs = [_run_rule(rule, chat=chat, facts=facts, hook=hook) for rule in rules]
    services.record_runs(runs)
    return runs


def _load(widget_id: int, data: dict, wanted: frozenset[str]) -> tuple[Chat | None, str]:
    """The event's chat with its contact and widget (and the message's text when a rule reads it):
    one statement."""
    message_id, chat_id = data.get("message_id"), data.get("chat_id")
    if message_id and "message_text" in wanted:
        message = (
            Message.objects.select_related("chat__contact", "chat__widget")
            .filter(pk=message_id, widget_id=widget_id)
            .first()
        )
        return (message.chat, message.body) if message else (None, "")
    chat = Chat.objects.select_related("contact", "widget").filter(pk=chat_id, widget_id=widget_id).first()
    return chat, ""


def _facts(chat: Chat, text: str, wanted: frozenset[str]) -> Facts:
    contact = chat.contact
    labels: tuple[str, ...] = ()
    if "labels" in wanted:
        labels = tuple(ChatLabel.objects.filter(chat=chat).values_list("label__name", flat=True))
    page_url = ""
    if "page_url" in wanted:
        page_url = (
            VisitorSession.objects.filter(widget_id=chat.widget_id, contact_id=contact.pk)
            .order_by("-last_seen_at")
            .values_list("page_url", flat=True)
            .first()
            or ""
        )
    hours_open = "business_hours" in wanted and widget_selectors.business_hours_state(chat.widget).open
    return Facts(
        channel=chat.channel,
        department_id=chat.department_id,
        language=contact.locale,
        page_url=page_url,
        message_text=text,
        labels=labels,
        attributes=contact.attributes if isinstance(contact.attributes, dict) else {},
        business_hours_open=bool(hours_open),
    )


def _webhook_hook(widget: Widget, event_type: str, data: dict) -> Callable[[AutomationRule], Callable]:
    def for_rule(rule: AutomationRule) -> Callable[[Chat, dict], None]:
        def send(chat: Chat, action: dict) -> None:
            webhook.send(widget=widget, url=action["url"], rule=rule, event_type=event_type, data=data)

        return send

    return for_rule


def _run_rule(rule: CompiledRule, *, chat: Chat, facts: Facts, hook) -> AutomationRun:
    row = rule.rule

    def logged(outcome: str, detail: str = "") -> AutomationRun:
        return AutomationRun(
            widget_id=row.widget_id, rule_id=row.pk, chat_id=chat.pk, outcome=outcome, detail=detail[:500]
        )

    try:
        matched = all(test(facts) for test in rule.tests)
    except MatchTimedOut as exc:
        return logged(AutomationRun.Outcome.FAILED, str(exc))
    if not matched:
        return logged(AutomationRun.Outcome.NOT_MATCHED)
    try:
        with caused_by_rule():
            count = run_actions(
                widget=chat.widget, chat=chat, actions=row.actions, actor=None, by="automation", webhook=hook(row)
            )
    except MacroActionRefused as exc:
        return logged(AutomationRun.Outcome.FAILED, exc.detail)
    except AppError as exc:
        return logged(AutomationRun.Outcome.FAILED, exc.detail)
    except Exception:  # one rule's fault must not cost the others their turn
        logger.exception("automation rule failed", extra={"rule_id": row.pk})
        return logged(AutomationRun.Outcome.FAILED, "An internal error stopped the actions; it has been logged.")
    return logged(AutomationRun.Outcome.MATCHED, f"{count} action(s) ran.")
