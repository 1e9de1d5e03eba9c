"""Knowledge-base writes shared by every section: the limits, the index version and embedding for a write."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.db.models import F

from apps.core import files as core_files
from apps.core.models import Widget

from .. import hooks
from .. import text as kbtext
from ..errors import EmbedProviderFailed
from ..models import KbIndex

CONTENT_MAX_CHARS = kbtext.CHUNK_CHARACTERS  # a manual rule is one chunk, no longer than any other
DOC_ID_MAX_CHARS = 200
MAX_DOCUMENTS = 200
MAX_FILE_BYTES = core_files.MAX_FILE_BYTES
MAX_CHUNKS_PER_DOCUMENT = 2000
EMBED_BATCH = 64
# A document `processing` whose worker has been silent this long (no batch embedded) lost its worker:
# it may be deleted, and the beat job `sweep_stale_documents` fails it.
STALE_PROCESSING = timedelta(minutes=15)
WORKER_LOST = "worker_lost"


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
        raise EmbedProviderFailed(embed_detail(exc)) from None


def embed_detail(exc: hooks.EmbedError) -> str:
    """The problem detail of a failed embedding (a write's and a search's)."""
    if exc.kind == "no_credential":
        return "No active credential of a driver that can embed (openai, gigachat, openai_compatible) resolves."
    return f"The embedding provider failed ({exc.kind}); nothing was stored."
