"""/console/settings/widget/prechat/: the owner's pre-chat form (the `prechat` widget setting), written
whole through the settings route's own service (`update_settings`: the same rules and messages as
`PATCH /api/v1/widget/settings`, audited there).

The page draws one row per stored field plus one empty row (up to the setting's ten). A row holds the
key, the type, the labels per language, whether it is required, its order, a remove box and, for a
select, its options (values one per line, their labels per language in the same order). Works without
script. The API's dotted error paths (`prechat.fields.2.key`) are mapped back to the row they came from.
"""

from __future__ import annotations

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

MAX_FIELDS = 10
LANGUAGES = (
    ("en", "English"),
    ("ru", "Русский"),
    ("de", "Deutsch"),
    ("es", "Español"),
    ("el", "Ελληνικά"),
    ("ar", "العربية"),
    ("zh", "中文"),
)
WHEN = (
    ("never", gettext_lazy("Never (no form)")),
    ("always", gettext_lazy("Always, before the first message")),
    ("offline", gettext_lazy("Only while nobody answers, before the first message")),
)
TYPES = (
    ("text", gettext_lazy("Text")),
    ("email", gettext_lazy("E-mail")),
    ("phone", gettext_lazy("Phone")),
    ("number", gettext_lazy("Number")),
    ("select", gettext_lazy("Choice from a list")),
    ("checkbox", gettext_lazy("Checkbox (required: a consent)")),
)
TEMPLATE = "console/settings/widget/prechat.html"


def _lines(text: str) -> list[str]:
    return [line.strip() for line in (text or "").splitlines()]


def _row_from_post(post, i: int) -> dict:
    return {
        "index": i,
        "key": post.get(f"f{i}-key", "").strip(),
        "type": post.get(f"f{i}-type", "text"),
        "required": bool(post.get(f"f{i}-required")),
        "labels": {code: post.get(f"f{i}-label-{code}", "").strip() for code, _name in LANGUAGES},
        "options": post.get(f"f{i}-options", ""),
        "option_labels": {code: post.get(f"f{i}-options-{code}", "") for code, _name in LANGUAGES},
        "order": post.get(f"f{i}-order", "").strip(),
        "remove": bool(post.get(f"f{i}-remove")),
    }


def _row_from_field(field: dict, i: int) -> dict:
    options = field.get("options") or []
    return {
        "index": i,
        "key": field["key"],
        "type": field["type"],
        "required": field.get("required", False),
        "labels": {code: field["label_i18n"].get(code, "") for code, _name in LANGUAGES},
        "options": "\n".join(o["value"] for o in options),
        "option_labels": {code: "\n".join(o["label_i18n"].get(code, "") for o in options) for code, _name in LANGUAGES},
        "order": str(i + 1),
        "remove": False,
    }


def _blank(row: dict) -> bool:
    return not row["key"] and not any(row["labels"].values()) and not row["options"].strip()


def _field(row: dict) -> dict:
    field = {
        "key": row["key"],
        "type": row["type"],
        "label_i18n": {code: text for code, text in row["labels"].items() if text},
        "required": row["required"],
    }
    if row["type"] == "select":
        values = [v for v in _lines(row["options"]) if v]
        labels = {code: _lines(text) for code, text in row["option_labels"].items()}
        field["options"] = [
            {
                "value": value,
                "label_i18n": {code: lines[n] for code, lines in labels.items() if n < len(lines) and lines[n]},
            }
            for n, value in enumerate(values)
        ]
    return field


def _order(row: dict) -> tuple[int, int]:
    try:
        return int(row["order"]), row["index"]
    except ValueError:
        return MAX_FIELDS + row["index"] + 1, row["index"]


def posted_body(post) -> tuple[dict, list[dict], dict[int, int]]:
    """(the settings PATCH body, the rows as posted, API field index -> row index)."""
    rows = [_row_from_post(post, i) for i in range(MAX_FIELDS)]
    kept = sorted((r for r in rows if not r["remove"] and not _blank(r)), key=_order)
    where = {n: row["index"] for n, row in enumerate(kept)}
    body = {"prechat": {"when": post.get("when", ""), "fields": [_field(row) for row in kept]}}
    return body, rows, where


def _drawn(when: str, rows: list[dict], errors: dict, where: dict[int, int]) -> dict:
    """What the template draws: the rows (filled ones, then one empty while there is room) with each
    message beside the input it is about."""
    by_row: dict[int, dict[str, list[str]]] = {}
    top: dict[str, list[str]] = {"when": [], "fields": [], "general": []}
    for path, items in errors.items():
        parts = path.split(".")
        if path == "prechat.when":
            top["when"].extend(items)
        elif path == "prechat.fields" or path == "prechat":
            top["fields"].extend(items)
        elif len(parts) >= 3 and parts[:2] == ["prechat", "fields"] and parts[2].isdigit():
            row = by_row.setdefault(where.get(int(parts[2]), -1), {})
            member = parts[3] if len(parts) > 3 else "general"
            if member == "label_i18n" and len(parts) > 4:
                member = f"label-{parts[4]}"
            elif member == "options" and len(parts) > 4:
                items = [
                    _("Option %(number)s: %(message)s") % {"number": int(parts[4]) + 1, "message": m} for m in items
                ]
            row.setdefault(member, []).extend(items)
        else:
            top["general"].extend(f"{path}: {item}" for item in items)
    top["general"].extend(m for ms in by_row.pop(-1, {}).values() for m in ms)
    filled = [r for r in rows if not _blank(r)]
    empty = [r for r in rows if _blank(r)]
    shown = filled + empty[:1] if len(filled) < MAX_FIELDS else filled
    drawn = []
    for row in shown:
        row_errors = by_row.get(row["index"], {})
        drawn.append(
            {
                **row,
                "errors": row_errors,
                "label_inputs": [
                    {
                        "code": code,
                        "name": name,
                        "value": row["labels"][code],
                        "errors": row_errors.get(f"label-{code}", []),
                    }
                    for code, name in LANGUAGES
                ],
                "option_inputs": [
                    {"code": code, "name": name, "value": row["option_labels"][code]} for code, name in LANGUAGES
                ],
                "invalid": bool(row_errors),
            }
        )
    return {"when": when, "rows": drawn, "top": top, "whens": WHEN, "types": TYPES, "max_fields": MAX_FIELDS}


def _page(request, context: dict, *, status: int = 200):
    settings = selectors.effective_settings(request.agent.widget)
    context["legacy_on"] = settings["widget_prechat_form_enabled"]
    return render(request, TEMPLATE, settings_context(request, area="widget", **context), status=status)


@never_cache
@owner_required
@require_http_methods(["GET", "POST"])
def prechat_form(request):
    widget = request.agent.widget
    if request.method == "GET":
        form = selectors.effective_settings(widget)["prechat"]
        rows = [_row_from_field(field, i) for i, field in enumerate(form["fields"])]
        rows += [_row_from_post({}, i) for i in range(len(rows), MAX_FIELDS)]
        return _page(request, _drawn(form["when"], rows, {}, {}))
    body, rows, where = posted_body(request.POST)
    outcome = forms.perform(lambda: services.update_settings(widget=widget, body=body))
    if outcome.refused:
        # Rows are drawn in the order they were posted, each with its own messages.
        context = _drawn(body["prechat"]["when"], rows, outcome.errors, where)
        context["refusal"] = outcome.message
        return _page(request, context, status=outcome.status)
    messages.success(request, _("Saved."))
    return HttpResponseRedirect(reverse("console:settings:widget-prechat"), status=303)
