"""Knowledge retrieval for a turn, and the AI app's side of the knowledge base.

`retrieve` is the hook the prompt assembly calls when `rag_enabled`: it asks `apps.kb` for exactly
what `GET /v1/kb/search` previews (`apps.kb.selectors.search_chunks`), so the preview and the bot
never differ.

`KbHooks` is what the knowledge base (a layer below, which cannot import this app) needs from it,
registered in `AiConfig.ready`: the embedder built from this app's credentials (product-decisions
"Knowledge base and learning details": the widget-wide credential, else the enabled assistants' own
credentials, default first, never an operator's; each one's backup chain applies; drivers that
cannot embed are skipped), the assistants and the master switch.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from django.conf import settings

from apps.core import provider_waits
from apps.core.models import Widget
from apps.kb import selectors as kb_selectors
from apps.kb import services as kb_services

from . import selectors
from .models import Assistant, Credential

logger = logging.getLogger(__name__)

RETRIEVAL_LIMIT = 5
EMBED_DEADLINE_SECONDS = 15.0  # a worker's embedding; a request's waits AI_REQUEST_EMBED_DEADLINE_SECONDS
UNAVAILABLE_NOTE = (
    "The knowledge base could not be searched (the embedding provider failed): no knowledge was retrieved."
)


@dataclass(frozen=True)
class Retrieval:
    status: str  # disabled | unavailable | empty | included
    chunks: list[str] = field(default_factory=list)
    note: str | None = None
    # The documents the chunks came from, `{source_ref, title, url}` (`apps.kb.selectors.chunk_sources`).
    sources: list[dict] = field(default_factory=list)


def retrieve(*, widget: Widget, assistant: Assistant, question: str, enabled: bool) -> Retrieval:
    """Chunks of the widget's knowledge base relevant to `question`."""
    if not enabled:
        return Retrieval("disabled")
    try:
        result = kb_selectors.search_chunks(widget=widget, question=question, limit=RETRIEVAL_LIMIT)
    except kb_services.hooks.EmbedError as exc:
        logger.info("knowledge retrieval failed for widget %s: %s", widget.pk, exc.kind)
        return Retrieval("unavailable", note=UNAVAILABLE_NOTE)
    if not result.hits:
        return Retrieval("empty")
    chunks = [hit.chunk for hit in result.hits]
    return Retrieval(
        "included", chunks=[chunk.content for chunk in chunks], sources=kb_selectors.chunk_sources(widget, chunks)
    )


# --- the knowledge base's embedder ---------------------------------------------------------------------------


def embedding_model(config) -> str:
    """The vector space a member embeds in: driver and embedding model (what the driver asks for)."""
    # The provider layer (the vendors' SDKs) is imported on first use, not at start-up (AiConfig.ready
    # imports this module in every process, the worker and beat included).
    from .providers.drivers import DEFAULT_EMBEDDING_MODELS

    model = config.options.get("embedding_model") or DEFAULT_EMBEDDING_MODELS.get(config.provider) or config.model
    return f"{config.provider}:{model or 'default'}"


def embedding_chain(widget: Widget) -> list:
    """The members tried for a knowledge-base embedding, in order, each once: the widget-wide
    credentials (newest first) then the enabled assistants' own (default first, then newest), each
    followed by its backup chain; operators' credentials never; drivers that cannot embed skipped."""
    by_id = selectors.credential_map(widget)
    active = sorted((c for c in by_id.values() if c.is_active), key=lambda c: (c.created_at, c.pk), reverse=True)
    primaries: list[Credential] = [c for c in active if c.assistant_id is None and c.operator_id is None]
    assistants = Assistant.objects.filter(widget=widget, enabled=True).order_by("-is_default", "-created_at", "-id")
    rank = {a.pk: i for i, a in enumerate(assistants)}
    owned = [c for c in active if c.assistant_id in rank and c.operator_id is None]
    primaries += sorted(owned, key=lambda c: rank[c.assistant_id])
    from .providers import can_embed

    chain: list = []
    seen: set[int] = set()
    for primary in primaries:
        for credential in selectors.credential_chain(widget, primary, by_id):
            if credential.pk in seen or not can_embed(credential.provider):
                continue
            seen.add(credential.pk)
            chain.append(selectors.provider_config(credential))
    return chain


@dataclass(frozen=True)
class ChainEmbedder:
    """Embeds with the first member that answers; a retryable failure (transport, timeout, 429, 5xx)
    moves to the next, any other stops. The result names the member's vector space."""

    chain: tuple

    @property
    def model(self) -> str:
        return embedding_model(self.chain[0])

    def __call__(self, texts: Sequence[str]) -> kb_services.hooks.Embedded:
        from .providers import ProviderError, load_sdks
        from .providers import embed as provider_embed
        from .providers.types import RETRYABLE_KINDS

        last: ProviderError | None = None
        load_sdks(self.chain)
        # A request holds a web thread while it waits: its embedding gets the request path's shorter
        # deadline (apps.core.provider_waits).
        if provider_waits.on_request_path():
            deadline = provider_waits.deadline(settings.AI_REQUEST_EMBED_DEADLINE_SECONDS)
        else:
            deadline = time.monotonic() + EMBED_DEADLINE_SECONDS
        for config in self.chain:
            try:
                vectors = provider_embed([config], list(texts), deadline=deadline)
            except ProviderError as exc:
                last = exc
                if exc.kind in RETRYABLE_KINDS:
                    continue
                break
            return kb_services.hooks.Embedded(embedding_model(config), vectors)
        raise kb_services.hooks.EmbedError(last.kind if last else "unsupported")


class KbHooks:
    def embedder(self, widget: Widget) -> ChainEmbedder | None:
        chain = embedding_chain(widget)
        return ChainEmbedder(tuple(chain)) if chain else None

    def assistants(self, widget: Widget) -> list:
        return [
            kb_services.hooks.AssistantInfo(a.pk, a.name, a.enabled, a.is_default, a.rag_enabled)
            for a in Assistant.objects.filter(widget=widget).order_by("-is_default", "-created_at", "-id")
        ]

    def ai_enabled(self, widget: Widget) -> bool:
        return selectors.get_settings(widget).enabled
