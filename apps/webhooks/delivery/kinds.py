"""Endpoint kinds: what differs between the targets the engine sends to. A subscription and an
external operator's endpoint are sent to the standard way; a higher app whose endpoints need other
headers or another policy (the compat Bot API's CLIENT_MESSAGEs: 3 attempts of 3 s, a short wait,
then the chat goes to a person) provides an `EndpointKind` for its `Endpoint.owner` through the
`endpoint_kind` port. Everything else (lease, signing, the attempt log, retries through the sweeper,
endpoint modes) is the engine's, the same for every kind."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from apps.core import ports

from ..models import Delivery


class EndpointKind:
    """One owner's policy, subclassed by the owner's app (its instance provides the port). An
    attribute left None takes the engine's standard value, read when the attempt runs (so a test
    that replaces `send.TIMEOUT` or `record.MAX_ATTEMPTS` reaches every kind that keeps it).

    - `headers`: added to (or replacing) the standard ones; the signatures are always the engine's.
    - `max_attempts`: attempts before a row fails for good.
    - `timeout` (connect, read) and `deadline`: one attempt's limits.
    - `retry_wait(n)`: seconds to wait after failed attempt n (None: the standard waits).
    - `failed(rows)`: the rows that failed for good, once their record is committed (each loaded
      with its `endpoint`); an exception is logged, never raised to the engine."""

    headers: Mapping[str, str] = MappingProxyType({})
    max_attempts: int | None = None
    timeout: tuple[float, float] | None = None
    deadline: float | None = None

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
