"""What the AI operator answers a widget's visitors with, read once per process and configuration
version: the AI settings, the effective assistant, its active AI operator and the provider chain
(credentials decrypted). The knowledge-base index's pattern (apps.kb.index): a version stored with
the data, changed in the writer's transaction, compared on every use.

`AiSettings.config_version` changes in the transaction of every write to the widget's AI settings,
assistants, AI operators and credentials: the services that write them (apps.ai.services, which the
API, the console, the admin and self-learning call) call `bump`, and a change of an AI operator's
agent row (apps.agents.services, for any caller) reaches `agent_changed` through the agents' profile
event. A new writer of these rows calls `bump` too. A task reads the version with its first query and
gets the configuration from here without a statement while it is unchanged. A widget without the
settings row has the AI off: nothing is cached for it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from apps.agents.models import Agent
from apps.core.models import Widget

from . import selectors
from .models import AiSettings, Assistant, new_config_version


@dataclass(frozen=True)
class AnswerConfig:
    version: int
    settings: AiSettings
    assistant: Assistant | None
    operator: Agent | None
    chain: list  # of ProviderConfig; empty: nothing resolves


_lock = threading.Lock()
_cache: dict[int, AnswerConfig] = {}  # widget id -> its configuration (a handful of rows a widget)


def answer_config(widget: Widget, *, version: int | None) -> AnswerConfig:
    """The widget's configuration at `version` (its settings row's `config_version`, read by the
    caller; None: no row). Loaded at most once per process and version."""
    if version is None:
        return AnswerConfig(version=0, settings=AiSettings(widget=widget), assistant=None, operator=None, chain=[])
    with _lock:
        entry = _cache.get(widget.pk)
    if entry is not None and entry.version == version:
        return entry
    entry = _load(widget, version)
    with _lock:
        _cache[widget.pk] = entry
    return entry


def _load(widget: Widget, version: int) -> AnswerConfig:
    # Read after the version: what is cached is at least as new as the version it is cached under
    # (a write that commits meanwhile changes the version, and the next task loads again).
    ai_settings = selectors.get_settings(widget)
    assistant = selectors.effective_assistant(widget)
    operator = None
    if assistant is not None:
        from .runtime import active_operator  # the runtime reads this module

        operator = active_operator(widget, assistant)
    chain = selectors.resolve_chain(widget, operator=operator, assistant=assistant) if operator else []
    return AnswerConfig(version=version, settings=ai_settings, assistant=assistant, operator=operator, chain=chain)


def clear_cache() -> None:
    with _lock:
        _cache.clear()


# --- the version ------------------------------------------------------------------------------------------


def bump(widget_id: int) -> None:
    """A write to the widget's AI configuration: every process loads it again on its next answer."""
    AiSettings.objects.filter(widget_id=widget_id).update(config_version=new_config_version())


def agent_changed(event) -> None:
    """agent.profile_changed, in the agents service's transaction: an AI operator's row (its name,
    status, assistant or avatar) is part of what the AI answers with."""
    agent = event.obj("agent")
    if agent is None:
        agent = Agent.objects.filter(pk=event.data["operator_id"]).only("type", "widget_id").first()
    if agent is not None and agent.type == Agent.Type.AI:
        bump(agent.widget_id)
