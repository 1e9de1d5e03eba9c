"""What the AI operator answers a widget's visitors with, read once per process and configuration
version: the AI settings, the effective assistant, its active AI operator and the provider chain
(credentials decrypted). The knowledge-base index's pattern (apps.kb.index): a version stored with
the data, changed in the writer's transaction, compared on every use.

`AiSettings.config_version` changes with every save or delete of the widget's AI settings,
assistants, AI operators and credentials (the model signals connected in AiConfig.ready: the admin,
the API, the management commands and cascades all save or delete through the ORM; a queryset
`update()` of these rows must call `bump` itself). A task reads the version with its first query and
gets the configuration from here without a statement while it is unchanged. A widget without the
settings row has the AI off: nothing is cached for it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from apps.agents.models import Agent
from apps.core.models import Widget

from . import selectors
from .models import AiSettings, Assistant, Credential, new_config_version


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


def _changed(sender, instance, **kwargs) -> None:
    if sender is Agent and instance.type != Agent.Type.AI:
        return
    bump(instance.widget_id)


def connect() -> None:
    """Called by AiConfig.ready."""
    from django.db.models.signals import post_delete, post_save

    for model in (AiSettings, Assistant, Credential, Agent):
        uid = f"ai.config.{model.__name__}"
        post_save.connect(_changed, sender=model, dispatch_uid=f"{uid}.save")
        post_delete.connect(_changed, sender=model, dispatch_uid=f"{uid}.delete")
