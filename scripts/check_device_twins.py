#!/usr/bin/env python3
"""Every kernel file names its CPU twin (CONVENTIONS: "CPU is the oracle").

Each cuda/**/*.cu outside cuda/host_runtime/ starts with one line
`// CPU twin: <core path> (<functions>)[, <core path> (...)]` whose paths
exist, or `// CPU twin: none (<why>)` for a file without kernels.

usage: check_device_twins.py [--root DIR]
Exit status 0: every file states an existing twin; 1: one line per file that does not.
"""
import argparse
import os
import re
import sys

PATH = re.compile(r"\bcore/[\w/]+\.(?:h|cpp)\b")


def problems(root):
    out = []
    base = os.path.join(root, "cuda")
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if os.path.relpath(os.path.join(dirpath, d), base) != "host_runtime")
        for name in sorted(f for f in filenames if f.endswith(".cu")):
            rel = os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/")
            with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
                first = f.readline().rstrip("\n")
            if not first.startswith("// CPU twin: "):
                out.append(f"{rel}:1: does not start with \"// CPU twin: <core path> (<functions>)\" or \"// CPU twin: none (<why>)\"")
                continue
            named = PATH.findall(first)
            if not named and not first.startswith("// CPU twin: none ("):
                out.append(f"{rel}:1: names no core/ file as its twin")
            out += [f"{rel}:1: twin {p} does not exist" for p in named if not os.path.isfile(os.path.join(root, p))]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    found = problems(ap.parse_args().root)
    for p in found:
        print(p)
    print(f"check_device_twins: {len(found)} kernel file(s) without a stated CPU twin" if found else
          "check_device_twins: every kernel file names its CPU twin")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
