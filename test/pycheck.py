"""test/pycheck.py - what the project's Python tests share: a tally of
checks, and the distinct colours of a screenshot (an 8-bit RGB or RGBA
PNG, non-interlaced), for the pages they load in headless Chromium."""
import struct
import sys
import zlib


class Tally:
    """check(ok, what) counts; a failure prints "FAIL: what" at once."""

    def __init__(self):
        self.passed = self.failed = 0

    def check(self, ok, what):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL: " + what)
            sys.stdout.flush()
        return ok

    def summary(self, name):
        """The closing line "name: N passed, N failed"; the exit status."""
        print("%s: %d passed, %d failed" % (name, self.passed, self.failed))
        return 1 if self.failed else 0


def png_colours(path, every=2):
    """The set of distinct colours of every `every`-th pixel (None: not a
    PNG this reads)."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    pos, idat, w, h, bpp = 8, b"", 0, 0, 3
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            if depth != 8 or ctype not in (2, 6):
                return None
            bpp = 4 if ctype == 6 else 3
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride, prev, seen, i = zlib.decompress(idat), w * bpp, bytearray(w * bpp), set(), 0
    for _ in range(h):                  # undo each line's filter (PNG spec, 9.2)
        f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        for x in range(0, stride, bpp * every):
            seen.add(bytes(line[x:x + 3]))
        prev = line
    return seen
