"""Writes of self-learning and improvement wishes.

Every change of an assistant's persona or system prompt made here goes through `_apply_version`:
under the widget's AI settings lock and the assistant's row lock (the order `apps.ai.services` takes
them), it ends a running probation, writes the assistant through `apps.ai.services.update_assistant`
(so the widget config change is emitted once), records a `PersonaVersion` with both snapshots and
appends a `HistoryEntry`. Provider calls (a cycle's or a wish's proposal) run in Celery tasks,
outside any transaction; their result is applied in a short one afterwards.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from apps.ai import services as ai_services
from apps.ai.models import Assistant
from apps.core import queueing
from apps.core.models import Widget
from apps.core.ratelimit import Budget

from . import demand, proposals, review, selectors
from .errors import (
    CredentialUnavailable,
    CycleInProgress,
    NoAssistant,
    PersonaChanged,
    ProposalPending,
    TuningGateClosed,
    VersionLive,
    WishTransitionNotAllowed,
)
from .models import HistoryEntry, PersonaVersion, TuningCycle, Wish, WishEvent

logger = logging.getLogger(__name__)

# Each wish is a paid provider call on the owner's credential (the proposal, made after commit).
WISH_BUDGET = Budget("learning_wishes", 20, 3600)


def _lock(widget: Widget, assistant: Assistant) -> Assistant:
    ai_services.lock_settings(widget)
    return Assistant.objects.select_for_update().get(pk=assistant.pk, widget=widget)


def _require_assistant(assistant: Assistant | None) -> Assistant:
    if assistant is None:
        raise NoAssistant("The widget has no enabled assistant; name one with `assistant_id`.")
    return assistant


# --- versions ---------------------------------------------------------------------------------------------


def _apply_version(
    *,
    widget: Widget,
    assistant: Assistant,
    source: str,
    persona: str,
    system_prompt: str,
    token_id: int | None,
    probation_hours: int | None = None,
    reverted_to: int | None = None,
    restored: str = "",
) -> PersonaVersion:
    """Precondition: in a transaction, `assistant` locked by `_lock`."""
    now = timezone.now()
    outcome = "reverted" if source == PersonaVersion.Source.REVERT else "superseded"
    PersonaVersion.objects.filter(
        widget=widget, assistant=assistant, probation_until__gt=now, probation_ended_at__isnull=True
    ).update(probation_ended_at=now, probation_outcome=outcome)
    previous_persona, previous_prompt = assistant.persona, assistant.system_prompt
    ai_services.update_assistant(
        widget=widget, assistant=assistant, changes={"persona": persona, "system_prompt": system_prompt}
    )
    newest = PersonaVersion.objects.filter(assistant=assistant).aggregate(m=Max("version"))["m"] or 0
    return PersonaVersion.objects.create(
        widget=widget,
        assistant=assistant,
        version=newest + 1,
        source=source,
        persona=persona,
        system_prompt=system_prompt,
        previous_persona=previous_persona,
        previous_system_prompt=previous_prompt,
        reverted_to=reverted_to,
        restored=restored,
        token_id=token_id,
        probation_until=now + timedelta(hours=probation_hours) if probation_hours else None,
        created_at=now,
    )


@transaction.atomic
def revert_to_version(
    *, widget: Widget, assistant: Assistant, version: PersonaVersion, restore: str, token_id: int | None
) -> PersonaVersion:
    """Make `version`'s snapshot (`restore` "snapshot") or the pair it replaced ("previous") live
    again, as a new `revert` version. 409 `version_live` when that pair is already live."""
    assistant = _lock(widget, assistant)
    if restore == "previous":
        persona, prompt = version.previous_persona, version.previous_system_prompt
    else:
        persona, prompt = version.persona, version.system_prompt
    if assistant.persona == persona and assistant.system_prompt == prompt:
        raise VersionLive(f"Version {version.version}'s {restore} is already live.")
    new = _apply_version(
        widget=widget,
        assistant=assistant,
        source=PersonaVersion.Source.REVERT,
        persona=persona,
        system_prompt=prompt,
        token_id=token_id,
        reverted_to=version.version,
        restored=restore,
    )
    HistoryEntry.objects.create(
        widget=widget,
        assistant=assistant,
        kind=HistoryEntry.Kind.VERSION_REVERTED,
        version=new.version,
        token_id=token_id,
        detail={"reverted_to": version.version, "restored": restore},
    )
    return new


# --- tuning cycles ----------------------------------------------------------------------------------------


@transaction.atomic
def queue_cycle(
    *, widget: Widget, assistant: Assistant | None, token_id: int | None, trigger: str = TuningCycle.Trigger.MANUAL
) -> TuningCycle:
    """Queue one cycle when the three gates are open and none is in progress; the task runs after
    commit. Refusals change nothing."""
    assistant = _lock(widget, _require_assistant(assistant))
    now = timezone.now()
    # A cycle whose worker was lost does not block the assistant for good.
    TuningCycle.objects.filter(
        widget=widget,
        assistant=assistant,
        status__in=(TuningCycle.Status.QUEUED, TuningCycle.Status.RUNNING),
        created_at__lte=now - timedelta(minutes=selectors.STALE_CYCLE_MINUTES),
    ).update(status=TuningCycle.Status.FAILED, error="lost", finished_at=now)
    running = selectors.cycle_in_progress(widget, assistant, now=now)
    if running is not None:
        raise CycleInProgress(f"Cycle {running.pk} is {running.status}.", cycle_id=running.pk)
    state = selectors.gates(widget, assistant, now=now)
    closed = [g for g in state["gates"] if not g["open"]]
    if closed:
        raise TuningGateClosed(
            "Closed: " + ", ".join(f"{g['name']} ({g['reason']})" for g in closed) + ".",
            gates=[{"name": g["name"], "reason": g["reason"]} for g in closed],
        )
    if not proposals.has_credential(widget, assistant):
        raise CredentialUnavailable("No active provider credential resolves for this assistant.")
    evidence_gate = state["gates"][1]
    cycle = TuningCycle.objects.create(
        widget=widget,
        assistant=assistant,
        trigger=trigger,
        token_id=token_id,
        evidence_from=selectors.evidence_since(widget, assistant, now=now),
        evidence_to=now,
        evidence=evidence_gate["new_evidence"],
        created_at=now,
    )
    HistoryEntry.objects.create(
        widget=widget,
        assistant=assistant,
        kind=HistoryEntry.Kind.CYCLE_QUEUED,
        cycle=cycle,
        token_id=token_id,
        detail={"trigger": trigger, "evidence": cycle.evidence},
    )
    transaction.on_commit(lambda: _dispatch_cycle(cycle.pk))
    return cycle


def _dispatch_cycle(cycle_id: int) -> None:
    queueing.task("apps.learning.tasks.run_tuning_cycle").delay(cycle_id)


def _finish_cycle(cycle: TuningCycle, *, status: str, error: str = "", kind: str) -> None:
    cycle.status, cycle.error, cycle.finished_at = status, error, timezone.now()
    cycle.save(
        update_fields=[
            "status",
            "error",
            "finished_at",
            "proposed_persona",
            "proposed_system_prompt",
            "rationale",
            "version",
        ]
    )
    HistoryEntry.objects.create(
        widget_id=cycle.widget_id,
        assistant_id=cycle.assistant_id,
        kind=kind,
        version=cycle.version.version if cycle.version_id else None,
        cycle=cycle,
        detail={"error": error} if error else {"rationale": cycle.rationale},
    )


def run_cycle(*, cycle_id: int) -> TuningCycle | None:
    """The task: claim the queued cycle, ask the provider (no transaction open), then apply the
    patch in one short transaction, as a `tune` version under probation. A provider failure, an
    invalid answer or an owner's edit of the persona meanwhile fail the cycle and change nothing."""
    claimed = TuningCycle.objects.filter(pk=cycle_id, status=TuningCycle.Status.QUEUED).update(
        status=TuningCycle.Status.RUNNING, started_at=timezone.now()
    )
    if not claimed:
        return None
    cycle = TuningCycle.objects.select_related("widget", "assistant").get(pk=cycle_id)
    widget, assistant = cycle.widget, cycle.assistant
    base = (assistant.persona, assistant.system_prompt)
    excerpts = selectors.evidence_excerpts(widget, assistant, cycle.evidence_from, cycle.evidence_to)
    try:
        proposal = proposals.propose(widget, assistant, proposals.tuning_messages(assistant, excerpts))
    except proposals.ProposalFailed as exc:
        logger.warning("tuning cycle %s failed: %s", cycle.pk, exc.reason)
        with transaction.atomic():
            _finish_cycle(
                cycle, status=TuningCycle.Status.FAILED, error=exc.reason, kind=HistoryEntry.Kind.CYCLE_FAILED
            )
        return cycle
    cycle.proposed_persona, cycle.proposed_system_prompt = proposal.persona, proposal.system_prompt
    cycle.rationale = proposal.rationale
    with transaction.atomic():
        locked = _lock(widget, assistant)
        if (locked.persona, locked.system_prompt) != base:
            _finish_cycle(
                cycle, status=TuningCycle.Status.FAILED, error="persona_changed", kind=HistoryEntry.Kind.CYCLE_FAILED
            )
            return cycle
        if (proposal.persona, proposal.system_prompt) == base:
            _finish_cycle(cycle, status=TuningCycle.Status.NO_CHANGE, kind=HistoryEntry.Kind.CYCLE_NO_CHANGE)
            return cycle
        findings = review.additions(previous="\n".join(base), proposed=f"{proposal.persona}\n{proposal.system_prompt}")
        if findings:
            _hold_for_owner(cycle, base=base, proposal=proposal, findings=findings)
            return cycle
        cycle.version = _apply_version(
            widget=widget,
            assistant=locked,
            source=PersonaVersion.Source.TUNE,
            persona=proposal.persona,
            system_prompt=proposal.system_prompt,
            token_id=cycle.token_id,
            probation_hours=selectors.PROBATION_HOURS,
        )
        _finish_cycle(cycle, status=TuningCycle.Status.APPLIED, kind=HistoryEntry.Kind.CYCLE_APPLIED)
    return cycle


def _hold_for_owner(cycle: TuningCycle, *, base: tuple[str, str], proposal, findings: list[str]) -> Wish:
    """A proposal that adds something (`review.additions`) becomes a wish in `proposed`, made
    against `base`: the owner previews, approves or rejects it on the wish routes; the cycle ends
    `held`. Precondition: in the cycle's transaction, the assistant locked."""
    wish = Wish.objects.create(
        widget_id=cycle.widget_id,
        assistant_id=cycle.assistant_id,
        text=f"Proposed by tuning cycle {cycle.pk}; it adds what the current texts lack, so it needs your approval.",
        status=Wish.Status.PROPOSED,
        base_persona=base[0],
        base_system_prompt=base[1],
        proposed_persona=proposal.persona,
        proposed_system_prompt=proposal.system_prompt,
        rationale=proposal.rationale,
    )
    detail = {"cycle_id": cycle.pk, "findings": findings[:20]}
    _event(wish, WishEvent.Action.SUBMITTED, token_id=None, note=f"tuning cycle {cycle.pk}")
    _event(wish, WishEvent.Action.PROPOSED, token_id=None, detail={"rationale": proposal.rationale, **detail})
    _finish_cycle(cycle, status=TuningCycle.Status.HELD, kind=HistoryEntry.Kind.CYCLE_HELD)
    HistoryEntry.objects.filter(cycle=cycle, kind=HistoryEntry.Kind.CYCLE_HELD).update(
        wish=wish, detail={"rationale": proposal.rationale, **detail}
    )
    return wish


def queue_due_cycles() -> int:
    """The daily beat job: one scheduled cycle for the effective assistant of every widget whose
    master switch is on and whose gates are open. Returns how many were queued."""
    from apps.ai.models import AiSettings
    from apps.ai.selectors import effective_assistant

    queued = 0
    for settings_row in AiSettings.objects.filter(autonomous_tuning_enabled=True).select_related("widget"):
        widget = settings_row.widget
        assistant = effective_assistant(widget)
        if assistant is None or not selectors.gates(widget, assistant)["may_run"]:
            continue
        try:
            queue_cycle(widget=widget, assistant=assistant, token_id=None, trigger=TuningCycle.Trigger.SCHEDULED)
        except (CycleInProgress, TuningGateClosed, CredentialUnavailable, NoAssistant):
            continue
        queued += 1
    return queued


# --- wishes -----------------------------------------------------------------------------------------------

_ALLOWED = {
    Wish.Status.PROPOSING: ["reject"],
    Wish.Status.PROPOSED: ["approve", "reject"],
    Wish.Status.PROPOSAL_FAILED: ["reject"],
    Wish.Status.APPROVED: ["revert"],
    Wish.Status.REJECTED: [],
    Wish.Status.REVERTED: [],
}


def _refuse(wish: Wish, action: str) -> None:
    if wish.status == Wish.Status.PROPOSING and action == "approve":
        raise ProposalPending("The provider has not proposed the rewrite yet.", wish_status=wish.status)
    if action not in _ALLOWED[wish.status]:
        raise WishTransitionNotAllowed(
            f"A wish in status {wish.status} cannot be {action}d.",
            wish_status=wish.status,
            allowed=_ALLOWED[wish.status],
        )


def _event(wish: Wish, action: str, *, token_id: int | None, note: str = "", detail: dict | None = None) -> None:
    WishEvent.objects.create(
        widget_id=wish.widget_id, wish=wish, action=action, token_id=token_id, note=note, detail=detail or {}
    )


def _locked_wish(widget: Widget, wish: Wish) -> Wish:
    """The wish row locked, and only it (`of=self`: a join's FOR UPDATE would lock the assistant row
    too, in the opposite order to approve/revert, which lock the assistant first: a deadlock)."""
    return Wish.objects.select_for_update(of=("self",)).select_related("assistant").get(pk=wish.pk, widget=widget)


@transaction.atomic
def submit_wish(*, widget: Widget, assistant: Assistant | None, text: str, token_id: int | None) -> Wish:
    """Store the wish (`proposing`) and ask the provider for the rewrite after commit; at most
    WISH_BUDGET a widget (429 past it)."""
    assistant = _require_assistant(assistant)
    if not proposals.has_credential(widget, assistant):
        raise CredentialUnavailable("No active provider credential resolves for this assistant.")
    WISH_BUDGET.check(widget.pk, detail=f"At most {WISH_BUDGET.limit} wishes per hour per widget.")
    now = timezone.now()
    wish = Wish.objects.create(
        widget=widget,
        assistant=assistant,
        text=text,
        base_persona=assistant.persona,
        base_system_prompt=assistant.system_prompt,
        created_at=now,
        updated_at=now,
    )
    _event(wish, WishEvent.Action.SUBMITTED, token_id=token_id)
    transaction.on_commit(lambda: _dispatch_wish(wish.pk))
    return wish


def _dispatch_wish(wish_id: int) -> None:
    queueing.task("apps.learning.tasks.propose_wish").delay(wish_id)


def make_wish_proposal(*, wish_id: int) -> Wish | None:
    """The task: the provider's rewrite of the live pair, stored on the wish (`proposed`), or
    `proposal_failed` with the reason. A wish rejected meanwhile keeps its status."""
    wish = Wish.objects.select_related("widget", "assistant").filter(pk=wish_id).first()
    if wish is None or wish.status != Wish.Status.PROPOSING:
        return None
    widget, assistant = wish.widget, wish.assistant
    base = (assistant.persona, assistant.system_prompt)
    try:
        proposal = proposals.propose(widget, assistant, proposals.wish_messages(assistant, wish.text))
        error = ""
    except proposals.ProposalFailed as exc:
        proposal, error = None, exc.reason
    with transaction.atomic():
        wish = _locked_wish(widget, wish)
        if wish.status != Wish.Status.PROPOSING:
            return wish
        wish.updated_at = timezone.now()
        if proposal is None:
            wish.status, wish.proposal_error = Wish.Status.PROPOSAL_FAILED, error
            _event(wish, WishEvent.Action.PROPOSAL_FAILED, token_id=None, detail={"error": error})
        else:
            wish.status = Wish.Status.PROPOSED
            wish.base_persona, wish.base_system_prompt = base
            wish.proposed_persona, wish.proposed_system_prompt = proposal.persona, proposal.system_prompt
            wish.rationale = proposal.rationale
            _event(wish, WishEvent.Action.PROPOSED, token_id=None, detail={"rationale": proposal.rationale})
        wish.save()
    return wish


@transaction.atomic
def approve_wish(*, widget: Widget, wish: Wish, probation_hours: int, note: str, token_id: int | None) -> Wish:
    """Apply the stored proposal (never a provider call), as a `wish` version starting a probation
    of `probation_hours`. 409 `proposal_pending` before the proposal exists, `persona_changed` when
    the live pair is no longer the one the proposal was made against."""
    assistant = _lock(widget, wish.assistant)
    wish = _locked_wish(widget, wish)
    _refuse(wish, "approve")
    if (assistant.persona, assistant.system_prompt) != (wish.base_persona, wish.base_system_prompt):
        raise PersonaChanged("The persona or system prompt changed since the proposal was made; submit a new wish.")
    version = _apply_version(
        widget=widget,
        assistant=assistant,
        source=PersonaVersion.Source.WISH,
        persona=wish.proposed_persona,
        system_prompt=wish.proposed_system_prompt,
        token_id=token_id,
        probation_hours=probation_hours,
    )
    wish.status, wish.applied_version, wish.updated_at = Wish.Status.APPROVED, version, timezone.now()
    wish.save()
    _event(
        wish,
        WishEvent.Action.APPROVED,
        token_id=token_id,
        note=note,
        detail={"version": version.version, "probation_until": version.probation_until.isoformat()},
    )
    HistoryEntry.objects.create(
        widget=widget,
        assistant=assistant,
        kind=HistoryEntry.Kind.WISH_APPROVED,
        version=version.version,
        wish=wish,
        token_id=token_id,
        detail={"probation_hours": probation_hours},
    )
    return wish


@transaction.atomic
def reject_wish(*, widget: Widget, wish: Wish, token_id: int | None) -> Wish:
    wish = _locked_wish(widget, wish)
    _refuse(wish, "reject")
    wish.status, wish.updated_at = Wish.Status.REJECTED, timezone.now()
    wish.save()
    _event(wish, WishEvent.Action.REJECTED, token_id=token_id)
    return wish


@transaction.atomic
def revert_wish(*, widget: Widget, wish: Wish, token_id: int | None) -> Wish:
    """Put back the pair the approval replaced, as a `revert` version (ends its probation). 409
    `persona_changed` when the live pair is no longer the one the approval made."""
    assistant = _lock(widget, wish.assistant)
    wish = _locked_wish(widget, wish)
    _refuse(wish, "revert")
    applied = wish.applied_version
    if applied is None or (assistant.persona, assistant.system_prompt) != (applied.persona, applied.system_prompt):
        raise PersonaChanged("The persona or system prompt changed since the approval; revert a persona version.")
    version = _apply_version(
        widget=widget,
        assistant=assistant,
        source=PersonaVersion.Source.REVERT,
        persona=applied.previous_persona,
        system_prompt=applied.previous_system_prompt,
        token_id=token_id,
        reverted_to=applied.version,
        restored="previous",
    )
    wish.status, wish.revert_version, wish.updated_at = Wish.Status.REVERTED, version, timezone.now()
    wish.save()
    _event(wish, WishEvent.Action.REVERTED, token_id=token_id, detail={"version": version.version})
    HistoryEntry.objects.create(
        widget=widget,
        assistant=assistant,
        kind=HistoryEntry.Kind.WISH_REVERTED,
        version=version.version,
        wish=wish,
        token_id=token_id,
        detail={"reverted_to": applied.version},
    )
    return wish


def forget_demand(*, widget_id: int, questions: Iterable[str], before: datetime | None = None) -> int:
    """Forget the demand signals recorded from `questions` (visitor messages being erased); see
    demand.forget. Inside the caller's transaction."""
    return demand.forget(widget_id=widget_id, questions=questions, before=before)
