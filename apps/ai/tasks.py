import threading

from celery import shared_task, signals
from django.db import DatabaseError, connection

from apps.core import bulk

from . import assist, runtime, translations


@shared_task(bind=True, acks_late=True)
def translate_widget_texts(self, widget_id: int, ids: list[int]) -> None:
    """On the `bulk` queue (CELERY_TASK_ROUTES), in one of the widget's bulk slots (apps.core.bulk)."""
    with bulk.widget_turn(self, widget_id):
        translations.translate(widget_id=widget_id, ids=ids)


@shared_task(acks_late=True, autoretry_for=(DatabaseError,), max_retries=3, retry_backoff=1, retry_jitter=True)
def answer_visitor_message(message_id: int) -> str:
    """The AI operator answers one visitor message (apps.ai.runtime.answer: idempotent, claims the
    message before the provider call, so a redelivery or a second worker answers nothing twice).

    After a database error the thread's connection is let go (the `ai` worker's pool discards a
    broken one; a kept one is closed), so the retry starts on a sound one."""
    try:
        return runtime.answer(message_id=message_id)
    except DatabaseError:
        if not connection.in_atomic_block:
            connection.close()
        raise


@shared_task(acks_late=True, autoretry_for=(DatabaseError,), max_retries=3, retry_backoff=1, retry_jitter=True)
def summarise_handover(chat_id: int, operator_id: int, since: float | None = None) -> str:
    """The AI operator's hand-over summary of a chat, as its private note (apps.ai.assist), sent once
    the hand-over committed (`since`: when a summary waiting for its widget's slot was first sent). A
    database error retries on a fresh connection, as the answer task does."""
    try:
        return assist.summarise_handover(chat_id=chat_id, operator_id=operator_id, since=since)
    except DatabaseError:
        if not connection.in_atomic_block:
            connection.close()
        raise


@shared_task
def redrive_unanswered() -> int:
    """Beat: send again the AI reply task of visitor messages whose task was lost (runtime.redrive)."""
    return runtime.redrive()


@signals.worker_shutting_down.connect
def give_back_claims(**kwargs) -> None:
    """A stopping worker gives back the reply claims its running tasks hold (runtime.release_claims),
    so their messages are answered by the next worker instead of waiting out the lease; the `ai`
    worker runs its tasks in threads of this process, where the claims are known. Celery sends this
    signal from the process's signal handler: the database work runs in a thread of its own."""
    threading.Thread(target=_release_claims, name="ai-release-claims").start()


def _release_claims() -> None:
    try:
        runtime.release_claims()
    finally:
        connection.close()
