"""The vendor SDKs, imported on first use (most processes never call a model)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from typing import TypeVar

from ..types import ProviderConfig

T = TypeVar("T")


class _ImportedOnFirstUse:
    """An SDK module imported when one of its names is first used (`importlib.import_module`: the
    import system's own lock makes the first use from several threads safe). Importing anthropic and
    openai at start-up is a large part of every process's start (each `manage.py` command, and the
    web, worker, beat and ai processes of `make run`), though most processes never call a model."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attribute: str):
        return getattr(importlib.import_module(self._name), attribute)

    def load(self) -> None:
        importlib.import_module(self._name)

    def loaded(self, attribute: str) -> tuple[type, ...]:
        """The SDK's class `attribute` when the SDK is imported, else nothing: an exception of an SDK
        that was never imported cannot exist, and importing one to classify a failure would spend
        seconds past the call's deadline."""
        module = sys.modules.get(self._name)
        return (getattr(module, attribute),) if module is not None else ()


anthropic = _ImportedOnFirstUse("anthropic")
openai = _ImportedOnFirstUse("openai")
_SDK_OF = {"openai": openai, "openai_compatible": openai, "anthropic": anthropic}


def load_sdks(chain: Sequence[ProviderConfig]) -> None:
    """Import now the SDKs the chain's drivers use (the first use in a process takes a second or two
    of CPU): a caller takes its deadline after this, so a short deadline counts the provider's time."""
    for config in chain:
        sdk = _SDK_OF.get(config.provider)
        if sdk is not None:
            sdk.load()
