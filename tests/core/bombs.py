"""Decompression bombs built in the test, fast: a raw deflate stream of zeros written by hand (one
fixed-Huffman block of 258-byte matches, 13 bytes for every 2,064 zeros, ratio about 1:1000), the
gzip and zlib wrappers of it, and zip archives holding it as a member (honest, or with a directory
that lies about the member's size)."""

from __future__ import annotations

import functools
import struct
import zlib

_MATCH = 258  # the longest deflate match
_PERIOD = 8  # eight 13-bit matches fill 13 whole bytes


class _Bits:
    def __init__(self) -> None:
        self.value = 0
        self.count = 0

    def bits(self, value: int, count: int) -> None:  # a number, least significant bit first
        self.value |= value << self.count
        self.count += count

    def code(self, code: int, count: int) -> None:  # a Huffman code, most significant bit first
        self.bits(int(f"{code:0{count}b}"[::-1], 2), count)

    def match(self) -> None:
        self.code(0b11000101, 8)  # length 258 (symbol 285, no extra bits)
        self.code(0, 5)  # distance 1 (code 0, no extra bits)

    def bytes(self) -> bytes:
        return self.value.to_bytes((self.count + 7) // 8, "little")


def zeros_size(at_least: int) -> int:
    """The size `zeros_deflate` inflates to for a request of `at_least` bytes (rounded up)."""
    periods = max(0, -(-(at_least - 1 - _MATCH) // (_MATCH * _PERIOD)))
    return 1 + _MATCH * (1 + _PERIOD * periods)


@functools.lru_cache(maxsize=8)
def zeros_deflate(at_least: int) -> bytes:
    """Raw deflate of `zeros_size(at_least)` zero bytes."""
    literal = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    start = literal.compress(b"\0") + literal.flush(zlib.Z_SYNC_FLUSH)  # byte-aligned, not final
    head = _Bits()
    head.bits(1, 1)  # the final block
    head.bits(1, 2)  # fixed Huffman codes
    head.match()  # 3 + 13 bits: two whole bytes
    period = _Bits()
    for _ in range(_PERIOD):
        period.match()
    end = _Bits()
    end.code(0, 7)  # end of block
    periods = (zeros_size(at_least) - 1 - _MATCH) // (_MATCH * _PERIOD)
    return start + head.bytes() + period.bytes() * periods + end.bytes()


@functools.lru_cache(maxsize=8)
def zeros_crc(size: int) -> int:
    block = bytes(1 << 20)
    crc = 0
    for _ in range(size // len(block)):
        crc = zlib.crc32(block, crc)
    return zlib.crc32(bytes(size % len(block)), crc)


def gzip_bomb(at_least: int) -> bytes:
    """A gzip member (Content-Encoding: gzip) of at least `at_least` zeros."""
    size = zeros_size(at_least)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    return header + zeros_deflate(at_least) + struct.pack("<II", zeros_crc(size), size & 0xFFFFFFFF)


def zlib_bomb(at_least: int) -> bytes:
    """A zlib stream (Content-Encoding: deflate) of at least `at_least` zeros."""
    size = zeros_size(at_least)
    adler = ((size % 65521) << 16) | 1  # over zeros the low sum stays 1 and the high one adds it per byte
    return b"\x78\x9c" + zeros_deflate(at_least) + struct.pack(">I", adler)


def zip_archive(
    members: list[tuple[str, bytes]], bomb: tuple[str, int] | None = None, *, lie: int | None = None
) -> bytes:
    """A zip of `members` (deflated) and, with `bomb` = (name, at_least), a member of that many zeros;
    with `lie`, the bomb's local and central headers declare `lie` bytes instead of its real size."""
    entries: list[tuple[str, bytes, int, int, int]] = []  # name, compressed, crc, size, method
    for name, data in members:
        packer = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
        entries.append((name, packer.compress(data) + packer.flush(), zlib.crc32(data), len(data), 8))
    if bomb is not None:
        name, at_least = bomb
        size = zeros_size(at_least)
        entries.append((name, zeros_deflate(at_least), zeros_crc(size), size if lie is None else lie, 8))
    out = bytearray()
    central = bytearray()
    for name, compressed, crc, size, method in entries:
        raw_name = name.encode()
        offset = len(out)
        out += struct.pack(
            "<IHHHHHIIIHH", 0x04034B50, 20, 0, method, 0, 0x21, crc, len(compressed), size, len(raw_name), 0
        )
        out += raw_name + compressed
        central += struct.pack(
            "<IHHHHHHIIIHHHHHII",
            0x02014B50,
            20,
            20,
            0,
            method,
            0,
            0x21,
            crc,
            len(compressed),
            size,
            len(raw_name),
            0,
            0,
            0,
            0,
            0,
            offset,
        )
        central += raw_name
    directory_at = len(out)
    out += central
    out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(entries), len(entries), len(central), directory_at, 0)
    return bytes(out)


DOCX_CONTENT_TYPES = (
    b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    b'<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    b'<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    b'<Default Extension="xml" ContentType="application/xml"/>'
    b'<Override PartName="/word/document.xml" '
    b'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>'
    b"</Types>"
)
DOCX_RELS = (
    b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    b'<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    b'<Relationship Id="rId1" '
    b'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" '
    b'Target="word/document.xml"/></Relationships>'
)
DOCX_DOCUMENT = (
    b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    b'<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
    b"<w:body><w:p><w:r><w:t>hello</w:t></w:r></w:p></w:body></w:document>"
)


def docx_with_bomb(member: str, at_least: int, *, lie: int | None = None) -> bytes:
    """A minimal docx whose `member` (`mimetype`, `word/document.xml`, ...) is `at_least` zeros."""
    parts = [("[Content_Types].xml", DOCX_CONTENT_TYPES), ("_rels/.rels", DOCX_RELS)]
    if member != "word/document.xml":
        parts.append(("word/document.xml", DOCX_DOCUMENT))
    return zip_archive(parts, (member, at_least), lie=lie)
