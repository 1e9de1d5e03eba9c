"""The content negotiation of every API view (bearer, visitor and compat)."""

from __future__ import annotations

from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.settings import APISettings


class AcceptNegotiation(DefaultContentNegotiation):
    """DRF's negotiation by the Accept header alone. `format` is no query parameter of the API:
    DRF's `?format=` override would answer 404 to an unknown value on every route, and the
    OpenAPI document declares no such parameter; a route's query serializer refuses it (422) like
    any other undeclared name."""

    settings = APISettings(user_settings={"URL_FORMAT_OVERRIDE": None})
