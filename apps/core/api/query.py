"""Strict query-string parsing shared by every list and report endpoint.

The `XQuery` serializers that validate a query also document it: views pass them to
`extend_schema(parameters=[XQuery])`, so every rule the server enforces (lengths, patterns, enums,
id and date formats) is the one the OpenAPI document states.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.core.timeparse import EARLIEST_DAY, LATEST_DAY, in_supported_range, parse_moment
from apps.platform.numbers import parse_id

PAGINATION_PARAMS = ("cursor", "limit")


def query_data(request, *, skip: tuple[str, ...] = PAGINATION_PARAMS, repeatable: tuple[str, ...] = ()) -> dict:
    """Query parameters minus `skip` (pagination, read by the paginator), one value each: a
    repeated parameter is refused with 422, except those named in `repeatable`, read as a list of
    every value given. Unknown names are refused by the XQuery serializer."""
    params = request.query_params
    data, errors = {}, {}
    for key in params:
        if key in skip:
            continue
        values = params.getlist(key)
        if key in repeatable:
            data[key] = values
            continue
        if len(values) > 1:
            errors[key] = ["Give this parameter once."]
        data[key] = values[-1]
    if errors:
        raise serializers.ValidationError(errors)
    return data


@extend_schema_field({"type": "integer", "minimum": 0})
class IdQueryField(serializers.Field):
    """An id in a query parameter: ASCII digits, else 422 "Must be an id.". A number past the
    64-bit range (however many digits) is None: no row has it, and the caller answers exactly as it
    does for a missing id, never with a different status for a long one."""

    default_error_messages = {"invalid": "Must be an id."}

    def to_internal_value(self, data):
        try:
            return parse_id(data)
        except ValueError:
            self.fail("invalid")

    def to_representation(self, value):
        return value


# A date or an RFC 3339 date-time from 1900 on (what every client sends); the server also reads other
# ISO 8601 forms.
@extend_schema_field(
    {"type": "string", "anyOf": [{"format": "date"}, {"format": "date-time"}], "pattern": "^(?:19|[2-9][0-9])[0-9]{2}-"}
)
class MomentField(serializers.CharField):
    """`from`/`to` of every list and report: a date or date-time, Europe/Moscow unless it carries
    an offset, from 1900-01-01 to 9999-01-01 (outside, no query could use it: 422 here, never an
    overflow further down)."""

    default_error_messages = {
        "invalid_moment": "Not a date or date-time (ISO 8601).",
        "out_of_range": f"Must be from {EARLIEST_DAY} to {LATEST_DAY} (Europe/Moscow).",
    }

    def to_internal_value(self, data):
        text = super().to_internal_value(data)
        try:
            moment = parse_moment(text)
        except ValueError:
            self.fail("invalid_moment")
        if not in_supported_range(moment):
            self.fail("out_of_range")
        return moment
