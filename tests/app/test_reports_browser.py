#!/usr/bin/env python3
"""The HTML reports in a real browser: headless Chromium (Debian's package)
loads the `check --html` page of a planted violation and the `diff --html`
page of a planted divergence; the rendered DOM's text must name the step and
the node, and the screenshot (kept in WORK_DIR for a person to look at) must
show the marked cell: pixels of the violation red / the divergence magenta.
Exit 77 (skipped) when Chromium is missing; scripts/install-deps.sh installs
it, so CI runs it.

usage: test_reports_browser.py TRIESCOPE SOURCE_DIR REPORTS_DIR (test_reports.py's WORK_DIR:
its check.html and diff.html are loaded; the screenshots are written beside them)
"""
import html as htmllib
import os
import pathlib
import re
import shutil
import struct
import sys
import zlib

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from report_fixtures import Fixtures, run  # noqa: E402

TS, SRC, WORK = sys.argv[1:4]
CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
if not CHROMIUM:
    print("SKIP: no chromium (scripts/install-deps.sh installs Debian's chromium)")
    sys.exit(77)
fx = Fixtures(TS, SRC, WORK)
W = pathlib.Path(WORK)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", f"--user-data-dir={W / 'chromium-profile'}"]


def rendered_text(page):
    r = run([CHROMIUM, *FLAGS, "--dump-dom", page.resolve().as_uri()])
    assert r.returncode == 0 and "<body" in r.stdout, r.stderr[-2000:]
    body = r.stdout.split("<body", 1)[1]
    body = re.sub(r"<(style|svg)\b.*?</\1>", " ", body, flags=re.S)
    return re.sub(r"\s+", " ", htmllib.unescape(re.sub(r"<[^>]+>", " ", body)))


def png_pixels(path):
    """(width, height, rows of RGB tuples) of an 8-bit RGB/RGBA non-interlaced PNG (what Chromium writes)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, hdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, color, _, _, interlace = hdr
    assert depth == 8 and color in (2, 6) and interlace == 0, hdr
    bpp = 3 if color == 2 else 4
    raw, stride, prev, rows = zlib.decompress(idat), w * bpp, bytearray(w * bpp), []
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(w)])
        prev = line
    return w, h, rows


def screenshot(page, png, colour):
    r = run([CHROMIUM, *FLAGS, f"--screenshot={png}", "--window-size=1400,1000", page.resolve().as_uri()])
    assert r.returncode == 0 and png.exists(), r.stderr[-2000:]
    w, h, rows = png_pixels(png)
    assert (w, h) == (1400, 1000), (w, h)
    hits = sum(1 for row in rows for px in row if all(abs(px[k] - colour[k]) <= 8 for k in range(3)))
    assert hits >= 20, f"{png}: {hits} pixels of {colour}: the marked cell is not on screen"
    print(f"screenshot {png}: {hits} pixels of the mark colour {colour}")


def test_check_page():
    _, want = fx.planted_violation()  # what test_reports.py planted into check.html's trace
    page = W / "check.html"
    text = rendered_text(page)
    assert f"Step {want['step']} (" in text and f"node {want['node']}" in text and "sees a sibling's slot" in text, text[:1500]
    screenshot(page, W / "browser_check.png", (0xD7, 0x14, 0x14))  # a wrongly set cell (app/report_html_page.cpp)


def test_diff_page():
    _, _, want = fx.planted_divergence()
    page = W / "diff.html"
    text = rendered_text(page)
    assert f"First divergence: step {want['step']}, node {want['node']}" in text, text[:1500]
    screenshot(page, W / "browser_diff.png", (0xDC, 0x00, 0x8C))  # a differing set cell


if __name__ == "__main__":
    failed = 0
    for name, t in sorted((k, v) for k, v in globals().items() if k.startswith("test_")):
        try:
            t()
            print("PASS", name)
        except AssertionError as e:
            failed += 1
            print("FAIL", name, repr(e)[:3000])
    sys.exit(1 if failed else 0)
