"""The knowledge base of a widget: rules (chunks of text with their embedding), uploaded documents
and the per-widget index version.

A rule is one chunk: written by hand (`manual:<id>`, one chunk), or cut from an uploaded document
(`upload:<id>`, several chunks with `chunk_index`). Its embedding is stored as little-endian float32
bytes, unit length, with the model that made it (`embedding_model`): the vector side of a search
compares only vectors of the model that embeds the question.

`KbIndex.version` counts every write to a widget's chunks (in the writer's transaction); search
processes cache the tenant's vectors and revalidate them with one primary-key read of it.
"""

from __future__ import annotations

from django.db import models

from apps.core.models import File, Widget


class KbIndex(models.Model):
    widget = models.OneToOneField(Widget, on_delete=models.CASCADE, related_name="kb_index")
    version = models.BigIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"KB index of widget {self.widget_id} v{self.version}"


class KbDocument(models.Model):
    """An uploaded document and its ingestion state (see docs/ai/knowledge-base.md)."""

    class State(models.TextChoices):
        QUEUED = "queued"
        PROCESSING = "processing"
        READY = "ready"
        FAILED = "failed"

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="kb_documents")
    file = models.ForeignKey(File, on_delete=models.SET_NULL, null=True, related_name="+")
    name = models.CharField(max_length=255)
    format = models.CharField(max_length=8)  # txt md html csv json pdf docx odt (detected from the bytes)
    size = models.PositiveIntegerField()
    sha256 = models.CharField(max_length=64)
    state = models.CharField(max_length=16, choices=State.choices, default=State.QUEUED)
    error = models.CharField(max_length=64, blank=True, default="")
    error_detail = models.CharField(max_length=500, blank=True, default="")
    chunk_count = models.PositiveIntegerField(default=0)
    characters = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["widget", "-created_at", "-id"], name="kb_doc_widget_created")]
        constraints = [
            models.UniqueConstraint(fields=["widget", "sha256"], name="kb_doc_unique_content"),
        ]

    def __str__(self) -> str:
        return f"KB document {self.pk} ({self.state})"


class KbChunk(models.Model):
    """One rule: a chunk of knowledge the bot retrieves."""

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="kb_chunks")
    document = models.ForeignKey(KbDocument, on_delete=models.CASCADE, null=True, blank=True, related_name="chunks")
    content = models.TextField()
    doc_id = models.CharField(max_length=200, null=True, blank=True)
    source_ref = models.CharField(max_length=600)
    button_id = models.CharField(max_length=64, null=True, blank=True)
    operator_id = models.BigIntegerField(null=True, blank=True)
    chunk_index = models.PositiveIntegerField(default=0)
    embedding = models.BinaryField()
    embedding_model = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [
            models.Index(fields=["widget", "-created_at", "-id"], name="kb_chunk_widget_created"),
            models.Index(fields=["widget", "source_ref"], name="kb_chunk_widget_source"),
            models.Index(fields=["widget", "embedding_model"], name="kb_chunk_widget_model"),
        ]

    def __str__(self) -> str:
        return f"KB rule {self.pk} ({self.source_ref})"

    @property
    def regenerates(self) -> bool:
        return not self.source_ref.startswith("manual:")


class KbCrawlConfig(models.Model):
    """The widget's one crawler configuration (replaced whole by PUT). `generation` counts the
    replacements: a running crawl of an older generation stops between pages."""

    class Schedule(models.TextChoices):
        MANUAL = "manual"
        DAILY = "daily"
        WEEKLY = "weekly"

    widget = models.OneToOneField(Widget, on_delete=models.CASCADE, related_name="kb_crawl_config")
    start_urls = models.JSONField(default=list)
    include = models.JSONField(default=list)
    exclude = models.JSONField(default=list)
    max_pages = models.PositiveIntegerField(default=100)
    max_depth = models.PositiveSmallIntegerField(default=3)
    schedule = models.CharField(max_length=8, choices=Schedule.choices, default=Schedule.MANUAL)
    generation = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"KB crawler of widget {self.widget_id} (gen {self.generation})"


class KbCrawlRun(models.Model):
    """One crawl: queued -> running -> finished | failed | cancelled (a queued one may go straight
    to cancelled, a running one is cancelled by a write that asks for it). `heartbeat_at` moves after
    every page; a running crawl silent for services.STALE_CRAWL is taken as dead (its worker is gone).

    A running crawl works in slices (apps.kb.crawler): each slice is one task on the `bulk` queue
    that fetches pages for about crawler.SLICE_SECONDS, saves what is left to do in `frontier` and
    sends the next slice, numbered `slices`, to the back of the queue."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        FINISHED = "finished"
        FAILED = "failed"
        CANCELLED = "cancelled"

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="kb_crawl_runs")
    generation = models.PositiveIntegerField()
    trigger = models.CharField(max_length=8)  # put | schedule
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    pages_fetched = models.PositiveIntegerField(default=0)
    pages_indexed = models.PositiveIntegerField(default=0)
    pages_unchanged = models.PositiveIntegerField(default=0)
    pages_failed = models.PositiveIntegerField(default=0)
    pages_retired = models.PositiveIntegerField(default=0)
    pages_disallowed = models.PositiveIntegerField(default=0)
    failures = models.JSONField(default=list)  # [{url, error}], the first services.MAX_FAILURES_KEPT
    error = models.CharField(max_length=64, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    slices = models.PositiveIntegerField(default=0)  # slices done; the next slice's task carries it
    frontier = models.JSONField(default=dict, blank=True)  # crawler.Crawl.snapshot() between slices

    class Meta:
        indexes = [
            models.Index(fields=["widget", "-created_at", "-id"], name="kb_crawlrun_widget_created"),
            models.Index(fields=["widget", "status"], name="kb_crawlrun_widget_status"),
        ]

    def __str__(self) -> str:
        return f"KB crawl {self.pk} ({self.status})"


class KbCrawlPage(models.Model):
    """A page the crawler indexed: its text's fingerprint (sha256 of the extracted text) decides
    whether a later crawl re-embeds it; its chunks are the rules with `source_ref` `crawl:<url>`."""

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="kb_crawl_pages")
    url = models.CharField(max_length=594)
    fingerprint = models.CharField(max_length=64)
    chunk_count = models.PositiveIntegerField(default=0)
    last_run = models.ForeignKey(KbCrawlRun, on_delete=models.SET_NULL, null=True, related_name="+")
    fetched_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["widget", "url"], name="kb_crawlpage_unique_url")]

    def __str__(self) -> str:
        return f"KB crawled page {self.url}"
