"""Text of office documents, shared by the support attachments (`apps.support.attachments`) and the
knowledge-base uploads (`apps.kb.extract`): pdf by pypdf, docx by python-docx, odt by odfpy (pure
Python, no macros, no external entities). Callers treat any exception as "not readable"."""

from __future__ import annotations

import io

TEXT_MAX_CHARS = 200_000


def pdf_text(data: bytes, *, max_chars: int = TEXT_MAX_CHARS) -> str:
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(data))
    parts = []
    total = 0
    for page in reader.pages:
        piece = page.extract_text() or ""
        parts.append(piece)
        total += len(piece)
        if total > max_chars:
            break
    return "\n".join(parts)


def docx_text(data: bytes, *, tables: bool = False) -> str:
    """Paragraphs, then (with `tables`) each table row as cells joined by ` | `."""
    import docx

    document = docx.Document(io.BytesIO(data))
    parts = [p.text for p in document.paragraphs]
    for table in document.tables if tables else ():
        for row in table.rows:
            parts.append(" | ".join(cell.text for cell in row.cells))
    return "\n".join(parts)


def odt_text(data: bytes) -> str:
    from odf import teletype, text
    from odf.opendocument import load

    document = load(io.BytesIO(data))
    return "\n".join(teletype.extractText(p) for p in document.getElementsByType(text.P))
