"""Knowledge-base writes: rules, sources, uploaded documents and their ingestion.

Embedding happens before the write's transaction (a provider call never holds a transaction or a
lock); a provider failure raises `EmbedProviderFailed` (502) before anything is stored, so the
route's idempotency key is never claimed. Every change to a widget's chunks bumps `KbIndex.version`
in its own transaction (search caches revalidate on it).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from apps.core import files as core_files
from apps.core.errors import ValidationFailed
from apps.core.models import File, Widget

from . import extract, hooks, index
from . import text as kbtext
from .errors import DocumentBusy, DuplicateDocument, EmbedProviderFailed, UnsupportedDocument, UploadLimitReached
from .models import KbChunk, KbDocument, KbIndex

logger = logging.getLogger(__name__)

CONTENT_MAX_CHARS = 4000
DOC_ID_MAX_CHARS = 200
MAX_DOCUMENTS = 200
MAX_FILE_BYTES = core_files.MAX_FILE_BYTES
MAX_CHUNKS_PER_DOCUMENT = 2000
EMBED_BATCH = 64
# A document left `processing` longer than this (its worker died) may be deleted.
STALE_PROCESSING = timedelta(minutes=15)

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
    return rule


@transaction.atomic
def delete_rule(*, widget: Widget, rule: KbChunk) -> None:
    KbChunk.objects.filter(pk=rule.pk, widget=widget).delete()
    _sync_document_count(widget, rule.document_id)
    bump_version(widget.pk)


@transaction.atomic
def delete_source(*, widget: Widget, source_ref: str) -> int:
    """Delete every rule of one source; the count deleted (0 for an unknown source)."""
    documents = set(
        KbChunk.objects.filter(widget=widget, source_ref=source_ref)
        .exclude(document=None)
        .values_list("document_id", flat=True)
    )
    deleted, _ = KbChunk.objects.filter(widget=widget, source_ref=source_ref).delete()
    for document_id in documents:
        _sync_document_count(widget, document_id)
    if deleted:
        bump_version(widget.pk)
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
    transaction.on_commit(lambda: _dispatch(document.pk))
    return document


def _dispatch(document_id: int) -> None:
    from .tasks import ingest_document as task

    task.delay(document_id)


def _fail(document: KbDocument, error: str, detail: str) -> None:
    KbDocument.objects.filter(pk=document.pk, state=KbDocument.State.PROCESSING).update(
        state=KbDocument.State.FAILED, error=error, error_detail=detail[:500]
    )


def ingest_document(*, document_id: int) -> None:
    """queued -> processing -> ready | failed. Extraction, chunking and embedding run outside any
    transaction; the chunks replace the document's old ones in one transaction. A document that is
    not queued (deleted, already taken by another worker) is left alone."""
    claimed = KbDocument.objects.filter(pk=document_id, state=KbDocument.State.QUEUED).update(
        state=KbDocument.State.PROCESSING, error="", error_detail=""
    )
    if not claimed:
        return
    document = KbDocument.objects.select_related("widget", "file").get(pk=document_id)
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
    try:
        vectors, model = embed_chunks(widget=document.widget, texts=pieces)
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
    return None


def embed_chunks(*, widget: Widget, texts: Sequence[str]) -> tuple[list[list[float]], str]:
    """Vectors of many texts in batches of EMBED_BATCH, all in one vector space (a batch answered by
    a backup of another model is refused: the chunks would not be comparable)."""
    vectors: list[list[float]] = []
    model = None
    for start in range(0, len(texts), EMBED_BATCH):
        embedded = embed_texts(widget=widget, texts=texts[start : start + EMBED_BATCH])
        if model is not None and embedded.model != model:
            raise EmbedProviderFailed("The embedding model changed during ingestion; nothing was stored.")
        model = embedded.model
        vectors.extend(embedded.vectors)
    return vectors, model or ""


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
    stored = document.file
    document.delete()
    if stored is not None:
        name = stored.stored.name
        storage = stored.stored.storage
        File.objects.filter(pk=stored.pk).delete()
        transaction.on_commit(lambda: storage.delete(name))
    bump_version(widget.pk)
    return deleted
