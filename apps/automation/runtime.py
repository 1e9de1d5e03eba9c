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

from django.db.models import OuterRef, Subquery, Value
from django.db.models.functions import Coalesce

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
    # event -> the facts its rules read beyond the chat row
    needs: dict[str, frozenset[str]] = field(default_factory=dict)


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


def run_event(*, widget_id: int, event_type: str, data: dict) -> list[AutomationRun]:
    """Evaluate the widget's rules of `event_type` for one event and run those that match; returns
    the runs logged (none when the widget has no rule for the event or the chat is gone).

    The first statement reads the rule-set version with the event's message, chat and contact (and
    the contact's page when the cached rules read it); the chat's labels cost one more when a rule
    reads them, the log one insert."""
    with _lock:
        cached = _cache.get(widget_id)
    guess = cached.needs.get(event_type, frozenset()) if cached else frozenset({"page_url"})
    chat, text, version, page_url = _load(widget_id, data, with_page="page_url" in guess)
    if version is None or chat is None:
        return []
    compiled = compiled_rules(widget_id, version=version)
    rules = compiled.by_event.get(event_type, ())
    if not rules:
        return []
    wanted = compiled.needs.get(event_type, frozenset())
    if "page_url" in wanted and page_url is None:  # the rules changed since the guess
        page_url = _page_url(chat)
    facts = _facts(chat, text, page_url or "", wanted)
    hook = _webhook_hook(chat.widget, event_type, data)
    runs = [_run_rule(rule, chat=chat, facts=facts, hook=hook) for rule in rules]
    services.record_runs(runs)
    return runs


def _load(widget_id: int, data: dict, *, with_page: bool) -> tuple[Chat | None, str, int | None, str | None]:
    """(the event's chat with its contact and widget, the message's text, the rule-set version, the
    contact's latest page or None when not read): one statement."""
    version = RuleSet.objects.filter(widget_id=widget_id).values("version")[:1]
    message_id, chat_id = data.get("message_id"), data.get("chat_id")
    if message_id:
        rows = Message.objects.select_related("chat__contact", "chat__widget").filter(
            pk=message_id, widget_id=widget_id
        )
        contact = OuterRef("chat__contact_id")
    else:
        rows = Chat.objects.select_related("contact", "widget").filter(pk=chat_id, widget_id=widget_id)
        contact = OuterRef("contact_id")
    page = (
        VisitorSession.objects.filter(widget_id=widget_id, contact_id=contact)
        .order_by("-last_seen_at")
        .values("page_url")[:1]
    )
    annotations = {"rules_version": Subquery(version)}
    if with_page:
        annotations["contact_page_url"] = Coalesce(Subquery(page), Value(""))
    row = rows.annotate(**annotations).first()
    if row is None:
        return None, "", None, None
    chat, text = (row.chat, row.body) if message_id else (row, "")
    return chat, text, row.rules_version, getattr(row, "contact_page_url", None) if with_page else None


def _page_url(chat: Chat) -> str:
    return (
        VisitorSession.objects.filter(widget_id=chat.widget_id, contact_id=chat.contact_id)
        .order_by("-last_seen_at")
        .values_list("page_url", flat=True)
        .first()
        or ""
    )


def _facts(chat: Chat, text: str, page_url: str, wanted: frozenset[str]) -> Facts:
    contact = chat.contact
    labels: tuple[str, ...] = ()
    if "labels" in wanted:
        labels = tuple(ChatLabel.objects.filter(chat=chat).values_list("label__name", flat=True))
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
