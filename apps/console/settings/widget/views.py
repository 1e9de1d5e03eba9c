"""/console/settings/widget/: the widget builder (every widget setting, a live preview beside it, the
embed snippet) and the preview page it frames.

The builder writes through the services of `PATCH /v1/widget/settings` (the changed fields only, so
the API's merge rules apply) and of `PUT /v1/widget/language` (the starting language, checked by
that route's serializer); a refusal shows the API's messages under the inputs they name.
"""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.clickjacking import xframe_options_sameorigin
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from apps.widget import selectors, services
from apps.widget.api import serializers as s
from apps.widget.models import WidgetIcon

from ...middleware import console_policy
from .. import areas, forms
from ..access import owner_required
from ..views import settings_context
from . import labels
from .builder import UNCHANGED, Builder


def _save(widget, body: dict, language) -> forms.Outcome:
    """The PATCH service with the changed fields, then the language route's serializer and service;
    the first refusal wins and, as one transaction, leaves nothing changed."""
    if language is not UNCHANGED:
        _, refused = forms.validate(s.LanguageInput, {"widget_default_language": language})
        if refused is not None:
            return refused

    def write():
        if body:
            services.update_settings(widget=widget, body=body)
        if language is not UNCHANGED:
            services.set_default_language(widget=widget, language=language)

    return forms.perform(write)


def _page(
    request,
    builder: Builder,
    *,
    values: dict | None = None,
    outcome: forms.Outcome | None = None,
    icon_errors: list[str] | None = None,
    status=200,
):
    widget = request.agent.widget
    form = builder.form(values=values)
    general = builder.place_errors(form, outcome.errors) if outcome is not None else []
    if outcome is not None and not general and not outcome.errors and outcome.message:
        general = [outcome.message]
    sections = builder.sections(form)
    response = render(
        request,
        "console/settings/widget/builder.html",
        settings_context(
            request,
            area="widget",
            form=form,
            sections=sections,
            general_errors=general,
            refused=outcome is not None,
            icons=[(icon, selectors.icon_url(icon)) for icon in builder.icons],
            icon_errors=icon_errors or [],
            snippet=areas.embed_snippet(request, widget),
            demo_url=f"/demo/?guid={widget.button_guid}",
            preview_url=reverse("console:settings:widget-preview"),
            preview_languages=[
                (code, labels.LANGUAGE_NAMES.get(code, code))
                for code in builder.current.get("widget_supported_languages") or []
            ],
        ),
        status=status,
    )
    response["Content-Security-Policy"] = console_policy(frame_src="'self'")
    return response


@never_cache
@owner_required
@require_http_methods(["GET", "HEAD", "POST"])
def builder(request):
    widget = request.agent.widget
    page = Builder(widget)
    if request.method != "POST":
        return _page(request, page)
    body, language = page.changes(request.POST)
    if not body and language is UNCHANGED:
        messages.info(request, _("Nothing changed."))
        return redirect("console:settings:widget", permanent=False)
    outcome = _save(widget, body, language)
    if outcome.refused:
        return _page(request, page, values=page.posted_inputs(request.POST), outcome=outcome, status=outcome.status)
    messages.success(request, _("Saved."))
    response = redirect("console:settings:widget")
    response.status_code = 303
    return response


@never_cache
@owner_required
@require_GET
@xframe_options_sameorigin
def preview(request):
    """The host page the builder frames: the real widget of this widget's guid in preview mode (it
    takes the builder's unsaved values and sends nothing). Framed only by the console itself."""
    widget = request.agent.widget
    response = render(request, "console/settings/widget/preview.html", {"guid": widget.button_guid})
    response["Content-Security-Policy"] = console_policy(frame_ancestors="'self'")
    return response


@never_cache
@owner_required
@require_POST
def icon_upload(request):
    """The launcher icon upload of `POST /v1/widget/icons` (the same service and checks); the icon
    then shows in the launcher icon list."""
    widget = request.agent.widget
    upload = request.FILES.get("file")
    if upload is None:
        outcome = forms.Outcome(refused=True, status=422, errors={"file": [_("Choose an image file.")]})
    else:
        content = upload.read()
        outcome = forms.perform(
            lambda: services.upload_icon(widget=widget, content=content, original_name=upload.name or "")
        )
    if outcome.refused:
        errors = [m for messages in outcome.errors.values() for m in messages] or [outcome.message]
        return _page(request, Builder(widget), icon_errors=errors, status=outcome.status)
    messages.success(request, _("Icon uploaded: choose it under Launcher icon and save."))
    return _see_other(reverse("console:settings:widget") + "#icons-title")


@never_cache
@owner_required
@require_POST
def icon_delete(request, file_id: int):
    """Delete an uploaded icon (another widget's id is 404 like a missing one)."""
    widget = request.agent.widget
    icon = get_object_or_404(WidgetIcon, widget=widget, file_id=file_id)
    forms.perform(lambda: services.delete_icon(widget=widget, icon=icon))
    messages.success(request, _("Icon deleted."))
    return _see_other(reverse("console:settings:widget") + "#icons-title")


def _see_other(url: str):
    response = redirect(url)
    response.status_code = 303
    return response
