"""The knowledge base's settings page: documents (upload, state, delete), crawls (start, progress,
cancel), rules and the search preview, each through the API route's serializer and service: the same
refusals, word for word, as the API for the same input; another widget's ids are 404."""

import ipaddress
import itertools

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from apps.kb import hooks, index
from apps.kb.models import KbChunk, KbCrawlConfig, KbCrawlRun, KbDocument
from apps.kb.testing import OfflineHooks
from apps.platform import outbound

pytestmark = pytest.mark.django_db

PAGE = "/console/settings/ai/knowledge/"
UPLOAD = PAGE + "documents/"
_keys = itertools.count()

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
TEXT = b"Green tea ships from our Riga warehouse within three days.\n"


def idem() -> dict:
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"console-kb-{next(_keys)}"}


@pytest.fixture(autouse=True)
def _fresh_index():
    index.clear_cache()
    yield
    index.clear_cache()


@pytest.fixture
def offline():
    with hooks.use_hooks(OfflineHooks()) as installed:
        yield installed


@pytest.fixture
def kb(api):
    return api(["kb:read", "kb:write"])


@pytest.fixture(autouse=True)
def dns(monkeypatch):
    """`docs.example.com` is public, `intranet.test` private, anything else does not resolve."""

    def resolve(host, port):
        if host == "docs.example.com":
            return [ipaddress.ip_address("93.184.216.34")]
        if host == "intranet.test":
            return [ipaddress.ip_address("10.1.2.3")]
        raise outbound.OutboundError("resolve_failed")

    monkeypatch.setattr(outbound.policy, "resolve_host", resolve)


def problem(response) -> dict:
    return response.json()


def page_errors(response) -> str:
    return response.content.decode()


def assert_same_refusal(page_response, api_response, status):
    """The page answers the API's status and shows each of the API's messages (escaped as HTML)."""
    from django.utils.html import escape

    assert page_response.status_code == status, page_response.content[:300]
    assert api_response.status_code == status, api_response.content[:300]
    body = api_response.json()
    html = page_response.content.decode()
    messages = [m for ms in (body.get("errors") or {}).values() for m in ms] or [body["detail"]]
    for message in messages:
        assert escape(message) in html, (message, html[:2000])


def upload(client, name, data, **extra):
    return client.post(UPLOAD, {"file": SimpleUploadedFile(name, data)}, **extra)


def api_upload(kb, name, data):
    return kb.post("/api/v1/kb/uploads", {"file": SimpleUploadedFile(name, data)}, format="multipart", **idem())


# --- the page -----------------------------------------------------------------------------------------------


def test_the_owner_sees_documents_crawls_rules_and_the_search_preview(owner_console, widget, offline):
    KbDocument.objects.create(
        widget=widget,
        name="prices.pdf",
        format="pdf",
        size=2048,
        sha256="a" * 64,
        state="failed",
        error="empty_document",
        error_detail="no text was found in the document",
    )
    KbCrawlRun.objects.create(
        widget=widget,
        generation=1,
        trigger="put",
        status="finished",
        pages_fetched=7,
        pages_indexed=5,
        finished_at=timezone.now(),
    )
    response = owner_console.get(PAGE)
    assert response.status_code == 200
    html = response.content.decode()
    for text in (
        "Knowledge base",
        "prices.pdf",
        "Failed",
        "No text was found",
        "Past crawls",
        "Rules",
        "Search preview",
        "settings-kb.js",
        'name="start_urls"',
    ):
        assert text in html, text
    assert 'hx-trigger="every 2s"' not in html  # nothing waits: nothing polls


def test_an_operator_gets_403_on_the_knowledge_pages(console, widget):
    for path in (PAGE, UPLOAD, PAGE + "search/?q=tea", PAGE + "crawl/cancel/"):
        assert console.get(path).status_code == 403
        assert console.post(path).status_code == 403


# --- documents ----------------------------------------------------------------------------------------------


def test_an_upload_is_queued_then_read_and_its_list_polls_until_ready(
    owner_console, owner_htmx, widget, offline, django_capture_on_commit_callbacks
):
    response = upload(owner_console, "shipping.txt", TEXT)
    assert response.status_code == 302 and response.url.endswith(PAGE + "#documents")
    document = KbDocument.objects.get(widget=widget)
    assert (document.name, document.state) == ("shipping.txt", "queued")
    listed = owner_htmx.get(PAGE + "documents/list/").content.decode()
    assert "Queued" in listed and 'hx-trigger="every 2s"' in listed

    from apps.kb import services

    services.ingest_document(document_id=document.pk)
    listed = owner_htmx.get(PAGE + "documents/list/").content.decode()
    assert "Ready" in listed and 'hx-trigger="every 2s"' not in listed
    assert 'id="kb-status" hx-swap-oob="true"' in listed and "Indexed" in listed  # the state, refreshed with it
    assert KbChunk.objects.filter(widget=widget, document=document).exists()


def test_an_upload_by_htmx_answers_the_documents_part_with_the_new_document_polling(owner_htmx, widget, offline):
    response = upload(owner_htmx, "shipping.txt", TEXT)
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="kb-upload"' in html and "shipping.txt" in html and 'hx-trigger="every 2s"' in html
    assert "<progress" in html


@pytest.mark.parametrize(
    ("name", "data", "status"),
    [("photo.pdf", PNG, 422), ("empty.txt", b"", 422)],
)
def test_an_upload_refusal_is_the_apis(owner_console, kb, widget, name, data, status):
    page = upload(owner_console, name, data)
    assert_same_refusal(page, api_upload(kb, name, data), status)
    assert not KbDocument.objects.exists()


def test_an_upload_without_a_file_is_refused_as_the_api_refuses_it(owner_console, kb, widget):
    page = owner_console.post(UPLOAD, {})
    api = kb.post("/api/v1/kb/uploads", {}, format="multipart", **idem())
    assert_same_refusal(page, api, 422)


def test_the_same_bytes_twice_is_the_apis_409(owner_console, kb, widget, offline):
    assert api_upload(kb, "one.txt", TEXT).status_code == 202
    page = upload(owner_console, "again.txt", TEXT)
    assert_same_refusal(page, api_upload(kb, "again.txt", TEXT), 409)
    assert KbDocument.objects.count() == 1


def test_an_upload_refused_by_htmx_is_drawn_in_its_part(owner_htmx, widget):
    response = upload(owner_htmx, "photo.pdf", PNG)
    assert response.status_code == 422
    assert 'id="kb-upload"' in response.content.decode() and "Not an accepted document" in response.content.decode()


def test_deleting_a_document_asks_first_then_removes_it_and_its_chunks(owner_console, widget, offline):
    upload(owner_console, "shipping.txt", TEXT)
    document = KbDocument.objects.get()
    from apps.kb import services

    services.ingest_document(document_id=document.pk)
    url = f"{PAGE}documents/{document.pk}/delete/"
    asked = owner_console.get(url)
    assert asked.status_code == 200 and "shipping.txt" in asked.content.decode()
    assert KbDocument.objects.exists()
    done = owner_console.post(url)
    assert done.status_code == 302
    assert not KbDocument.objects.exists() and not KbChunk.objects.exists()


def test_a_document_being_read_cannot_be_deleted_with_the_apis_words(owner_console, kb, widget):
    document = KbDocument.objects.create(
        widget=widget, name="a.txt", format="txt", size=3, sha256="b" * 64, state="processing"
    )
    page = owner_console.post(f"{PAGE}documents/{document.pk}/delete/")
    api = kb.delete(f"/api/v1/kb/uploads/{document.pk}")
    assert_same_refusal(page, api, 409)
    assert KbDocument.objects.filter(pk=document.pk).exists()


def test_another_widgets_document_is_404(owner_console, other_widget):
    foreign = KbDocument.objects.create(widget=other_widget, name="x.txt", format="txt", size=3, sha256="c" * 64)
    url = f"{PAGE}documents/{foreign.pk}/delete/"
    assert owner_console.get(url).status_code == 404
    assert owner_console.post(url).status_code == 404
    assert KbDocument.objects.filter(pk=foreign.pk).exists()


# --- crawls -------------------------------------------------------------------------------------------------

CRAWL = PAGE + "crawl/"


def crawl_form(**overrides):
    return {
        "start_urls": "https://docs.example.com/",
        "include": "",
        "exclude": "",
        "max_pages": "",
        "max_depth": "",
        "schedule": "manual",
        **overrides,
    }


def api_put(kb, body, query=""):
    return kb.put("/api/v1/kb/crawler" + query, body, format="json", **idem())


def test_starting_a_crawl_saves_the_settings_and_queues_it_with_the_apis_defaults(owner_console, widget):
    response = owner_console.post(CRAWL, crawl_form(include="/help/*\n/faq*", schedule="weekly"))
    assert response.status_code == 302 and response.url.endswith("#crawl")
    config = KbCrawlConfig.objects.get(widget=widget)
    assert config.start_urls == ["https://docs.example.com/"] and config.include == ["/help/*", "/faq*"]
    assert (config.max_pages, config.max_depth, config.schedule) == (100, 3, "weekly")
    assert KbCrawlRun.objects.get(widget=widget).status == "queued"
    html = owner_console.get(PAGE).content.decode()
    assert "Crawl in progress" in html and 'hx-trigger="every 2s"' in html
    assert "https://docs.example.com/" in html  # the form shows the saved settings


@pytest.mark.parametrize(
    ("form", "body"),
    [
        ({"start_urls": "http://docs.example.com/"}, {"start_urls": ["http://docs.example.com/"]}),
        ({"start_urls": ""}, {"start_urls": []}),
        ({"max_pages": "0"}, {"start_urls": ["https://docs.example.com/"], "max_pages": 0}),
        ({"max_depth": "six"}, {"start_urls": ["https://docs.example.com/"], "max_depth": "six"}),
        ({"include": "help"}, {"start_urls": ["https://docs.example.com/"], "include": ["help"]}),
        ({"start_urls": "https://intranet.test/"}, {"start_urls": ["https://intranet.test/"]}),
        ({"start_urls": "https://nowhere.invalid/"}, {"start_urls": ["https://nowhere.invalid/"]}),
        (
            {"start_urls": "https://docs.example.com/\nhttps://docs.example.com/"},
            {"start_urls": ["https://docs.example.com/", "https://docs.example.com/"]},
        ),
    ],
)
def test_a_crawl_refusal_is_the_apis(owner_console, kb, widget, form, body):
    page = owner_console.post(CRAWL, crawl_form(**form))
    assert_same_refusal(page, api_put(kb, body), 422)
    assert not KbCrawlConfig.objects.exists() and not KbCrawlRun.objects.exists()


def running(widget):
    KbCrawlConfig.objects.create(widget=widget, start_urls=["https://docs.example.com/"], generation=1)
    now = timezone.now()
    return KbCrawlRun.objects.create(
        widget=widget,
        generation=1,
        trigger="put",
        status="running",
        started_at=now,
        heartbeat_at=now,
        pages_fetched=12,
        pages_indexed=9,
    )


def test_a_crawl_cannot_be_replaced_while_one_runs_unless_asked_with_the_apis_words(owner_console, kb, widget):
    run = running(widget)
    page = owner_console.post(CRAWL, crawl_form())
    assert_same_refusal(page, api_put(kb, {"start_urls": ["https://docs.example.com/"]}), 409)
    run.refresh_from_db()
    assert run.status == "running"
    replaced = owner_console.post(CRAWL, crawl_form(cancel_running="on"))
    assert replaced.status_code == 302
    run.refresh_from_db()
    assert (run.status, run.error) == ("cancelled", "replaced")
    assert KbCrawlRun.objects.filter(widget=widget, status="queued").count() == 1


def test_the_progress_polls_while_a_crawl_runs_and_stops_when_it_ends(owner_htmx, widget):
    run = running(widget)
    live = owner_htmx.get(CRAWL + "progress/").content.decode()
    assert 'hx-trigger="every 2s"' in live and 'data-count="fetched">12<' in live and "Cancel the crawl" in live
    run.status, run.finished_at = "finished", timezone.now()
    run.save()
    ended = owner_htmx.get(CRAWL + "progress/").content.decode()
    assert 'hx-trigger="every 2s"' not in ended and "Past crawls" in ended and "Finished" in ended


def test_cancelling_asks_first_then_stops_the_running_crawl_as_the_api_does(owner_console, widget):
    run = running(widget)
    asked = owner_console.get(CRAWL + "cancel/")
    assert asked.status_code == 200 and "Cancel the crawl?" in asked.content.decode()
    run.refresh_from_db()
    assert run.status == "running"
    done = owner_console.post(CRAWL + "cancel/")
    assert done.status_code == 302
    run.refresh_from_db()
    assert (run.status, run.error) == ("cancelled", "replaced")
    assert not KbCrawlConfig.objects.filter(widget=widget).exists()


def test_cancelling_touches_no_other_widgets_crawl(owner_console, widget, other_widget):
    foreign = running(other_widget)
    owner_console.post(CRAWL + "cancel/")
    foreign.refresh_from_db()
    assert foreign.status == "running"


# --- rules --------------------------------------------------------------------------------------------------

RULES = PAGE + "rules/"


def test_a_rule_is_added_embedded_and_listed(owner_console, widget, offline):
    response = owner_console.post(RULES, {"content": "We ship within three days.", "doc_id": "Shipping"})
    assert response.status_code == 302 and response.url.endswith("#rules")
    rule = KbChunk.objects.get(widget=widget)
    assert (rule.content, rule.doc_id, rule.source_ref) == (
        "We ship within three days.",
        "Shipping",
        f"manual:{rule.pk}",
    )
    assert rule.embedding_model == offline.model
    assert "We ship within three days." in owner_console.get(PAGE).content.decode()


@pytest.mark.parametrize(
    "content",
    ["", "   ", "x" * 4001],
)
def test_a_rule_refusal_is_the_apis(owner_console, kb, widget, offline, content):
    page = owner_console.post(RULES, {"content": content, "doc_id": ""})
    api = kb.post("/api/v1/kb/rules", {"content": content}, format="json", **idem())
    assert_same_refusal(page, api, 422)
    assert not KbChunk.objects.exists()


def test_a_rule_the_provider_cannot_embed_stores_nothing_with_the_apis_words(owner_console, kb, widget):
    with hooks.use_hooks(OfflineHooks(fail="timeout")):
        page = owner_console.post(RULES, {"content": "We ship daily.", "doc_id": ""})
        api = kb.post("/api/v1/kb/rules", {"content": "We ship daily."}, format="json", **idem())
    assert_same_refusal(page, api, 502)
    assert not KbChunk.objects.exists()


def test_a_rule_is_edited_and_embedded_again(owner_console, widget, offline):
    owner_console.post(RULES, {"content": "We ship within three days.", "doc_id": "Shipping"})
    rule = KbChunk.objects.get()
    before = bytes(rule.embedding)
    url = f"{RULES}{rule.pk}/"
    assert "We ship within three days." in owner_console.get(url).content.decode()
    response = owner_console.post(url, {"content": "We ship within two days.", "doc_id": ""})
    assert response.status_code == 302
    rule.refresh_from_db()
    assert (rule.content, rule.doc_id) == ("We ship within two days.", None)
    assert bytes(rule.embedding) != before


def test_an_edit_refusal_is_the_apis_and_changes_nothing(owner_console, kb, widget, offline):
    owner_console.post(RULES, {"content": "We ship daily.", "doc_id": ""})
    rule = KbChunk.objects.get()
    page = owner_console.post(f"{RULES}{rule.pk}/", {"content": "", "doc_id": "x" * 201})
    api = kb.patch(f"/api/v1/kb/rules/{rule.pk}", {"content": "", "doc_id": "x" * 201}, format="json", **idem())
    assert_same_refusal(page, api, 422)
    rule.refresh_from_db()
    assert rule.content == "We ship daily."


def test_a_rule_is_deleted_after_a_confirmation(owner_console, widget, offline):
    owner_console.post(RULES, {"content": "We ship daily.", "doc_id": ""})
    rule = KbChunk.objects.get()
    url = f"{RULES}{rule.pk}/delete/"
    assert "We ship daily." in owner_console.get(url).content.decode() and KbChunk.objects.exists()
    assert owner_console.post(url).status_code == 302
    assert not KbChunk.objects.exists()


def test_another_widgets_rule_is_404_in_every_form(owner_console, other_widget, offline):
    foreign = KbChunk.objects.create(
        widget=other_widget, content="Secret", source_ref="manual:1", embedding=b"", embedding_model="m"
    )
    for url in (f"{RULES}{foreign.pk}/", f"{RULES}{foreign.pk}/delete/"):
        assert owner_console.get(url).status_code == 404
        assert owner_console.post(url, {"content": "Mine now"}).status_code == 404
    foreign.refresh_from_db()
    assert foreign.content == "Secret"


# --- search preview -----------------------------------------------------------------------------------------

SEARCH = PAGE + "search/"


def hit_ids(html: str) -> list[str]:
    import re

    return re.findall(r'class="kb-hit" data-source="([^"]+)"', html)


def test_the_search_preview_shows_what_the_apis_search_returns_in_its_order(
    owner_console, owner_htmx, kb, widget, offline
):
    for content in (
        "Green tea ships within three days.",
        "Black tea costs 9 euros.",
        "We are open on Sundays.",
        "Tea delivery to Riga is free.",
    ):
        owner_console.post(RULES, {"content": content, "doc_id": ""})
    api = kb.get("/api/v1/kb/search", {"q": "how fast is tea delivery", "limit": "3"}).json()
    page = owner_console.get(SEARCH, {"q": "how fast is tea delivery", "limit": "3"})
    assert page.status_code == 200
    html = page.content.decode()
    assert hit_ids(html) == [hit["source_ref"] for hit in api["data"]] and len(api["data"]) == 3
    for hit in api["data"]:
        assert f"{hit['score']:.4f}" in html and hit["content"] in html
    fragment = owner_htmx.get(SEARCH, {"q": "how fast is tea delivery", "limit": "3"}).content.decode()
    assert hit_ids(fragment) == hit_ids(html) and "<html" not in fragment


def test_the_search_preview_names_an_uploaded_documents_chunk_by_its_document(owner_console, widget, offline):
    upload(owner_console, "shipping.txt", TEXT)
    from apps.kb import services

    services.ingest_document(document_id=KbDocument.objects.get().pk)
    html = owner_console.get(SEARCH, {"q": "Riga warehouse"}).content.decode()
    assert hit_ids(html)[0].startswith("upload:") and "shipping.txt" in html


@pytest.mark.parametrize("query", [{"q": ""}, {"q": "   "}, {"q": "x" * 1001}, {"q": "tea", "limit": "21"}, {}])
def test_a_search_refusal_is_the_apis(owner_console, kb, widget, offline, query):
    page = owner_console.get(SEARCH, query)
    assert_same_refusal(page, kb.get("/api/v1/kb/search", query), 422)


def test_a_search_the_provider_cannot_embed_shows_the_apis_502(owner_console, kb, widget, offline):
    owner_console.post(RULES, {"content": "We ship daily.", "doc_id": ""})
    with hooks.use_hooks(OfflineHooks(fail="timeout")):
        page = owner_console.get(SEARCH, {"q": "ship"})
        api = kb.get("/api/v1/kb/search", {"q": "ship"})
    assert_same_refusal(page, api, 502)


def test_a_body_over_the_upload_routes_limit_is_the_apis_413(owner_console, kb, widget, monkeypatch):
    from apps.console.settings.ai import kb_views
    from apps.kb.api import views as api_views

    monkeypatch.setattr(kb_views, "UPLOAD_BODY_BYTES", 512)
    monkeypatch.setattr(api_views.UploadViewSet, "max_body_bytes", 512)
    page = upload(owner_console, "big.txt", TEXT * 20)
    assert_same_refusal(page, api_upload(kb, "big.txt", TEXT * 20), 413)
    assert not KbDocument.objects.exists()
