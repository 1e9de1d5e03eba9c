"""Knowledge-base writes: the site crawler's configuration, its runs (queue, slices, pause, finish) and the
pages it indexes."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from apps.core import events, queueing
from apps.core.errors import ValidationFailed
from apps.core.models import Widget
from apps.platform import outbound

from ..errors import CrawlRunning
from ..models import KbChunk, KbCrawlConfig, KbCrawlPage, KbCrawlRun
from .indexing import DOC_ID_MAX_CHARS, bump_version
from .uploads import store_chunks

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
    queueing.task("apps.kb.tasks.run_crawl").delay(run_id, slice_number)


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
