"""Knowledge-base writes: uploaded documents, their ingestion (extract, chunk, embed, store) and the sweep of
lost workers."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

from django.db import transaction
from django.utils import timezone

from apps.core import events, queueing
from apps.core import files as core_files
from apps.core.errors import ValidationFailed
from apps.core.models import File, Widget

from .. import extract, index
from .. import text as kbtext
from ..errors import DocumentBusy, DuplicateDocument, EmbedProviderFailed, UnsupportedDocument, UploadLimitReached
from ..models import KbChunk, KbDocument
from .indexing import (
    DOC_ID_MAX_CHARS,
    EMBED_BATCH,
    MAX_CHUNKS_PER_DOCUMENT,
    MAX_DOCUMENTS,
    MAX_FILE_BYTES,
    STALE_PROCESSING,
    WORKER_LOST,
    bump_version,
    embed_texts,
)

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
    queueing.task("apps.kb.tasks.ingest_document").delay(document_id)


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
