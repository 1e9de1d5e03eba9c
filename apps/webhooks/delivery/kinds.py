"""Endpoint kinds: what differs between the targets the engine sends to. A subscription and an
external operator's endpoint are sent to the standard way; a higher app whose endpoints need other
headers or another policy (the compat Bot API's CLIENT_MESSAGEs: 3 attempts of 3 s, a short wait,
then the chat goes to a person) provides an `EndpointKind` for its `Endpoint.owner` through the
`endpoint_kind` port. Everything else (lease, signing, the attempt log, retries through the sweeper,
endpoint modes) is the engine's, the same for every kind."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from apps.core import ports

from ..models import Delivery


class Undeliverable(Exception):
    """Raised by a kind's `request`: nothing can be sent to this row's target any more (a channel
    switched off, a credential gone); the row fails for good with `reason` as its error."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass
class Request:
    """What one attempt sends, when a kind builds it."""

    url: str
    body: bytes
    headers: dict[str, str]


@dataclass
class Verdict:
    """A kind's reading of an answer: `error` empty when it was accepted; `permanent` when no retry
    can help; `retry_after` seconds the receiver asked for (the next attempt waits at least that)."""

    error: str
    permanent: bool = False
    retry_after: float | None = None


class EndpointKind:
    """One owner's policy, subclassed by the owner's app (its instance provides the port). An
    attribute left None takes the engine's standard value, read when the attempt runs (so a test
    that replaces `send.TIMEOUT` or `record.MAX_ATTEMPTS` reaches every kind that keeps it).

    - `metric`: the `kind` label of the attempts counted in /metrics.
    - `headers`: added to (or replacing) the standard ones; the signatures are always the engine's.
    - `max_attempts`: attempts before a row fails for good.
    - `max_in_flight`: attempts of one endpoint in flight at once (1: one at a time, in order).
    - `timeout` (connect, read) and `deadline`: one attempt's limits.
    - `prepare(rows)`: on the run's own thread, after the rows were leased and loaded (database
      reads allowed, one query a batch): {row pk: what `request` needs}, set on each row as
      `row.prepared`.
    - `request(row)`: the attempt's `Request` (no database work: it may run on the outbound thread),
      or None for the standard signed POST of the row's body to its endpoint; raises `Undeliverable`.
    - `verdict(status_code, content, headers)`: how an answer reads, or None for the standard
      reading (2xx accepted, anything else a failed attempt).
    - `retry_wait(n)`: seconds to wait after failed attempt n (None: the standard waits).
    - `failed(rows)`: the rows that failed for good, once their record is committed (each loaded
      with its `endpoint`); an exception is logged, never raised to the engine."""

    metric = "webhook"
    headers: Mapping[str, str] = MappingProxyType({})
    max_attempts: int | None = None
    max_in_flight: int | None = None
    timeout: tuple[float, float] | None = None
    deadline: float | None = None

    def prepare(self, rows: list[Delivery]) -> dict[int, Any]:
        return {}

    def request(self, row: Delivery) -> Request | None:
        return None

    def verdict(self, status_code: int, content: bytes, headers: Mapping[str, str]) -> Verdict | None:
        return None

    def retry_wait(self, failed_attempt: int) -> float | None:
        return None

    def failed(self, rows: list[Delivery]) -> None:
        return None


STANDARD = EndpointKind()


def kind_of(delivery: Delivery) -> EndpointKind:
    """The kind a loaded row is sent as: its endpoint owner's, else the standard one."""
    if not delivery.endpoint_id:
        return STANDARD
    return ports.lookup(ports.ENDPOINT_KIND, key=delivery.endpoint.owner) or STANDARD


def prepare(rows: list[Delivery]) -> None:
    """Each row's `prepared` (what its kind's `request` needs), one `prepare` call per kind."""
    by_kind: dict[int, tuple[EndpointKind, list[Delivery]]] = {}
    for row in rows:
        if row.endpoint_id:
            kind = kind_of(row)
            if kind is not STANDARD:
                by_kind.setdefault(id(kind), (kind, []))[1].append(row)
    for kind, mine in by_kind.values():
        prepared = kind.prepare(mine)
        for row in mine:
            row.prepared = prepared.get(row.pk)
