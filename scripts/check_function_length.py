#!/usr/bin/env python3
"""Finds product functions longer than a limit (CONVENTIONS: a function does one thing).

A function is a brace block at namespace or class scope whose head (the text
since the previous `;`, `{` or `}` at that scope) has a parameter list and is
no class, struct, union, enum, namespace, extern block or initializer. Its
length runs from the head's first line to the closing brace, lambdas and
local classes inside included. Comments, strings and character literals are
blanked first, so braces in them do not count; preprocessor lines are skipped.

usage: check_function_length.py [--root DIR] [--limit N] [--dirs D ...] [--list]
Exit status 0: every function fits; 1: offenders, one line each
(`file:line: NAME is N lines (limit L)`); 2: a file whose braces do not balance.
"""
import argparse
import os
import re
import sys

SOURCE_EXTS = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh")
DEFAULT_DIRS = ("core", "gui", "cuda", "app", "python")
NOT_FUNCTION = re.compile(r"\b(class|struct|union|enum|namespace)\b|\bextern\s+\"|=\s*$|^\s*=|\breturn\b")
NAME = re.compile(r"([~\w:<>]+(?:\s*operator\s*[^\s(]+)?)\s*\($")


def blank_code(text):
    """The text with comments, string and char literals and preprocessor
    lines replaced by spaces (newlines kept, so line numbers stay)."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c == "#":
            # a preprocessor line, with its backslash continuations
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        if c == "/" and text.startswith("//", i):
            while i < n and text[i] != "\n":
                out.append(" ")
                i += 1
            continue
        if c == "/" and text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
            continue
        raw = re.match(r'R"([^(\s]{0,16})\(', text[i:i + 20]) if c == "R" else None
        if raw and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            close = ")" + raw.group(1) + '"'
            end = text.find(close, i + raw.end())
            end = n if end < 0 else end + len(close)
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
            continue
        if c in "\"'":
            # a digit separator (1'000) is no char literal
            if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (min(j + 1, n) - i))
            i = j + 1
            continue
        out.append(c)
        line_start = c == "\n" or (line_start and c in " \t")
        i += 1
    return "".join(out)


def functions(code):
    """(name, first line, last line) of every function body in blanked code."""
    found = []
    # scope stack: for each open brace, whether it opened a function body
    stack = []
    head_start = 0
    line_of = []  # line number at each offset, built lazily by counting
    lines = 1
    for ch in code:
        line_of.append(lines)
        if ch == "\n":
            lines += 1
    for i, ch in enumerate(code):
        if ch in ";{}":
            in_function = any(kind == "function" for kind, _, _ in stack)
            if ch == "{":
                head = code[head_start:i]
                kind = "block"
                if not in_function:
                    flat = " ".join(head.split())
                    body_head = re.sub(r"\)\s*(const|noexcept(\([^)]*\))?|override|final|mutable|volatile|&|&&|->\s*[\w:<>,\s*&]+|"
                                       r"__\w+__(\(\([^)]*\)\))?|requires[^{]*)*\s*$", ")", flat)
                    body_head = re.sub(r"\)\s*:\s*[\w:]+[({].*$", ")", body_head)  # constructor initializer list
                    if body_head.endswith(")") and "(" in body_head and not NOT_FUNCTION.search(flat):
                        depth, j = 0, len(body_head) - 1
                        while j >= 0:
                            depth += {")": 1, "(": -1}.get(body_head[j], 0)
                            if depth == 0:
                                break
                            j -= 1
                        m = NAME.search(body_head[:j + 1])
                        if m and m.group(1) not in ("if", "for", "while", "switch", "catch", "sizeof", "decltype", "alignas"):
                            kind = "function"
                            first = i - len(head) + (len(head) - len(head.lstrip()))
                            stack.append((kind, m.group(1), line_of[first]))
                            head_start = i + 1
                            continue
                stack.append((kind, None, None))
            elif ch == "}":
                if not stack:
                    raise ValueError(f"line {line_of[i]}: unbalanced closing brace")
                kind, name, first = stack.pop()
                if kind == "function":
                    found.append((name, first, line_of[i]))
            head_start = i + 1
    if stack:
        raise ValueError("unbalanced braces at end of file")
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--limit", type=int, default=120)
    ap.add_argument("--dirs", nargs="+", default=list(DEFAULT_DIRS))
    ap.add_argument("--list", action="store_true", help="print every function over --limit and their count (no failure)")
    args = ap.parse_args()
    offenders, broken, count = [], [], 0
    for d in args.dirs:
        top = os.path.join(args.root, d)
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = sorted(x for x in dirnames if not x.startswith("."))
            for f in sorted(filenames):
                if not f.endswith(SOURCE_EXTS):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, args.root)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    code = blank_code(fh.read())
                try:
                    fns = functions(code)
                except ValueError as e:
                    broken.append(f"{rel}: {e}")
                    continue
                count += len(fns)
                for name, first, last in fns:
                    length = last - first + 1
                    if length > args.limit:
                        offenders.append(f"{rel}:{first}: {name} is {length} lines (limit {args.limit})")
    for b in broken:
        print(b, file=sys.stderr)
    for o in offenders:
        print(o)
    print(f"check_function_length: {count} functions in {', '.join(args.dirs)}; {len(offenders)} over {args.limit} lines",
          file=sys.stderr)
    if broken:
        return 2
    return 0 if args.list or not offenders else 1


if __name__ == "__main__":
    sys.exit(main())
