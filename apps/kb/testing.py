"""Test and benchmark helpers of the knowledge base (not used in production code paths).

`trigram_embedding`: a deterministic offline embedder: each word (case-folded, `ё` as `е`) and each
character trigram of `#word#` is hashed to one signed axis of `dimensions`; the vector is normalised.
Inflected forms share most trigrams (доставка / доставки / доставку), so it behaves like a weak
semantic embedder for ru and en without a model. `OfflineHooks` installs it (with `apps.kb.hooks.
use_hooks`) in place of the AI app's credentials, optionally failing like a provider.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import hooks
from . import text as kbtext

DIMENSIONS = 256
EVAL_SET = Path(__file__).resolve().parents[2] / "bench" / "data" / "kb_eval.json"


def _axis(feature: str, dimensions: int) -> tuple[int, float]:
    digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
    return int.from_bytes(digest[:4], "big") % dimensions, (1.0 if digest[4] & 1 else -1.0)


def trigram_embedding(text: str, dimensions: int = DIMENSIONS) -> list[float]:
    vector = np.zeros(dimensions, dtype=np.float32)
    for word in kbtext.words(text):
        axis, sign = _axis("w:" + word, dimensions)
        vector[axis] += sign
        padded = f"#{word}#"
        for i in range(len(padded) - 2):
            axis, sign = _axis(padded[i : i + 3], dimensions)
            vector[axis] += 0.5 * sign
    norm = float(np.linalg.norm(vector))
    return (vector / norm if norm else vector).tolist()


@dataclass
class OfflineHooks:
    """AI hooks for tests: the offline embedder (or a failure), fixed assistants and switch."""

    dimensions: int = DIMENSIONS
    model: str = "offline:trigram-256"
    fail: str | None = None  # an EmbedError kind to raise instead of embedding
    can_embed: bool = True
    enabled: bool = True
    assistant_infos: list[hooks.AssistantInfo] = field(default_factory=list)
    calls: int = 0

    def _embed(self, texts: Sequence[str]) -> hooks.Embedded:
        self.calls += 1
        if self.fail:
            raise hooks.EmbedError(self.fail)
        return hooks.Embedded(self.model, [trigram_embedding(t, self.dimensions) for t in texts])

    def embedder(self, widget):
        if not self.can_embed:
            return None
        outer = self

        class _Embedder:
            model = outer.model

            def __call__(self, texts):
                return outer._embed(texts)

        return _Embedder()

    def assistants(self, widget) -> list[hooks.AssistantInfo]:
        return list(self.assistant_infos)

    def ai_enabled(self, widget) -> bool:
        return self.enabled


def load_eval_set() -> dict:
    return json.loads(EVAL_SET.read_text(encoding="utf-8"))
