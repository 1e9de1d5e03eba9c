"""What a rule's actions cause never triggers rules again: the runtime runs a rule's actions inside
`caused_by_rule()`, and the rules' event handler (apps.automation.handlers) skips every event emitted
while it is set. A context variable, so it covers exactly the actions' own calls on this thread (or
task), whatever services they go through, and nothing another request does meanwhile."""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

_rule_running: contextvars.ContextVar[bool] = contextvars.ContextVar("automation_rule_running", default=False)


@contextmanager
def caused_by_rule() -> Iterator[None]:
    token = _rule_running.set(True)
    try:
        yield
    finally:
        _rule_running.reset(token)


def rule_running() -> bool:
    return _rule_running.get()
