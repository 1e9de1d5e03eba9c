"""Problem codes of the knowledge base (core specification, Errors; docs/ai/knowledge-base.md)."""

from __future__ import annotations

from apps.core.errors import AppError


class ReadOnlyField(AppError):
    """A read-only knowledge-base field (`id`, `source_ref`, `button_id`, `operator_id`, `chunk_index`,
    `regenerates`, ...) was sent; only `content` and `doc_id` are writable. `errors` names each."""

    status, code, title = 422, "kb_read_only_field", "Read-only knowledge-base field"


class EmbedProviderFailed(AppError):
    """The embedding provider failed (or no credential of a driver that can embed resolves) on a
    knowledge-base write or search: nothing was stored and the idempotency key was released."""

    status, code, title = 502, "kb_embed_provider_failed", "Embedding provider failed"


class UploadLimitReached(AppError):
    """The widget holds the most documents it may (`limit`); delete one first."""

    status, code, title = 409, "kb_upload_limit_reached", "Document limit reached"


class DuplicateDocument(AppError):
    """A document with the same bytes is already uploaded (`document_id`)."""

    status, code, title = 409, "kb_duplicate_document", "Document already uploaded"


class DocumentBusy(AppError):
    """The document is being processed; try again when its state is `ready` or `failed`."""

    status, code, title = 409, "kb_document_processing", "Document is being processed"


class UnsupportedDocument(AppError):
    """The uploaded bytes are not one of the accepted formats (txt, md, html, csv, json, pdf, docx,
    odt), whatever the file's name says; `errors.file` says what was found."""

    status, code, title = 422, "kb_unsupported_document", "Unsupported document"


class CrawlRunning(AppError):
    """A crawl is running: the configuration cannot be replaced or removed until it ends (a queued
    crawl, by contrast, is cancelled by the write). `run_id` names the running crawl."""

    status, code, title = 409, "kb_crawl_running", "A crawl is running"
