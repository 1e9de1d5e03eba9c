"""The data area's other pages: chat retention (PUT /v1/widget/retention's rules and service) and
the audit log (GET /v1/audit-log's rows, through apps.audit.selectors)."""

from __future__ import annotations

import json
from datetime import datetime

from django.contrib import messages
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from apps.audit import selectors as audit
from apps.core import keyset
from apps.core.api.pagination import open_cursor, seal_cursor
from apps.privacy import services as privacy
from apps.privacy.api.serializers import AuditLogQuery, RetentionInput

from .. import forms as settings_forms
from ..access import owner_required
from ..views import settings_context
from . import forms
from .forms import ACTOR_TYPES

AUDIT_PAGE_SIZE = 30
AUDIT_ORDERING = ("-at", "-id")  # as apps.audit.selectors.list_entries orders


@never_cache
@owner_required
@require_http_methods(["GET", "POST"])
def retention(request):
    widget = request.agent.widget
    days = privacy.get_retention(widget=widget)
    status = 200
    if request.method == "POST":
        form = forms.RetentionForm(request.POST)
        if form.is_valid():
            outcome = settings_forms.submit(
                RetentionInput,
                form.api_data(),
                lambda v: privacy.set_retention(widget=widget, chats_days=v["chats_days"]),
            )
            if not outcome.refused:
                messages.success(request, _("Saved."))
                response = redirect("console:settings:data-retention")
                response.status_code = 303
                return response
            settings_forms.bind(form, outcome)
        status = 422
    else:
        form = forms.RetentionForm(
            initial={"keep": "days" if days else "forever", "chats_days": days or ""}, auto_id="retention_%s"
        )
    return render(
        request,
        "console/settings/data/retention.html",
        settings_context(request, area="data", data_tab="retention", form=form, days=days),
        status=status,
    )


def _cursor_context(request) -> str:
    return f"console:settings:data-audit:widget:{request.agent.widget.pk}"


@never_cache
@owner_required
@require_http_methods(["GET"])
def audit_log(request):
    """The widget's audit rows, newest first, filtered by who acted, on what and when, a page at a
    time (a keyset cursor over the widget-first index)."""
    widget = request.agent.widget
    form = forms.AuditFilterForm(request.GET, target_types=audit.list_target_types(widget=widget))
    status, entries, next_cursor = 200, [], None
    query = {}
    if form.is_valid():
        query, refused = settings_forms.validate(AuditLogQuery, form.api_query())
        if refused is not None:
            settings_forms.bind(form, refused, fields={"from": "start", "to": "end"})
    if form.errors:
        status = 422
    else:
        rows = audit.list_entries(
            widget=widget,
            start=query.get("from"),
            end=query.get("to"),
            actor_type=form.cleaned_data.get("actor") or None,
            target_type=form.cleaned_data.get("target") or None,
        )
        raw = request.GET.get("cursor")
        if raw:
            try:
                at, pk = open_cursor(raw, context=_cursor_context(request))
                rows = rows.filter(keyset.after(AUDIT_ORDERING, [datetime.fromisoformat(at), int(pk)]))
            except (ValueError, TypeError):
                form.add_error(None, _("This page of the log is no longer valid: start again from the first page."))
                status = 422
        if status == 200:
            entries = list(rows[: AUDIT_PAGE_SIZE + 1])
            if len(entries) > AUDIT_PAGE_SIZE:
                entries = entries[:AUDIT_PAGE_SIZE]
                last = entries[-1]
                next_cursor = seal_cursor([last.at.isoformat(), last.pk], context=_cursor_context(request))
    filters = request.GET.copy()
    filters.pop("cursor", None)
    return render(
        request,
        "console/settings/data/audit.html",
        settings_context(
            request,
            area="data",
            data_tab="audit",
            form=form,
            entries=[_row(entry) for entry in entries],
            next_cursor=next_cursor,
            filters=filters.urlencode(),
            paged=bool(request.GET.get("cursor")) and status == 200,
        ),
        status=status,
    )


def _row(entry) -> dict:
    return {
        "at": entry.at,
        "actor_kind": ACTOR_TYPES.get(entry.actor_type, entry.actor_type),
        "actor_name": entry.actor_name or entry.actor_id,
        "action": entry.action,
        "target_type": entry.target_type,
        "target_id": entry.target_id,
        "changes": [
            {"field": name, "from": _shown(change, "from"), "to": _shown(change, "to")}
            for name, change in sorted((entry.changes or {}).items())
        ],
    }


def _shown(change, side: str) -> str:
    if not isinstance(change, dict):
        return ""
    value = change.get(side)
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)
