#!/usr/bin/env python3
"""Checks that the field names of the typed trace groups are written and read
only in their schema's files (docs/trace-format.md, "In the code"; the groups
are the structs of core/trace/kv_record.h, forward_record.h, gc_record.h,
keyframe_record.h, header_record.h and summary_record.h, and the verify
payloads of speculative_chain_verify_record.h, dsbd_layers_verify_record.h
and lookahead_candidates_verify_record.h).

The names come from the JSON Schema (docs/trace-format.schema.json): the
properties of $defs/kv, $defs/forward_pass, $defs/gc, $defs/keyframe,
$defs/header and $defs/summary, and of each verify kind's $defs with the
objects nested in them (less `kind` and `step`, which every record has). A
name two groups share (a verify kind's "accept_prob") may be spelled in
either group's files. Of the header's names only "verify_kind" is distinctive; "schema",
"version", "algorithm", "backend", "config", "model" and "vocab" are ordinary
words (a sample's fields, a CLI option), refused beside the identifier
`header`; so are the summary's "outputs", "metrics" and "seconds" beside
`summary`. Product code (core, gui, app,
cuda, python/bindings) may not hold them as string literals outside the
group's own files. Three rules, on each code line (comments dropped):

  distinctive  a field name with an underscore ("batch_slots",
               "engine_cells", ...) and the draft pass keys ("draft_forward",
               "draft_forwards") are refused wherever they are a literal;
  in context   a field name that is an ordinary word ("slots", "peak",
               "bytes", "queries", "positions", "mask", "moves", "nodes",
               "config", "seconds", ...) is refused when the same line names
               its group: the identifier kv / fwd / forward (or
               draft_forward...) / gc / keyframe / header / summary, the
               group's type or constants, or the literal "kv" / "forward" (so
               rec["kv"]["peak"], kv.value("peak", 0) and fwd["queries"] fail,
               while a constraint set's {"bytes", n} or the GUI's pane "mask"
               pass);
  group key    the literal "kv" or "forward" used to reach into JSON:
               x["kv"], .contains("kv"), .find("forward"), .value("kv", ...),
               .at("kv") (so a raw read of the group fails, while the GUI's
               pane named "kv" passes; a JSON object built as {"kv", {...}}
               is caught by its fields, which the "kv" on the line puts in
               context).

usage: check_trace_field_literals.py [--root DIR]
Exit status 0: clean; 1: violations, one line each
(`file:line: "name": rule`); 2: the schema or a group's files are missing.
"""
import argparse
import json
import os
import re
import sys

PRODUCT_DIRS = ("core", "gui", "app", "cuda", os.path.join("python", "bindings"))
SOURCE_EXTS = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh", ".inc")
SCHEMA = os.path.join("docs", "trace-format.schema.json")

# Each group: its $defs entry, the step record's keys that hold it, the
# identifiers that name it on a line, and the files that may spell its fields.
GROUPS = {
    "kv": {
        "def": "kv",
        "keys": ["kv"],
        "context": r"\bkv\b|\bkKvField\b|\bKvRecord\b",
        "files": ["core/trace/kv_record.h", "core/trace/kv_record.cpp"],
    },
    "forward": {
        "def": "forward_pass",
        "keys": ["forward", "draft_forward", "draft_forwards"],
        "context": r"\bforward\b|\bfwd\b|\bdraft_forwards?\b|\bk(Draft)?Forwards?Field\b|\bForwardView\b",
        "files": ["core/trace/forward_record.h", "core/trace/forward_record.cpp"],
    },
    "gc": {
        "def": "gc",
        "keys": [],
        "context": r"\bgc\b|\bGcRecord\b|\bkGc\w*\b",
        "files": ["core/trace/gc_record.h", "core/trace/gc_record.cpp"],
    },
    "keyframe": {
        "def": "keyframe",
        "keys": [],
        "context": r"\bkeyframe\b|\bKeyframeRecord\b|\bkKeyframe\w*\b",
        "files": ["core/trace/keyframe_record.h", "core/trace/keyframe_record.cpp"],
    },
    "header": {
        "def": "header",
        "keys": [],
        "context": r"\bheader\b|\bHeaderRecord\b",
        "files": ["core/trace/header_record.h", "core/trace/header_record.cpp"],
    },
    "summary": {
        "def": "summary",
        "keys": [],
        "context": r"\bsummary\b|\bSummaryRecord\b|\bkSummary\w*\b",
        "files": ["core/trace/summary_record.h", "core/trace/summary_record.cpp"],
    },
    # The verify payloads: each kind's $defs with the objects nested in them
    # ("defs"; the DSBD kind's draft step's draft_layers entries too).
    "verify speculative_chain": {
        "defs": ["verify_speculative_chain"],
        "keys": [],
        "context": r"\bverify\b|\bver\b|\bSpeculative(ChainVerify|Decision)\b",
        "files": ["core/trace/speculative_chain_verify_record.h", "core/trace/speculative_chain_verify_record.cpp"],
    },
    "verify dsbd_layers": {
        "defs": ["verify_dsbd_layers", "dsbd_layer", "dsbd_extra_layer", "draft_layer"],
        "keys": ["draft_layers"],
        "context": r"\bverify\b|\bver\b|\bDsbd(LayersVerify|VerifiedLayer|ExtraLayer|DraftLayer|DraftBeam|DraftDecision|SampledBeam|LayersDraft)\b",
        "files": ["core/trace/dsbd_layers_verify_record.h", "core/trace/dsbd_layers_verify_record.cpp"],
    },
    "verify lookahead_candidates": {
        "defs": ["verify_lookahead_candidates"],
        "keys": [],
        "context": r"\bverify\b|\bver\b|\bLookaheadCandidatesVerify\b",
        "files": ["core/trace/lookahead_candidates_verify_record.h", "core/trace/lookahead_candidates_verify_record.cpp"],
    },
}
# Fields every record has (its kind, its step): not a group's own.
RECORD_FIELDS = {"kind", "step"}

# (file, name): literals that must stay where they are, and why.
ALLOWED = {
    # core/model sits below core/trace (docs/architecture.md, layers): a
    # model reports its engine's state as an open object that the recorder
    # merges into kv (Model::engine_state); it cannot include kv_record.h.
    ("core/model/llama_cpp/llama_cpp_model.cpp", "engine_cells"),
    ("core/model/llama_cpp/llama_cpp_model.cpp", "engine_seq_ids"),
}

LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
KEY_ACCESS = r'(\[\s*"{k}"\s*\]|\.(contains|find|value|at|count|erase|emplace)\(\s*"{k}")'


def nested_properties(schema):
    """The property names of `schema` and of the objects nested in it (array
    items, inline objects), not following $ref."""
    names = set()
    if not isinstance(schema, dict):
        return names
    for key, sub in schema.get("properties", {}).items():
        names.add(key)
        names |= nested_properties(sub)
    names |= nested_properties(schema.get("items"))
    for sub in schema.get("anyOf", []) + schema.get("oneOf", []):
        names |= nested_properties(sub)
    return names


def load_groups(root):
    path = os.path.join(root, SCHEMA)
    with open(path, encoding="utf-8") as f:
        defs = json.load(f)["$defs"]
    groups = {}
    for name, g in GROUPS.items():
        props = set()
        for d in g.get("defs", [g.get("def")]):
            if not defs.get(d, {}).get("properties"):
                raise KeyError(f"{path}: $defs/{d} has no properties")
            props |= set(defs[d]["properties"]) if "def" in g else nested_properties(defs[d])
        for rel in g["files"]:
            if not os.path.isfile(os.path.join(root, rel)):
                raise KeyError(f"{rel}: the {name} group's file is missing")
        fields = sorted(set(props) - RECORD_FIELDS)
        groups[name] = {
            "fields": fields,
            "distinctive": [f for f in fields if "_" in f] + [k for k in g["keys"] if "_" in k],
            "common": [f for f in fields if "_" not in f],
            "keys": [k for k in g["keys"] if "_" not in k],
            "context": re.compile(g["context"]),
            "files": set(g["files"]),
        }
    return groups


def code_lines(text):
    """(line number, code) with // and /* */ comments dropped, literals kept."""
    in_block = False
    for n, line in enumerate(text.splitlines(), 1):
        out, i = [], 0
        while i < len(line):
            if in_block:
                end = line.find("*/", i)
                if end < 0:
                    i = len(line)
                    continue
                in_block, i = False, end + 2
                continue
            if line[i] == '"':
                m = LITERAL.match(line, i)
                if m:
                    out.append(m.group(0))
                    i = m.end()
                    continue
            if line.startswith("//", i):
                break
            if line.startswith("/*", i):
                in_block, i = True, i + 2
                continue
            out.append(line[i])
            i += 1
        yield n, "".join(out)


def check_line(rel, n, code, groups):
    literals = LITERAL.findall(code)
    if not literals:
        return []
    bare = LITERAL.sub('""', code)  # context from identifiers, not from the text of messages
    # A name two groups share may be spelled in either group's files.
    owners = {}
    for g in groups.values():
        for f in g["fields"] + g["keys"] + [k for k in g["distinctive"]]:
            owners.setdefault(f, set()).update(g["files"])
    out = []
    for gname, g in groups.items():
        if rel in g["files"]:
            continue
        context = bool(g["context"].search(bare)) or any(k in literals for k in g["keys"])
        for lit in literals:
            if (rel, lit) in ALLOWED or rel in owners.get(lit, ()):
                continue
            if lit in g["distinctive"]:
                out.append(f'{rel}:{n}: "{lit}": a field of the {gname} group is spelled only in {", ".join(sorted(g["files"]))}')
            elif lit in g["common"] and context:
                out.append(f'{rel}:{n}: "{lit}": a field of the {gname} group read or written by name beside {gname}; '
                           f'use the typed group ({", ".join(sorted(g["files"]))})')
        for k in g["keys"]:
            if re.search(KEY_ACCESS.format(k=re.escape(k)), code):
                out.append(f'{rel}:{n}: "{k}": the {gname} group reached by name in JSON; use its field constant and type '
                           f'({", ".join(sorted(g["files"]))})')
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    try:
        groups = load_groups(root)
    except (OSError, KeyError, ValueError) as e:
        print(f"check_trace_field_literals: {e}", file=sys.stderr)
        return 2
    problems = []
    for d in PRODUCT_DIRS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, d)):
            dirnames.sort()
            for fn in sorted(filenames):
                if not fn.endswith(SOURCE_EXTS):
                    continue
                path = os.path.join(dirpath, fn)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                for n, code in code_lines(text):
                    problems += check_line(rel, n, code, groups)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} trace field literal(s) outside their group's files (docs/trace-format.md)")
        return 1
    names = ", ".join(f"{g}: {' '.join(v['fields'])}" for g, v in groups.items())
    print(f"ok: trace field names only in their groups' files ({names})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
