"""/console/settings/ai/knowledge/: the knowledge base's page, its documents and the search preview.

Each write is the API route's: the same serializer (apps.kb.api.serializers), the same service
(apps.kb.services) and so the same refusals, worded as the API words them. The crawler's views are in
kb_crawls, the rules' in kb_rules; this module draws the page they all come back to.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from apps.core import provider_waits
from apps.core.errors import AppError, BodyTooLarge
from apps.core.files import single_upload
from apps.kb import selectors, services
from apps.kb.api import serializers as s
from apps.kb.models import KbCrawlRun, KbDocument

from .. import forms as settings_forms
from ..access import owner_required
from ..views import settings_context
from .kb_forms import CrawlForm, RuleForm, SearchForm, UploadForm

AREA = "ai"
WAITING = (KbDocument.State.QUEUED, KbDocument.State.PROCESSING)
PAST_CRAWLS = 10
RULES_PER_PAGE = 50
# The API's upload route admits a body this large (the document plus its multipart framing).
UPLOAD_BODY_BYTES = settings.API_FILE_UPLOAD_MAX_BYTES


def page_url(anchor: str = "") -> str:
    return reverse("console:settings:ai-knowledge") + (f"#{anchor}" if anchor else "")


# --- reads --------------------------------------------------------------------------------------------------


def documents_context(widget) -> dict:
    """The uploads, newest first (at most services.MAX_DOCUMENTS exist), and whether any still waits
    for a worker (then the list polls)."""
    rows = [selectors.document_payload(d) for d in selectors.documents(widget).order_by("-created_at", "-id")]
    return {
        "documents": rows,
        "documents_waiting": any(row["state"] in WAITING for row in rows),
        "max_documents": services.MAX_DOCUMENTS,
    }


def crawl_context(widget) -> dict:
    """The crawler as GET /v1/kb/crawler reads it, and the crawls that ended, newest first."""
    crawler = selectors.crawler(widget)
    ended = (
        KbCrawlRun.objects.filter(widget=widget)
        .exclude(status__in=selectors.LIVE_CRAWL)
        .order_by("-created_at", "-id")[:PAST_CRAWLS]
    )
    return {
        "crawler": crawler,
        "crawl_live": crawler["current_run"] is not None,
        "past_crawls": [selectors.crawl_run_payload(run) for run in ended],
    }


def rules_context(widget, page_number) -> dict:
    """The rules written by hand (`manual:<id>`), newest first, a page at a time; the chunks of
    documents and crawled pages are listed with their source."""
    manual = selectors.rules(widget).filter(source_ref__startswith="manual:").order_by("-created_at", "-id")
    page = Paginator(manual, RULES_PER_PAGE).get_page(page_number)
    return {"rules_page": page, "rules": [selectors.rule_payload(rule) for rule in page]}


def fragment_context(widget, **extra) -> dict:
    """A polled part's context: its rows and, swapped out of band, the knowledge base's state."""
    # The rows first: a state read after them is never older than what they show (a document read
    # ready has its chunks committed with it), so the last poll leaves the state right.
    context = {**documents_context(widget), **crawl_context(widget)}
    return {**context, "status": selectors.status(widget), "oob": True, **extra}


def page_context(request, **extra) -> dict:
    widget = request.agent.widget
    context = {
        "status": selectors.status(widget),
        "upload_form": UploadForm(),
        "crawl_form": CrawlForm(initial=CrawlForm.initial_from(selectors.crawler(widget)["config"])),
        "rule_form": RuleForm(),
        "search_form": SearchForm(initial={"limit": selectors.DEFAULT_SEARCH_LIMIT}),
        "search": None,
        **documents_context(widget),
        **crawl_context(widget),
        **rules_context(widget, request.GET.get("rules_page")),
    }
    context.update(extra)
    return settings_context(request, area=AREA, **context)


def render_page(request, status: int = 200, **extra):
    return render(request, "console/settings/ai/knowledge.html", page_context(request, **extra), status=status)


@never_cache
@owner_required
@require_GET
def index(request):
    return render_page(request)


@never_cache
@owner_required
@require_GET
def documents(request):
    """The documents' table alone: what the page polls while a document waits for the worker."""
    return render(request, "console/settings/ai/knowledge_documents.html", fragment_context(request.agent.widget))


# --- documents ----------------------------------------------------------------------------------------------


def _upload(request) -> settings_forms.Outcome:
    """POST /v1/kb/uploads's reading and service, under the same limits."""
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > UPLOAD_BODY_BYTES:
        return settings_forms.refusal(BodyTooLarge(f"The body exceeds {UPLOAD_BODY_BYTES} bytes."))
    try:
        upload = single_upload(request, required=True)
    except AppError as err:
        return settings_forms.refusal(err)
    return settings_forms.perform(lambda: services.create_document(widget=request.agent.widget, upload=upload))


@never_cache
@owner_required
@require_POST
def upload(request):
    outcome = _upload(request)
    widget = request.agent.widget
    form = UploadForm()
    if outcome.refused:
        form = UploadForm(data={}, files={})
        form.is_valid()
        settings_forms.bind(form, outcome)
    elif not request.htmx:
        messages.success(request, _("Uploaded. The document is being read; it is ready when its state says so."))
        return redirect(page_url("documents"), permanent=False)
    if request.htmx:
        context = fragment_context(widget, upload_form=form, uploaded=None if outcome.refused else outcome.value)
        return render(
            request,
            "console/settings/ai/knowledge_upload.html",
            context,
            status=outcome.status if outcome.refused else 200,
        )
    return render_page(request, status=outcome.status, upload_form=form)


def _document(request, pk: int) -> KbDocument:
    return get_object_or_404(selectors.documents(request.agent.widget), pk=pk)


@never_cache
@owner_required
@require_http_methods(["GET", "POST"])
def document_delete(request, pk: int):
    """GET: what deleting the document removes; POST: DELETE /v1/kb/uploads/{id}."""
    document = _document(request, pk)
    payload = selectors.document_payload(document)
    refusal = ""
    status = 200
    if request.method == "POST":
        outcome = settings_forms.perform(
            lambda: services.delete_document(widget=request.agent.widget, document=document)
        )
        if not outcome.refused:
            messages.success(
                request,
                ngettext(
                    "Deleted “%(name)s” and its %(count)s chunk.",
                    "Deleted “%(name)s” and its %(count)s chunks.",
                    outcome.value,
                )
                % {"name": payload["name"], "count": outcome.value},
            )
            return redirect(page_url("documents"))
        refusal, status = outcome.message, outcome.status
    return render(
        request,
        "console/settings/ai/knowledge_confirm.html",
        settings_context(request, area=AREA, confirm="document", document=payload, refusal=refusal),
        status=status,
    )


# --- search preview -----------------------------------------------------------------------------------------


def preview(widget, data: dict) -> tuple[dict | None, settings_forms.Outcome | None]:
    """GET /v1/kb/search for `data` ({q, limit?}): its validation, its provider wait and the one
    retrieval the AI runtime calls (selectors.search_chunks), hits best first with their source."""
    query, refused = settings_forms.validate(s.SearchQuery, data)
    if refused is not None:
        return None, refused
    try:
        with provider_waits.wait(widget.pk, seconds=settings.AI_REQUEST_EMBED_DEADLINE_SECONDS):
            result = selectors.search_chunks(
                widget=widget, question=query["q"], limit=query.get("limit", selectors.DEFAULT_SEARCH_LIMIT)
            )
    except AppError as err:
        return None, settings_forms.refusal(err)
    except services.hooks.EmbedError as exc:
        # The API's 502 kb_embed_provider_failed, with its detail.
        return None, settings_forms.Outcome(
            refused=True, status=502, code="kb_embed_provider_failed", message=services.embed_detail(exc)
        )
    titles = {src["source_ref"]: src for src in selectors.chunk_sources(widget, [hit.chunk for hit in result.hits])}
    hits = [
        {
            **selectors.rule_payload(hit.chunk),
            "score": hit.score,
            "similarity": hit.similarity,
            "rank": rank,
            "source": titles.get(hit.chunk.source_ref),
        }
        for rank, hit in enumerate(result.hits, start=1)
    ]
    return {"q": query["q"], "hits": hits, "mode": result.mode, "embedding_model": result.embedding_model}, None


@never_cache
@owner_required
@require_GET
def search(request):
    data = {name: request.GET[name] for name in ("q", "limit") if name in request.GET}
    form = SearchForm({"limit": selectors.DEFAULT_SEARCH_LIMIT, **data})
    form.is_valid()
    result, refused = preview(request.agent.widget, data)
    status = 200
    if refused is not None:
        settings_forms.bind(form, refused)
        status = refused.status
    if request.htmx:
        return render(
            request,
            "console/settings/ai/knowledge_results.html",
            {"search": result, "search_form": form},
            status=status,
        )
    return render_page(request, status=status, search=result, search_form=form)
