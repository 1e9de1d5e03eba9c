"""Office documents' zip containers: decoded bytes counted against the limits, a bomb refused with at
most one piece of it in memory (apps.core.documents)."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable

import pytest

from apps.core import documents
from tests.core import bombs

MIB = 1024 * 1024
# Far under any bomb below (each inflates to hundreds of MiB) and far over one inflated piece.
PEAK_LIMIT = 16 * MIB


def _peak(call: Callable[[], object]) -> tuple[object, int]:
    tracemalloc.start()
    try:
        try:
            outcome: object = call()
        except Exception as exc:  # the outcome is asserted by the caller
            outcome = exc
        return outcome, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_docx_and_an_odt_within_the_limits_are_read():
    from apps.kb.tests.documents import docx_bytes, odt_bytes

    assert "Order 77" in documents.docx_text(docx_bytes("Order 77"))
    assert "Refund" in documents.odt_text(odt_bytes("Refund"))


@pytest.mark.parametrize("member", ["word/document.xml", "mimetype", "word/media/image1.png"])
def test_a_member_that_declares_a_bomb_is_refused_before_anything_is_inflated(member):
    # given a docx with a member of 400 MiB of zeros (a couple of MiB on the wire)
    data = bombs.docx_with_bomb(member, 400 * MIB)
    # when
    outcome, peak = _peak(lambda: documents.docx_text(data))
    # then
    assert isinstance(outcome, documents.ArchiveRefused), outcome
    assert peak < PEAK_LIMIT + len(data)


def test_a_member_whose_directory_lies_is_refused_while_inflating_with_one_piece_in_memory():
    # given a document.xml of 300 MiB of zeros whose headers declare 1,000 bytes
    data = bombs.docx_with_bomb("word/document.xml", 300 * MIB, lie=1000)
    # when
    outcome, peak = _peak(lambda: documents.docx_text(data))
    # then refused (zipfile stops at the declared size, the checksum fails), never inflated whole
    assert isinstance(outcome, Exception), outcome
    assert peak < PEAK_LIMIT + len(data)


def test_an_odt_bomb_is_refused():
    from apps.kb.tests.documents import odt_bytes

    # given an odt whose content.xml would inflate to 400 MiB
    honest = odt_bytes("x")
    data = bombs.zip_archive(_members(honest, drop="content.xml"), ("content.xml", 400 * MIB))
    # when
    outcome, peak = _peak(lambda: documents.odt_text(data))
    # then
    assert isinstance(outcome, documents.ArchiveRefused), outcome
    assert peak < PEAK_LIMIT + len(data)


def _members(data: bytes, drop: str) -> list[tuple[str, bytes]]:
    import io
    import zipfile

    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return [(info.filename, archive.read(info)) for info in archive.infolist() if info.filename != drop]


def test_the_decoded_total_counts_every_member():
    # given members each under the member cap, together past the archive cap
    count = documents.MAX_ARCHIVE_BYTES // (30 * MIB) + 1
    # when / then refused from the directory, before anything is read
    with pytest.raises(documents.ArchiveRefused, match="archive that inflates past"):
        documents.open_archive(_many(count, 30 * MIB))
    documents.open_archive(_many(count - 1, 30 * MIB)).close()


def _many(count: int, size: int) -> bytes:
    """`count` members of `size` bytes each, stored (no ratio to speak of)."""
    import io
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        for n in range(count):
            archive.writestr(zipfile.ZipInfo(f"m{n}.bin"), b"")
    data = bytearray(out.getvalue())
    # the directory declares `size` bytes for each, stored (the total is judged before anything is read)
    offset = 0
    while (offset := data.find(b"PK\x01\x02", offset)) >= 0:
        data[offset + 20 : offset + 28] = size.to_bytes(4, "little") * 2
        offset += 4
    return bytes(data)


def test_a_highly_compressed_member_is_refused_under_the_size_caps():
    # given a member of 4 MiB of zeros: under the caps, compressed about 1:160
    data = bombs.docx_with_bomb("word/media/blank.bin", 4 * MIB)
    # when / then
    with pytest.raises(documents.ArchiveRefused, match="compressed more than"):
        documents.open_archive(data)


def test_too_many_members_are_refused():
    data = bombs.zip_archive([(f"p{n}", b"x") for n in range(documents.MAX_MEMBERS + 1)])
    with pytest.raises(documents.ArchiveRefused, match="members"):
        documents.open_archive(data)


def test_read_prefix_inflates_only_the_start():
    # given a 400 MiB member
    data = bombs.docx_with_bomb("mimetype", 400 * MIB)
    import io
    import zipfile

    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        # when
        prefix, peak = _peak(lambda: documents.read_prefix(archive, "mimetype", 256))
    # then
    assert prefix == bytes(256)
    assert peak < MIB
