"""Content checks of uploaded launcher icons: a static PNG, an animated WebP, or a GIF.

The bytes are walked structurally (no image library): the magic number, every chunk or block with
its bounds (PNG chunk CRCs included), the canvas size, and whether the image is animated. The
file name's extension must name the same format the content is.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

ICON_MAX_BYTES = 1024 * 1024
ICON_MIN_SIDE = 16
ICON_MAX_SIDE = 1024
EXTENSIONS = {"png": "png", "gif": "gif", "webp": "webp"}
CONTENT_TYPES = {"png": "image/png", "gif": "image/gif", "webp": "image/webp"}

_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


class BadIcon(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class IconInfo:
    format: str
    animated: bool
    width: int
    height: int

    @property
    def content_type(self) -> str:
        return CONTENT_TYPES[self.format]


def sniff(content: bytes) -> str | None:
    if content.startswith(_PNG_MAGIC):
        return "png"
    if content[:6] in (b"GIF87a", b"GIF89a"):
        return "gif"
    if content[:4] == b"RIFF" and content[8:12] == b"WEBP":
        return "webp"
    return None


def inspect_icon(content: bytes, *, name: str) -> IconInfo:
    """Check an upload; raise BadIcon with a message for the `file` field."""
    if not content:
        raise BadIcon("The file is empty.")
    if len(content) > ICON_MAX_BYTES:
        raise BadIcon(f"The file exceeds {ICON_MAX_BYTES} bytes.")
    _, dot, ext = (name or "").rpartition(".")
    claimed = EXTENSIONS.get(ext.lower()) if dot else None
    if claimed is None:
        raise BadIcon("The file name must end in .png, .webp or .gif.")
    kind = sniff(content)
    if kind is None:
        raise BadIcon("The content is not a PNG, WebP or GIF image.")
    if kind != claimed:
        raise BadIcon(f"The content is {kind.upper()} but the name says .{ext.lower()}.")
    info = {"png": _png, "gif": _gif, "webp": _webp}[kind](content)
    if not (ICON_MIN_SIDE <= info.width <= ICON_MAX_SIDE and ICON_MIN_SIDE <= info.height <= ICON_MAX_SIDE):
        raise BadIcon(
            f"The image is {info.width}x{info.height}; each side must be {ICON_MIN_SIDE} to {ICON_MAX_SIDE} pixels."
        )
    return info


def _png(content: bytes) -> IconInfo:
    pos = len(_PNG_MAGIC)
    width = height = 0
    seen_idat = False
    first = True
    while True:
        if pos + 12 > len(content):
            raise BadIcon("The PNG is truncated.")
        (length,) = struct.unpack(">I", content[pos : pos + 4])
        kind = content[pos + 4 : pos + 8]
        end = pos + 12 + length
        if length > 0x7FFFFFFF or end > len(content):
            raise BadIcon("The PNG is truncated.")
        data = content[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", content[pos + 8 + length : end])
        if zlib.crc32(kind + data) & 0xFFFFFFFF != crc:
            raise BadIcon("The PNG is corrupt (a chunk checksum does not match).")
        if first:
            if kind != b"IHDR" or length != 13:
                raise BadIcon("The PNG does not start with its header chunk.")
            width, height = struct.unpack(">II", data[:8])
            first = False
        elif kind == b"acTL":
            raise BadIcon("Animated PNG (APNG) is not accepted; upload a static PNG, or an animated WebP or GIF.")
        elif kind == b"IDAT":
            seen_idat = True
        elif kind == b"IEND":
            if end != len(content):
                raise BadIcon("The PNG has data after its end chunk.")
            break
        pos = end
    if not seen_idat:
        raise BadIcon("The PNG has no image data.")
    return IconInfo("png", False, width, height)


def _skip_sub_blocks(content: bytes, pos: int) -> int:
    while True:
        if pos >= len(content):
            raise BadIcon("The GIF is truncated.")
        size = content[pos]
        pos += 1
        if size == 0:
            return pos
        pos += size


def _gif(content: bytes) -> IconInfo:
    if len(content) < 13:
        raise BadIcon("The GIF is truncated.")
    width, height, flags = struct.unpack("<HHB", content[6:11])
    pos = 13
    if flags & 0x80:
        pos += 3 * (2 ** ((flags & 0x07) + 1))
    frames = 0
    while True:
        if pos >= len(content):
            raise BadIcon("The GIF is truncated (no trailer).")
        block = content[pos]
        if block == 0x3B:  # trailer
            if pos + 1 != len(content):
                raise BadIcon("The GIF has data after its trailer.")
            break
        if block == 0x21:  # extension: label, then sub-blocks
            pos = _skip_sub_blocks(content, pos + 2)
        elif block == 0x2C:  # image descriptor
            if pos + 10 > len(content):
                raise BadIcon("The GIF is truncated.")
            local = content[pos + 9]
            pos += 10
            if local & 0x80:
                pos += 3 * (2 ** ((local & 0x07) + 1))
            pos = _skip_sub_blocks(content, pos + 1)  # LZW minimum code size, then the data
            frames += 1
        else:
            raise BadIcon("The GIF is corrupt (unknown block).")
    if frames == 0:
        raise BadIcon("The GIF has no image.")
    return IconInfo("gif", frames > 1, width, height)


def _webp(content: bytes) -> IconInfo:
    (riff_size,) = struct.unpack("<I", content[4:8])
    if riff_size + 8 != len(content):
        raise BadIcon("The WebP is truncated or has trailing data.")
    pos = 12
    chunks: list[tuple[bytes, bytes]] = []
    while pos < len(content):
        if pos + 8 > len(content):
            raise BadIcon("The WebP is truncated.")
        kind = content[pos : pos + 4]
        (size,) = struct.unpack("<I", content[pos + 4 : pos + 8])
        end = pos + 8 + size
        if end > len(content):
            raise BadIcon("The WebP is truncated.")
        chunks.append((kind, content[pos + 8 : end]))
        pos = end + (size & 1)
    if not chunks:
        raise BadIcon("The WebP has no image.")
    first, data = chunks[0]
    if first != b"VP8X":
        raise BadIcon("Static WebP is not accepted; upload a static icon as PNG, or an animated WebP.")
    if len(data) < 10:
        raise BadIcon("The WebP header is truncated.")
    animated = bool(data[0] & 0x02)
    kinds = {k for k, _ in chunks}
    if not animated or b"ANIM" not in kinds or b"ANMF" not in kinds:
        raise BadIcon("Static WebP is not accepted; upload a static icon as PNG, or an animated WebP.")
    width = 1 + int.from_bytes(data[4:7], "little")
    height = 1 + int.from_bytes(data[7:10], "little")
    return IconInfo("webp", True, width, height)
