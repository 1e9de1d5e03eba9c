"""Knowledge-base reads: rules, sources, documents, status and the retrieval the bot uses.

`search_chunks` is the one retrieval: `GET /v1/kb/search` shows exactly what it returns, and the AI
pipeline (`apps.ai.retrieval`) calls it for a turn when `rag_enabled`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.db.models import Count, Max, QuerySet

from apps.core.models import Widget

from . import hooks, index
from .models import KbChunk, KbCrawlConfig, KbCrawlRun, KbDocument

DEFAULT_SEARCH_LIMIT = 5
MAX_SEARCH_LIMIT = 20


def rules(widget: Widget) -> QuerySet[KbChunk]:
    return KbChunk.objects.filter(widget=widget)


def rule_payload(rule: KbChunk) -> dict:
    return {
        "id": rule.pk,
        "content": rule.content,
        "doc_id": rule.doc_id,
        "source_ref": rule.source_ref,
        "button_id": rule.button_id,
        "operator_id": rule.operator_id,
        "chunk_index": rule.chunk_index,
        "regenerates": rule.regenerates,
        "created_at": rule.created_at.isoformat(),
        "updated_at": rule.updated_at.isoformat(),
    }


def source_kind(source_ref: str) -> str:
    return source_ref.split(":", 1)[0]


def sources(widget: Widget, *, after: str | None, limit: int) -> list[dict]:
    """Distinct source groups in `source_ref` order, `limit` of them after `after`: one query."""
    qs = rules(widget).values("source_ref").annotate(chunk_count=Count("id"), updated_at=Max("updated_at"))
    if after is not None:
        qs = qs.filter(source_ref__gt=after)
    out = []
    for row in qs.order_by("source_ref")[:limit]:
        ref = row["source_ref"]
        kind = source_kind(ref)
        out.append(
            {
                "source_ref": ref,
                "kind": kind,
                "chunk_count": row["chunk_count"],
                "regenerates": kind != "manual",
                "updated_at": row["updated_at"].isoformat(),
            }
        )
    return out


SOURCE_TITLE_CHARS = 100


def _upload_id(ref: str, chunk: KbChunk) -> int | None:
    """The document an upload's chunk came from: its foreign key, else the id its `upload:<id>` names."""
    rest = ref.partition(":")[2]
    return chunk.document_id or (int(rest) if rest.isdigit() else None)


def chunk_sources(widget: Widget, chunks: Sequence[KbChunk]) -> list[dict]:
    """The sources `chunks` came from, each once, in the chunks' order: `{source_ref, title, url}`.
    An upload is titled by its document's name (url null); a crawled page by its address, which is
    its url when a browser may open it as a page (`_link`); a rule written by hand by its `doc_id`
    or else its text's first line (url null). At most one query (the uploads' names)."""
    refs: dict[str, KbChunk] = {}
    for chunk in chunks:
        refs.setdefault(chunk.source_ref, chunk)
    uploads = {ref: _upload_id(ref, chunk) for ref, chunk in refs.items() if ref.startswith("upload:")}
    ids = {pk for pk in uploads.values() if pk is not None}
    names = dict(documents(widget).filter(pk__in=ids).values_list("pk", "name")) if ids else {}
    out = []
    for ref, chunk in refs.items():
        kind, _, rest = ref.partition(":")
        if kind == "crawl" and rest:
            title, url = rest, _link(rest)
        elif kind == "upload":
            title, url = names.get(uploads[ref]) or chunk.doc_id or ref, None
        else:
            first = next((line.strip() for line in chunk.content.splitlines() if line.strip()), "")
            title, url = chunk.doc_id or first or ref, None
        out.append({"source_ref": ref, "title": title[:SOURCE_TITLE_CHARS], "url": url})
    return out


def documents(widget: Widget) -> QuerySet[KbDocument]:
    return KbDocument.objects.filter(widget=widget)


def document_payload(document: KbDocument) -> dict:
    return {
        "id": document.pk,
        "name": document.name,
        "format": document.format,
        "size": document.size,
        "state": document.state,
        "error": ({"code": document.error, "detail": document.error_detail} if document.error else None),
        "chunk_count": document.chunk_count,
        "characters": document.characters,
        "source_ref": f"upload:{document.pk}",
        "created_at": document.created_at.isoformat(),
        "updated_at": document.updated_at.isoformat(),
    }


def find_assistant(widget: Widget, assistant_id: int) -> hooks.AssistantInfo | None:
    return next((a for a in hooks.current().assistants(widget) if a.id == assistant_id), None)


def status(widget: Widget) -> dict:
    """Whether the knowledge base is indexed (chunks exist, every one embedded in the vector space the
    widget embeds in now, no document waiting) and in use (indexed, AI on, and an enabled assistant
    with `rag_enabled`), with the same per assistant. Three queries plus the AI app's hooks."""
    ai = hooks.current()
    embedder = ai.embedder(widget)
    model = embedder.model if embedder is not None else None
    by_model = dict(rules(widget).values_list("embedding_model").annotate(n=Count("id")).order_by())
    chunks = sum(by_model.values())
    current = by_model.get(model, 0) if model else 0
    states = dict(documents(widget).values_list("state").annotate(n=Count("id")).order_by())
    pending = states.get(KbDocument.State.QUEUED, 0) + states.get(KbDocument.State.PROCESSING, 0)
    indexed = chunks > 0 and current == chunks and pending == 0
    ai_enabled = ai.ai_enabled(widget)
    assistants = [
        {
            "id": a.id,
            "name": a.name,
            "enabled": a.enabled,
            "is_default": a.is_default,
            "rag_enabled": a.rag_enabled,
            "in_use": bool(indexed and ai_enabled and a.enabled and a.rag_enabled),
        }
        for a in ai.assistants(widget)
    ]
    return {
        "indexed": indexed,
        "in_use": any(a["in_use"] for a in assistants),
        "ai_enabled": ai_enabled,
        "chunks": chunks,
        "embedded_chunks": current,
        "stale_chunks": chunks - current,
        "embedding_model": model,
        "can_embed": embedder is not None,
        "documents": {state: states.get(state, 0) for state in KbDocument.State.values},
        "assistants": assistants,
    }


def _link(url: str) -> str | None:
    """`url` when a browser may open it as a page (absolute http or https), else None: a source's
    address is shown as a link, so `javascript:`, `data:` and the like never become one."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    return url if parts.scheme.lower() in ("http", "https") and parts.netloc else None


@dataclass(frozen=True)
class Hit:
    chunk: KbChunk
    score: float
    similarity: float | None


@dataclass(frozen=True)
class SearchResult:
    hits: list[Hit]
    mode: str  # hybrid | keyword (nothing can embed) | empty (no chunks)
    embedding_model: str | None


def search_chunks(*, widget: Widget, question: str, limit: int = DEFAULT_SEARCH_LIMIT) -> SearchResult:
    """The chunks the bot gets for `question`, best first (see `apps.kb.index`). Raises
    hooks.EmbedError when the question cannot be embedded by a widget that has an embedder; a
    widget with nothing able to embed searches by keywords only (`mode` says so). 3-4 queries."""
    version = index.index_version(widget.pk)
    if version == 0:
        return SearchResult([], "empty", None)
    keyword = index.keyword_ranking(widget.pk, version, question)
    embedder = hooks.current().embedder(widget)
    vector: list[tuple[int, float]] = []
    model = None
    if embedder is not None:
        embedded = hooks.embed(widget, [question])
        model = embedded.model
        vectors = index.tenant_vectors(widget.pk, model, version)
        vector = index.vector_ranking(vectors, embedded.vectors[0])
    fused = index.fuse(vector, keyword, limit)
    rows = KbChunk.objects.in_bulk([pk for pk, _ in fused])
    similarity = dict(vector)
    hits = [Hit(rows[pk], round(score, 6), similarity.get(pk)) for pk, score in fused if pk in rows]
    return SearchResult(hits, "hybrid" if embedder is not None else "keyword", model)


def crawl_run_payload(run: KbCrawlRun) -> dict:
    return {
        "id": run.pk,
        "status": run.status,
        "trigger": run.trigger,
        "pages_fetched": run.pages_fetched,
        "pages_indexed": run.pages_indexed,
        "pages_unchanged": run.pages_unchanged,
        "pages_failed": run.pages_failed,
        "pages_retired": run.pages_retired,
        "pages_disallowed": run.pages_disallowed,
        "failures": list(run.failures),
        "error": run.error or None,
        "created_at": run.created_at,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
    }


LIVE_CRAWL = (KbCrawlRun.Status.QUEUED, KbCrawlRun.Status.RUNNING)


def site_hosts(widget: Widget) -> frozenset[str]:
    """The hosts of the widget's own sites: those its crawl configuration starts from (lower case,
    without a leading `www.`). One query."""
    config = KbCrawlConfig.objects.filter(widget=widget).values_list("start_urls", flat=True).first() or []
    hosts = set()
    for url in config:
        try:
            host = urlsplit(str(url)).hostname or ""
        except ValueError:
            continue
        if host:
            hosts.add(host.lower().removeprefix("www."))
    return frozenset(hosts)


def crawler(widget: Widget) -> dict:
    """The configuration (None when absent), the queued or running crawl and the last one ended."""
    config = KbCrawlConfig.objects.filter(widget=widget).first()
    runs = KbCrawlRun.objects.filter(widget=widget).order_by("-created_at", "-id")
    current = runs.filter(status__in=LIVE_CRAWL).first()
    last = runs.exclude(status__in=LIVE_CRAWL).order_by("-finished_at", "-id").first()
    return {
        "config": None
        if config is None
        else {
            "start_urls": config.start_urls,
            "include": config.include,
            "exclude": config.exclude,
            "max_pages": config.max_pages,
            "max_depth": config.max_depth,
            "schedule": config.schedule,
            "updated_at": config.updated_at,
        },
        "current_run": crawl_run_payload(current) if current else None,
        "last_run": crawl_run_payload(last) if last else None,
    }


def count_waiting_documents() -> dict[str, int]:
    """Every widget's documents not indexed yet, by state (queued, processing), zeros included. For
    /metrics only: it names no tenant."""
    waiting = (KbDocument.State.QUEUED, KbDocument.State.PROCESSING)
    counts = dict(KbDocument.objects.filter(state__in=waiting).values_list("state").annotate(n=Count("id")).order_by())
    return {str(state): counts.get(state, 0) for state in waiting}
