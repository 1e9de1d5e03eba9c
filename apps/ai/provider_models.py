"""`GET /v1/ai/credentials/{id}/models`: a live call to the credential's provider, 20 per hour per
widget, in one of the widget's provider-wait slots (apps.core.provider_waits)."""

from __future__ import annotations

from django.conf import settings

from apps.core import provider_waits
from apps.core.models import Widget
from apps.core.ratelimit import Budget

from . import errors, selectors
from .models import Credential

MODEL_LIST_BUDGET = Budget("ai_model_list", 20, 3600)
DEADLINE_SECONDS = 15.0  # and never past the request path's provider deadline


def list_models(*, widget: Widget, credential: Credential) -> list[dict]:
    from .providers import ProviderError, load_sdks
    from .providers import list_models as provider_list_models

    assert credential.widget_id == widget.pk
    if not credential.is_active:
        raise errors.CredentialInactive("The credential is retired; revive it with is_active: true first.")
    with provider_waits.wait(widget.pk, seconds=settings.AI_REQUEST_PROVIDER_DEADLINE_SECONDS):
        MODEL_LIST_BUDGET.check(widget.pk, detail="At most 20 model lists per hour per widget.")
        config = selectors.provider_config(credential)
        load_sdks([config])
        try:
            rows = provider_list_models(config, deadline=provider_waits.deadline(DEADLINE_SECONDS))
        except ProviderError as exc:
            if exc.kind == "unsupported":
                raise errors.ProviderUnsupported("This driver does not list models.") from None
            raise errors.ProviderFailure(
                "The provider did not list its models.", kind=exc.kind, provider_status=exc.status
            ) from None
    out = []
    for row in rows:
        model_id = str(row.get("id") or "")
        if model_id:
            out.append(
                {
                    "id": model_id,
                    "label": str(row.get("display_name") or row.get("label") or model_id),
                    # The model the credential is set to use.
                    "is_recommended": bool(credential.model) and model_id == credential.model,
                }
            )
    return out
