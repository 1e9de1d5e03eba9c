from celery import shared_task

from . import services


@shared_task(acks_late=True)
def ingest_document(document_id: int) -> None:
    services.ingest_document(document_id=document_id)


@shared_task(acks_late=True)
def run_crawl(run_id: int, slice_number: int = 0) -> None:
    """One slice of a crawl (apps.kb.crawler): routed to the `bulk` queue (CELERY_TASK_ROUTES)."""
    from . import crawler

    crawler.run_crawl(run_id=run_id, slice_number=slice_number)


@shared_task
def queue_scheduled_crawls() -> int:
    return services.queue_scheduled_crawls()


@shared_task
def sweep_stale_documents() -> int:
    """Beat: fail the documents whose worker died while processing them (services.sweep_stale_documents)."""
    return services.sweep_stale_documents()
