"""What the knowledge base needs from the AI app above it, without importing it (the layers
contract puts `apps.kb` under `apps.ai`): the AI app provides one `AiHooks` as the `kb_ai` port
(apps.core.ports) in `apps.ai.apps.AiConfig.ready`; without it nothing embeds.

- `embedder(widget)`: the widget's embedding backend (product-decisions "Knowledge base and
  learning details": the widget-wide credential, else the enabled assistants' own credentials,
  default first, never an operator's; the backup chain applies; drivers that cannot embed are
  skipped), or None when nothing can embed.
- `assistants(widget)`: the widget's assistants as the knowledge base reports on them.
- `ai_enabled(widget)`: the widget's AI master switch.

Tests and benchmarks may install other hooks with `use_hooks` (a deterministic offline embedder),
the ports' `override` of that port.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

from apps.core import ports


class EmbedError(Exception):
    """The embedding backend failed (`kind`: a provider error kind, or "no_credential")."""

    def __init__(self, kind: str, detail: str = "") -> None:
        self.kind, self.detail = kind, detail
        super().__init__(f"embedding failed: {kind}" + (f" ({detail})" if detail else ""))


@dataclass(frozen=True)
class Embedded:
    """Vectors and the vector space they live in (`model`: driver and embedding model); vectors of
    different models are never compared."""

    model: str
    vectors: list[list[float]]


class Embedder(Protocol):
    """texts in, one vector per text out (raises EmbedError); `model` names the vector space the
    first member of the chain embeds in (what the status reports as current)."""

    model: str

    def __call__(self, texts: Sequence[str]) -> Embedded: ...


@dataclass(frozen=True)
class FunctionEmbedder:
    """An Embedder from a plain function (tests, benchmarks: a deterministic offline embedder)."""

    model: str
    function: Callable[[Sequence[str]], list[list[float]]]

    def __call__(self, texts: Sequence[str]) -> Embedded:
        return Embedded(self.model, [list(v) for v in self.function(texts)])


@dataclass(frozen=True)
class AssistantInfo:
    id: int
    name: str
    enabled: bool
    is_default: bool
    rag_enabled: bool


class AiHooks(Protocol):
    def embedder(self, widget) -> Embedder | None: ...

    def assistants(self, widget) -> list[AssistantInfo]: ...

    def ai_enabled(self, widget) -> bool: ...


def current() -> AiHooks:
    """The AI app's hooks; without the AI app nothing embeds, no assistants, AI off."""
    return ports.lookup(ports.KB_AI)


@contextmanager
def use_hooks(hooks: AiHooks) -> Iterator[AiHooks]:
    """Tests and benchmarks: `hooks` answer inside the block."""
    with ports.override(ports.KB_AI, hooks):
        yield hooks


def embed(widget, texts: Sequence[str]) -> Embedded:
    """Embed `texts` with the widget's backend; EmbedError("no_credential") when none resolves."""
    embedder = current().embedder(widget)
    if embedder is None:
        raise EmbedError("no_credential", "no active credential of a driver that can embed")
    result = embedder(list(texts))
    if len(result.vectors) != len(texts) or len({len(v) for v in result.vectors}) > 1:
        raise EmbedError("bad_response", "the provider answered a different number or shape of vectors")
    return result
