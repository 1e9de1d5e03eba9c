"""Knowledge retrieval for a turn: the hook the prompt assembly calls when `rag_enabled`.

The knowledge base arrives with its own issue; until it does there is nothing to retrieve from, and
the answer says so (`unavailable`, no chunks) rather than pretending an empty search happened.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from apps.core.models import Widget

from .models import Assistant

UNAVAILABLE_NOTE = "The knowledge base is not available yet: no knowledge was retrieved."


@dataclass(frozen=True)
class Retrieval:
    status: str  # disabled | unavailable | empty | included
    chunks: list[str] = field(default_factory=list)
    note: str | None = None


def retrieve(*, widget: Widget, assistant: Assistant, question: str, enabled: bool) -> Retrieval:
    """Chunks of the widget's knowledge base relevant to `question`."""
    if not enabled:
        return Retrieval("disabled")
    return Retrieval("unavailable", note=UNAVAILABLE_NOTE)
