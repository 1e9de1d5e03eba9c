"""Who hears that an `Endpoint`'s rows settled: the app that owns the endpoint registers a callback in
its ready(); the engine runs it once a row of one of that app's endpoints reached a final state."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import transaction

logger = logging.getLogger(__package__)  # the engine's one logger, named as its package


# owner -> callbacks(endpoint ids) run after a row of one of its endpoints reached a final state.
_settled_hooks: dict[str, list[Callable[[set[int]], None]]] = {}


def on_endpoint_settled(owner: str, callback: Callable[[set[int]], None]) -> None:
    """Register (in the owner app's ready()) what runs when rows of the owner's endpoints settle."""
    hooks = _settled_hooks.setdefault(owner, [])
    if callback not in hooks:
        hooks.append(callback)


def _notify_settled(settled: set[tuple[str, int]]) -> None:
    """Run the owners' callbacks once the current transaction commits (at once outside one)."""
    if not settled:
        return
    by_owner: dict[str, set[int]] = {}
    for owner, endpoint_id in settled:
        by_owner.setdefault(owner, set()).add(endpoint_id)

    def run() -> None:
        for owner, ids in by_owner.items():
            for callback in _settled_hooks.get(owner, ()):
                try:
                    callback(ids)
                except Exception:
                    logger.exception("endpoint settled hook of %s failed", owner)

    transaction.on_commit(run)
