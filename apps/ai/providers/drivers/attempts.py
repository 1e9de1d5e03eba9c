"""One walk's attempts: `_Call` records one `AttemptInfo` per provider HTTP operation."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from .. import transport
from ..types import AttemptInfo, ProviderConfig
from .classification import classify
from .defaults import _OperationsSpent
from .sdks import T

logger = logging.getLogger("apps.ai.providers")

# --- one walk's attempts -------------------------------------------------------------------------


class _Call:
    """The attempts of one public call (a chain walk)."""

    def __init__(self) -> None:
        self.attempts: list[AttemptInfo] = []

    def _record(self, config: ProviderConfig, operation: str, outcome: str, status: int | None, started: float):
        info = AttemptInfo(
            provider=config.provider,
            credential_id=config.credential_id,
            outcome=outcome,
            status=status,
            duration_ms=(time.monotonic() - started) * 1000,
            operation=operation,
        )
        self.attempts.append(info)
        logger.info(
            "ai provider %s %s: %s",
            config.provider,
            operation,
            outcome,
            extra={
                "ai_provider": config.provider,
                "ai_credential_id": config.credential_id,
                "ai_operation": operation,
                "ai_outcome": outcome,
                "ai_status": status,
                "ai_duration_ms": round(info.duration_ms, 1),
            },
        )

    def timed(self, config: ProviderConfig, operation: str, fn: Callable[[], T]) -> T:
        started = time.monotonic()
        try:
            result = fn()
        except Exception as exc:
            error = classify(exc, config.provider)
            if error is None:
                raise
            if not isinstance(error, _OperationsSpent):
                self._record(config, operation, error.kind, error.status, started)
            raise error from None
        self._record(config, operation, "ok", 200, started)
        return result

    async def atimed(self, config: ProviderConfig, operation: str, fn: Callable[[], Awaitable[T]]) -> T:
        started = time.monotonic()
        budget = transport.current_budget.get()
        try:
            if budget is not None:
                # Cancels the await itself at the deadline, whatever the peer does.
                async with asyncio.timeout(max(budget.remaining(), 0.0)):
                    result = await fn()
            else:
                result = await fn()
        except Exception as exc:
            error = classify(exc, config.provider)
            if error is None:
                raise
            if not isinstance(error, _OperationsSpent):
                self._record(config, operation, error.kind, error.status, started)
            raise error from None
        self._record(config, operation, "ok", 200, started)
        return result
