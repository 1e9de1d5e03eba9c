"""Who hears that an `Endpoint`'s rows settled: the app that owns the endpoint provides the
`endpoint_settled` port (apps.core.ports) keyed by its owner name; the engine calls it once a row of
one of that app's endpoints reached a final state; an endpoint kind hears which of its rows failed for
good."""

from __future__ import annotations

import logging

from django.db import transaction

from apps.core import ports

from .kinds import kind_of

logger = logging.getLogger(__package__)  # the engine's one logger, named as its package


def _notify_settled(settled: set[tuple[str, int]]) -> None:
    """Call the owners' providers once the current transaction commits (at once outside one)."""
    if not settled:
        return
    by_owner: dict[str, set[int]] = {}
    for owner, endpoint_id in settled:
        by_owner.setdefault(owner, set()).add(endpoint_id)

    def run() -> None:
        for owner, ids in by_owner.items():
            try:
                ports.lookup(ports.ENDPOINT_SETTLED, key=owner)(ids)
            except Exception:
                logger.exception("endpoint settled hook of %s failed", owner)

    transaction.on_commit(run)


def _notify_failed(rows: list) -> None:
    """Hand the rows that failed for good to their endpoint kinds' `failed` (apps.webhooks.delivery
    .kinds), once the current transaction commits (at once outside one)."""
    if not rows:
        return
    by_kind: dict[str, list] = {}
    for row in rows:
        by_kind.setdefault(row.endpoint.owner, []).append(row)

    def run() -> None:
        for owner, failed in by_kind.items():
            try:
                kind_of(failed[0]).failed(failed)
            except Exception:
                logger.exception("failed-rows hook of %s failed", owner)

    transaction.on_commit(run)
