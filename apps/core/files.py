"""Stored files: names and types cleaned, bytes under random names. Used by the REST upload and
fetch-by-URL (apps.chats), the visitor upload, avatars, icons and billing documents.

SECURITY: the client never names the stored path: bytes are stored under a random name, the
original name is kept only as cleaned display text.
"""

from __future__ import annotations

import re
import unicodedata
import uuid
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from django.core.files.base import ContentFile
from django.db import transaction

from apps.platform import outbound

from .errors import BodyTooLarge, ValidationFailed
from .models import File, Widget

MAX_FILE_BYTES = 10 * 1024 * 1024
DEFAULT_CONTENT_TYPE = "application/octet-stream"
NAME_MAX_CHARS = 255
FALLBACK_NAME = "file"

_CONTENT_TYPE_RE = re.compile(r"^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$")
_EXTENSION_RE = re.compile(r"^[a-z0-9]{1,10}$")


# --- names and types -----------------------------------------------------------------------------------


def clean_original_name(raw: str | None) -> str:
    """Display name of a file: the last path segment, without control or format characters, at most
    255 characters (the extension kept when it has to be cut). Never used as a storage path."""
    name = (raw or "").replace("\\", "/").rsplit("/", 1)[-1]
    name = unicodedata.normalize("NFC", name)
    name = "".join(ch for ch in name if unicodedata.category(ch)[0] not in ("C", "Z") or ch == " ")
    name = name.strip().strip(".").strip()
    if not name:
        return FALLBACK_NAME
    if len(name) > NAME_MAX_CHARS:
        stem, dot, ext = name.rpartition(".")
        if dot and stem and len(ext) <= 16:
            name = f"{stem[: NAME_MAX_CHARS - len(ext) - 1]}.{ext}"
        else:
            name = name[:NAME_MAX_CHARS]
    return name


def stored_name(original_name: str) -> str:
    """A random storage name; only a short alphanumeric extension of the original survives."""
    _, dot, ext = original_name.rpartition(".")
    ext = ext.lower() if dot else ""
    return f"{uuid.uuid4().hex}.{ext}" if _EXTENSION_RE.match(ext) else uuid.uuid4().hex


def clean_content_type(raw: str | None) -> str:
    value = (raw or "").split(";", 1)[0].strip().lower()
    return value if _CONTENT_TYPE_RE.match(value) else DEFAULT_CONTENT_TYPE


def name_from_url(url: str) -> str:
    try:
        path = urlsplit(url).path
    except ValueError:
        return FALLBACK_NAME
    return clean_original_name(unquote(path.rstrip("/").rsplit("/", 1)[-1]))


# --- fetch by URL -----------------------------------------------------------------------------------------

_FETCH_MESSAGES = {
    "response_too_large": f"The file at this URL is larger than {MAX_FILE_BYTES} bytes.",
    "too_many_redirects": "The URL redirects more than once.",
    "timeout": "The URL did not answer in time.",
    "tls_error": "The URL's TLS certificate could not be verified.",
    "resolve_failed": "The URL's host does not resolve.",
}


@dataclass(frozen=True)
class Fetched:
    """A file fetched by URL, ready for `store_file`."""

    content: ContentFile
    name: str
    content_type: str | None
    size: int


def _url_refused(message: str) -> ValidationFailed:
    return ValidationFailed("One or more fields are invalid.", errors={"url": [message]})


def fetch_url(url: str) -> Fetched:
    """GET `url` through the guarded client: https only, one re-checked redirect hop, 10 MB cap.
    Every failure is a 422 naming `url`. Runs outside any transaction (the caller stores after)."""
    try:
        response = outbound.request("GET", url, max_redirects=1, max_bytes=MAX_FILE_BYTES)
    except outbound.OutboundBlocked as exc:
        raise _url_refused(f"This URL is not allowed ({exc.reason}); only public https:// addresses are.") from None
    except outbound.OutboundError as exc:
        raise _url_refused(_FETCH_MESSAGES.get(exc.reason, f"The URL could not be fetched ({exc.reason}).")) from None
    if not 200 <= response.status_code < 300:
        raise _url_refused(f"The URL answered HTTP {response.status_code}.")
    if not response.content:
        raise _url_refused("The URL answered with an empty body.")
    return Fetched(
        content=ContentFile(response.content),
        name=name_from_url(response.url or url),
        content_type=response.headers.get("Content-Type"),
        size=len(response.content),
    )


# --- the write -------------------------------------------------------------------------------------------


def single_upload(request, field: str = "file", *, required: bool = False):
    """The one uploaded file of a multipart `field`, or None: more than one is a 422 naming the
    field (a form may repeat a field; every upload route takes one file), and so is none when
    `required`. The one reading of upload input for the REST, visitor, avatar and icon routes."""
    uploads = request.FILES.getlist(field)
    if len(uploads) > 1 or (required and not uploads):
        raise ValidationFailed("One or more fields are invalid.", errors={field: ["Send one file."]})
    return uploads[0] if uploads else None


def check_upload_size(upload) -> None:
    """413 for an uploaded file over MAX_FILE_BYTES (the body gate let its multipart framing in)."""
    if upload.size > MAX_FILE_BYTES:
        raise BodyTooLarge(f"The file exceeds {MAX_FILE_BYTES} bytes.")


@transaction.atomic
def store_file(
    *,
    widget: Widget,
    content,
    original_name: str,
    content_type: str,
    size: int,
) -> File:
    """Store `content` (a Django File) under a random name in the default storage and record it.

    The bytes are written before the row; a rolled-back transaction leaves them orphaned, never a
    row without bytes."""
    file = File(
        widget=widget,
        original_name=clean_original_name(original_name),
        content_type=clean_content_type(content_type),
        size=size,
    )
    file.stored.save(stored_name(file.original_name), content, save=False)
    file.save()
    return file
