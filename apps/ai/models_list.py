"""`GET /v1/ai/credentials/{id}/models`: a live call to the credential's provider, 20 per hour per
widget."""

from __future__ import annotations

import time

from apps.core.models import Widget
from apps.core.ratelimit import Budget

from . import errors, selectors
from .models import Credential

MODEL_LIST_BUDGET = Budget("ai_model_list", 20, 3600)
DEADLINE_SECONDS = 15.0


def list_models(*, widget: Widget, credential: Credential) -> list[dict]:
    from .providers import ProviderError
    from .providers import list_models as provider_list_models

    assert credential.widget_id == widget.pk
    if not credential.is_active:
        raise errors.CredentialInactive("The credential is retired; revive it with is_active: true first.")
    MODEL_LIST_BUDGET.check(widget.pk, detail="At most 20 model lists per hour per widget.")
    try:
        rows = provider_list_models(selectors.provider_config(credential), deadline=time.monotonic() + DEADLINE_SECONDS)
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
