"""Each widget's share of the `ai` worker: at most AI_WIDGET_SLOTS of a widget's AI tasks (answers
and hand-over summaries) wait on its provider at once, across every `ai` worker process.

The `ai` worker's threads are shared by every tenant, and a task holds its thread for as long as the
provider takes (up to its deadline). Without a cap, one widget whose model server answers late and
whose visitors write many messages would take every thread, and every other widget's answers would
wait behind it. Here:

- `take(widget_id)` takes one of the widget's slots (`ratelimit.Slots`, in the cache: Redis, or the
  embedded default's file cache, so the cap counts across processes) just before the provider is
  asked; `give_back` frees it when the task is done. A slot expires by itself SLOT_TTL_SECONDS after
  it was taken, should its worker die meanwhile.
- a task whose widget holds every slot takes none: it sends itself again `wait_seconds` later (a
  countdown the broker and the worker keep, with no thread held) and ends. Its message is marked
  waiting for that long (plus a margin), so the beat job `redrive` does not send it a second time; a
  waiting task the broker lost is re-driven once the mark runs out.
- a cache that does not answer counts nothing: the task goes ahead, as it did before the cap (the
  provider deadline still bounds it).
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache

from apps.core.ratelimit import Slot, Slots, SlotStoreUnavailable

from . import limits

logger = logging.getLogger(__name__)

# A slot outlives its holder's longest provider wait by this much: the claim lease (the deadline plus
# the task's own work) and a margin for the retrieval's embedding call.
SLOT_TTL_SECONDS = int(limits.CLAIM_LEASE.total_seconds()) + 30
# How long a task over its widget's cap waits before it tries again: a tenth of how long its message
# has waited so far, within these bounds (a burst of one widget's visitors on a prompt provider finds a
# slot free within a second; a slow provider's queue asks every few seconds), give or take a fifth so
# the waiting tasks of one widget do not all come back at once.
WAIT_SECONDS = (0.5, 3.0)
_WAIT_SHARE = 0.1
_WAIT_JITTER = 0.2
# The waiting mark outlives the wait by this much (the send and the worker's pick-up).
_MARK_MARGIN_SECONDS = 30
_WAITING_KEY = "ai:waiting:{}"


def slots() -> Slots:
    return Slots("ai-task", settings.AI_WIDGET_SLOTS, ttl=SLOT_TTL_SECONDS)


@dataclass(frozen=True)
class Turn:
    """The outcome of `take`: `granted` when the task may ask the provider now (`slot` is None when
    the cache did not answer and nothing was counted)."""

    granted: bool
    slot: Slot | None = None


def take(widget_id: int) -> Turn:
    """One of the widget's slots, or a refused turn when all AI_WIDGET_SLOTS are taken."""
    try:
        slot = slots().acquire(widget_id)
    except SlotStoreUnavailable:
        logger.warning("AI task slots unreadable; widget %s asks its provider uncounted", widget_id)
        return Turn(granted=True)
    return Turn(granted=slot is not None, slot=slot)


def give_back(turn: Turn | None) -> None:
    if turn is not None and turn.slot is not None:
        slots().release(turn.slot)


def wait_seconds(waited: float) -> float:
    """The countdown of a task whose message has waited `waited` seconds so far."""
    low, high = WAIT_SECONDS
    spread = random.uniform(1 - _WAIT_JITTER, 1 + _WAIT_JITTER)  # noqa: S311 - spreading retries, not a secret
    return min(max(waited * _WAIT_SHARE, low), high) * spread


def mark_waiting(message_id: int, seconds: float) -> None:
    """The message's task waits for a slot (`redrive` leaves it alone meanwhile)."""
    try:
        cache.set(_WAITING_KEY.format(message_id), 1, timeout=int(seconds) + _MARK_MARGIN_SECONDS)
    except Exception:  # noqa: BLE001 - without the mark the re-drive may send it twice: answered once all the same
        logger.warning("AI waiting mark not set for message %s", message_id)


def clear_waiting(message_id: int) -> None:
    try:
        cache.delete(_WAITING_KEY.format(message_id))
    except Exception:  # noqa: BLE001 - the mark expires by itself
        logger.warning("AI waiting mark not cleared for message %s", message_id)


def waiting(message_ids: list[int]) -> set[int]:
    """Those of `message_ids` whose task waits for a slot now."""
    if not message_ids:
        return set()
    keys = {_WAITING_KEY.format(pk): pk for pk in message_ids}
    try:
        held = cache.get_many(list(keys))
    except Exception:  # noqa: BLE001 - unreadable: re-drive them all (answered once all the same)
        return set()
    return {keys[key] for key in held}
