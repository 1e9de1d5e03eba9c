"""Small, structurally valid images built byte by byte (no image library)."""

import struct
import zlib


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png(width: int = 32, height: int = 32, *, animated: bool = False) -> bytes:
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    raw = b"".join(b"\x00" + b"\x00\x00\x00\xff" * width for _ in range(height))
    chunks = [_chunk(b"IHDR", ihdr)]
    if animated:
        chunks.append(_chunk(b"acTL", struct.pack(">II", 2, 0)))
    chunks += [_chunk(b"IDAT", zlib.compress(raw)), _chunk(b"IEND", b"")]
    return b"\x89PNG\r\n\x1a\n" + b"".join(chunks)


def gif(width: int = 32, height: int = 32, *, frames: int = 1) -> bytes:
    out = b"GIF89a" + struct.pack("<HHBBB", width, height, 0x80, 0, 0) + b"\x00\x00\x00\xff\xff\xff"
    out += b"\x21\xff\x0bNETSCAPE2.0\x03\x01\x00\x00\x00"  # loop extension
    for _ in range(frames):
        out += b"\x21\xf9\x04\x00\x0a\x00\x00\x00"  # graphic control extension
        out += b"\x2c" + struct.pack("<HHHHB", 0, 0, width, height, 0)
        out += b"\x02\x02\x44\x01\x00"  # LZW min code size 2, one data sub-block, terminator
    return out + b"\x3b"


def _riff_chunk(kind: bytes, data: bytes) -> bytes:
    return kind + struct.pack("<I", len(data)) + data + (b"\x00" if len(data) & 1 else b"")


def webp(width: int = 32, height: int = 32, *, animated: bool = True) -> bytes:
    if animated:
        flags = b"\x02\x00\x00\x00"
        canvas = (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
        frame = (
            b"\x00" * 6
            + (width - 1).to_bytes(3, "little")
            + (height - 1).to_bytes(3, "little")
            + b"\x64\x00\x00\x00"
            + _riff_chunk(b"VP8L", b"\x2f" + b"\x00" * 9)
        )
        body = (
            _riff_chunk(b"VP8X", flags + canvas)
            + _riff_chunk(b"ANIM", b"\x00" * 6)
            + _riff_chunk(b"ANMF", frame)
            + _riff_chunk(b"ANMF", frame)
        )
    else:
        body = _riff_chunk(b"VP8L", b"\x2f" + b"\x00" * 9)
    payload = b"WEBP" + body
    return b"RIFF" + struct.pack("<I", len(payload)) + payload
