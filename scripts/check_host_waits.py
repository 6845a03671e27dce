#!/usr/bin/env python3
"""Every host wait on the device and every device-to-host copy in cuda/ goes
through cuda/host_waits.h (counted_download, counted_stream_sync), so the
step-budget tests (tests/cuda/test_step_budget.cpp) see them all. This check
fails, naming the file and line, on a raw cudaMemcpy*(..., DeviceToHost or
Default, ...), cudaStreamSynchronize, cudaDeviceSynchronize or
cudaEventSynchronize in cuda/ outside
cuda/host_waits.cpp and the host runtime (cuda/host_runtime/, which
implements them). Comments are skipped.

usage: check_host_waits.py [--root DIR]
"""
import argparse
import os
import re
import sys

RAW = re.compile(r"\b(cudaStreamSynchronize|cudaDeviceSynchronize|cudaEventSynchronize)\s*\("
                 r"|\bcudaMemcpy(2D)?(Async)?\s*\([^;]*\bcudaMemcpy(DeviceToHost|Default)\b", re.S)
ALLOWED = {os.path.join("cuda", "host_waits.cpp")}
EXTS = (".cpp", ".cu", ".h", ".cuh")


def strip_comments(text):
    """Blanks // and /* */ comments, keeping line breaks (line numbers stay)."""
    text = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def violations(root):
    out = []
    base = os.path.join(root, "cuda")
    for d, dirs, files in os.walk(base):
        dirs[:] = sorted(x for x in dirs if x != "host_runtime")
        for f in sorted(files):
            if not f.endswith(EXTS):
                continue
            path = os.path.join(d, f)
            rel = os.path.relpath(path, root)
            if rel in ALLOWED:
                continue
            with open(path, encoding="utf-8") as fh:
                text = strip_comments(fh.read())
            for m in RAW.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                call = m.group(0).split("(")[0].strip()
                out.append(f"{rel}:{line}: {call} outside cuda/host_waits.h (use counted_download / counted_stream_sync)")
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    a = ap.parse_args()
    v = violations(a.root)
    for line in v:
        print(line)
    if v:
        print(f"host waits: {len(v)} raw wait(s) or download(s) in cuda/")
        return 1
    print("host waits: every device-to-host copy and host wait in cuda/ is counted")
    return 0


if __name__ == "__main__":
    sys.exit(main())
