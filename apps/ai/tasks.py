from celery import shared_task

from . import translations


@shared_task(acks_late=True)
def translate_widget_texts(widget_id: int, ids: list[int]) -> None:
    translations.translate(widget_id=widget_id, ids=ids)
