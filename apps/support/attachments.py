"""A customer's attachment as a support agent reads it: images as base64 (PNG, JPEG, GIF, WebP,
recognised by their bytes), document text (txt, log, csv, json, md, pdf, docx, odt), or the file
itself for heic, doc, xls, xlsx, rtf and scanned PDFs (no text layer). Anything else is 415.

The bytes are read from storage at most once and never executed or rendered; documents are parsed
by pypdf, python-docx and odfpy (pure Python, no macros, no external entities)."""

from __future__ import annotations

import base64
import logging
from dataclasses import dataclass

from apps.core import documents
from apps.core.errors import UnsupportedMediaType
from apps.core.models import File

logger = logging.getLogger(__name__)

TEXT_MAX_CHARS = documents.TEXT_MAX_CHARS
IMAGE_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)
PLAIN_TEXT = {
    "txt": "text/plain",
    "log": "text/plain",
    "csv": "text/csv",
    "json": "application/json",
    "md": "text/markdown",
}
AS_FILE = {
    "heic": "image/heic",
    "doc": "application/msword",
    "xls": "application/vnd.ms-excel",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "rtf": "application/rtf",
}


@dataclass(frozen=True)
class Served:
    kind: str  # image, text, file
    mime_type: str
    name: str
    size: int
    data: bytes = b""
    text: str = ""
    truncated: bool = False

    def body(self) -> dict:
        out = {"kind": self.kind, "name": self.name, "mime_type": self.mime_type, "size": self.size}
        if self.kind == "image":
            out["data_base64"] = base64.b64encode(self.data).decode("ascii")
        elif self.kind == "text":
            out["text"], out["truncated"] = self.text, self.truncated
        return out


def _image_type(head: bytes) -> str | None:
    for signature, mime in IMAGE_SIGNATURES:
        if head.startswith(signature):
            return mime
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def _extension(name: str) -> str:
    return name.rsplit(".", 1)[-1].lower() if "." in name else ""


def _clip(text: str) -> tuple[str, bool]:
    return (text[:TEXT_MAX_CHARS], True) if len(text) > TEXT_MAX_CHARS else (text, False)


_pdf_text = documents.pdf_text
_docx_text = documents.docx_text
_odt_text = documents.odt_text


def serve(file: File) -> Served:
    """Read `file` for a support agent. Raises 415 for a type outside the lists above or a document
    that cannot be parsed as its extension says."""
    name = file.original_name
    ext = _extension(name)
    with file.stored.open("rb") as fh:
        data = fh.read()
    image = _image_type(data[:16])
    if image is not None:
        return Served("image", image, name, len(data), data=data)
    try:
        if ext in PLAIN_TEXT:
            text, truncated = _clip(data.decode("utf-8-sig", errors="replace"))
            return Served("text", PLAIN_TEXT[ext], name, len(data), text=text, truncated=truncated)
        if ext == "pdf" and data.startswith(b"%PDF"):
            extracted = _pdf_text(data)
            if not extracted.strip():  # a scanned PDF: no text layer, the file itself
                return Served("file", "application/pdf", name, len(data), data=data)
            text, truncated = _clip(extracted)
            return Served("text", "text/plain", name, len(data), text=text, truncated=truncated)
        if ext == "docx":
            text, truncated = _clip(_docx_text(data))
            return Served("text", "text/plain", name, len(data), text=text, truncated=truncated)
        if ext == "odt":
            text, truncated = _clip(_odt_text(data))
            return Served("text", "text/plain", name, len(data), text=text, truncated=truncated)
    except Exception:  # a broken or hostile document: refused, never a 500
        logger.info("support attachment %s could not be parsed as .%s", file.pk, ext)
        raise UnsupportedMediaType(f"The .{ext} attachment could not be read.") from None
    if ext in AS_FILE:
        return Served("file", AS_FILE[ext], name, len(data), data=data)
    raise UnsupportedMediaType("This attachment type is not served to support agents.")
