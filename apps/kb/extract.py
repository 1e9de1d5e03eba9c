"""An uploaded document's format from its bytes (never its name) and its text.

Accepted: pdf (`%PDF-`), docx (a zip holding `word/document.xml`), odt (a zip whose `mimetype` member
is `application/vnd.oasis.opendocument.text`), and UTF-8 text: html (a document that starts, after
a BOM, blanks and comments, with `<!doctype html` or `<html`, or holds `<body`), json (parses as
JSON), csv (two or more lines of the same number (>1) of commas or semicolons; the name's
extension decides between csv and plain text only when the text could be either), md and txt. Other
bytes (images, executables, legacy .doc, xlsx, text that is not UTF-8) are refused, and so is a zip
past the decoded limits of `apps.core.documents` (a decompression bomb).
"""

from __future__ import annotations

import csv
import io
import json
import logging
import re
import zipfile

from apps.core import documents

logger = logging.getLogger(__name__)

FORMATS = ("txt", "md", "html", "csv", "json", "pdf", "docx", "odt")
ODT_MIMETYPE = b"application/vnd.oasis.opendocument.text"
MAX_TEXT_CHARS = 2_000_000
_MIMETYPE_READ = 256  # far more than any ODF media type; a longer member is no ODF mimetype

_HTML_START = re.compile(rb"^(?:\s|<!--.*?-->)*<(?:!doctype\s+html|html)[\s>]", re.IGNORECASE | re.DOTALL)
_HTML_BODY = re.compile(rb"<body[\s>]", re.IGNORECASE)


class NotReadable(Exception):
    """The bytes are not an accepted document (message: what was found, safe to show)."""


def _zip_format(data: bytes) -> str | None:
    # Runs in the upload request: the archive's directory is checked against the decoded limits and
    # only the first bytes of `mimetype` are inflated (the members are inflated and counted by the
    # ingestion, before any parser reads them: `apps.core.documents`).
    try:
        with documents.open_archive(data) as archive:
            names = set(archive.namelist())
            if (
                "mimetype" in names
                and documents.read_prefix(archive, "mimetype", _MIMETYPE_READ).strip() == ODT_MIMETYPE
            ):
                return "odt"
            if "word/document.xml" in names:
                return "docx"
    except documents.ArchiveRefused as exc:
        raise NotReadable(str(exc)) from None
    except (zipfile.BadZipFile, KeyError, OSError, ValueError, EOFError, RuntimeError, NotImplementedError):
        return None
    return None


def _looks_csv(text: str) -> bool:
    lines = [line for line in text.splitlines()[:20] if line.strip()]
    if len(lines) < 2:
        return False
    try:
        dialect = csv.Sniffer().sniff("\n".join(lines), delimiters=",;\t")
        # the reader refuses a field past csv.field_size_limit(): such text is no table
        widths = {len(row) for row in csv.reader(lines, dialect)}
    except csv.Error:
        return False
    return len(widths) == 1 and widths.pop() > 1


def detect(data: bytes, name: str = "") -> str:
    """The format of `data` (one of FORMATS); NotReadable when it is none of them."""
    if data.startswith(b"%PDF-"):
        return "pdf"
    if data.startswith(b"PK\x03\x04"):
        found = _zip_format(data)
        if found is None:
            raise NotReadable("a zip archive that is neither a docx nor an odt document")
        return found
    head = data[:4096].lstrip(b"\xef\xbb\xbf")
    if b"\x00" in data[:8192]:
        raise NotReadable("binary content")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise NotReadable("neither a known document format nor UTF-8 text") from None
    if _HTML_START.match(head) or _HTML_BODY.search(head):
        return "html"
    ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            json.loads(stripped)
            return "json"
        except (ValueError, RecursionError):
            pass
    if ext == "csv" and _looks_csv(text):
        return "csv"
    if ext in ("md", "markdown"):
        return "md"
    if ext not in ("csv", "txt", "text", "") and _looks_csv(text):
        return "csv"
    return "txt"


def _html_text(data: bytes) -> str:
    import trafilatura

    extracted = trafilatura.extract(
        data.decode("utf-8-sig", errors="replace"),
        include_comments=False,
        include_tables=True,
        favor_recall=True,
    )
    return extracted or ""


def _json_text(data: bytes) -> str:
    parts: list[str] = []

    def walk(node, path: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                walk(value, f"{path}.{key}" if path else str(key))
        elif isinstance(node, list):
            for item in node:
                walk(item, path)
        elif node is not None:
            parts.append(f"{path}: {node}" if path else str(node))

    walk(json.loads(data.decode("utf-8-sig")), "")
    return "\n".join(parts)


def _csv_text(data: bytes) -> str:
    text = data.decode("utf-8-sig")
    dialect = csv.Sniffer().sniff("\n".join(text.splitlines()[:20]), delimiters=",;\t")
    rows = list(csv.reader(io.StringIO(text), dialect))
    if not rows:
        return ""
    header, body = rows[0], rows[1:]
    lines = []
    for row in body:
        pairs = [f"{h}: {v}" for h, v in zip(header, row, strict=False) if v.strip()]
        lines.append("; ".join(pairs))
    return "\n".join(lines) if lines else ", ".join(header)


def text_of(data: bytes, fmt: str) -> str:
    """The text of a document already detected as `fmt`; NotReadable when it cannot be parsed."""
    try:
        if fmt == "pdf":
            text = documents.pdf_text(data, max_chars=MAX_TEXT_CHARS)
        elif fmt == "docx":
            text = documents.docx_text(data, tables=True)
        elif fmt == "odt":
            text = documents.odt_text(data)
        elif fmt == "html":
            text = _html_text(data)
        elif fmt == "json":
            text = _json_text(data)
        elif fmt == "csv":
            text = _csv_text(data)
        else:
            text = data.decode("utf-8-sig")
    except NotReadable:
        raise
    except documents.ArchiveRefused as exc:
        raise NotReadable(str(exc)) from None
    except Exception as exc:  # a broken or hostile document: a failed state, never a crash
        logger.info("kb document could not be parsed as %s: %s", fmt, type(exc).__name__)
        raise NotReadable(f"the {fmt} document could not be parsed") from None
    return text[:MAX_TEXT_CHARS]
