"""Knowledge-base writes: manual rules and the deletion of a source's chunks."""

from __future__ import annotations

from django.db import transaction

from apps.core import events
from apps.core.models import Widget

from .. import hooks, index
from ..models import KbChunk, KbCrawlPage, KbDocument
from .crawls import CRAWL_SOURCE_PREFIX
from .indexing import bump_version

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
