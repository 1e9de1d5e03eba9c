"""The reports page's charts, tables and CSV files, drawn from one `build_report` dict.

Pure functions (no query): the chart specs the page's script draws (`charts`), the tables that carry
the same numbers without the script (`tables`), and each chart's CSV rows (`csv_rows`). Every count a
reader can click carries the console chat list's URL filtered to what it counts (drill-down).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from html import escape

from django.conf import settings
from django.utils import dateformat
from django.utils.formats import localize
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from .present import CHANNELS

CHARTS = ("chats_by_channel", "first_response", "resolution", "rating", "handling", "sla")
TABLES = ("operators", "departments")
CSV_NAMES = CHARTS + TABLES
HANDLING = ("ai", "human", "ai_to_human", "human_to_ai", "missed")
HANDLING_LABELS = {
    "ai": gettext_lazy("AI only"),
    "human": gettext_lazy("Operators only"),
    "ai_to_human": gettext_lazy("AI to operator"),
    "human_to_ai": gettext_lazy("Operator to AI"),
    "missed": gettext_lazy("Missed"),
}
RATINGS = ("1", "2", "3", "4", "5")

LinkFn = Callable[..., str]


def channel_name(code: str) -> str:
    known = CHANNELS.get(code)
    return str(known[0]) if known else code


def day_label(iso: str) -> str:
    return dateformat.format(date.fromisoformat(iso), "j M")


def day_labels(days: list[str]) -> dict[str, str]:
    """Each day's label, worded once for the charts and the tables that repeat it (both take it)."""
    return {d: day_label(d) for d in days}


def duration(ms: int | float | None) -> str:
    """A duration as a reader says it: 42 s, 3 min 20 s, 2 h 5 min; a dash when nothing was measured."""
    if ms is None:
        return "—"
    seconds = round(ms / 1000)
    if seconds < 60:
        return _("%(seconds)s s") % {"seconds": seconds}
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return _("%(minutes)s min %(seconds)s s") % {"minutes": minutes, "seconds": seconds}
    hours, minutes = divmod(minutes, 60)
    return _("%(hours)s h %(minutes)s min") % {"hours": hours, "minutes": minutes}


def _scaled(values: list, divisor: int) -> list:
    return [None if v is None else round(v / divisor, 1) for v in values]


def charts(report: dict, link: LinkFn, labels: dict[str, str]) -> dict:
    """The specs the page's script draws (labels, series, a link per point), keyed by chart name.
    `labels`: `day_labels` of the report's days."""
    days = report["days"]
    labels = list(labels.values())
    first, last = days[0], days[-1]
    channels = report["chats_by_channel"]
    specs = {
        "chats_by_channel": {
            "type": "bar",
            "stacked": True,
            "labels": labels,
            "axis": _("Chats"),
            "datasets": [
                {
                    "label": channel_name(code),
                    "data": counts,
                    "links": [link(**{"from": d, "to": d, "channel": code}) for d in days],
                }
                for code, counts in channels.items()
            ],
        },
    }
    for name, divisor, unit in (("first_response", 1000, _("seconds")), ("resolution", 60_000, _("minutes"))):
        figures = report[name]
        day_links = [link(**{"from": d, "to": d}) for d in days]
        specs[name] = {
            "type": "line",
            "labels": labels,
            "unit": unit,
            "axis": unit,
            "datasets": [
                {"label": _("Median"), "data": _scaled(figures["median_ms"], divisor), "links": day_links},
                {"label": _("90th percentile"), "data": _scaled(figures["p90_ms"], divisor), "links": day_links},
            ],
        }
    distribution = report["rating"]["distribution"]
    specs["rating"] = {
        "type": "bar",
        "labels": [f"{r} ★" for r in RATINGS],
        "axis": _("Ratings"),
        "datasets": [
            {
                "label": _("Ratings"),
                "data": [distribution.get(r, 0) for r in RATINGS],
                "links": [link(**{"from": first, "to": last, "rating": r}) for r in RATINGS],
            }
        ],
    }
    handling = report["handling"]
    specs["handling"] = {
        "type": "bar",
        "horizontal": True,
        "labels": [str(HANDLING_LABELS[k]) for k in HANDLING],
        "axis": _("Chats"),
        "datasets": [
            {
                "label": _("Chats"),
                "data": [handling.get(k, 0) for k in HANDLING],
                "colours": [0, 1, 2, 3, 5],
                "links": [link(**{"from": first, "to": last, "handling": k}) for k in HANDLING],
            }
        ],
    }
    sla = report["sla"]
    specs["sla"] = {
        "type": "bar",
        "labels": [_("Met"), _("Breached")],
        "axis": _("Chats"),
        # The chat list has no SLA filter: these bars open nothing.
        "datasets": [{"label": _("Chats"), "data": [sla["met"], sla["breached"]], "colours": [2, 5]}],
    }
    for spec in specs.values():
        spec["empty"] = not any(v for series in spec["datasets"] for v in series["data"])
    return specs


def tables(report: dict, link: LinkFn, labels: dict[str, str]) -> dict:
    """The same numbers as rows for the page's tables: the day tables' rows as HTML (`_row`), the
    other tables' rows as dicts of figures and links. `labels`: `day_labels` of the report's days."""
    days = report["days"]
    first, last = days[0], days[-1]
    channels = report["chats_by_channel"]
    by_day = []
    for i, d in enumerate(days):
        cells = [(link(**{"from": d, "to": d, "channel": code}), counts[i]) for code, counts in channels.items()]
        cells.append((link(**{"from": d, "to": d}), sum(counts[i] for counts in channels.values())))
        by_day.append(_row(labels[d], cells))
    out = {
        "first_response_total": duration(report["totals"].get("first_response_median_ms")),
        "channels": [channel_name(code) for code in channels],
        "chats_by_channel": by_day,
    }
    for name in ("first_response", "resolution"):
        figures = report[name]
        out[name] = [
            _row(
                labels[d],
                [(None, duration(figures["median_ms"][i])), (None, duration(figures["p90_ms"][i]))],
                day_link=link(**{"from": d, "to": d}),
            )
            for i, d in enumerate(days)
        ]
    distribution = report["rating"]["distribution"]
    out["rating"] = [
        {"label": f"{r} ★", "count": distribution.get(r, 0), "link": link(**{"from": first, "to": last, "rating": r})}
        for r in reversed(RATINGS)
    ]
    out["handling"] = [
        {
            "label": HANDLING_LABELS[k],
            "count": report["handling"].get(k, 0),
            "link": link(**{"from": first, "to": last, "handling": k}),
        }
        for k in HANDLING
    ]
    sla = report["sla"]
    measured = sla["met"] + sla["breached"]
    out["sla"] = {
        "rows": [{"label": _("Met"), "count": sla["met"]}, {"label": _("Breached"), "count": sla["breached"]}],
        "met_percent": round(100 * sla["met"] / measured, 1) if measured else None,
    }
    out["operators"] = [
        {
            **row,
            "link": link(**{"from": first, "to": last, "agent_id": row["agent_id"]}),
            "first_response": duration(row["first_response_median_ms"]),
        }
        for row in report["operators"]
    ]
    out["departments"] = [
        {**row, "first_response": duration(row["first_response_median_ms"])} for row in report["departments"]
    ]
    return out


def _row(day: str, cells: list[tuple[str | None, object]], *, day_link: str | None = None) -> SafeString:
    """One row of a day table as HTML, each value localized and escaped with `html.escape` as Django's
    autoescape does. Built here, not in the template: a 90-day report has some 900 such cells, and the
    template engine's variable and loop nodes cost several times this string's building.
    `cells`: (link or None, value)."""
    head = escape(day) if day_link is None else f'<a href="{escape(day_link)}">{escape(day)}</a>'
    parts = [f'<th scope="row">{head}</th>']
    for href, value in cells:
        # A count is its digits unless thousands are grouped: what `localize` answers for an int then,
        # after looking up the language's three number formats (some 700 counts a page).
        text = escape(str(value) if type(value) is int and not settings.USE_THOUSAND_SEPARATOR else localize(value))
        parts.append(f"<td>{text}</td>" if href is None else f'<td><a href="{escape(href)}">{text}</a></td>')
    return mark_safe("".join(parts))  # noqa: S308 - every value in it is escaped above


def _safe(value):
    """A spreadsheet runs a cell that starts with = + - @ as a formula: names are quoted out of that."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return "" if value is None else value


def csv_rows(report: dict, name: str) -> list[list]:
    """One chart's numbers as CSV rows, a header row first (the report's own keys, not translated, so
    a spreadsheet made from one language's download reads another's)."""
    days = report["days"]
    if name == "chats_by_channel":
        channels = report["chats_by_channel"]
        rows = [["day", *channels.keys(), "total"]]
        for i, d in enumerate(days):
            counts = [channels[c][i] for c in channels]
            rows.append([d, *counts, sum(counts)])
        return rows
    if name in ("first_response", "resolution"):
        figures = report[name]
        return [["day", "median_ms", "p90_ms"]] + [
            [d, _safe(figures["median_ms"][i]), _safe(figures["p90_ms"][i])] for i, d in enumerate(days)
        ]
    if name == "rating":
        distribution = report["rating"]["distribution"]
        return [["rating", "chats"]] + [[r, distribution.get(r, 0)] for r in RATINGS]
    if name == "handling":
        return [["handling", "chats"]] + [[k, report["handling"].get(k, 0)] for k in HANDLING]
    if name == "sla":
        return [["sla", "chats"], ["met", report["sla"]["met"]], ["breached", report["sla"]["breached"]]]
    keys = {
        "operators": (
            "agent_id",
            "name",
            "chats",
            "accepted",
            "missed",
            "first_response_median_ms",
            "rating_average",
            "rating_count",
        ),
        "departments": ("department_id", "name", "chats", "missed", "first_response_median_ms", "rating_average"),
    }[name]
    return [list(keys)] + [[_safe(row.get(k)) for k in keys] for row in report[name]]
