"""Turn the screen Xvfb keeps in an XWD file (``Xvfb -fbdir``) into a PNG: `xwd_to_png.py IN OUT`.

Standard library only, so the smoke test needs no image tools; it reads the 24/32-bit TrueColor
screens Xvfb writes.
"""

from __future__ import annotations

import struct
import sys
import zlib
from pathlib import Path


def convert(source: Path, target: Path) -> tuple[int, int]:
    data = source.read_bytes()
    fields = struct.unpack(">25I", data[:100])
    header_size, width, height = fields[0], fields[4], fields[5]
    byte_order, bits_per_pixel, bytes_per_line = fields[7], fields[11], fields[12]
    red_mask, green_mask, blue_mask = fields[14], fields[15], fields[16]
    colors = fields[19]  # XWDColor entries, 12 bytes each, before the pixels
    if bits_per_pixel != 32:
        raise SystemExit(f"{source}: {bits_per_pixel} bits per pixel; only 32 is read")
    pixels = data[header_size + 12 * colors :]
    order = "<" if byte_order == 0 else ">"
    shifts = [(mask & -mask).bit_length() - 1 for mask in (red_mask, green_mask, blue_mask)]
    rows = []
    for y in range(height):
        line = pixels[y * bytes_per_line : y * bytes_per_line + 4 * width]
        values = struct.unpack(f"{order}{width}I", line)
        row = bytearray(b"\x00")  # PNG filter: none
        for value in values:
            row += bytes((value >> shift) & 0xFF for shift in shifts)
        rows.append(bytes(row))

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    png = b"\x89PNG\r\n\x1a\n"
    png += chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(b"".join(rows), 6))
    png += chunk(b"IEND", b"")
    target.write_bytes(png)
    return width, height


if __name__ == "__main__":
    width, height = convert(Path(sys.argv[1]), Path(sys.argv[2]))
    print(f"{sys.argv[2]}: {width}x{height}")
