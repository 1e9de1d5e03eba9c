"""AI translations of the widget's translatable texts (`widget_name`, `widget_signature`,
`widget_greeting`) through the widget-wide provider credential.

`POST /v1/widget/translations/regenerate` marks the named texts pending (the last validated text
stays served), reserves one provider job per (field, locale) in the widget's budget (42 per 3600 s,
all or none; the budget store down fails closed) and hands the jobs to a Celery task after commit.
The widget app owns the store (apps.widget.models.TextTranslation) and serves the result.
"""

from __future__ import annotations

import logging
import math
import re
import time
import unicodedata

from django.db import transaction

from apps.core import queueing
from apps.core.errors import AppError, ValidationFailed
from apps.core.models import Widget
from apps.core.ratelimit import Budget
from apps.widget import selectors as widget_selectors
from apps.widget import services as widget_services

from . import selectors

logger = logging.getLogger(__name__)

JOB_BUDGET = Budget("widget_translation_jobs", 42, 3600)
FIELDS = ("widget_name", "widget_signature", "widget_greeting")
LANGUAGE_NAMES = {
    "ru": "Russian",
    "en": "English",
    "el": "Greek",
    "de": "German",
    "es": "Spanish",
    "ar": "Arabic",
    "zh": "Chinese (Simplified)",
}
DEADLINE_SECONDS = 30.0
_TAG = re.compile(r"<[^>]*>")


class TranslationRateLimited(AppError):
    """The widget's translation budget (42 provider jobs per hour) cannot take the whole request."""

    status, code, title = 429, "widget_translation_rate_limited", "Translation budget exhausted"


class TranslationBudgetUnavailable(AppError):
    """The translation budget cannot be reserved now (its store is down); nothing was dispatched."""

    status, code, title = 503, "widget_translation_budget_unavailable", "Translation budget unavailable"


class TranslationCredentialMissing(AppError):
    """No active widget-wide provider credential exists to translate with."""

    status, code, title = 409, "credential_unavailable", "No widget-wide credential"


def widget_values(widget: Widget) -> dict:
    return widget_selectors.effective_settings(widget)


@transaction.atomic
def regenerate(*, widget: Widget, fields: list[str], locales: list[str]) -> dict:
    """Mark, reserve, dispatch (see the module docstring). Refusals (422, 409, 429, 503) change
    nothing: the caller's transaction, and with it the idempotency claim, rolls back."""
    values = widget_values(widget)
    sources = widget_selectors.translation_sources(values)
    errors = {}
    enabled = set(values["widget_supported_languages"])
    bad_locales = [loc for loc in locales if loc not in enabled]
    if bad_locales:
        errors["locales"] = [f"Not enabled: {', '.join(bad_locales)} (add them to widget_supported_languages)."]
    if values.get("widget_content_source_language") in locales:
        errors.setdefault("locales", []).append("The content source language is not translated.")
    empty = [f for f in fields if not values.get(f)]
    if empty:
        errors["fields"] = [f"No source text: {', '.join(empty)}."]
    if errors:
        raise ValidationFailed(errors=errors)
    if not selectors.has_widget_wide_credential(widget):
        raise TranslationCredentialMissing("Add an active widget-wide provider credential first.")
    pairs = [(loc, f, sources[f"{loc}:{f}"]["hash"]) for loc in locales for f in fields]
    rows = widget_services.request_translations(widget=widget, pairs=pairs)
    try:
        decision = JOB_BUDGET.consume(widget.pk, cost=len(pairs))
    except Exception:  # noqa: BLE001 - any store failure fails closed
        raise TranslationBudgetUnavailable("The translation budget cannot be reserved now.") from None
    if not decision.allowed:
        raise TranslationRateLimited(
            f"The request needs {len(pairs)} of the widget's 42 provider jobs per hour.",
            headers={"Retry-After": str(max(1, math.ceil(decision.retry_after)))},
        )
    ids = [row.pk for row in rows]
    transaction.on_commit(lambda: _dispatch(widget.pk, ids))
    return {"accepted": len(ids), "jobs": [{"locale": r.locale, "field": r.field} for r in rows]}


def _dispatch(widget_id: int, ids: list[int]) -> None:
    queueing.task("apps.ai.tasks.translate_widget_texts").delay(widget_id, ids)


def clean_output(text: str) -> str:
    text = _TAG.sub("", text or "")
    text = "".join(ch for ch in text if unicodedata.category(ch) not in ("Cc", "Cf", "Cs") or ch == "\n")
    return text.strip().strip('"“”«»').strip()


def translate(*, widget_id: int, ids: list[int]) -> None:
    """The job: one provider completion per pending text; a valid answer is stored (and served), a
    failure marks the text failed and keeps the last validated one."""
    from apps.widget.models import TextTranslation

    from .providers import ChatMessage, ProviderError, complete

    widget = Widget.objects.filter(pk=widget_id).first()
    if widget is None:
        return
    values = widget_values(widget)
    chain = selectors.resolve_chain(widget)
    for row in TextTranslation.objects.filter(pk__in=ids, widget=widget, status=TextTranslation.Status.PENDING):
        source = values.get(row.field) or ""
        if not source or widget_selectors.source_hash(source) != row.requested_hash:
            widget_services.fail_translation(
                widget=widget, translation_id=row.pk, requested_hash=row.requested_hash, error="source_changed"
            )
            continue
        if not chain:
            widget_services.fail_translation(
                widget=widget, translation_id=row.pk, requested_hash=row.requested_hash, error="credential_missing"
            )
            continue
        messages = [
            ChatMessage(
                "system",
                f"Translate the user's text into {LANGUAGE_NAMES[row.locale]}. It is a short text of a website chat "
                "widget. Answer with the translation only: no quotes, no explanations.",
            ),
            ChatMessage("user", source),
        ]
        try:
            completion = complete(chain, messages, deadline=time.monotonic() + DEADLINE_SECONDS, max_operations=4)
        except ProviderError as exc:
            logger.warning("widget %s translation %s failed: %s", widget.pk, row.pk, exc.kind)
            widget_services.fail_translation(
                widget=widget, translation_id=row.pk, requested_hash=row.requested_hash, error=f"provider_{exc.kind}"
            )
            continue
        text = clean_output(completion.text)
        if not text or len(text) > max(200, 4 * len(source)):
            widget_services.fail_translation(
                widget=widget, translation_id=row.pk, requested_hash=row.requested_hash, error="invalid_output"
            )
            continue
        widget_services.store_translation(
            widget=widget, translation_id=row.pk, requested_hash=row.requested_hash, text=text
        )
