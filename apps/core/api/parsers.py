"""Body parsers. JSON bodies are read with a hard byte cap and must be well-formed; a write whose
body is not JSON is refused with 415 by DRF's negotiation (UnsupportedMediaType)."""

from __future__ import annotations

import json

from django.conf import settings
from rest_framework.parsers import BaseParser, MultiPartParser

from apps.core.errors import BodyTooLarge, InvalidJSON


def _reject_constant(value: str):
    raise ValueError(f"{value} is not valid JSON")


class StrictJSONParser(BaseParser):
    """RFC 8259 JSON only: no NaN/Infinity, UTF-8, at most `view.max_body_bytes` bytes."""

    media_type = "application/json"

    def parse(self, stream, media_type=None, parser_context=None):
        view = (parser_context or {}).get("view")
        limit = getattr(view, "max_body_bytes", None) or settings.API_MAX_BODY_BYTES
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise BodyTooLarge(f"The body exceeds {limit} bytes.")
        if not raw.strip():
            return {}
        try:
            return json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
        except (UnicodeDecodeError, ValueError) as exc:
            raise InvalidJSON(f"The body is not valid JSON: {exc}") from None


class LimitedMultiPartParser(MultiPartParser):
    """Multipart uploads; the size cap is enforced by BodySizeLimitMiddleware and the view."""
