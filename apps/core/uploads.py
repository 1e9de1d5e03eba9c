"""Headers of every response that carries bytes a user uploaded (public avatars and icons under
/media/, chat files behind their signed URL).

SECURITY: such bytes are never interpreted by a browser as a page of our origin: `nosniff`, a
sandboxing CSP (no scripts, no plugins, a unique origin even if opened as a document), and
`Content-Disposition: attachment` unless the type is an image a browser only ever draws.
"""

from __future__ import annotations

from urllib.parse import quote

from django.http import HttpResponseBase

UPLOAD_CSP = "default-src 'none'; sandbox"
# Raster images: drawn by <img>, never run. SVG is not among them (it carries script).
INLINE_SAFE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


def content_disposition(name: str, *, inline: bool = False) -> str:
    """RFC 6266 value with an ASCII fallback name and the UTF-8 original."""
    fallback = "".join(ch if 0x20 <= ord(ch) < 0x7F and ch not in '"\\' else "_" for ch in name)
    kind = "inline" if inline else "attachment"
    return f"{kind}; filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe='')}"


def protect_upload(response: HttpResponseBase, *, name: str, attachment: bool = False) -> HttpResponseBase:
    """Mark `response` (bytes a user uploaded, served as `name`) so no browser renders it as ours:
    an attachment unless `attachment` is false and its Content-Type is an inline-safe image."""
    content_type = response.get("Content-Type", "").split(";", 1)[0].strip().lower()
    inline = not attachment and content_type in INLINE_SAFE_TYPES
    response["Content-Disposition"] = content_disposition(name, inline=inline)
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = UPLOAD_CSP
    return response
