from celery import shared_task

from . import services


@shared_task(acks_late=True)
def ingest_document(document_id: int) -> None:
    services.ingest_document(document_id=document_id)
