"""Uploads: each format by its bytes, asynchronous ingestion states, limits, delete."""

import tracemalloc

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.core.models import File, IdempotencyKey
from apps.kb import extract, services
from apps.kb.models import KbChunk, KbDocument
from apps.kb.services import uploads
from apps.kb.testing import OfflineHooks
from apps.kb.tests.conftest import idem
from apps.kb.tests.documents import pdf_bytes, samples
from tests.core import bombs

UPLOADS = "/api/v1/kb/uploads"
pytestmark = pytest.mark.django_db


def upload(client, name, data, **extra):
    return client.post(UPLOADS, {"file": SimpleUploadedFile(name, data)}, format="multipart", **{**idem(), **extra})


@pytest.mark.parametrize("fmt", list(samples()))
def test_each_format_is_extracted_chunked_and_embedded(kb, widget, offline, fmt, django_capture_on_commit_callbacks):
    name, data, phrase = samples()[fmt]
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(kb, name, data)
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["state"] == "queued" and body["format"] == fmt and body["source_ref"] == f"upload:{body['id']}"
    polled = kb.get(f"{UPLOADS}/{body['id']}").json()
    assert polled["state"] == "ready", polled
    assert polled["chunk_count"] >= 1 and polled["error"] is None
    chunks = KbChunk.objects.filter(widget=widget, document_id=body["id"])
    assert phrase in " ".join(c.content for c in chunks)
    assert {c.source_ref for c in chunks} == {f"upload:{body['id']}"} and all(c.regenerates for c in chunks)
    hits = kb.get("/api/v1/kb/search", {"q": phrase}).json()["data"]
    assert hits and hits[0]["source_ref"] == f"upload:{body['id']}"


def test_html_extraction_drops_navigation_and_footer(kb, widget, offline, django_capture_on_commit_callbacks):
    name, data, _ = samples()["html"]
    with django_capture_on_commit_callbacks(execute=True):
        doc = upload(kb, name, data).json()
    text = " ".join(KbChunk.objects.filter(document_id=doc["id"]).values_list("content", flat=True))
    assert "Orders above 5000 roubles" in text and "About" not in text


def test_a_long_document_becomes_overlapping_chunks(kb, widget, offline, django_capture_on_commit_callbacks):
    sentences = [f"Sentence number {i} tells about topic{i} in detail." for i in range(300)]
    with django_capture_on_commit_callbacks(execute=True):
        doc = upload(kb, "long.txt", " ".join(sentences).encode()).json()
    chunks = list(KbChunk.objects.filter(document_id=doc["id"]).order_by("chunk_index"))
    assert len(chunks) > 5 and [c.chunk_index for c in chunks] == list(range(len(chunks)))
    assert all(len(c.content.split()) <= 230 for c in chunks)
    for first, second in zip(chunks, chunks[1:], strict=False):
        assert first.content.split()[-40:] == second.content.split()[:40]  # 40 words of overlap
        assert first.content.endswith(".")  # cut at a sentence end


@pytest.mark.parametrize(
    "name,data",
    [
        ("photo.pdf", b"\x89PNG\r\n\x1a\n" + b"\x00" * 64),
        ("fake.docx", b"PK\x03\x04 not really a zip"),
        ("latin1.txt", "café crème".encode("latin-1")),
        ("prog.txt", b"\x7fELF\x02\x01\x01\x00\x00\x00"),
    ],
)
def test_content_is_checked_by_its_bytes_not_its_name(kb, offline, assert_problem, name, data):
    body = assert_problem(upload(kb, name, data), 422, "kb_unsupported_document")
    assert "file" in body["errors"]
    assert not KbDocument.objects.exists() and not File.objects.exists()


@pytest.mark.parametrize("member", ["mimetype", "word/document.xml"])
def test_a_docx_bomb_is_refused_in_the_request_and_stores_nothing(kb, offline, assert_problem, member):
    # given a 2.6 MB docx whose member inflates to 400 MiB
    data = bombs.docx_with_bomb(member, 400 * 1024 * 1024)
    tracemalloc.start()
    try:
        # when
        response = upload(kb, "bomb.docx", data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # then 422 with what was found, nothing stored, and the member never inflated
    body = assert_problem(response, 422, "kb_unsupported_document")
    assert "inflates past" in body["errors"]["file"][0]
    assert not KbDocument.objects.exists() and not File.objects.exists()
    assert peak < 64 * 1024 * 1024


def test_a_docx_whose_directory_lies_fails_in_ingestion_with_one_piece_in_memory(
    kb, offline, django_capture_on_commit_callbacks
):
    # given a docx whose document.xml inflates to 300 MiB while its headers declare 1,000 bytes
    data = bombs.docx_with_bomb("word/document.xml", 300 * 1024 * 1024, lie=1000)
    tracemalloc.start()
    try:
        # when uploaded (the request reads the directory only) and ingested
        with django_capture_on_commit_callbacks(execute=True):
            doc = upload(kb, "liar.docx", data).json()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # then the document failed with a reason, no chunk, and the member was never inflated whole
    polled = kb.get(f"{UPLOADS}/{doc['id']}").json()
    assert polled["state"] == "failed" and polled["error"]["code"] == "extraction_failed"
    assert not KbChunk.objects.exists()
    assert peak < 64 * 1024 * 1024


def test_a_csv_with_a_field_past_the_csv_field_limit_is_read_as_text(kb, offline, django_capture_on_commit_callbacks):
    data = b"question,answer\n" + b"x" * 200_000 + b",y\nhours,nine to six\n"
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(kb, "faq.csv", data)
    assert response.status_code == 202, response.content
    assert response.json()["format"] == "txt"


def test_a_pdf_named_txt_is_read_as_pdf(kb, offline, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        doc = upload(kb, "terms.txt", pdf_bytes("Warranty lasts twelve months")).json()
    assert doc["format"] == "pdf" and kb.get(f"{UPLOADS}/{doc['id']}").json()["state"] == "ready"


def test_a_scanned_pdf_without_text_fails_with_a_reason(kb, offline, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        doc = upload(kb, "scan.pdf", pdf_bytes()).json()
    polled = kb.get(f"{UPLOADS}/{doc['id']}").json()
    assert polled["state"] == "failed" and polled["error"]["code"] == "empty_document"


def test_a_provider_failure_fails_the_document_and_stores_no_chunks(kb, django_capture_on_commit_callbacks):
    with services.hooks.use_hooks(OfflineHooks(fail="server_error")):
        with django_capture_on_commit_callbacks(execute=True):
            doc = upload(kb, "faq.txt", "Доставка за один день".encode()).json()
    polled = kb.get(f"{UPLOADS}/{doc['id']}").json()
    assert polled["state"] == "failed" and polled["error"]["code"] == "embed_provider_failed"
    assert not KbChunk.objects.exists()


def test_upload_input_errors(kb, offline, assert_problem):
    assert_problem(kb.post(UPLOADS, {}, format="multipart", **idem()), 422)
    assert_problem(upload(kb, "empty.txt", b""), 422)
    two = {"file": [SimpleUploadedFile("a.txt", b"a"), SimpleUploadedFile("b.txt", b"b")]}
    assert_problem(kb.post(UPLOADS, two, format="multipart", **idem()), 422)
    extra = {"file": SimpleUploadedFile("a.txt", b"a"), "note": "x"}
    assert_problem(kb.post(UPLOADS, extra, format="multipart", **idem()), 422)
    assert_problem(kb.post(UPLOADS, {"file": "x"}, format="json", **idem()), 415)
    assert not KbDocument.objects.exists()


def test_upload_needs_the_key_and_refuses_its_reuse(kb, offline, assert_problem):
    assert_problem(kb.post(UPLOADS, {"file": SimpleUploadedFile("a.txt", b"abc")}, format="multipart"), 400)
    headers = idem()
    assert upload(kb, "a.txt", b"first", **headers).status_code == 202
    assert_problem(upload(kb, "b.txt", b"second", **headers), 409)
    assert KbDocument.objects.count() == 1


def test_the_same_bytes_twice_is_409(kb, offline, assert_problem):
    first = upload(kb, "a.txt", b"same text").json()
    body = assert_problem(upload(kb, "b.txt", b"same text"), 409, "kb_duplicate_document")
    assert body["document_id"] == first["id"]


def test_the_document_count_limit(kb, offline, assert_problem, monkeypatch):
    monkeypatch.setattr(uploads, "MAX_DOCUMENTS", 2)
    upload(kb, "a.txt", b"one")
    upload(kb, "b.txt", b"two")
    body = assert_problem(upload(kb, "c.txt", b"three"), 409, "kb_upload_limit_reached")
    assert body["limit"] == 2 and KbDocument.objects.count() == 2


def test_the_size_limit(kb, offline, assert_problem, monkeypatch):
    monkeypatch.setattr(uploads, "MAX_FILE_BYTES", 10)
    assert_problem(upload(kb, "a.txt", b"x" * 11), 422)
    assert not KbDocument.objects.exists()


def test_delete_removes_document_file_and_chunks(kb, widget, offline, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        doc = upload(kb, "faq.txt", "Доставка за один день".encode()).json()
    document = KbDocument.objects.get(pk=doc["id"])
    stored = document.file.stored
    storage, name = stored.storage, stored.name
    assert storage.exists(name)
    with django_capture_on_commit_callbacks(execute=True):
        response = kb.delete(f"{UPLOADS}/{doc['id']}")
    assert response.status_code == 200 and response.json() == {"deleted_chunks": 1}
    assert not KbDocument.objects.exists() and not KbChunk.objects.exists() and not File.objects.exists()
    assert not storage.exists(name)
    assert kb.get("/api/v1/kb/search", {"q": "доставка"}).json()["data"] == []


def test_delete_while_processing_is_409(kb, offline, assert_problem):
    doc = upload(kb, "faq.txt", b"text").json()
    KbDocument.objects.filter(pk=doc["id"]).update(state="processing")
    assert_problem(kb.delete(f"{UPLOADS}/{doc['id']}"), 409, "kb_document_processing")
    assert KbDocument.objects.filter(pk=doc["id"]).exists()


def test_a_document_stuck_in_processing_can_be_deleted_after_a_while(kb, offline):
    from datetime import timedelta

    from django.utils import timezone

    doc = upload(kb, "faq.txt", b"text").json()
    KbDocument.objects.filter(pk=doc["id"]).update(
        state="processing", updated_at=timezone.now() - timedelta(minutes=16)
    )
    assert kb.delete(f"{UPLOADS}/{doc['id']}").status_code == 200
    assert not KbDocument.objects.exists()


def test_ingestion_of_a_document_not_queued_does_nothing(widget, offline):
    document = KbDocument.objects.create(
        widget=widget, name="a.txt", format="txt", size=1, sha256="0" * 64, state="ready"
    )
    services.ingest_document(document_id=document.pk)
    assert not KbChunk.objects.exists()
    services.ingest_document(document_id=document.pk + 1000)


def test_list_is_a_cursor_list_with_states(kb, offline, django_assert_max_num_queries, assert_problem):
    ids = [upload(kb, f"{i}.txt", f"text {i}".encode()).json()["id"] for i in range(3)]
    with django_assert_max_num_queries(8):
        page = kb.get(UPLOADS, {"limit": 2}).json()
    assert [d["id"] for d in page["data"]] == ids[::-1][:2] and page["next_cursor"]
    assert {d["state"] for d in page["data"]} == {"queued"}
    rest = kb.get(UPLOADS, {"limit": 2, "cursor": page["next_cursor"]}).json()
    assert [d["id"] for d in rest["data"]] == [ids[0]]
    assert_problem(kb.get(UPLOADS, {"limit": 0}), 422)
    assert_problem(kb.get(UPLOADS, {"state": "ready"}), 422)


def test_foreign_and_missing_documents_are_the_same_404(kb, api, other_widget, offline, assert_problem):
    foreign = upload(api(["kb:read", "kb:write"], w=other_widget), "a.txt", b"foreign").json()
    for pk in (foreign["id"], foreign["id"] + 1000):
        assert_problem(kb.get(f"{UPLOADS}/{pk}"), 404, "not_found")
        assert_problem(kb.delete(f"{UPLOADS}/{pk}"), 404, "not_found")
    assert KbDocument.objects.filter(pk=foreign["id"]).exists()


def test_upload_scopes(api, offline, assert_problem):
    assert_problem(upload(api(["kb:read"]), "a.txt", b"x"), 403, "missing_scope")
    assert_problem(api(["kb:write"]).get(UPLOADS), 403, "missing_scope")
    assert not IdempotencyKey.objects.exists()


def _processing_since(document_id, minutes):
    from datetime import timedelta

    from django.utils import timezone

    KbDocument.objects.filter(pk=document_id).update(
        state="processing", updated_at=timezone.now() - timedelta(minutes=minutes)
    )


def test_a_document_whose_worker_died_is_failed_by_the_sweep(kb, offline):
    doc = upload(kb, "faq.txt", b"text").json()
    alive = upload(kb, "alive.txt", b"other text").json()
    _processing_since(doc["id"], 16)
    _processing_since(alive["id"], 5)
    assert services.sweep_stale_documents() == 1
    polled = kb.get(f"{UPLOADS}/{doc['id']}").json()
    assert polled["state"] == "failed" and polled["error"]["code"] == "worker_lost"
    assert kb.get(f"{UPLOADS}/{alive['id']}").json()["state"] == "processing"
    assert services.sweep_stale_documents() == 0


def test_a_long_ingestion_keeps_its_document_alive_batch_by_batch(kb, offline, monkeypatch):
    from datetime import timedelta

    from django.utils import timezone

    doc = upload(kb, "long.txt", b"text").json()  # queued (its task not run here)
    # queued long ago: the claim itself is the worker's first sign of life
    KbDocument.objects.filter(pk=doc["id"]).update(updated_at=timezone.now() - timedelta(hours=1))
    swept = []
    real = services.embed_texts

    def embed_and_sweep(**kwargs):
        # the sweep runs between batches, as if long after the ingestion started
        later = timezone.now() + services.STALE_PROCESSING - timedelta(seconds=30)
        swept.append(services.sweep_stale_documents(now=later))
        return real(**kwargs)

    monkeypatch.setattr(extract, "text_of", lambda data, fmt: "word " * 20000)
    monkeypatch.setattr(uploads, "embed_texts", embed_and_sweep)
    services.ingest_document(document_id=doc["id"])
    assert len(swept) > 1 and set(swept) == {0}
    assert KbDocument.objects.get(pk=doc["id"]).state == "ready"
