"""/console/reports/: the owner's reports, and an operator's "My statistics" at the same URL.

SECURITY: the widget is the console's (apps.console.access); an operator sees only their own figures
and gets 403 for anyone else's (`agent_id`) or the widget's (`scope=widget`); an owner naming an
agent of another widget gets 404 like a missing one. Every figure comes from `build_report`, which
reads the statistics rollups (never the chats).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from datetime import date, timedelta

from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from apps.agents.models import Agent
from apps.stats.reports import MAX_DAYS, ReportRangeError, build_report, report_tz

from . import report_charts
from .access import operator_required
from .inbox import chat_list_links
from .settings.access import is_owner

PRESETS = (7, 30, 90)
DEFAULT_PRESET = 30
# The calendar the statistics hold (apps.core.timeparse): a date outside it is refused, not a 500.
EARLIEST, LATEST = date(1900, 1, 2), date(9998, 12, 31)


@dataclass(frozen=True)
class Range:
    start: date
    end: date
    preset: str  # "7", "30", "90" or "custom"


class RangeRefused(ValueError):
    pass


def parse_range(params, *, today: date) -> Range:
    """The report's days from the query: a preset (`range=7|30|90`, ending today) or a custom
    `from`..`to` (inclusive dates, at most MAX_DAYS days). No parameter: the last 30 days."""
    preset = params.get("range", "")
    raw_from, raw_to = params.get("from", "").strip(), params.get("to", "").strip()
    # A chosen preset wins over the dates the form carries along (the page fills them in).
    if preset in {str(p) for p in PRESETS} or (preset != "custom" and not (raw_from or raw_to)):
        days = int(preset) if preset in {str(p) for p in PRESETS} else DEFAULT_PRESET
        return Range(today - timedelta(days=days - 1), today, str(days))
    try:
        start, end = date.fromisoformat(raw_from), date.fromisoformat(raw_to)
    except ValueError:
        raise RangeRefused(_("Enter both dates of a custom range, as YYYY-MM-DD.")) from None
    if not (EARLIEST <= start <= LATEST and EARLIEST <= end <= LATEST):
        raise RangeRefused(_("Enter both dates of a custom range, as YYYY-MM-DD."))
    if end < start:
        raise RangeRefused(_("The end date must not be before the start date."))
    if (end - start).days + 1 > MAX_DAYS:
        raise RangeRefused(_("A report covers at most %(days)s days.") % {"days": MAX_DAYS})
    return Range(start, end, "custom")


def _forbidden(request):
    from .views import page_context

    return render(request, "console/reports_forbidden.html", page_context(request, reports_page=True), status=403)


def _subject(request) -> tuple[Agent | None, bool]:
    """(the agent whose figures are shown, or None for the widget's; whether the viewer may see
    them). Raises Http404 for an owner's `agent_id` that is not an agent of the widget."""
    viewer = request.agent
    raw = request.GET.get("agent_id", "").strip()
    if not is_owner(viewer):
        if request.GET.get("scope") == "widget":
            return None, False
        if raw and raw != str(viewer.pk):
            return None, False
        return viewer, True
    if not raw:
        return None, True
    if not raw.isdigit() or len(raw) > 18:
        raise Http404
    agent = Agent.objects.filter(widget_id=viewer.widget_id, pk=int(raw)).first()
    if agent is None:
        raise Http404
    return agent, True


@never_cache
@require_GET
@operator_required
def reports(request):
    from .views import page_context

    subject, allowed = _subject(request)
    if not allowed:
        return _forbidden(request)
    widget = request.agent.widget
    tz = report_tz(widget)
    today = timezone.now().astimezone(tz).date()
    wants_csv = request.GET.get("format") == "csv"
    chart = request.GET.get("chart", "")
    try:
        span = parse_range(request.GET, today=today)
        report = build_report(
            widget=widget, start=span.start, end=span.end, agent_id=subject.pk if subject is not None else None
        )
    except (RangeRefused, ReportRangeError) as refusal:
        if wants_csv:
            return HttpResponse(str(refusal), status=400, content_type="text/plain; charset=utf-8")
        context = page_context(
            request, **_form_context(request, subject, tz, today), refusal=str(refusal), reports_page=True
        )
        return render(request, "console/reports.html", context, status=400)
    scope = {"agent_id": subject.pk} if subject is not None else {}
    chat_list = chat_list_links()

    def link(**filters) -> str:
        return chat_list(**{**scope, **filters})

    if wants_csv:
        if chart not in report_charts.CSV_NAMES:
            return HttpResponse(
                _("Name a chart: %(names)s.") % {"names": ", ".join(report_charts.CSV_NAMES)},
                status=400,
                content_type="text/plain; charset=utf-8",
            )
        return _csv(report, chart, span, subject)
    labels = report_charts.day_labels(report["days"])
    specs = report_charts.charts(report, link, labels)
    context = {
        **_form_context(request, subject, tz, today, span),
        "report": report,
        "charts_data": {"charts": specs, "none": "—"},
        "charts_empty": {name: spec["empty"] for name, spec in specs.items()},
        "tables": report_charts.tables(report, link, labels),
        "csv_query": _csv_query(span, subject),
        "reports_page": True,
    }
    return render(request, "console/reports.html", page_context(request, **context))


def _form_context(request, subject: Agent | None, tz, today: date, span: Range | None = None) -> dict:
    owner = is_owner(request.agent)
    if span is None:
        shown = {"preset": "custom", "start": request.GET.get("from", ""), "end": request.GET.get("to", "")}
    else:
        shown = {"preset": span.preset, "start": span.start.isoformat(), "end": span.end.isoformat()}
    return {
        "owner_view": owner,
        "subject": subject,
        "presets": [str(p) for p in PRESETS],
        "shown": shown,
        "max_days": MAX_DAYS,
        "today": today.isoformat(),
        "span": span,
        "tz_name": tz.key,
    }


def _csv_query(span: Range, subject: Agent | None) -> str:
    from urllib.parse import urlencode

    params = {"from": span.start.isoformat(), "to": span.end.isoformat(), "format": "csv"}
    if subject is not None:
        params["agent_id"] = subject.pk
    return urlencode(params)


def _csv(report: dict, chart: str, span: Range, subject: Agent | None) -> HttpResponse:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerows(report_charts.csv_rows(report, chart))
    response = HttpResponse(buffer.getvalue(), content_type="text/csv; charset=utf-8")
    who = f"-agent-{subject.pk}" if subject is not None else ""
    name = f"report-{chart}{who}-{span.start.isoformat()}-{span.end.isoformat()}.csv"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response
