"""Strict query-string parsing shared by every list and report endpoint."""

from __future__ import annotations

from rest_framework import serializers

from apps.core.numbers import parse_id
from apps.core.timeparse import EARLIEST_DAY, LATEST_DAY, in_supported_range, parse_moment

PAGINATION_PARAMS = ("cursor", "limit")


def query_data(request, *, skip: tuple[str, ...] = PAGINATION_PARAMS) -> dict:
    """Query parameters minus `skip` (pagination, read by the paginator), one value each: a
    repeated parameter is refused with 422. Unknown names are refused by the XQuery serializer."""
    params = request.query_params
    data, errors = {}, {}
    for key in params:
        if key in skip:
            continue
        values = params.getlist(key)
        if len(values) > 1:
            errors[key] = ["Give this parameter once."]
        data[key] = values[-1]
    if errors:
        raise serializers.ValidationError(errors)
    return data


class IdQueryField(serializers.CharField):
    """An id in a query parameter: ASCII digits, else 422 "Must be an id.". A number past the
    64-bit range (however many digits) is None: no row has it, and the caller answers exactly as it
    does for a missing id, never with a different status for a long one."""

    default_error_messages = {"invalid": "Must be an id."}

    def __init__(self, **kwargs):
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        text = super().to_internal_value(data)
        try:
            return parse_id(text)
        except ValueError:
            self.fail("invalid")


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
