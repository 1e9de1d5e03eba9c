"""Reads of self-learning: the assistant learning follows, the evidence a cycle learns from, the
three gates, the control panel and the payloads the API returns.

Evidence of an assistant (what went wrong in chats its AI operators answered), in a window:
- escalations: chats an AI operator of the assistant answered that went to a person
  (`handling` `ai_to_human`, `handled_at` in the window);
- low ratings: ratings of 1 or 2 (`LOW_RATING_MAX`) given in the window to such chats;
- unanswered questions: the widget's `unanswered` demand signals in the window (their counts).
Support replies (messages sent through the support-agent API) are never evidence and never quoted
to the provider (endpoints.md, reply rule 7).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Max, Q, Sum
from django.utils import timezone

from apps.ai import selectors as ai_selectors
from apps.ai.models import Assistant, DemandSignal
from apps.chats.models import Chat, Message, Rating
from apps.core.models import Widget
from apps.support.models import SUPPORT_REPLY_ORIGIN

from .models import HistoryEntry, PersonaVersion, TuningCycle, Wish, WishEvent

# The learning policy (documented in docs/ai/learning.md).
MIN_NEW_EVIDENCE = 5  # evidence items since the last change before a cycle may run
EVIDENCE_WINDOW_DAYS = 30  # a cycle never looks further back
LOW_RATING_MAX = 2
PROBATION_HOURS = 72  # default probation of an applied patch (a wish approval may choose 1..168)
MAX_PROBATION_HOURS = 168
STALE_CYCLE_MINUTES = 15  # a queued or running cycle older than this is considered lost
MAX_EVIDENCE_CHATS = 20
MAX_MESSAGES_PER_CHAT = 12
MAX_MESSAGE_CHARS = 500
MAX_UNANSWERED_TOPICS = 20


# --- the assistant learning follows -----------------------------------------------------------------------


def learning_assistant(widget: Widget, assistant_id: int | None) -> Assistant | None:
    """The selected assistant (`assistant_id`, the widget's own only), else the effective one.
    None when `assistant_id` names no assistant of the widget, or none is given and none is effective."""
    if assistant_id is not None:
        return Assistant.objects.filter(widget=widget, pk=assistant_id).first()
    return ai_selectors.effective_assistant(widget)


# --- evidence ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Evidence:
    escalations: int
    low_ratings: int
    unanswered: int

    @property
    def total(self) -> int:
        return self.escalations + self.low_ratings + self.unanswered

    def as_dict(self) -> dict:
        return {
            "escalations": self.escalations,
            "low_ratings": self.low_ratings,
            "unanswered": self.unanswered,
            "total": self.total,
        }


def _ai_chat_ids(widget: Widget, assistant: Assistant):
    """Chats an AI operator of `assistant` wrote in (a subquery)."""
    return (
        Message.objects.filter(widget=widget, author_kind=Message.Author.AI, agent__ai_assistant_id=assistant.pk)
        .values("chat_id")
        .distinct()
    )


def _escalated_chats(widget: Widget, assistant: Assistant, start: datetime, end: datetime):
    return Chat.objects.filter(
        widget=widget,
        pk__in=_ai_chat_ids(widget, assistant),
        handling=Chat.Handling.AI_TO_HUMAN,
        handled_at__gte=start,
        handled_at__lt=end,
    )


def _low_ratings(widget: Widget, assistant: Assistant, start: datetime, end: datetime):
    return Rating.objects.filter(
        widget=widget,
        chat_id__in=_ai_chat_ids(widget, assistant),
        value__lte=LOW_RATING_MAX,
        created_at__gte=start,
        created_at__lt=end,
    )


def _unanswered(widget: Widget, start: datetime, end: datetime):
    return DemandSignal.objects.filter(
        widget=widget, category="unanswered", occurred_at__gte=start, occurred_at__lt=end
    )


def count_evidence(widget: Widget, assistant: Assistant, start: datetime, end: datetime) -> Evidence:
    return Evidence(
        escalations=_escalated_chats(widget, assistant, start, end).count(),
        low_ratings=_low_ratings(widget, assistant, start, end).count(),
        unanswered=_unanswered(widget, start, end).aggregate(n=Sum("count"))["n"] or 0,
    )


def evidence_since(widget: Widget, assistant: Assistant, *, now: datetime | None = None) -> datetime:
    """Where new evidence starts: after the last change of the persona by learning (a version) and
    after the window of the last cycle that finished, never more than EVIDENCE_WINDOW_DAYS back."""
    now = now or timezone.now()
    floor = now - timedelta(days=EVIDENCE_WINDOW_DAYS)
    last_version = PersonaVersion.objects.filter(widget=widget, assistant=assistant).aggregate(m=Max("created_at"))
    last_cycle = TuningCycle.objects.filter(
        widget=widget,
        assistant=assistant,
        status__in=(TuningCycle.Status.APPLIED, TuningCycle.Status.NO_CHANGE, TuningCycle.Status.HELD),
    ).aggregate(m=Max("evidence_to"))
    marks = [m for m in (floor, last_version["m"], last_cycle["m"]) if m is not None]
    return max(marks)


def evidence_excerpts(widget: Widget, assistant: Assistant, start: datetime, end: datetime) -> dict:
    """What a cycle shows the provider: the newest escalated or low-rated chats (their last public
    messages, support replies left out) and the unanswered topics. The chats of a contact whose
    erasure was accepted read as missing: nothing of them goes to the provider."""
    ratings = list(
        _low_ratings(widget, assistant, start, end)
        .live()
        .order_by("-created_at", "-id")[:MAX_EVIDENCE_CHATS]
        .values("chat_id", "value", "comment")
    )
    escalated = list(
        _escalated_chats(widget, assistant, start, end)
        .live()
        .order_by("-handled_at", "-id")
        .values_list("id", flat=True)[:MAX_EVIDENCE_CHATS]
    )
    chat_ids: list[int] = []
    for chat_id in [*escalated, *(r["chat_id"] for r in ratings)]:
        if chat_id not in chat_ids:
            chat_ids.append(chat_id)
    chat_ids = chat_ids[:MAX_EVIDENCE_CHATS]
    by_chat: dict[int, list[dict]] = {cid: [] for cid in chat_ids}
    messages = (
        Message.objects.filter(widget=widget, chat_id__in=chat_ids, visibility=Message.Visibility.PUBLIC)
        .live()
        .exclude(origin=SUPPORT_REPLY_ORIGIN)
        .exclude(author_kind=Message.Author.SYSTEM)
        .order_by("chat_id", "-created_at", "-id")
        .values("chat_id", "author_kind", "body")
    )
    for m in messages:
        rows = by_chat[m["chat_id"]]
        if len(rows) < MAX_MESSAGES_PER_CHAT and m["body"].strip():
            rows.append({"role": m["author_kind"], "text": m["body"][:MAX_MESSAGE_CHARS]})
    rating_of = {r["chat_id"]: r for r in ratings}
    chats = []
    for cid in chat_ids:
        rating = rating_of.get(cid)
        chats.append(
            {
                "escalated": cid in escalated,
                "rating": rating["value"] if rating else None,
                "rating_comment": (rating["comment"] or "")[:MAX_MESSAGE_CHARS] if rating else "",
                "messages": list(reversed(by_chat[cid])),
            }
        )
    topics = list(
        _unanswered(widget, start, end)
        .order_by("-count", "-occurred_at")
        .values("topic", "count", "sample")[:MAX_UNANSWERED_TOPICS]
    )
    return {"chats": chats, "unanswered": topics}


# --- gates and probation ----------------------------------------------------------------------------------


def open_probation(widget: Widget, assistant: Assistant, *, now: datetime | None = None) -> PersonaVersion | None:
    now = now or timezone.now()
    return (
        PersonaVersion.objects.filter(
            widget=widget, assistant=assistant, probation_until__gt=now, probation_ended_at__isnull=True
        )
        .order_by("-version")
        .first()
    )


def cycle_in_progress(widget: Widget, assistant: Assistant, *, now: datetime | None = None) -> TuningCycle | None:
    now = now or timezone.now()
    return (
        TuningCycle.objects.filter(
            widget=widget,
            assistant=assistant,
            status__in=(TuningCycle.Status.QUEUED, TuningCycle.Status.RUNNING),
            created_at__gt=now - timedelta(minutes=STALE_CYCLE_MINUTES),
        )
        .order_by("-created_at", "-id")
        .first()
    )


def gates(widget: Widget, assistant: Assistant | None, *, now: datetime | None = None) -> dict:
    """The three gates (kill-switch) of `assistant`: each `{name, open, reason, ...}` and `may_run`."""
    now = now or timezone.now()
    switch_on = ai_selectors.get_settings(widget).autonomous_tuning_enabled
    master = {
        "name": "master_switch",
        "open": switch_on,
        "reason": None if switch_on else "autonomous_tuning_disabled",
    }
    if assistant is None:
        evidence_gate = {
            "name": "evidence",
            "open": False,
            "reason": "no_assistant",
            "new_evidence": None,
            "required": MIN_NEW_EVIDENCE,
            "since": None,
        }
        probation_gate = {"name": "probation", "open": True, "reason": None, "version": None, "until": None}
    else:
        since = evidence_since(widget, assistant, now=now)
        evidence = count_evidence(widget, assistant, since, now)
        enough = evidence.total >= MIN_NEW_EVIDENCE
        evidence_gate = {
            "name": "evidence",
            "open": enough,
            "reason": None if enough else "not_enough_evidence",
            "new_evidence": evidence.as_dict(),
            "required": MIN_NEW_EVIDENCE,
            "since": since.isoformat(),
        }
        probation = open_probation(widget, assistant, now=now)
        probation_gate = {
            "name": "probation",
            "open": probation is None,
            "reason": None if probation is None else "probation_in_progress",
            "version": probation.version if probation else None,
            "until": probation.probation_until.isoformat() if probation else None,
        }
    all_gates = [master, evidence_gate, probation_gate]
    return {
        "assistant_id": assistant.pk if assistant else None,
        "may_run": all(g["open"] for g in all_gates),
        "gates": all_gates,
    }


def probation_payload(widget: Widget, version: PersonaVersion, *, now: datetime | None = None) -> dict:
    """The running probation: its window, and the evidence since it started against the evidence of
    the same length of time before it (how the change is doing)."""
    now = now or timezone.now()
    started = version.created_at
    length = max(now, started) - started
    before = count_evidence(widget, version.assistant, started - length, started)
    since = count_evidence(widget, version.assistant, started, now)
    return {
        "version": version.version,
        "source": version.source,
        "started_at": started.isoformat(),
        "until": version.probation_until.isoformat(),
        "evidence_since_start": since.as_dict(),
        "evidence_before_start": before.as_dict(),
    }


def live_version(widget: Widget, assistant: Assistant) -> PersonaVersion | None:
    """The newest version whose snapshots are the assistant's live persona and system prompt."""
    newest = PersonaVersion.objects.filter(widget=widget, assistant=assistant).order_by("-version").first()
    if newest and newest.persona == assistant.persona and newest.system_prompt == assistant.system_prompt:
        return newest
    return None


def control_panel(widget: Widget, assistant: Assistant | None) -> dict:
    now = timezone.now()
    row = ai_selectors.get_settings(widget)
    payload = {
        "autonomous_tuning_enabled": row.autonomous_tuning_enabled,
        "learning_target": ai_selectors.learning_target(assistant),
        "policy": {
            "min_new_evidence": MIN_NEW_EVIDENCE,
            "evidence_window_days": EVIDENCE_WINDOW_DAYS,
            "low_rating_max": LOW_RATING_MAX,
            "probation_hours": PROBATION_HOURS,
            "schedule": "daily",
        },
        "kill_switch": gates(widget, assistant, now=now),
        "current_version": None,
        "live_matches_current_version": False,
        "probation": None,
        "last_cycle": None,
        "cycle_in_progress": None,
        "pending_wishes": 0,
    }
    if assistant is None:
        return payload
    newest = PersonaVersion.objects.filter(widget=widget, assistant=assistant).order_by("-version").first()
    payload["current_version"] = newest.version if newest else None
    payload["live_matches_current_version"] = bool(
        newest and newest.persona == assistant.persona and newest.system_prompt == assistant.system_prompt
    )
    probation = open_probation(widget, assistant, now=now)
    payload["probation"] = probation_payload(widget, probation, now=now) if probation else None
    last = (
        TuningCycle.objects.filter(widget=widget, assistant=assistant)
        .select_related("version")
        .order_by("-created_at", "-id")
        .first()
    )
    payload["last_cycle"] = cycle_payload(last) if last else None
    running = cycle_in_progress(widget, assistant, now=now)
    payload["cycle_in_progress"] = running.pk if running else None
    payload["pending_wishes"] = Wish.objects.filter(
        widget=widget,
        assistant=assistant,
        status__in=(Wish.Status.PROPOSING, Wish.Status.PROPOSED),
    ).count()
    return payload


# --- payloads ---------------------------------------------------------------------------------------------


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None


def cycle_payload(cycle: TuningCycle) -> dict:
    proposal = None
    if cycle.status in (TuningCycle.Status.APPLIED, TuningCycle.Status.NO_CHANGE, TuningCycle.Status.HELD):
        proposal = {
            "persona": cycle.proposed_persona,
            "system_prompt": cycle.proposed_system_prompt,
            "rationale": cycle.rationale,
        }
    return {
        "id": cycle.pk,
        "assistant_id": cycle.assistant_id,
        "status": cycle.status,
        "trigger": cycle.trigger,
        "evidence_window": {"from": cycle.evidence_from.isoformat(), "to": cycle.evidence_to.isoformat()},
        "evidence": dict(cycle.evidence or {}),
        "proposal": proposal,
        "persona_version": cycle.version.version if cycle.version_id else None,
        "error": cycle.error or None,
        "created_at": cycle.created_at.isoformat(),
        "started_at": _iso(cycle.started_at),
        "finished_at": _iso(cycle.finished_at),
    }


def version_payload(version: PersonaVersion, *, now: datetime | None = None) -> dict:
    now = now or timezone.now()
    probation = None
    if version.probation_until is not None:
        if version.probation_ended_at is not None:
            state = version.probation_outcome or "ended"
        elif version.probation_until > now:
            state = "running"
        else:
            state = "completed"
        probation = {
            "until": version.probation_until.isoformat(),
            "state": state,
            "ended_at": _iso(version.probation_ended_at),
        }
    return {
        "version": version.version,
        "assistant_id": version.assistant_id,
        "created_at": version.created_at.isoformat(),
        "source": version.source,
        "persona": version.persona,
        "system_prompt": version.system_prompt,
        "previous": {"persona": version.previous_persona, "system_prompt": version.previous_system_prompt},
        "reverted_to": version.reverted_to,
        "restored": version.restored or None,
        "probation": probation,
    }


def history_payload(entry: HistoryEntry) -> dict:
    return {
        "id": entry.pk,
        "assistant_id": entry.assistant_id,
        "kind": entry.kind,
        "version": entry.version,
        "cycle_id": entry.cycle_id,
        "wish_id": entry.wish_id,
        "actor": {"type": "token", "token_id": entry.token_id} if entry.token_id else {"type": "system"},
        "detail": dict(entry.detail or {}),
        "created_at": entry.created_at.isoformat(),
    }


def wish_payload(wish: Wish, *, trail: list[WishEvent] | None = None) -> dict:
    payload = {
        "id": wish.pk,
        "assistant_id": wish.assistant_id,
        "text": wish.text,
        "status": wish.status,
        "proposal_pending": wish.status == Wish.Status.PROPOSING,
        "proposal_error": wish.proposal_error or None,
        "applied_version": wish.applied_version.version if wish.applied_version_id else None,
        "revert_version": wish.revert_version.version if wish.revert_version_id else None,
        "probation_until": _iso(wish.applied_version.probation_until) if wish.applied_version_id else None,
        "created_at": wish.created_at.isoformat(),
        "updated_at": wish.updated_at.isoformat(),
    }
    if trail is not None:
        payload["decision_trail"] = [
            {
                "action": e.action,
                "at": e.created_at.isoformat(),
                "actor": {"type": "token", "token_id": e.token_id} if e.token_id else {"type": "system"},
                "note": e.note or None,
                "detail": dict(e.detail or {}),
            }
            for e in trail
        ]
    return payload


def wish_trail(wish: Wish) -> list[WishEvent]:
    return list(WishEvent.objects.filter(wish=wish, widget_id=wish.widget_id).order_by("created_at", "id"))


def wish_preview(wish: Wish) -> dict:
    """Side-effect free: the live pair, the stored proposal and whether approval would apply it."""
    assistant = wish.assistant
    live = {"persona": assistant.persona, "system_prompt": assistant.system_prompt}
    has_proposal = wish.status not in (Wish.Status.PROPOSING, Wish.Status.PROPOSAL_FAILED)
    stale = has_proposal and (
        assistant.persona != wish.base_persona or assistant.system_prompt != wish.base_system_prompt
    )
    proposed = (
        {"persona": wish.proposed_persona, "system_prompt": wish.proposed_system_prompt, "rationale": wish.rationale}
        if has_proposal
        else None
    )
    return {
        "wish_id": wish.pk,
        "assistant_id": wish.assistant_id,
        "status": wish.status,
        "proposal_pending": wish.status == Wish.Status.PROPOSING,
        "current": live,
        "proposed": proposed,
        "changes": {
            "persona": bool(proposed) and proposed["persona"] != live["persona"],
            "system_prompt": bool(proposed) and proposed["system_prompt"] != live["system_prompt"],
        },
        "stale": stale,
        "approvable": wish.status == Wish.Status.PROPOSED and not stale,
    }


def filter_wishes(qs, *, status: str | None = None, assistant: Assistant | None = None):
    q = Q()
    if status:
        q &= Q(status=status)
    if assistant is not None:
        q &= Q(assistant=assistant)
    return qs.filter(q)
