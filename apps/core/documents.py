"""Text of office documents, shared by the support attachments (`apps.support.attachments`) and the
knowledge-base uploads (`apps.kb.extract`): pdf by pypdf, docx by python-docx, odt by odfpy (pure
Python, no macros, no external entities: python-docx's parser does not resolve entities, odfpy
parses through defusedxml). Callers treat any exception as "not readable".

SECURITY: docx and odt are zip archives, and a few hundred kilobytes of zip can inflate to gigabytes.
Every archive passes `open_archive` first, which counts decoded bytes against fixed limits:

- from the central directory, before anything is inflated: at most MAX_MEMBERS members, each stored
  or deflated (bzip2 and lzma inflate a small read without bound), each at most MAX_MEMBER_BYTES
  decoded (this is the cap on one XML part), at most MAX_ARCHIVE_BYTES decoded in all, and none over
  MAX_RATIO times its compressed size once past RATIO_FROM_BYTES;
- with `verify`, every member is then inflated in CHUNK_BYTES pieces and counted, because the
  directory can lie: a member that inflates past what it declares, or fails its checksum, is
  refused with at most one piece in memory. Only then does a parser read the archive (a member whose
  size is honest inflates to exactly that size).

`read_prefix` reads the first bytes of a member without inflating the rest (format detection).
"""

from __future__ import annotations

import io
import zipfile

TEXT_MAX_CHARS = 200_000

MAX_MEMBERS = 1000
MAX_MEMBER_BYTES = 32 * 1024 * 1024
MAX_ARCHIVE_BYTES = 64 * 1024 * 1024
MAX_RATIO = 100
RATIO_FROM_BYTES = 1024 * 1024
CHUNK_BYTES = 64 * 1024
_COMPRESSIONS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)
_MIB = 1024 * 1024


class ArchiveRefused(Exception):
    """A document's zip container past the decoded limits (the message says which; safe to show)."""


def _check_directory(archive: zipfile.ZipFile) -> None:
    members = archive.infolist()
    if len(members) > MAX_MEMBERS:
        raise ArchiveRefused(f"a zip archive of more than {MAX_MEMBERS} members")
    total = 0
    for info in members:
        if info.compress_type not in _COMPRESSIONS:
            raise ArchiveRefused("a zip member compressed other than by deflate")
        if info.file_size > MAX_MEMBER_BYTES:
            raise ArchiveRefused(f"a zip member that inflates past {MAX_MEMBER_BYTES // _MIB} MiB")
        if info.file_size > RATIO_FROM_BYTES and info.file_size > MAX_RATIO * max(info.compress_size, 1):
            raise ArchiveRefused(f"a zip member compressed more than {MAX_RATIO} to 1")
        total += info.file_size
    if total > MAX_ARCHIVE_BYTES:
        raise ArchiveRefused(f"a zip archive that inflates past {MAX_ARCHIVE_BYTES // _MIB} MiB")


def _drain(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> None:
    """Inflate one member piece by piece, counting: never more than its declared size (nor the
    member cap), and its checksum must match (zipfile checks it at the end)."""
    limit = min(info.file_size, MAX_MEMBER_BYTES)
    seen = 0
    with archive.open(info) as member:
        while chunk := member.read(CHUNK_BYTES):
            seen += len(chunk)
            if seen > limit:
                raise ArchiveRefused("a zip member that inflates past its declared size")
    if seen != info.file_size:
        raise ArchiveRefused("a zip member shorter than its declared size")


def open_archive(data: bytes, *, verify: bool = False) -> zipfile.ZipFile:
    """The zip archive in `data`, its directory within the limits (see the module text); with
    `verify`, every member inflated and counted too. ArchiveRefused past a limit; zipfile's own
    errors (BadZipFile, ...) for a broken archive. The caller closes it."""
    archive = zipfile.ZipFile(io.BytesIO(data))
    try:
        _check_directory(archive)
        if verify:
            for info in archive.infolist():
                _drain(archive, info)
    except BaseException:
        archive.close()
        raise
    return archive


def read_prefix(archive: zipfile.ZipFile, name: str, size: int) -> bytes:
    """At most the first `size` decoded bytes of member `name`; the rest is never inflated."""
    with archive.open(name) as member:
        return member.read(size)


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

    open_archive(data, verify=True).close()
    document = docx.Document(io.BytesIO(data))
    parts = [p.text for p in document.paragraphs]
    for table in document.tables if tables else ():
        for row in table.rows:
            parts.append(" | ".join(cell.text for cell in row.cells))
    return "\n".join(parts)


def odt_text(data: bytes) -> str:
    from odf import teletype, text
    from odf.opendocument import load

    open_archive(data, verify=True).close()
    document = load(io.BytesIO(data))
    return "\n".join(teletype.extractText(p) for p in document.getElementsByType(text.P))
