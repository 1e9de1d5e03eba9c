"""SLA policies (product-decisions.md "Routing that never loses a visitor"): their writes, and the
clocks a chat's policy starts and stops.

A chat takes its department's policy, else the widget's default. Due times are computed once, when
a clock starts (business seconds when the policy asks: apps.widget.selectors.add_open_seconds), so
the breach timer reads only the clocks already due through the partial index `sla_clock_running`,
however many chats are open. Changing or deleting a policy leaves the due times of running clocks
as they were computed; deleting one stops its running clocks undecided (they count neither as met
nor as breached)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from apps.audit import services as audit
from apps.chats.models import Chat
from apps.core import events
from apps.core.events import emit
from apps.core.models import Widget
from apps.widget import selectors as widget_selectors

from .errors import SlaDefaultExists, SlaDepartmentTaken
from .models import SlaClock, SlaPolicy

AUDIT = "sla_policy"  # audit rows: sla_policy.created, .changed, .deleted
SECONDS_RANGE = (60, 604800)
FIELDS = ("name", "department", "first_response_seconds", "next_response_seconds", "resolution_seconds")
SECONDS = {
    SlaClock.Kind.FIRST_RESPONSE: "first_response_seconds",
    SlaClock.Kind.NEXT_RESPONSE: "next_response_seconds",
    SlaClock.Kind.RESOLUTION: "resolution_seconds",
}


# --- the policies -----------------------------------------------------------------------------------------


def _conflict(widget: Widget, row: SlaPolicy) -> Exception | None:
    others = SlaPolicy.objects.filter(widget=widget, department_id=row.department_id).exclude(pk=row.pk)
    if row.department_id is None:
        others = SlaPolicy.objects.filter(widget=widget, department__isnull=True).exclude(pk=row.pk)
    if not others.exists():
        return None
    return _refusal(row)


def _refusal(row: SlaPolicy) -> Exception:
    if row.department_id is None:
        return SlaDefaultExists("The widget has a default SLA policy already (department_id null).")
    return SlaDepartmentTaken(f"Department {row.department_id} has an SLA policy already.")


def _save(widget: Widget, row: SlaPolicy, **kwargs: Any) -> None:
    """Save in a savepoint: a policy for the same department written meanwhile fails on the unique
    constraint and leaves the caller's transaction usable for the 409."""
    problem = _conflict(widget, row)
    if problem is not None:
        raise problem
    try:
        with transaction.atomic():
            row.save(**kwargs)
    except IntegrityError:
        raise _refusal(row) from None


def _apply(row: SlaPolicy, data: dict[str, Any]) -> None:
    for name, value in data.items():
        if name == "department_id":
            row.department = value  # the input's tenant-bound field gives the Department (or None)
        elif name in (*FIELDS, "business_hours_only"):
            setattr(row, name, value)


@transaction.atomic
def create_policy(*, widget: Widget, data: dict[str, Any]) -> SlaPolicy:
    """`data`: name, department_id (a Department of the widget or None), the three `*_seconds`
    (each None or 60..604800) and business_hours_only. 409 when the department (or the default)
    has a policy already."""
    row = SlaPolicy(widget=widget)
    _apply(row, data)
    assert row.department is None or row.department.widget_id == widget.pk
    _save(widget, row, force_insert=True)
    audit.record_row(widget=widget, target_type=AUDIT, target_id=row.pk, before=None, after=audit.values(row))
    events.emit(widget, events.WIDGET_CONFIG_CHANGED)  # `widget_has_policies` is cached with the config
    return row


@transaction.atomic
def update_policy(*, widget: Widget, policy: SlaPolicy, changes: dict[str, Any]) -> SlaPolicy:
    """Merge `changes` (any subset of create's members) into the policy. Running clocks keep the due
    times they started with."""
    assert policy.widget_id == widget.pk
    row = SlaPolicy.objects.select_for_update().get(pk=policy.pk, widget=widget)
    before = audit.values(row)
    _apply(row, changes)
    assert row.department is None or row.department.widget_id == widget.pk
    row.updated_at = timezone.now()
    _save(widget, row)
    audit.record_row(widget=widget, target_type=AUDIT, target_id=row.pk, before=before, after=audit.values(row))
    return row


@transaction.atomic
def delete_policy(*, widget: Widget, policy: SlaPolicy) -> None:
    """Delete the policy; its running clocks stop undecided (no breach for a policy that is gone)."""
    assert policy.widget_id == widget.pk
    row = SlaPolicy.objects.select_for_update().filter(pk=policy.pk, widget=widget).first()
    if row is None:
        return
    before = audit.values(row)
    row.delete()
    SlaClock.objects.filter(widget=widget, policy_id=policy.pk, stopped_at__isnull=True).update(
        stopped_at=timezone.now()
    )
    audit.record_row(widget=widget, target_type=AUDIT, target_id=policy.pk, before=before, after=None)
    events.emit(widget, events.WIDGET_CONFIG_CHANGED)  # `widget_has_policies` is cached with the config


# How long a process trusts its cached "this widget has SLA policies" (a policy created or deleted
# purges it at once).
POLICIES_TTL = 3600


def widget_has_policies(widget: Widget) -> bool:
    """Whether the widget has any SLA policy, read with the widget config's cache: every message
    asks, and a widget without policies (nor, then, running clocks: deleting a policy stops them)
    pays no statement for SLAs."""
    return bool(
        widget_selectors.cached_for_config(
            widget=widget,
            name="sla-policies",
            build=lambda: SlaPolicy.objects.filter(widget=widget).exists(),
            ttl=POLICIES_TTL,
        )
    )


def policy_for(chat: Chat) -> SlaPolicy | None:
    """The chat's policy: its department's, else the widget's default (one statement)."""
    rows = SlaPolicy.objects.filter(widget_id=chat.widget_id)
    if chat.department_id is None:
        rows = rows.filter(department__isnull=True)
    else:
        rows = rows.filter(Q(department_id=chat.department_id) | Q(department__isnull=True))
    found = sorted(rows, key=lambda p: p.department_id is None)
    return found[0] if found else None


# --- the clocks -------------------------------------------------------------------------------------------


def due_at(widget: Widget, policy: SlaPolicy, start: datetime, seconds: int) -> datetime:
    """When a clock started at `start` for `seconds` is due: plain seconds, or with
    `business_hours_only` seconds of the widget's open time."""
    if policy.business_hours_only:
        return widget_selectors.add_open_seconds(widget, start, seconds)
    return start + timedelta(seconds=seconds)


def start_clock(*, widget: Widget, chat: Chat, policy: SlaPolicy, kind: str, now: datetime) -> SlaClock | None:
    """Start the chat's `kind` clock under `policy` (None when the policy sets no time for it)."""
    seconds = getattr(policy, SECONDS[kind])
    if seconds is None:
        return None
    clock = SlaClock(
        widget=widget,
        chat=chat,
        policy_id=policy.pk,
        kind=kind,
        started_at=now,
        due_at=due_at(widget, policy, now, seconds),
    )
    try:
        with transaction.atomic():
            clock.save(force_insert=True)
    except IntegrityError:  # this chat's clock of this kind and due time exists: started already
        return None
    return clock


def breach(*, widget: Widget, clock: SlaClock, agent_id: int | None, now: datetime) -> bool:
    """Mark a running clock breached and emit sla.breached, once: a conditional UPDATE, so of two
    concurrent callers (two beat runs, the beat and the answer that stops the clock) exactly one
    changes the row and emits. True when this call did."""
    won = SlaClock.objects.filter(pk=clock.pk, breached_at__isnull=True, stopped_at__isnull=True).update(
        breached_at=now, met=False, agent_id=agent_id
    )
    if not won:
        return False
    clock.breached_at, clock.met, clock.agent_id = now, False, agent_id
    emit(
        widget,
        events.SLA_BREACHED,
        objects={"clock": clock},
        chat_id=clock.chat_id,
        policy_id=clock.policy_id,
        kind=clock.kind,
    )
    return True


def stop_clocks(*, widget: Widget, chat: Chat, kinds: tuple[str, ...], now: datetime, decide: bool = True) -> int:
    """Stop the chat's running clocks of `kinds`: met when stopped by the due time; one past its due
    time that the timer has not reached yet is breached now (its one sla.breached), so a late
    answer never counts as met. A breached clock keeps `met` false. The routing owner is noted
    for the per-agent statistics. `decide=False` (a response clock at the close: nobody answered,
    nobody was late yet) stops a clock not yet due without counting it as met."""
    stopped = 0
    # Locked: a beat run marking one of them meanwhile waits, then finds it stopped.
    running = SlaClock.objects.select_for_update().filter(chat_id=chat.pk, kind__in=kinds, stopped_at__isnull=True)
    for clock in running.order_by("id"):
        if clock.breached_at is None and now > clock.due_at:
            breach(widget=widget, clock=clock, agent_id=chat.agent_id, now=now)
        changes = {"stopped_at": now}
        met = clock.breached_at is None and decide
        if met:
            changes.update(met=True, agent_id=chat.agent_id)
        stopped += SlaClock.objects.filter(pk=clock.pk).update(**changes)
        if met:
            clock.stopped_at, clock.met, clock.agent_id = now, True, chat.agent_id
            emit(widget, events.SLA_MET, objects={"clock": clock, "chat": chat}, chat_id=chat.pk, kind=clock.kind)
    return stopped


# --- the breach timer -------------------------------------------------------------------------------------

BREACH_BATCH = 200


def due_clocks(*, now: datetime, clock_id: int | None = None):
    """The running clocks due by `now`, oldest due first: the partial index `sla_clock_running`
    holds exactly the rows this filters on."""
    due = SlaClock.objects.filter(stopped_at__isnull=True, breached_at__isnull=True, due_at__lte=now)
    if clock_id is not None:
        due = due.filter(pk=clock_id)
    return due.order_by("due_at", "id")


def breach_due(*, now: datetime | None = None, clock_id: int | None = None, batch: int = BREACH_BATCH) -> int:
    """Breach the running clocks due by `now` (or the one clock `clock_id`), each in a transaction of
    its own: a breach adds to the report rollups (apps.stats), shared rows that one chat's change
    locks in a fixed order, so a transaction holding two chats' rows could wait in a cycle on one
    holding two others. Each batch is one read of the partial index `sla_clock_running`; a clock is
    then locked with SKIP LOCKED (a concurrent run, or the answer stopping it, holds it: skipped)
    and breached by the conditional UPDATE of `breach` with its event, so two runs never emit twice
    for one clock. Returns how many clocks this call breached."""
    now = now or timezone.now()
    done = 0
    while True:
        ids = list(due_clocks(now=now, clock_id=clock_id).values_list("pk", flat=True)[:batch])
        breached = 0
        for pk in ids:
            with transaction.atomic():
                locked = due_clocks(now=now, clock_id=pk).select_related("widget", "chat")
                clock = locked.select_for_update(skip_locked=True, of=("self",)).first()
                if clock is not None:
                    breached += breach(widget=clock.widget, clock=clock, agent_id=clock.chat.agent_id, now=now)
        done += breached
        # A full batch that another run took whole is that run's to finish.
        if len(ids) < batch or not breached:
            return done


# --- the warning before a breach --------------------------------------------------------------------------

# A clock warns when it is this close to its due time, or a fifth of its length for a short clock.
WARN_BEFORE = timedelta(minutes=5)
WARN_SHARE = 0.2


def warn_window(clock: SlaClock) -> timedelta:
    return min(WARN_BEFORE, (clock.due_at - clock.started_at) * WARN_SHARE)


def warn_due(*, now: datetime | None = None, batch: int = BREACH_BATCH) -> list[SlaClock]:
    """Mark warned the running clocks within their warning window (min(5 min, 20 % of the clock's
    length) before its due time) and return those this call marked, their chats loaded. A
    conditional UPDATE per clock: two runs never warn twice for one clock. The candidates are read
    through the partial index `sla_clock_running` (due in the next WARN_BEFORE)."""
    now = now or timezone.now()
    candidates = (
        SlaClock.objects.filter(
            stopped_at__isnull=True,
            breached_at__isnull=True,
            warned_at__isnull=True,
            due_at__gt=now,
            due_at__lte=now + WARN_BEFORE,
        )
        .select_related("widget", "chat")
        .order_by("due_at", "id")[:batch]
    )
    warned = []
    for clock in candidates:
        if clock.due_at - now > warn_window(clock):
            continue
        won = SlaClock.objects.filter(
            pk=clock.pk, warned_at__isnull=True, stopped_at__isnull=True, breached_at__isnull=True
        ).update(warned_at=now)
        if won:
            clock.warned_at = now
            warned.append(clock)
    return warned
