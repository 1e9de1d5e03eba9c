"""Draw the console's app icons (apps/console/static/console/icons/*.png) with the standard library.

    python scripts/make_icons.py

The installed console's icon is the favicon's picture: a white speech bubble with three dots on the
accent colour. `icon-*.png` are the "any" icons (a rounded square on transparency), `maskable-*.png`
fill the whole square and keep the bubble inside the central circle of 40 % radius that every
platform's mask leaves visible, `apple-touch-icon.png` is the full square iOS rounds itself. Each
pixel is the average of a 4 x 4 grid of samples, so the edges are smooth without an image library.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "apps" / "console" / "static" / "console" / "icons"
ACCENT = (0x1F, 0x5F, 0xD1)
WHITE = (0xFF, 0xFF, 0xFF)
SAMPLES = 4


def in_round_rect(x, y, x0, y0, x1, y1, r):
    if not (x0 <= x <= x1 and y0 <= y <= y1):
        return False
    cx = min(max(x, x0 + r), x1 - r)
    cy = min(max(y, y0 + r), y1 - r)
    return (x - cx) ** 2 + (y - cy) ** 2 <= r * r


def in_triangle(x, y, a, b, c):
    def side(p, q):
        return (x - q[0]) * (p[1] - q[1]) - (p[0] - q[0]) * (y - q[1])

    d1, d2, d3 = side(a, b), side(b, c), side(c, a)
    negative = d1 < 0 or d2 < 0 or d3 < 0
    positive = d1 > 0 or d2 > 0 or d3 > 0
    return not (negative and positive)


def colour_at(x, y, *, full_bleed, scale):
    """The colour (rgba) at the point (x, y) of the unit square, or None outside the icon."""
    if not full_bleed and not in_round_rect(x, y, 0, 0, 1, 1, 0.2):
        return None
    # the bubble is drawn in coordinates centred on the icon, scaled down for maskable icons
    u, v = 0.5 + (x - 0.5) / scale, 0.5 + (y - 0.5) / scale
    bubble = in_round_rect(u, v, 0.2, 0.24, 0.8, 0.64, 0.09) or in_triangle(u, v, (0.3, 0.6), (0.3, 0.8), (0.48, 0.6))
    if bubble:
        for dot_x in (0.36, 0.5, 0.64):
            if (u - dot_x) ** 2 + (v - 0.44) ** 2 <= 0.045**2:
                return (*ACCENT, 255)
        return (*WHITE, 255)
    return (*ACCENT, 255)


def render(size, *, full_bleed, scale=1.0):
    rows = []
    step = 1 / (size * SAMPLES)
    for py in range(size):
        row = bytearray([0])  # the PNG filter byte of the row: none
        for px in range(size):
            total = [0, 0, 0, 0]
            for sy in range(SAMPLES):
                for sx in range(SAMPLES):
                    x = (px * SAMPLES + sx + 0.5) * step
                    y = (py * SAMPLES + sy + 0.5) * step
                    rgba = colour_at(x, y, full_bleed=full_bleed, scale=scale)
                    if rgba is not None:
                        for i in range(3):
                            total[i] += rgba[i] * rgba[3]
                        total[3] += rgba[3]
            alpha = total[3]
            count = SAMPLES * SAMPLES
            if alpha:
                row += bytes([round(total[i] / alpha) for i in range(3)] + [round(alpha / count)])
            else:
                row += bytes(4)
        rows.append(bytes(row))
    return png(size, b"".join(rows))


def png(size, raw):
    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)  # 8-bit RGBA
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


ICONS = {
    "icon-192.png": dict(size=192, full_bleed=False),
    "icon-512.png": dict(size=512, full_bleed=False),
    "maskable-192.png": dict(size=192, full_bleed=True, scale=0.8),
    "maskable-512.png": dict(size=512, full_bleed=True, scale=0.8),
    "apple-touch-icon.png": dict(size=180, full_bleed=True, scale=0.9),
}


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, options in ICONS.items():
        (OUT / name).write_bytes(render(**options))
        print(OUT / name)


if __name__ == "__main__":
    main()
