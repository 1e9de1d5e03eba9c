"""Every knowledge-base write emits one internal `kb.*` event per change (never a webhook)."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.core import events
from apps.kb import services
from apps.kb.models import KbDocument
from apps.kb.tests.conftest import idem

pytestmark = pytest.mark.django_db
KB_TYPES = [name for name in events.INTERNAL if name.startswith("kb.")]


@pytest.fixture
def kb_events():
    seen = []
    events.subscribe(KB_TYPES, seen.append, phase=events.IN_TRANSACTION)
    yield lambda: [(e.type, dict(e.data)) for e in seen]
    for name in KB_TYPES:
        events._handlers[(name, events.IN_TRANSACTION)].remove(seen.append)


def test_the_kb_events_are_internal_only():
    from apps.webhooks import catalogue

    assert KB_TYPES and not set(KB_TYPES) & set(events.CATALOGUE)
    assert not set(KB_TYPES) & set(catalogue.NATIVE_NAMES)


def test_rule_writes_emit_one_event_each(kb, offline, kb_events, captured_events):
    rule = kb.post("/api/v1/kb/rules", {"content": "Доставка за один день"}, format="json", **idem()).json()
    kb.patch(f"/api/v1/kb/rules/{rule['id']}", {"content": "Доставка за два дня"}, format="json", **idem())
    kb.patch(f"/api/v1/kb/rules/{rule['id']}", {"content": "Доставка за два дня"}, format="json", **idem())
    kb.delete(f"/api/v1/kb/rules/{rule['id']}")
    other = kb.post("/api/v1/kb/rules", {"content": "Возврат"}, format="json", **idem()).json()
    kb.delete(f"/api/v1/kb/rules?source_ref={other['source_ref']}")
    kb.delete("/api/v1/kb/rules?source_ref=manual:999999")  # nothing deleted: no event
    assert kb_events() == [
        (events.KB_RULE_CREATED, {"rule_id": rule["id"], "source_ref": rule["source_ref"]}),
        (events.KB_RULE_UPDATED, {"rule_id": rule["id"], "fields": ["content"]}),
        (events.KB_RULE_DELETED, {"rule_id": rule["id"], "source_ref": rule["source_ref"]}),
        (events.KB_RULE_CREATED, {"rule_id": other["id"], "source_ref": other["source_ref"]}),
        (events.KB_SOURCE_DELETED, {"source_ref": other["source_ref"], "deleted": 1}),
    ]
    assert captured_events() == []


def test_upload_state_changes_and_delete_emit_events(kb, offline, kb_events, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        doc = kb.post(
            "/api/v1/kb/uploads",
            {"file": SimpleUploadedFile("faq.txt", "Гарантия двенадцать месяцев.".encode())},
            format="multipart",
            **idem(),
        ).json()
    kb.delete(f"/api/v1/kb/uploads/{doc['id']}")
    states = [(t, d.get("state")) for t, d in kb_events()]
    assert states == [
        (events.KB_DOCUMENT_STATE_CHANGED, "queued"),
        (events.KB_DOCUMENT_STATE_CHANGED, "processing"),
        (events.KB_DOCUMENT_STATE_CHANGED, "ready"),
        (events.KB_DOCUMENT_DELETED, None),
    ]
    assert kb_events()[-1][1] == {"document_id": doc["id"], "deleted_chunks": 1}


def test_a_failed_ingestion_emits_failed_with_its_error(widget, kb_events):
    from apps.kb import hooks
    from apps.kb.testing import OfflineHooks

    document = KbDocument.objects.create(widget=widget, name="a.txt", format="txt", size=1, sha256="1" * 64)
    with hooks.use_hooks(OfflineHooks(fail="server_error")):
        services.ingest_document(document_id=document.pk)
    assert kb_events()[-1] == (
        events.KB_DOCUMENT_STATE_CHANGED,
        {"document_id": document.pk, "state": "failed", "error": "file_missing"},
    )


def test_the_sweep_of_a_document_whose_worker_died_emits_failed(widget, kb_events):
    from datetime import timedelta

    from django.utils import timezone

    document = KbDocument.objects.create(widget=widget, name="a.txt", format="txt", size=1, sha256="2" * 64)
    KbDocument.objects.filter(pk=document.pk).update(
        state="processing", updated_at=timezone.now() - services.STALE_PROCESSING - timedelta(seconds=1)
    )
    services.sweep_stale_documents()
    assert kb_events() == [
        (events.KB_DOCUMENT_STATE_CHANGED, {"document_id": document.pk, "state": "failed", "error": "worker_lost"})
    ]
