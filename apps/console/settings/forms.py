"""The one way a settings page writes: the API route's serializer validates the posted values, the
route's service writes them, and a refusal of either comes back as the API would word it.

    outcome = forms.submit(s.CannedCreateSerializer, data, lambda v: services.create_canned_response(
        widget=widget, **v))
    if outcome.refused:
        ...render the form with outcome.errors / outcome.message, status outcome.status...

`errors` is keyed exactly as the API's problem+json `errors` member (dotted paths for nested
members, `body` for the input as a whole); `message` is the problem's `detail`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from django.db import transaction
from rest_framework import exceptions as drf_exceptions

from apps.core.errors import AppError, flatten_errors

VALIDATION_DETAIL = "One or more fields are invalid."


@dataclass
class Outcome:
    value: Any = None
    refused: bool = False
    status: int = 200
    code: str = ""
    message: str = ""
    errors: dict[str, list[str]] = field(default_factory=dict)

    def field_errors(self, name: str) -> list[str]:
        return self.errors.get(name, [])

    @property
    def general(self) -> list[str]:
        """What the page shows above the form: the messages about the input as a whole, else the
        problem's detail when no field is named."""
        return self.errors.get("body", []) or ([self.message] if self.message and not self.errors else [])


def api_context(request) -> dict:
    """The API serializers' context for a settings page: their id fields resolve inside the console's
    widget only (they read `context["request"].widget`, as under the API's token)."""
    return {"request": SimpleNamespace(widget=request.agent.widget)}


def bind(form, outcome: Outcome, *, fields: dict[str, str] | None = None) -> None:
    """Put a refusal's messages on the Django form a page draws: a message keyed by one of the
    form's fields (or by an API member `fields` maps to one) goes under that field, any other above
    the form, prefixed with the member it names."""
    fields = fields or {}
    for key, messages in outcome.errors.items():
        name = fields.get(key, key)
        for message in messages:
            if name in form.fields:
                form.add_error(name, message)
            elif key == "body":
                form.add_error(None, message)
            else:
                form.add_error(None, f"{key}: {message}")
    if not outcome.errors and outcome.message:
        form.add_error(None, outcome.message)


def refusal(err: AppError) -> Outcome:
    return Outcome(refused=True, status=err.status, code=err.code, message=err.detail, errors=dict(err.errors or {}))


def validate(serializer_class, data, *, context: dict | None = None, **kwargs) -> tuple[dict | None, Outcome | None]:
    """(validated data, None) or (None, the refusal the API answers for the same body)."""
    serializer = serializer_class(data=data, context=context or {}, **kwargs)
    try:
        serializer.is_valid(raise_exception=True)
    except drf_exceptions.ValidationError as err:
        return None, Outcome(
            refused=True,
            status=422,
            code="validation_failed",
            message=VALIDATION_DETAIL,
            errors=flatten_errors(err.detail),
        )
    except AppError as err:
        return None, refusal(err)
    return serializer.validated_data, None


def perform(action: Callable[[], Any]) -> Outcome:
    """Run a service call in one transaction; its AppError is the refusal, and nothing changed."""
    try:
        with transaction.atomic():
            return Outcome(value=action())
    except AppError as err:
        return refusal(err)


def submit(serializer_class, data, action: Callable[[dict], Any], *, context: dict | None = None, **kwargs) -> Outcome:
    """Validate `data` with the API's serializer, then `action(validated)`; the first refusal wins."""
    validated, refused = validate(serializer_class, data, context=context, **kwargs)
    if refused is not None:
        return refused
    return perform(lambda: action(validated))
