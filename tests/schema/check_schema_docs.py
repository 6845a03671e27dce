#!/usr/bin/env python3
"""docs/trace-format.md and docs/trace-format.schema.json say the same thing.

docs/trace-format.md has no field tables; what it has that a script can read is checked:
  1. every JSON example block (after a `<!-- record: ... -->` or `<!-- python example: ...
     -->` marker; real records of samples, tests/registry/test_trace_doc.cpp) validates
     against the schema with --strict: the schema knows every field the examples show;
  2. every field name the schema defines appears in the page, in backticks or as a key of
     an example: the page names every field of the schema;
  3. in the list "Fields of a step record", every backticked field name is one the schema
     gives a step record (anywhere below it), a value the schema names (a verify kind, a
     constraint path) or a model type; and each of the step record's own fields is listed
     there (`engine` in the section on traces recorded outside TrieScope);
  4. each verify kind listed there is one of the schema's, and its bullet names exactly the
     fields of the schema's payload for that kind (at any depth, less `kind`).

usage: check_schema_docs.py --doc docs/trace-format.md --schema docs/trace-format.schema.json --validator scripts/validate_trace_schema.py
Prints each mismatch; exit status 0 when there is none, 1 otherwise.
"""
import argparse
import importlib.util
import json
import re
import sys

MARKER = re.compile(r"<!-- (?:record|python example): ([^>]*?) -->\n```json\n(.*?)\n```", re.S)
CODE = re.compile(r"`([^`]+)`")
# A code span that is a field name, a path of them (config.constraint.set) or a list of
# them ({node, status}).
NAMES = re.compile(r"^[{\[]?[a-z][a-z0-9_.]*(?:, [a-z][a-z0-9_.]*)*[}\]]?$")
# Model types named in the prose, not fields (the schema leaves model.type a free string).
NOT_FIELDS = {"llama_cpp"}
# Every record's own fields: the page's opening and every example name them.
RECORD_FIELDS = {"kind", "step", "phase"}


def names_in(text):
    out = []
    for span in CODE.findall(text):
        if NAMES.match(span):
            out += re.findall(r"[a-z][a-z0-9_]*", span)
    return out


class SchemaIndex:
    def __init__(self, root):
        self.root = root

    def resolve(self, ref):
        node = self.root
        for part in ref[2:].split("/"):
            node = node[part]
        return node

    def walk(self, node, seen=None):
        """Every (property name) defined at or below `node`, through $refs."""
        seen = set() if seen is None else seen
        out = set()
        if isinstance(node, dict):
            if "$ref" in node and node["$ref"] not in seen:
                seen.add(node["$ref"])
                out |= self.walk(self.resolve(node["$ref"]), seen)
            for key, value in node.items():
                if key == "properties" and isinstance(value, dict):
                    out |= set(value)
                if key not in ("$defs", "if"):
                    out |= self.walk(value, seen)
        elif isinstance(node, list):
            for value in node:
                out |= self.walk(value, seen)
        return out

    def values(self, node=None):
        """Every string an enum or const of the schema names."""
        node = self.root if node is None else node
        out = set()
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "enum":
                    out |= {v for v in value if isinstance(v, str)}
                elif key == "const" and isinstance(value, str):
                    out.add(value)
                else:
                    out |= self.values(value)
        elif isinstance(node, list):
            for value in node:
                out |= self.values(value)
        return out


def section(doc, start, end):
    i = doc.index(start)
    j = doc.index(end, i)
    return doc[i:j]


def bullets(text, indent):
    """The bullets at `indent` spaces, each with its continuation lines."""
    out, cur = [], None
    for line in text.splitlines():
        if line.startswith(" " * indent + "- "):
            cur = [line]
            out.append(cur)
        elif cur is not None and line.startswith(" " * (indent + 2)) and not line.lstrip().startswith("- "):
            cur.append(line)
        else:
            cur = None
    return ["\n".join(b) for b in out]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--doc", required=True)
    ap.add_argument("--schema", required=True)
    ap.add_argument("--validator", required=True)
    args = ap.parse_args()
    sys.dont_write_bytecode = True  # no __pycache__ in the source tree
    spec = importlib.util.spec_from_file_location("validate_trace_schema", args.validator)
    validator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(validator)

    with open(args.doc, encoding="utf-8") as f:
        doc = f.read()
    with open(args.schema, encoding="utf-8") as f:
        root = json.load(f)
    idx = SchemaIndex(root)
    problems = []

    # 1. The examples validate, record by record, with --strict.
    strict = validator.Schema(args.schema, strict=True)
    examples = MARKER.findall(doc)
    example_keys = set()

    def keys(j):
        if isinstance(j, dict):
            for k, v in j.items():
                example_keys.add(k)
                keys(v)
        elif isinstance(j, list):
            for v in j:
                keys(v)

    for marker, text in examples:
        rec = json.loads(text)
        keys(rec)
        for error in strict.validator.iter_errors(rec):
            for parts, message in validator.explain(strict, error):
                problems.append(f"{args.doc}: example <!-- {marker} -->: field {validator.pointer(parts)}: {message}")
    if len(examples) < 12:
        problems.append(f"{args.doc}: {len(examples)} example blocks found, expected at least 12 (the markers changed?)")

    # 2. Every field of the schema is named in the page.
    documented = set(names_in(doc)) | example_keys
    for name in sorted(idx.walk(root) | idx.walk(root["$defs"]) - documented):
        if name not in documented:
            problems.append(f"{args.schema}: field \"{name}\" is not named in {args.doc}")

    # 3. The step record's field list against the step's schema.
    fields = section(doc, "Fields of a step record", "\n## ")
    external = section(doc, "## Traces recorded outside TrieScope", "\n## ")
    step_def = root["$defs"]["step"]
    step_names = idx.walk(step_def)
    values = idx.values()
    listed = names_in(fields)
    # The algorithms (the phases table's first column) are names, not fields.
    table = section(doc, "| algorithm | phases |", "\n\n")
    algorithms = {n for row in table.splitlines()[2:] for n in names_in(row.split("|")[1])}
    for name in sorted(set(listed)):
        if name not in step_names and name not in values and name not in NOT_FIELDS | algorithms:
            problems.append(f"{args.doc}: Fields of a step record names `{name}`, which the schema's step record has nowhere")
    for name in sorted(set(step_def["properties"]) - RECORD_FIELDS):
        if name not in listed and name not in names_in(external):
            problems.append(f"{args.schema}: step field \"{name}\" is not listed in {args.doc}'s Fields of a step record")

    # 4. Each verify kind's bullet names exactly its payload's fields.
    verify = fields[fields.index("- `verify`"):] if "- `verify`" in fields else ""
    kinds = set(root["$defs"]["verify_kind_name"]["enum"])
    seen = set()
    for b in bullets(verify, 2):
        kind = CODE.search(b).group(1)
        seen.add(kind)
        if kind not in kinds:
            problems.append(f"{args.doc}: verify kind `{kind}` is not in the schema's verify_kind_name")
            continue
        payload = idx.walk(root["$defs"][f"verify_{kind}"]) - {"kind"}
        named = set(names_in(b)) - {kind}
        for name in sorted(named - payload - values):
            problems.append(f"{args.doc}: verify kind {kind} names `{name}`, which its schema payload has nowhere")
        for name in sorted(payload - named):
            problems.append(f"{args.schema}: verify kind {kind}'s field \"{name}\" is not named in its bullet in {args.doc}")
    for kind in sorted(kinds - seen):
        problems.append(f"{args.schema}: verify kind {kind} has no bullet under `verify` in {args.doc}")

    for p in problems:
        print(p)
    print(f"{len(examples)} examples, {len(idx.walk(root) | idx.walk(root['$defs']))} schema fields, "
          f"{len(seen)} verify kinds checked: {len(problems)} mismatch(es)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
