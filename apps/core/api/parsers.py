"""Body parsers. JSON bodies are read with a hard byte cap and must be well-formed; a write whose
body is not JSON is refused with 415 by DRF's negotiation (UnsupportedMediaType)."""

from __future__ import annotations

import json

from django.conf import settings
from rest_framework.parsers import BaseParser, MultiPartParser

from apps.core.errors import BodyTooLarge, InvalidJSON

# Deeper JSON is refused (RFC 8259 section 9 lets a parser limit nesting): no input of ours nests
# past a handful of levels, and a body of brackets nested ~1,000 deep exhausts the recursion
# limit in the decoder or in any code that walks the result.
MAX_JSON_DEPTH = 64


def _reject_constant(value: str):
    raise ValueError(f"{value} is not valid JSON")


def _deeper_than(value, limit: int) -> bool:
    """Whether containers in `value` nest more than `limit` levels (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def loads(text: str | bytes):
    """RFC 8259 JSON (no NaN/Infinity) nested at most MAX_JSON_DEPTH levels; InvalidJSON (400)
    otherwise. The one JSON reader of request bodies."""
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        value = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        value = None
        too_deep = True
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidJSON(f"The body is not valid JSON: {exc}") from None
    else:
        too_deep = isinstance(value, (dict, list)) and _deeper_than(value, MAX_JSON_DEPTH)
    if too_deep:
        raise InvalidJSON(f"The body nests deeper than {MAX_JSON_DEPTH} levels.")
    return value


class StrictJSONParser(BaseParser):
    """RFC 8259 JSON only: no NaN/Infinity, UTF-8, at most `view.max_body_bytes` bytes and
    MAX_JSON_DEPTH levels of nesting."""

    media_type = "application/json"

    def parse(self, stream, media_type=None, parser_context=None):
        view = (parser_context or {}).get("view")
        limit = getattr(view, "max_body_bytes", None) or settings.API_MAX_BODY_BYTES
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise BodyTooLarge(f"The body exceeds {limit} bytes.")
        if not raw:  # no body at all (a bodiless POST action); whitespace alone is not JSON: 400
            return {}
        return loads(raw)


class LimitedMultiPartParser(MultiPartParser):
    """Multipart uploads; the size cap is enforced by BodySizeLimitMiddleware and the view. More
    than DATA_UPLOAD_MAX_NUMBER_FILES files or DATA_UPLOAD_MAX_NUMBER_FIELDS fields is refused by
    Django while parsing (TooManyFilesSent, TooManyFieldsSent), which apps.core.errors renders as
    a 400 problem."""
