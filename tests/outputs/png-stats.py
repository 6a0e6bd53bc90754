#!/usr/bin/env python3
"""What a PNG screenshot shows, without Pillow (python3's zlib only): decodes an 8-bit RGB or
RGBA PNG (any of the five filters, no interlace) and prints

    size WIDTHxHEIGHT
    colours N                  distinct colours
    background #rrggbb F       the most common colour and its share of the pixels
    has #rrggbb N              per colour asked with --has: its pixels, exactly or within 8 per channel

png-stats.py PNG [--has #rrggbb]... Exit 2 when the file is no PNG this reads."""
import struct
import sys
import zlib
from collections import Counter


def decode(path):
    b = open(path, "rb").read()
    if b[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    i, idat, ihdr = 8, b"", None
    while i < len(b):
        n, = struct.unpack(">I", b[i:i + 4])
        kind, data = b[i + 4:i + 8], b[i + 8:i + 8 + n]
        i += 12 + n
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", data)
        elif kind == b"IDAT":
            idat += data
    w, h, depth, ctype, _, _, interlace = ihdr
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise ValueError("depth %d colour type %d interlace %d: not read here" % (depth, ctype, interlace))
    bpp = 4 if ctype == 6 else 3
    raw, stride, prev, px, pos = zlib.decompress(idat), w * bpp, bytearray(w * bpp), [], 0
    for _ in range(h):
        f, line = raw[pos], bytearray(raw[pos + 1:pos + 1 + stride])
        pos += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            c = prev[x - bpp] if x >= bpp else 0
            up = prev[x]
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + up) & 255
            elif f == 3:
                line[x] = (line[x] + (a + up) // 2) & 255
            elif f == 4:
                p = a + up - c
                pa, pb, pc = abs(p - a), abs(p - up), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else up if pb <= pc else c)) & 255
        px.extend(bytes(line[k:k + 3]) for k in range(0, stride, bpp))
        prev = line
    return w, h, px


def main(argv):
    path, wants = argv[1], [a for k, a in zip(argv[2:], argv[3:]) if k == "--has"]
    try:
        w, h, px = decode(path)
    except Exception as e:  # noqa: BLE001 - any failure to read is the answer
        print("png-stats: %s: %s" % (path, e), file=sys.stderr)
        return 2
    count = Counter(px)
    bg, n = count.most_common(1)[0]
    print("size %dx%d" % (w, h))
    print("colours %d" % len(count))
    print("background #%s %.4f" % (bg.hex(), n / len(px)))
    for want in wants:
        rgb = bytes.fromhex(want.lstrip("#"))
        near = sum(k for c, k in count.items() if all(abs(c[i] - rgb[i]) <= 8 for i in range(3)))
        print("has #%s %d" % (rgb.hex(), near))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
