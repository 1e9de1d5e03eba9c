"""/console/settings/ai/knowledge/crawl/...: start a crawl of the owner's site (PUT /v1/kb/crawler),
its progress (polled by the page while a crawl is queued or running) and cancelling it (DELETE
/v1/kb/crawler?cancel_running=true, as the API cancels one: the crawl stops before its next page and
the crawler’s settings are removed; the pages already read stay in the knowledge base)."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from apps.core.errors import AppError
from apps.kb import services
from apps.kb.api import serializers as s

from .. import forms as settings_forms
from ..access import owner_required
from ..views import settings_context
from .kb_forms import CrawlForm
from .kb_views import AREA, crawl_context, fragment_context, page_url, render_page


def _replace(widget, body: dict, *, cancel_running: bool) -> settings_forms.Outcome:
    """The API route's order: validate, resolve the start addresses (outside any transaction), write."""
    validated, refused = settings_forms.validate(s.CrawlerInput, body)
    if refused is not None:
        return refused
    try:
        services.check_start_urls(validated["start_urls"])
    except AppError as err:
        return settings_forms.refusal(err)
    return settings_forms.perform(
        lambda: services.replace_crawler(widget=widget, config=dict(validated), cancel_running=cancel_running)
    )


@never_cache
@owner_required
@require_POST
def start(request):
    form = CrawlForm(request.POST)
    outcome = _replace(request.agent.widget, form.api_data(), cancel_running=bool(request.POST.get("cancel_running")))
    if outcome.refused:
        form.is_valid()
        # start_urls.0 and the like go under the field they are about
        settings_forms.bind(form, outcome, fields={key: key.split(".")[0] for key in outcome.errors})
        return render_page(request, status=outcome.status, crawl_form=form)
    messages.success(request, _("Saved. The crawl is queued; its progress shows below."))
    return redirect(page_url("crawl"))


@never_cache
@owner_required
@require_GET
def progress(request):
    """The crawl's progress alone: what the page polls while a crawl is queued or running."""
    return render(request, "console/settings/ai/knowledge_crawl.html", fragment_context(request.agent.widget))


@never_cache
@owner_required
@require_http_methods(["GET", "POST"])
def cancel(request):
    """GET: what cancelling does; POST: DELETE /v1/kb/crawler?cancel_running=true."""
    if request.method == "POST":
        outcome = settings_forms.perform(
            lambda: services.delete_crawler(widget=request.agent.widget, cancel_running=True)
        )
        if not outcome.refused:
            messages.success(request, _("The crawl is cancelled and the crawler’s settings are removed."))
            return redirect(page_url("crawl"))
    return render(
        request,
        "console/settings/ai/knowledge_confirm.html",
        settings_context(request, area=AREA, confirm="crawl", **crawl_context(request.agent.widget)),
    )
