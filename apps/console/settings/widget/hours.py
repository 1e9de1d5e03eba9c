"""/console/settings/widget/hours/: the widget's business hours (the week in its time zone, holidays,
what the widget does while closed), written whole through the API route's own service
(`set_business_hours` validates and answers the route's messages, keyed like its problem+json).

The week editor draws, per day, the stored intervals plus one empty row (up to the API's four); a day
marked closed, or with no interval filled in, is closed. Rows and holiday inputs are mapped back to the
API's dotted error paths (`weekly.mon.1`, `holidays.0`), so each message lands beside its input.
"""

from __future__ import annotations

from functools import lru_cache
from zoneinfo import available_timezones

from django.contrib import messages
from django.http import HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from apps.widget import selectors, services

from .. import forms
from ..access import owner_required
from ..views import settings_context

DAYS = (
    ("mon", gettext_lazy("Monday")),
    ("tue", gettext_lazy("Tuesday")),
    ("wed", gettext_lazy("Wednesday")),
    ("thu", gettext_lazy("Thursday")),
    ("fri", gettext_lazy("Friday")),
    ("sat", gettext_lazy("Saturday")),
    ("sun", gettext_lazy("Sunday")),
)
MAX_INTERVALS = 4
EMPTY_HOLIDAYS = 2
MODES = (
    ("offline_form", gettext_lazy("Show the offline form (visitors leave a message)")),
    ("ai_only", gettext_lazy("Only the AI operator answers")),
    ("hidden", gettext_lazy("Hide the widget")),
)
TEMPLATE = "console/settings/widget/hours.html"


@lru_cache(maxsize=1)
def zone_names() -> list[str]:
    return sorted(available_timezones() - {"localtime"})


# --- the posted form <-> the API's body ---------------------------------------------------------------


def posted_body(post) -> tuple[dict, dict]:
    """(the PUT body, where each API path is drawn): `weekly.mon.0` -> the day's row it came from,
    `holidays.0` -> the holiday input it came from."""
    weekly, where = {}, {}
    for day, _name in DAYS:
        intervals = []
        if not post.get(f"{day}-closed"):
            for row in range(MAX_INTERVALS):
                start, end = post.get(f"{day}-start-{row}", "").strip(), post.get(f"{day}-end-{row}", "").strip()
                if start or end:
                    where[f"weekly.{day}.{len(intervals)}"] = f"{day}-{row}"
                    intervals.append([start, end])
        weekly[day] = intervals
    holidays = []
    for position, value in enumerate(post.getlist("holiday")):
        if value.strip():
            where[f"holidays.{len(holidays)}"] = f"holiday-{position}"
            holidays.append(value.strip())
    body = {
        "enabled": bool(post.get("enabled")),
        "timezone": post.get("timezone", ""),
        "weekly": weekly,
        "holidays": holidays,
        "outside_hours": post.get("outside_hours", ""),
    }
    return body, where


def _drawn(hours: dict, errors: dict, where: dict, *, posted=None) -> dict:
    """What the template draws: each day's rows (stored or posted values, one empty row more while
    there is room), the holiday inputs, and each message beside the input it is about."""
    by_input: dict[str, list[str]] = {}
    general: list[str] = []
    for path, items in errors.items():
        if path in where:
            by_input.setdefault(where[path], []).extend(items)
        elif path in ("enabled", "timezone", "outside_hours", "holidays") or path.startswith("weekly."):
            by_input.setdefault(path, []).extend(items)
        else:
            general.extend(f"{path}: {item}" if path != "non_field_errors" else item for item in items)
    days = []
    for day, name in DAYS:
        if posted is not None:
            raw = [
                (posted.get(f"{day}-start-{row}", ""), posted.get(f"{day}-end-{row}", ""))
                for row in range(MAX_INTERVALS)
            ]
            intervals = [pair for pair in raw if pair[0] or pair[1]]
            rows = [(row, pair) for row, pair in enumerate(raw) if pair[0] or pair[1]]
            closed = bool(posted.get(f"{day}-closed"))
        else:
            intervals = (hours.get("weekly") or {}).get(day) or []
            rows = list(enumerate(intervals))
            closed = not intervals
        used = {row for row, _pair in rows}
        free = [row for row in range(MAX_INTERVALS) if row not in used]
        if free:
            rows.append((free[0], ("", "")))
        days.append(
            {
                "day": day,
                "name": name,
                "closed": closed,
                "rows": [
                    {"index": row, "start": start, "end": end, "errors": by_input.get(f"{day}-{row}", [])}
                    for row, (start, end) in rows
                ],
                "errors": [m for path, m2 in by_input.items() if path.startswith(f"weekly.{day}") for m in m2],
            }
        )
    holidays = list(posted.getlist("holiday") if posted is not None else hours.get("holidays") or [])
    holidays = [value for value in holidays if value] + [""] * EMPTY_HOLIDAYS
    return {
        "hours": hours,
        "days": days,
        "holidays": [
            {"index": i, "value": value, "errors": by_input.get(f"holiday-{i}", [])} for i, value in enumerate(holidays)
        ],
        "field_errors": by_input,
        "general_errors": general,
        "zones": zone_names(),
        "modes": MODES,
    }


def _page(request, context: dict, *, status: int = 200):
    widget = request.agent.widget
    state = selectors.business_hours_state(widget, cached=False)
    return render(
        request,
        TEMPLATE,
        settings_context(
            request, area="widget", state=state, state_zone=selectors.get_business_hours(widget)["timezone"], **context
        ),
        status=status,
    )


@never_cache
@owner_required
@require_http_methods(["GET", "POST"])
def business_hours(request):
    widget = request.agent.widget
    if request.method == "GET":
        return _page(request, _drawn(selectors.get_business_hours(widget), {}, {}))
    body, where = posted_body(request.POST)
    outcome = forms.perform(lambda: services.set_business_hours(widget=widget, body=body))
    if outcome.refused:
        context = _drawn(body, outcome.errors, where, posted=request.POST)
        context["refusal"] = outcome.message
        return _page(request, context, status=outcome.status)
    messages.success(request, _("Saved."))
    return HttpResponseRedirect(reverse("console:settings:widget-hours"), status=303)


@never_cache
@owner_required
@require_http_methods(["GET", "POST"])
def reset(request):
    """Remove the stored hours: the widget is always open again (a confirmation first)."""
    if request.method == "GET":
        return render(request, "console/settings/widget/hours_reset.html", settings_context(request, area="widget"))
    forms.perform(lambda: services.delete_business_hours(widget=request.agent.widget))
    messages.success(request, _("The business hours are removed: the widget is always open."))
    return HttpResponseRedirect(reverse("console:settings:widget-hours"), status=303)
