from celery import shared_task

from apps.core import bulk

from . import services
from .models import KbCrawlRun, KbDocument


@shared_task(bind=True, acks_late=True)
def ingest_document(self, document_id: int) -> None:
    """On the `bulk` queue (CELERY_TASK_ROUTES), in one of the widget's bulk slots (apps.core.bulk)."""
    widget_id = KbDocument.objects.filter(pk=document_id).values_list("widget_id", flat=True).first()
    if widget_id is None:
        return  # deleted meanwhile
    with bulk.widget_turn(self, widget_id):
        services.ingest_document(document_id=document_id)


@shared_task(bind=True, acks_late=True)
def run_crawl(self, run_id: int, slice_number: int = 0) -> None:
    """One slice of a crawl (apps.kb.crawler): on the `bulk` queue, in one of the widget's bulk slots."""
    from . import crawler

    widget_id = KbCrawlRun.objects.filter(pk=run_id).values_list("widget_id", flat=True).first()
    if widget_id is None:
        return
    with bulk.widget_turn(self, widget_id):
        crawler.run_crawl(run_id=run_id, slice_number=slice_number)


@shared_task
def queue_scheduled_crawls() -> int:
    return services.queue_scheduled_crawls()


@shared_task
def sweep_stale_documents() -> int:
    """Beat: fail the documents whose worker died while processing them (services.sweep_stale_documents)."""
    return services.sweep_stale_documents()
