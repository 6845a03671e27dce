#!/usr/bin/env python3
"""Checks every project include against the layers table of docs/architecture.md.

The table sits between the markers `<!-- include-layers:begin -->` and
`<!-- include-layers:end -->`; each row is `| room | may include |`. A room is a
folder (`core/decode`); a file belongs to the longest room its path starts
with. A room may include its own files and what its row lists; a listed room
brings what that room may include (so a row names only the layers just
below). A listed entry that is no room (`core`, `cuda/cuda_backend.h`) is a
plain path prefix. An include `"X"` is checked when X starts with the top
folder of some room; a source file under a room's top folder that belongs to
no room is an error too.

usage: check_include_layers.py [--root DIR] [--doc FILE]
Exit status 0: every include keeps to the table; 1: violations, one line each
(`file:line: includes X: rule`); 2: the table itself is unreadable or cyclic.
"""
import argparse
import os
import re
import sys

BEGIN = "<!-- include-layers:begin -->"
END = "<!-- include-layers:end -->"
SOURCE_EXTS = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh", ".inc")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


class TableError(Exception):
    pass


def read_table(doc):
    """{room: [entries]} from the doc's layers table, in the doc's order."""
    with open(doc, encoding="utf-8") as f:
        text = f.read()
    if BEGIN not in text or END not in text:
        raise TableError(f"{doc}: no include-layers table (markers {BEGIN} ... {END})")
    body = text.split(BEGIN, 1)[1].split(END, 1)[0]
    rules = {}
    for n, line in enumerate(body.splitlines()):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 2 or not line.strip().startswith("|") or set(cells[0]) <= set("-: "):
            continue
        room = cells[0].strip("`")
        if room == "room":
            continue
        entries = [e.strip().strip("`") for e in cells[1].split(",")]
        entries = [e for e in entries if e and e not in ("-", "—", "nothing")]
        if room in rules:
            raise TableError(f"{doc}: include-layers table: room {room} has two rows")
        rules[room] = entries
    if not rules:
        raise TableError(f"{doc}: include-layers table has no rows")
    return rules


def closure(rules, doc):
    """{room: set of prefixes it may include}, rooms expanded transitively."""
    allowed = {}

    def visit(room, path):
        if room in path:
            raise TableError(f"{doc}: include-layers table has a cycle: {' -> '.join(path + [room])}")
        if room in allowed:
            return allowed[room]
        out = {room}
        for e in rules[room]:
            out |= visit(e, path + [room]) if e in rules else {e}
        allowed[room] = out
        return out

    for room in rules:
        visit(room, [])
    return allowed


def under(path, prefix):
    return path == prefix or path.startswith(prefix.rstrip("/") + "/")


def room_of(path, rooms):
    best = None
    for r in rooms:
        if under(path, r) and (best is None or len(r) > len(best)):
            best = r
    return best


def check(root, doc):
    rules = read_table(doc)
    allowed = closure(rules, doc)
    tops = sorted({r.split("/")[0] for r in rules})
    problems = []
    for top in tops:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            for name in sorted(filenames):
                if not name.endswith(SOURCE_EXTS):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/")
                problems += check_file(root, rel, rules, allowed, tops)
    return problems


def check_file(root, rel, rules, allowed, tops):
    room = room_of(rel, rules)
    if room is None:
        return [f"{rel}: belongs to no room of the include-layers table"]
    out = []
    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if not m or m.group(1).split("/")[0] not in tops:
                continue
            target = m.group(1)
            # A room's own files are those whose longest room is it: cuda/
            # does not own cuda/static/ or cuda/cuda_backend.h, which have rows.
            if room_of(target, rules) in allowed[room] or any(under(target, p) for p in allowed[room] if p not in rules):
                continue
            listed = ", ".join(rules[room]) if rules[room] else "nothing outside itself"
            out.append(f"{rel}:{n}: includes {target}: {room} may include {listed} (and what those may include)")
    return out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.dirname(here), help="the source tree (default: this script's repository)")
    ap.add_argument("--doc", help="the document holding the table (default: ROOT/docs/architecture.md)")
    a = ap.parse_args()
    doc = a.doc or os.path.join(a.root, "docs", "architecture.md")
    try:
        problems = check(a.root, doc)
    except (TableError, OSError) as e:
        print(f"check_include_layers: {e}", file=sys.stderr)
        return 2
    for p in problems:
        print(p)
    if problems:
        print(f"check_include_layers: {len(problems)} include(s) against the layers of {os.path.relpath(doc, a.root)}")
        return 1
    print(f"check_include_layers: every include keeps to the layers of {os.path.relpath(doc, a.root)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
