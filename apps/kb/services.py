"""Knowledge-base writes: rules, sources, uploaded documents and their ingestion.

Embedding happens before the write's transaction (a provider call never holds a transaction or a
lock); a provider failure raises `EmbedProviderFailed` (502) before anything is stored, so the
route's idempotency key is never claimed. Every change to a widget's chunks bumps `KbIndex.version`
in its own transaction (search caches revalidate on it).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from apps.core import events, outbound
from apps.core import files as core_files
from apps.core.errors import ValidationFailed
from apps.core.models import File, Widget

from . import extract, hooks, index
from . import text as kbtext
from .errors import (
    CrawlRunning,
    DocumentBusy,
    DuplicateDocument,
    EmbedProviderFailed,
    UnsupportedDocument,
    UploadLimitReached,
)
from .models import KbChunk, KbCrawlConfig, KbCrawlPage, KbCrawlRun, KbDocument, KbIndex

logger = logging.getLogger(__name__)

CONTENT_MAX_CHARS = kbtext.CHUNK_CHARACTERS  # a manual rule is one chunk, no longer than any other
DOC_ID_MAX_CHARS = 200
MAX_DOCUMENTS = 200
MAX_FILE_BYTES = core_files.MAX_FILE_BYTES
MAX_CHUNKS_PER_DOCUMENT = 2000
EMBED_BATCH = 64
# A document `processing` whose worker has been silent this long (no batch embedded) lost its worker:
# it may be deleted, and the beat job `sweep_stale_documents` fails it.
STALE_PROCESSING = timedelta(minutes=15)
WORKER_LOST = "worker_lost"

register_ai_hooks = hooks.register


def bump_version(widget_id: int) -> None:
    """Inside the writer's transaction: the widget's chunks changed."""
    updated = KbIndex.objects.filter(widget_id=widget_id).update(version=F("version") + 1)
    if not updated:
        try:
            with transaction.atomic():
                KbIndex.objects.create(widget_id=widget_id, version=1)
        except IntegrityError:
            KbIndex.objects.filter(widget_id=widget_id).update(version=F("version") + 1)


def embed_texts(*, widget: Widget, texts: Sequence[str]) -> hooks.Embedded:
    """Vectors of `texts` for a write; 502 `kb_embed_provider_failed` on any failure."""
    try:
        return hooks.embed(widget, texts)
    except hooks.EmbedError as exc:
        raise EmbedProviderFailed(_embed_detail(exc)) from None


def _embed_detail(exc: hooks.EmbedError) -> str:
    if exc.kind == "no_credential":
        return "No active credential of a driver that can embed (openai, gigachat, openai_compatible) resolves."
    return f"The embedding provider failed ({exc.kind}); nothing was stored."


# --- rules ------------------------------------------------------------------------------------------------


@transaction.atomic
def create_rule(*, widget: Widget, content: str, doc_id: str | None, embedded: hooks.Embedded) -> KbChunk:
    """A hand-written rule (one chunk, `manual:<id>`), its vector already computed."""
    rule = KbChunk.objects.create(
        widget=widget,
        content=content,
        doc_id=doc_id,
        source_ref="manual:pending",
        chunk_index=0,
        embedding=index.to_blob(embedded.vectors[0]),
        embedding_model=embedded.model,
    )
    rule.source_ref = f"manual:{rule.pk}"
    rule.save(update_fields=["source_ref"])
    bump_version(widget.pk)
    events.emit(widget, events.KB_RULE_CREATED, rule_id=rule.pk, source_ref=rule.source_ref)
    return rule


@transaction.atomic
def update_rule(*, widget: Widget, rule: KbChunk, changes: dict, embedded: hooks.Embedded | None = None) -> KbChunk:
    """Apply `content` and/or `doc_id`; `embedded` is the new content's vector when it changed."""
    rule = KbChunk.objects.select_for_update().get(pk=rule.pk, widget=widget)
    fields = []
    if "doc_id" in changes:
        rule.doc_id = changes["doc_id"]
        fields.append("doc_id")
    if "content" in changes and changes["content"] != rule.content:
        if embedded is None:
            raise AssertionError("a content change needs its embedding")
        rule.content = changes["content"]
        rule.embedding = index.to_blob(embedded.vectors[0])
        rule.embedding_model = embedded.model
        fields += ["content", "embedding", "embedding_model"]
    if fields:
        rule.save(update_fields=[*fields, "updated_at"])
        bump_version(widget.pk)
        events.emit(
            widget, events.KB_RULE_UPDATED, rule_id=rule.pk, fields=[f for f in fields if f in ("content", "doc_id")]
        )
    return rule


@transaction.atomic
def delete_rule(*, widget: Widget, rule: KbChunk) -> None:
    KbChunk.objects.filter(pk=rule.pk, widget=widget).delete()
    _sync_document_count(widget, rule.document_id)
    bump_version(widget.pk)
    events.emit(widget, events.KB_RULE_DELETED, rule_id=rule.pk, source_ref=rule.source_ref)


@transaction.atomic
def delete_source(*, widget: Widget, source_ref: str) -> int:
    """Delete every rule of one source; the count deleted (0 for an unknown source)."""
    documents = set(
        KbChunk.objects.filter(widget=widget, source_ref=source_ref)
        .exclude(document=None)
        .values_list("document_id", flat=True)
    )
    deleted, _ = KbChunk.objects.filter(widget=widget, source_ref=source_ref).delete()
    if source_ref.startswith(CRAWL_SOURCE_PREFIX):  # the next crawl indexes the page afresh
        KbCrawlPage.objects.filter(widget=widget, url=source_ref.removeprefix(CRAWL_SOURCE_PREFIX)).delete()
    for document_id in documents:
        _sync_document_count(widget, document_id)
    if deleted:
        bump_version(widget.pk)
        events.emit(widget, events.KB_SOURCE_DELETED, source_ref=source_ref, deleted=deleted)
    return deleted


def _sync_document_count(widget: Widget, document_id: int | None) -> None:
    if document_id is not None:
        count = KbChunk.objects.filter(widget=widget, document_id=document_id).count()
        KbDocument.objects.filter(pk=document_id, widget=widget).update(chunk_count=count)


# --- uploads ----------------------------------------------------------------------------------------------


def create_document(*, widget: Widget, upload) -> KbDocument:
    """Store an uploaded document and queue its ingestion (after commit).

    The format is read from the bytes (`apps.kb.extract.detect`); 422 `kb_unsupported_document`
    otherwise, 422 over MAX_FILE_BYTES or empty, 409 `kb_upload_limit_reached` at MAX_DOCUMENTS, 409
    `kb_duplicate_document` for bytes already uploaded. The caller holds the idempotency claim's
    transaction."""
    if upload.size > MAX_FILE_BYTES:
        raise ValidationFailed(errors={"file": [f"The document exceeds {MAX_FILE_BYTES} bytes."]})
    data = upload.read()
    if not data:
        raise ValidationFailed(errors={"file": ["The document is empty."]})
    name = core_files.clean_original_name(upload.name)
    try:
        fmt = extract.detect(data, name)
    except extract.NotReadable as exc:
        raise UnsupportedDocument(errors={"file": [f"Not an accepted document: {exc}."]}) from None
    digest = hashlib.sha256(data).hexdigest()
    Widget.objects.select_for_update().filter(pk=widget.pk).first()  # serialise the count check per widget
    existing = KbDocument.objects.filter(widget=widget, sha256=digest).values_list("pk", flat=True).first()
    if existing is not None:
        raise DuplicateDocument(document_id=existing)
    if KbDocument.objects.filter(widget=widget).count() >= MAX_DOCUMENTS:
        raise UploadLimitReached(limit=MAX_DOCUMENTS)
    upload.seek(0)
    stored = core_files.store_file(
        widget=widget, content=upload, original_name=name, content_type=upload.content_type, size=len(data)
    )
    document = KbDocument.objects.create(
        widget=widget, file=stored, name=name, format=fmt, size=len(data), sha256=digest
    )
    events.emit(widget, events.KB_DOCUMENT_STATE_CHANGED, document_id=document.pk, state=document.state, error="")
    transaction.on_commit(lambda: _dispatch(document.pk))
    return document


def _dispatch(document_id: int) -> None:
    from .tasks import ingest_document as task

    task.delay(document_id)


@transaction.atomic
def _fail(document: KbDocument, error: str, detail: str) -> None:
    failed = KbDocument.objects.filter(pk=document.pk, state=KbDocument.State.PROCESSING).update(
        state=KbDocument.State.FAILED, error=error, error_detail=detail[:500]
    )
    if failed:
        events.emit(
            document.widget, events.KB_DOCUMENT_STATE_CHANGED, document_id=document.pk, state="failed", error=error
        )


def ingest_document(*, document_id: int) -> None:
    """queued -> processing -> ready | failed. Extraction, chunking and embedding run outside any
    transaction; the chunks replace the document's old ones in one transaction. A document that is
    not queued (deleted, already taken by another worker) is left alone."""
    with transaction.atomic():
        # updated_at is the worker's heartbeat while processing (update() leaves auto_now alone).
        claimed = KbDocument.objects.filter(pk=document_id, state=KbDocument.State.QUEUED).update(
            state=KbDocument.State.PROCESSING, error="", error_detail="", updated_at=timezone.now()
        )
        if not claimed:
            return
        document = KbDocument.objects.select_related("widget", "file").get(pk=document_id)
        events.emit(
            document.widget, events.KB_DOCUMENT_STATE_CHANGED, document_id=document_id, state="processing", error=""
        )
    try:
        with document.file.stored.open("rb") as fh:
            data = fh.read()
        text = extract.text_of(data, document.format)
    except extract.NotReadable as exc:
        return _fail(document, "extraction_failed", str(exc))
    except (OSError, AttributeError):
        return _fail(document, "file_missing", "the stored file could not be read")
    pieces = kbtext.chunk(text)
    if not pieces:
        return _fail(document, "empty_document", "no text was found in the document")
    if len(pieces) > MAX_CHUNKS_PER_DOCUMENT:
        return _fail(document, "too_many_chunks", f"the text makes more than {MAX_CHUNKS_PER_DOCUMENT} chunks")

    def heartbeat() -> None:
        KbDocument.objects.filter(pk=document_id, state=KbDocument.State.PROCESSING).update(updated_at=timezone.now())

    try:
        vectors, model = embed_chunks(widget=document.widget, texts=pieces, heartbeat=heartbeat)
    except EmbedProviderFailed as exc:
        return _fail(document, "embed_provider_failed", exc.detail)
    with transaction.atomic():
        current = KbDocument.objects.select_for_update().filter(pk=document_id).first()
        if current is None or current.state != KbDocument.State.PROCESSING:
            return None
        KbChunk.objects.filter(widget=document.widget, document=current).delete()
        store_chunks(
            widget=document.widget,
            texts=pieces,
            vectors=vectors,
            model=model,
            source_ref=f"upload:{document_id}",
            document=current,
            doc_id=document.name[:DOC_ID_MAX_CHARS],
        )
        current.state, current.chunk_count, current.characters = KbDocument.State.READY, len(pieces), len(text)
        current.save(update_fields=["state", "chunk_count", "characters", "updated_at"])
        events.emit(document.widget, events.KB_DOCUMENT_STATE_CHANGED, document_id=document_id, state="ready", error="")
    return None


def embed_chunks(
    *, widget: Widget, texts: Sequence[str], heartbeat: Callable[[], None] | None = None
) -> tuple[list[list[float]], str]:
    """Vectors of many texts in batches of EMBED_BATCH, all in one vector space (a batch answered by
    a backup of another model is refused: the chunks would not be comparable). `heartbeat` is
    called after each batch (the caller shows it is alive)."""
    vectors: list[list[float]] = []
    model = None
    for start in range(0, len(texts), EMBED_BATCH):
        embedded = embed_texts(widget=widget, texts=texts[start : start + EMBED_BATCH])
        if model is not None and embedded.model != model:
            raise EmbedProviderFailed("The embedding model changed during ingestion; nothing was stored.")
        model = embedded.model
        vectors.extend(embedded.vectors)
        if heartbeat is not None:
            heartbeat()
    return vectors, model or ""


def sweep_stale_documents(*, now=None) -> int:
    """The beat job: documents `processing` whose worker has been silent for STALE_PROCESSING (it
    died: killed, or lost with its task) end `failed` / `worker_lost` with
    kb.document.state_changed, as a crawl that lost its worker does, so they are not stuck (a
    re-upload starts over). A worker that was only slow finds the document failed and stores
    nothing. Returns how many were failed."""
    cutoff = (now or timezone.now()) - STALE_PROCESSING
    stale = KbDocument.objects.filter(state=KbDocument.State.PROCESSING, updated_at__lt=cutoff)
    failed = 0
    for document in stale.select_related("widget"):
        with transaction.atomic():
            if KbDocument.objects.filter(
                pk=document.pk, state=KbDocument.State.PROCESSING, updated_at__lt=cutoff
            ).update(
                state=KbDocument.State.FAILED,
                error=WORKER_LOST,
                error_detail="the worker processing the document stopped",
                updated_at=timezone.now(),
            ):
                events.emit(
                    document.widget,
                    events.KB_DOCUMENT_STATE_CHANGED,
                    document_id=document.pk,
                    state="failed",
                    error=WORKER_LOST,
                )
                failed += 1
    return failed


def store_chunks(
    *,
    widget: Widget,
    texts: Sequence[str],
    vectors: Sequence[Sequence[float]],
    model: str,
    source_ref: str,
    document: KbDocument | None = None,
    doc_id: str | None = None,
) -> int:
    """Insert chunks (inside the caller's transaction) and bump the index version."""
    rows = [
        KbChunk(
            widget=widget,
            document=document,
            content=content,
            doc_id=doc_id,
            source_ref=source_ref,
            chunk_index=i,
            embedding=index.to_blob(vector),
            embedding_model=model,
        )
        for i, (content, vector) in enumerate(zip(texts, vectors, strict=True))
    ]
    KbChunk.objects.bulk_create(rows, batch_size=500)
    bump_version(widget.pk)
    return len(rows)


@transaction.atomic
def delete_document(*, widget: Widget, document: KbDocument) -> int:
    """Delete a document, its stored file and its chunks; 409 while it is processing (unless its
    worker has been silent for STALE_PROCESSING: it died, and the document must not be stuck)."""
    document = KbDocument.objects.select_for_update().get(pk=document.pk, widget=widget)
    stale = document.updated_at < timezone.now() - STALE_PROCESSING
    if document.state == KbDocument.State.PROCESSING and not stale:
        raise DocumentBusy()
    deleted, _ = KbChunk.objects.filter(widget=widget, document=document).delete()
    stored, document_id = document.file, document.pk
    document.delete()
    if stored is not None:
        name = stored.stored.name
        storage = stored.stored.storage
        File.objects.filter(pk=stored.pk).delete()
        transaction.on_commit(lambda: storage.delete(name))
    bump_version(widget.pk)
    events.emit(widget, events.KB_DOCUMENT_DELETED, document_id=document_id, deleted_chunks=deleted)
    return deleted


# --- crawler ----------------------------------------------------------------------------------------------

# A running crawl silent this long (no page finished) lost its worker: a write may replace it.
STALE_CRAWL = timedelta(minutes=15)
MAX_FAILURES_KEPT = 50
SCHEDULE_EVERY = {"daily": timedelta(days=1), "weekly": timedelta(days=7)}
CRAWL_SOURCE_PREFIX = "crawl:"


def _end_run(run: KbCrawlRun, status: str, error: str = "") -> None:
    """Inside a transaction holding `run`'s lock."""
    run.status, run.error, run.finished_at, run.frontier = status, error, timezone.now(), {}
    run.save(update_fields=["status", "error", "finished_at", "frontier"])
    events.emit(run.widget, events.KB_CRAWL_FINISHED, run_id=run.pk, status=status, error=error)


def _clear_live_runs(widget: Widget, *, cancel_running: bool = False) -> None:
    """Inside the write's transaction: cancel a queued crawl, end a running one whose worker is
    gone; a running one is cancelled when the write asks for it (`cancel_running`), else 409
    `kb_crawl_running`. The run rows are locked, so a worker's claim (queued -> running, under the
    same lock) either happened before or sees the cancellation and never starts; a running crawl
    sees it before its next page (crawl_should_stop) or slice (resume_crawl_run) and stops."""
    live = KbCrawlRun.objects.select_for_update().filter(
        widget=widget, status__in=[KbCrawlRun.Status.QUEUED, KbCrawlRun.Status.RUNNING]
    )
    stale_before = timezone.now() - STALE_CRAWL
    for run in live:
        if run.status == KbCrawlRun.Status.QUEUED:
            _end_run(run, KbCrawlRun.Status.CANCELLED, "replaced")
        elif (run.heartbeat_at or run.started_at or run.created_at) < stale_before:
            _end_run(run, KbCrawlRun.Status.FAILED, "worker_lost")
        elif cancel_running:
            _end_run(run, KbCrawlRun.Status.CANCELLED, "replaced")
        else:
            raise CrawlRunning(
                "A crawl is running; send the write again with `?cancel_running=true` to cancel it, or when it "
                "has ended.",
                run_id=run.pk,
            )


def check_start_url(url: str) -> str | None:
    """Why a start URL cannot be crawled (None: it can): https only, no credentials, and every
    address its host resolves to public (the guarded client's policy). An unresolvable host and a
    private one get the same answer, so a tenant cannot map internal names."""
    try:
        parts = outbound.check_url(url)
    except outbound.OutboundBlocked as exc:
        return f"Refused start URL ({exc.reason})."
    try:
        outbound.pin_address(parts.hostname or "", parts.port or 443)
    except (outbound.OutboundBlocked, outbound.OutboundError):
        return "The host does not resolve to a public address."
    return None


def check_start_urls(urls: Sequence[str]) -> None:
    """422 naming each start URL that resolves to a private address (or does not resolve). Call it
    before the write's transaction: it resolves names."""
    errors = [f"{url}: {why}" for url in urls if (why := check_start_url(url))]
    if errors:
        raise ValidationFailed(errors={"start_urls": errors})


@transaction.atomic
def replace_crawler(*, widget: Widget, config: dict, cancel_running: bool = False) -> tuple[KbCrawlConfig, KbCrawlRun]:
    """Replace the widget's crawler configuration whole and queue a crawl (dispatched on commit).
    A queued crawl is cancelled; a running one too with `cancel_running`, else 409
    `kb_crawl_running`. `config` is validated (start URLs checked by `check_start_urls`)."""
    Widget.objects.select_for_update().filter(pk=widget.pk).first()  # one writer per widget
    _clear_live_runs(widget, cancel_running=cancel_running)
    fields = {name: config[name] for name in ("start_urls", "include", "exclude", "max_pages", "max_depth", "schedule")}
    current = KbCrawlConfig.objects.select_for_update().filter(widget=widget).first()
    if current is None:
        current = KbCrawlConfig.objects.create(widget=widget, generation=1, **fields)
    else:
        for name, value in fields.items():
            setattr(current, name, value)
        current.generation += 1
        current.save()
    run = _queue_run(widget, current, trigger="put")
    events.emit(widget, events.KB_CRAWLER_CHANGED, action="replaced", generation=current.generation)
    return current, run


@transaction.atomic
def delete_crawler(*, widget: Widget, cancel_running: bool = False) -> bool:
    """Remove the configuration (no more crawls; a queued one is cancelled, a running one too with
    `cancel_running`, else 409). The crawled rules stay searchable until deleted by source. False
    when there was none."""
    Widget.objects.select_for_update().filter(pk=widget.pk).first()
    _clear_live_runs(widget, cancel_running=cancel_running)
    deleted, _ = KbCrawlConfig.objects.filter(widget=widget).delete()
    if deleted:
        events.emit(widget, events.KB_CRAWLER_CHANGED, action="removed", generation=None)
    return bool(deleted)


def _queue_run(widget: Widget, config: KbCrawlConfig, *, trigger: str) -> KbCrawlRun:
    run = KbCrawlRun.objects.create(widget=widget, generation=config.generation, trigger=trigger)
    transaction.on_commit(lambda: _dispatch_crawl(run.pk))
    return run


def _dispatch_crawl(run_id: int, slice_number: int = 0) -> None:
    from .tasks import run_crawl

    run_crawl.delay(run_id, slice_number)


def queue_scheduled_crawls(*, now=None) -> int:
    """The beat job: queue a crawl for each daily or weekly configuration whose last crawl was
    queued at least a day (a week) ago and that has none queued or running. The count queued."""
    now = now or timezone.now()
    _fail_stale_runs(now)
    queued = 0
    for schedule, every in SCHEDULE_EVERY.items():
        for widget_id in KbCrawlConfig.objects.filter(schedule=schedule).values_list("widget_id", flat=True):
            queued += _queue_if_due(widget_id, schedule, now - every)
    return queued


def _fail_stale_runs(now) -> None:
    """Running crawls silent for STALE_CRAWL lost their worker (a redelivered task finds them
    running and leaves them): they end `failed` / `worker_lost`, so the GET stops showing them and
    the schedule can queue the next one."""
    stale = KbCrawlRun.objects.filter(status=KbCrawlRun.Status.RUNNING, heartbeat_at__lt=now - STALE_CRAWL)
    for run_id in stale.values_list("pk", flat=True):
        with transaction.atomic():
            run = (
                KbCrawlRun.objects.select_for_update(of=("self",))
                .select_related("widget")
                .filter(pk=run_id, status=KbCrawlRun.Status.RUNNING, heartbeat_at__lt=now - STALE_CRAWL)
                .first()
            )
            if run is not None:
                _end_run(run, KbCrawlRun.Status.FAILED, "worker_lost")


@transaction.atomic
def _queue_if_due(widget_id: int, schedule: str, due_before) -> int:
    widget = Widget.objects.select_for_update().filter(pk=widget_id).first()
    config = KbCrawlConfig.objects.filter(widget_id=widget_id, schedule=schedule).first()
    if widget is None or config is None:
        return 0
    runs = KbCrawlRun.objects.filter(widget_id=widget_id)
    if runs.filter(status__in=[KbCrawlRun.Status.QUEUED, KbCrawlRun.Status.RUNNING]).exists():
        return 0
    if runs.filter(created_at__gt=due_before).exists():
        return 0
    _queue_run(widget, config, trigger="schedule")
    return 1


@transaction.atomic
def start_crawl_run(*, run_id: int) -> tuple[KbCrawlRun, KbCrawlConfig] | None:
    """queued -> running under the run's lock; None when the run is no longer queued (cancelled
    by a write, taken by another worker) or its configuration was replaced or removed."""
    run = KbCrawlRun.objects.select_for_update(of=("self",)).select_related("widget").filter(pk=run_id).first()
    if run is None or run.status != KbCrawlRun.Status.QUEUED:
        return None
    config = KbCrawlConfig.objects.filter(widget=run.widget).first()
    if config is None or config.generation != run.generation:
        _end_run(run, KbCrawlRun.Status.CANCELLED, "replaced")
        return None
    run.status = KbCrawlRun.Status.RUNNING
    run.started_at = run.heartbeat_at = timezone.now()
    run.save(update_fields=["status", "started_at", "heartbeat_at"])
    return run, config


@transaction.atomic
def resume_crawl_run(*, run_id: int, slice_number: int) -> tuple[KbCrawlRun, KbCrawlConfig] | None:
    """The next slice of a running crawl, under the run's lock: None when the run is no longer
    running (cancelled, ended) or this slice was done already (a redelivered task); a run whose
    configuration was replaced or removed meanwhile ends `cancelled` here."""
    run = KbCrawlRun.objects.select_for_update(of=("self",)).select_related("widget").filter(pk=run_id).first()
    if run is None or run.status != KbCrawlRun.Status.RUNNING or run.slices != slice_number:
        return None
    config = KbCrawlConfig.objects.filter(widget=run.widget).first()
    if config is None or config.generation != run.generation:
        _end_run(run, KbCrawlRun.Status.CANCELLED, "replaced")
        return None
    run.heartbeat_at = timezone.now()
    run.save(update_fields=["heartbeat_at"])
    return run, config


@transaction.atomic
def pause_crawl_run(*, run: KbCrawlRun, frontier: dict) -> bool:
    """End a slice: save the counters and what is left to do, and send the next slice to the back
    of the queue (on commit). False when a write ended the run meanwhile (nothing is sent)."""
    current = KbCrawlRun.objects.select_for_update().filter(pk=run.pk).first()
    if current is None or current.status != KbCrawlRun.Status.RUNNING or current.slices != run.slices:
        return False
    run.frontier = frontier
    run.slices += 1
    run.heartbeat_at = timezone.now()
    run.save(update_fields=[*_RUN_COUNTERS, "frontier", "slices", "heartbeat_at"])
    run_id, slice_number = run.pk, run.slices
    transaction.on_commit(lambda: _dispatch_crawl(run_id, slice_number))
    return True


def crawl_should_stop(*, run: KbCrawlRun) -> bool:
    """Between pages: true when the run is no longer running (ended by a write that took it for
    dead) or its configuration was replaced or removed. Also moves the heartbeat and saves the
    counters so far."""
    with transaction.atomic():
        current = KbCrawlRun.objects.select_for_update().filter(pk=run.pk).first()
        if current is None or current.status != KbCrawlRun.Status.RUNNING:
            return True
        generation = KbCrawlConfig.objects.filter(widget_id=run.widget_id).values_list("generation", flat=True).first()
        run.heartbeat_at = timezone.now()
        run.save(update_fields=[*_RUN_COUNTERS, "heartbeat_at"])
        return generation != run.generation


_RUN_COUNTERS = (
    "pages_fetched",
    "pages_indexed",
    "pages_unchanged",
    "pages_failed",
    "pages_retired",
    "pages_disallowed",
    "failures",
)


@transaction.atomic
def finish_crawl_run(*, run: KbCrawlRun, status: str, error: str = "") -> bool:
    """running -> finished | failed | cancelled, with the counters; False when a write already
    ended it."""
    current = KbCrawlRun.objects.select_for_update().filter(pk=run.pk).first()
    if current is None or current.status != KbCrawlRun.Status.RUNNING:
        return False
    run.save(update_fields=list(_RUN_COUNTERS))
    run.refresh_from_db(fields=["status"])
    _end_run(run, status, error)
    return True


def crawled_page(*, widget: Widget, url: str) -> KbCrawlPage | None:
    return KbCrawlPage.objects.filter(widget=widget, url=url).first()


@transaction.atomic
def touch_crawled_page(*, page: KbCrawlPage, run: KbCrawlRun) -> None:
    """An unchanged page (same fingerprint): its rules stay as they are."""
    KbCrawlPage.objects.filter(pk=page.pk).update(last_run=run, fetched_at=timezone.now())


@transaction.atomic
def index_crawled_page(
    *,
    widget: Widget,
    run: KbCrawlRun,
    url: str,
    fingerprint: str,
    texts: Sequence[str],
    vectors: Sequence[Sequence[float]],
    model: str,
) -> int:
    """Replace the rules of `crawl:<url>` with the page's new chunks (vectors computed outside)."""
    source_ref = CRAWL_SOURCE_PREFIX + url
    KbChunk.objects.filter(widget=widget, source_ref=source_ref).delete()
    stored = store_chunks(
        widget=widget, texts=texts, vectors=vectors, model=model, source_ref=source_ref, doc_id=url[:DOC_ID_MAX_CHARS]
    )
    KbCrawlPage.objects.update_or_create(
        widget=widget,
        url=url,
        defaults={"fingerprint": fingerprint, "chunk_count": stored, "last_run": run, "fetched_at": timezone.now()},
    )
    events.emit(widget, events.KB_CRAWL_PAGE_CHANGED, url=url, change="indexed", chunks=stored)
    return stored


@transaction.atomic
def retire_crawled_page(*, widget: Widget, url: str) -> bool:
    """A page gone (404/410, no longer linked or in a sitemap, now disallowed or excluded): its
    rules and its record are deleted. False when nothing was there."""
    deleted, _ = KbChunk.objects.filter(widget=widget, source_ref=CRAWL_SOURCE_PREFIX + url).delete()
    pages, _ = KbCrawlPage.objects.filter(widget=widget, url=url).delete()
    if deleted:
        bump_version(widget.pk)
    if deleted or pages:
        events.emit(widget, events.KB_CRAWL_PAGE_CHANGED, url=url, change="retired", chunks=deleted)
    return bool(deleted or pages)


def crawled_urls(*, widget: Widget) -> list[str]:
    return list(KbCrawlPage.objects.filter(widget=widget).values_list("url", flat=True))
