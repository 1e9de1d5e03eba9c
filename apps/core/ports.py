"""Ports: the one way a lower app asks a higher one for an answer. Apps import downward only
(docs/architecture.md "Layers"); where a lower app needs a value or a decision only a higher app
has, the lower app uses a port declared here and the higher app provides it.

- A port is declared once, below, with `declare()`: its name, what it answers (the first line of
  its `doc`) and its signature, the app(s) that provide it and the app that uses it, and what the
  lookup gives when nothing is provided (`default`). A keyed port (`key="kind"`) takes one provider
  per key (the AI and the external operators each answer as a machine); a plain port takes one.
- The providing app calls `provide(PORT, impl)` (`provide(PORT, impl, key=...)` for a keyed port)
  in its `AppConfig.ready()`. `impl` must come from a declared provider app, so the architecture
  page's table (kept in step with these declarations by tests/test_docs.py) says who answers.
- The lower app calls `lookup(PORT)` (`lookup(PORT, key=...)`) and gets the provider, or the
  port's `default` when there is none; `providers(PORT)` gives a keyed port's providers by key.

A port returns something to its caller. What only announces a change ("a chat closed") is an event
(apps.core.events): any number of handlers, none of which answers back.

Tests replace a provider only through `override(PORT, impl)` (a context manager; `impl=None`: as
if nothing were provided), or the `provide_port` fixture of tests.support, which undoes it
after the test.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ImproperlyConfigured


@dataclass(frozen=True)
class Port:
    name: str
    doc: str
    provided_by: tuple[str, ...]
    used_by: str
    key: str | None = None
    default: Any = None

    @property
    def meaning(self) -> str:
        return self.doc.strip().splitlines()[0]


_declared: dict[str, Port] = {}
# (port name, key or None) -> the provider
_provided: dict[tuple[str, str | None], Any] = {}


def declare(
    name: str, doc: str, *, provided_by: tuple[str, ...], used_by: str, key: str | None = None, default: Any = None
) -> Port:
    if name in _declared:
        raise ImproperlyConfigured(f"port {name!r} is declared twice")
    port = Port(name=name, doc=doc, provided_by=provided_by, used_by=used_by, key=key, default=default)
    _declared[name] = port
    return port


def declared() -> list[Port]:
    """Every port, in declaration order (the architecture page's table lists them)."""
    return list(_declared.values())


def provide(port: Port, impl: Any, *, key: str | None = None) -> None:
    """Called by a providing app in its `AppConfig.ready()`; providing again replaces (ready() may
    run twice in tests)."""
    _check_key(port, key)
    module = getattr(impl, "__module__", None) or type(impl).__module__
    if not any(module == f"apps.{app}" or module.startswith(f"apps.{app}.") for app in port.provided_by):
        raise ImproperlyConfigured(
            f"port {port.name!r} is provided by {', '.join(port.provided_by)} (declared in apps.core.ports), "
            f"not by {module}"
        )
    _provided[(port.name, key)] = impl


def lookup(port: Port, *, key: str | None = None) -> Any:
    """The provider of `port` (of `key`, for a keyed port), or the port's default."""
    _check_key(port, key)
    return _provided.get((port.name, key), port.default)


def providers(port: Port) -> dict[str, Any]:
    """A keyed port's providers, {key: provider} sorted by key."""
    if port.key is None:
        raise TypeError(f"port {port.name!r} is not keyed: use lookup()")
    mine = [(key, impl) for (name, key), impl in _provided.items() if name == port.name]
    return dict(sorted(mine, key=lambda pair: pair[0]))


@contextmanager
def override(port: Port, impl: Any, *, key: str | None = None) -> Iterator[None]:
    """Tests: `impl` answers `port` inside the block (None: nothing does); the provider before it
    answers again afterwards."""
    _check_key(port, key)
    slot = (port.name, key)
    missing = object()
    before = _provided.pop(slot, missing)
    if impl is not None:
        _provided[slot] = impl
    try:
        yield
    finally:
        _provided.pop(slot, None)
        if before is not missing:
            _provided[slot] = before


def _check_key(port: Port, key: str | None) -> None:
    if port.name not in _declared or _declared[port.name] is not port:
        raise ImproperlyConfigured(f"port {port.name!r} is not declared in apps.core.ports")
    if (port.key is None) != (key is None):
        raise TypeError(
            f"port {port.name!r} takes no key" if port.key is None else f"port {port.name!r} needs its {port.key}"
        )


# --- the ports -------------------------------------------------------------------------------------


def _not_dispatched(chat, message) -> bool:
    return False


EXTERNAL_ANSWERER = declare(
    "external_answerer",
    """Hands a visitor message to the widget's active external operators.

    `fn(chat, message) -> bool`: True when they took it (the built-in AI then does nothing), False
    when the widget has none active. The AI reply worker (apps.ai.routing) asks it first; a failing
    provider raises and the worker's retry runs it again, so it must be idempotent per message.
    Without a provider: False.""",
    provided_by=("external",),
    used_by="ai",
    default=_not_dispatched,
)

MACHINE_ANSWERER = declare(
    "machine_answerer",
    """Whether a machine (the AI, external operators) answers the widget's visitors now.

    Keyed by `kind` (`ai`, `external`): `check(widget) -> bool`. The visitor config's `online`
    counts them (apps.chats.visitor); a check that raises counts as not answering. Without
    providers no machine answers.""",
    provided_by=("ai", "external"),
    used_by="chats",
    key="kind",
)

ENDPOINT_SETTLED = declare(
    "endpoint_settled",
    """Tells an endpoint's owner which of its endpoints had queued calls reach a final state.

    Keyed by the endpoint's `owner`: `callback(endpoint_ids: set[int]) -> None`, run after the
    settling transaction commits (apps.webhooks.delivery); an exception is logged, never raised to
    the delivery engine. Without a provider for the owner nothing runs.""",
    provided_by=("external",),
    used_by="webhooks",
    key="owner",
    default=lambda endpoint_ids: None,
)

ENDPOINT_KIND = declare(
    "endpoint_kind",
    """How the delivery engine sends to one owner's endpoints: headers, attempts, waits, give-up.

    Keyed by the endpoint's `owner`: an `apps.webhooks.delivery.kinds.EndpointKind`, read on every
    attempt (apps.webhooks.delivery). Without a provider for the owner the endpoint is sent to as a
    webhook subscription is: the same headers, 4 attempts, waits of 10, 20 and 40 s.""",
    provided_by=("compat", "channels"),
    used_by="webhooks",
    key="owner",
)

AGENT_RETURN = declare(
    "agent_return",
    """The status a banned machine agent returns to when restored, or None when it may not return.

    Keyed by the agent's `type` (`webhook`): `fn(agent) -> "active" | "relaxation" | None`, asked by
    `restore_agent` (apps.agents.services) with the agent's row locked. None refuses the restore (409
    `agent_not_restorable`, nothing changes): the machine behind the agent is gone for good, as a
    revoked external operator is. Without a provider for the type the agent returns `active`.""",
    provided_by=("external",),
    used_by="agents",
    key="type",
    default=lambda agent: "active",
)

WIDGET_CREDENTIAL = declare(
    "widget_credential",
    """Whether the widget has an active widget-wide AI provider credential.

    `check(widget) -> bool`. The widget's translation status reports `credential_missing` without
    one (apps.widget.selectors). Without a provider: False (nothing can translate).""",
    provided_by=("ai",),
    used_by="widget",
    default=lambda widget: False,
)


class _NoAi:
    """Nothing embeds, no assistants, AI switched off."""

    def embedder(self, widget):
        return None

    def assistants(self, widget) -> list:
        return []

    def ai_enabled(self, widget) -> bool:
        return False


KB_AI = declare(
    "kb_ai",
    """The widget's embedder, assistants and AI switch, as the knowledge base needs them.

    An `apps.kb.hooks.AiHooks`: `embedder(widget) -> Embedder | None`, `assistants(widget) ->
    list[AssistantInfo]`, `ai_enabled(widget) -> bool` (apps.kb.hooks describes each). Without a
    provider nothing embeds, there are no assistants and the AI is off.""",
    provided_by=("ai",),
    used_by="kb",
    default=_NoAi(),
)

SIGNING_BINDING = declare(
    "signing_binding",
    """The bound token and signing secret of the widget's integration, for signed calls.

    `fn(widget) -> apps.core.signed.SigningBinding | None`. The signed-envelope verifier
    (apps.core.signed) answers 403 `token_not_bound` without one. Without a provider: None (every
    signed call is refused).""",
    provided_by=("ai",),
    used_by="core",
    default=lambda widget: None,
)


class _NoQueue:
    """Nobody waits in a queue: routing is not installed."""

    def position(self, chat) -> tuple[None, None]:
        return None, None

    def shows(self, widget) -> bool:
        return False


VISITOR_QUEUE = declare(
    "visitor_queue",
    """The visitor's place in the routing queue and whether the widget shows it.

    An object with `position(chat) -> (position, estimated_wait_seconds)` (both None when the chat
    does not wait, or the widget's `show_queue_position` is off; 1 is the next to be served) and
    `shows(widget) -> bool` (the setting, which the visitor config carries). The visitor API's queue
    read and config ask it (apps.chats.visitor). Without a provider nobody is queued and nothing
    is shown.""",
    provided_by=("routing",),
    used_by="chats",
    default=_NoQueue(),
)
