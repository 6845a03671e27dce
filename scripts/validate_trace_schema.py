#!/usr/bin/env python3
"""Validates TrieScope traces against docs/trace-format.schema.json (JSON Schema 2020-12).

A trace is JSON Lines: every record (line) is validated on its own against the schema,
and then the rules that one record cannot express are checked over the file:
  - the first record is the header, and no other record is;
  - nothing follows the summary, and the trace ends with one;
  - a step's verify.kind is the header's verify_kind (no verify object without one);
  - each forward pass (forward, draft_forward, draft_forwards[i]) has one position and
    one slot per query and one mask row per query, each row ceil(cols / 8) bytes of hex
    with the bits past cols zero;
  - each gc move names old and new slots below slots_before.
Integers must be written as integers (2, not 2.0 or 2e0), as TrieScope's reader wants;
NaN and Infinity are not JSON. Step order, node ids, held slots and the masks against
the tree are `triescope check`'s, not this script's.

--strict also refuses fields the format does not define (every object of the schema
not marked "additionalProperties": true is closed); TrieScope's readers ignore such
fields, so without --strict they pass. CI runs --strict over every trace it writes.

usage: validate_trace_schema.py [--schema FILE] [--strict] [--max-errors N] TRACE...
Each error is one line, `FILE:LINE: field POINTER: message` (POINTER: the JSON pointer
of the field within the record, e.g. /forward/mask/rows/2), or `FILE:LINE: record:
message` for the record as a whole. Exit status 0: every trace is valid; 1: errors;
2: bad usage, an unreadable schema, or no python3-jsonschema >= 4 (Debian's
python3-jsonschema; scripts/install-deps.sh installs it).
"""
import argparse
import copy
import json
import math
import os
import signal
import sys

DEFAULT_SCHEMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "trace-format.schema.json")


def fail_usage(message):
    print(f"validate_trace_schema: {message}", file=sys.stderr)
    sys.exit(2)


def load_jsonschema():
    try:
        import jsonschema
        from jsonschema import Draft202012Validator, validators
    except ImportError:
        fail_usage("needs python3-jsonschema >= 4.0 (draft 2020-12): apt-get install python3-jsonschema (scripts/install-deps.sh)")
    return jsonschema, Draft202012Validator, validators


def pointer(parts):
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


SCALARS = (str, int, float, bool, type(None))


def item_key(item):
    """A hashable key that tells `item` apart from any item of another value or
    type (True is not 1), or None when it holds more than scalars."""
    if isinstance(item, str):
        return item
    if isinstance(item, dict) and all(isinstance(v, SCALARS) for v in item.values()):
        return tuple(sorted((k, type(v).__name__, v) for k, v in item.items()))
    return None


def close_objects(node, skip=("if", "not")):
    """--strict: every object schema that lists its properties and does not say
    "additionalProperties" gets "additionalProperties": false."""
    if isinstance(node, dict):
        types = node.get("type")
        is_object = types == "object" or (isinstance(types, list) and "object" in types)
        if is_object and "properties" in node and "additionalProperties" not in node:
            node["additionalProperties"] = False
        for key, value in node.items():
            if key not in skip:
                close_objects(value, skip)
    elif isinstance(node, list):
        for value in node:
            close_objects(value, skip)


class Schema:
    def __init__(self, path, strict):
        jsonschema, draft, validators = load_jsonschema()
        try:
            with open(path, encoding="utf-8") as f:
                self.root = json.load(f)
        except (OSError, ValueError) as e:
            fail_usage(f"{path}: cannot read the schema: {e}")
        if strict:
            self.root = copy.deepcopy(self.root)
            close_objects(self.root)
        try:
            draft.check_schema(self.root)
        except jsonschema.exceptions.SchemaError as e:
            fail_usage(f"{path}: not a valid draft 2020-12 schema: {e.message}")

        # 2.0 is a number, not an integer: TrieScope's reader (nlohmann::json's
        # is_number_integer) refuses it where it wants an integer.
        def is_integer(checker, instance):
            return isinstance(instance, int) and not isinstance(instance, bool)

        # Validation is a pure function of (item, schema): an array item seen
        # valid before (a keyframe repeats every node, a mask row recurs) is not
        # validated again. Only items whose fields are all scalars are keyed.
        plain_items = draft.VALIDATORS["items"]
        seen = {}

        def items(validator, items_schema, instance, schema):
            if not isinstance(instance, list) or not isinstance(items_schema, dict) or "prefixItems" in schema:
                yield from plain_items(validator, items_schema, instance, schema)
                return
            valid = seen.setdefault(id(items_schema), set())
            for index, item in enumerate(instance):
                key = item_key(item)
                if key is not None and key in valid:
                    continue
                errors = list(validator.descend(instance=item, schema=items_schema, path=index))
                if errors:
                    yield from errors
                elif key is not None:
                    valid.add(key)

        cls = validators.extend(draft, validators={"items": items},
                                type_checker=draft.TYPE_CHECKER.redefine("integer", is_integer))
        self.validator = cls(self.root)
        self.valid_lines = set()  # (line, header verify_kind) found valid, in any trace of this run

    def resolve(self, ref):
        node = self.root
        if not ref.startswith("#/"):
            return {}
        for part in ref[2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return node

    def rule_description(self, schema_path):
        """The description of the last conditional rule (an if/then) the failing
        keyword sits under, so "-1 is less than the minimum of 0" says why."""
        node, found = self.root, None
        for key in schema_path:
            # jsonschema's paths step through a $ref without naming it.
            while isinstance(node, dict) and key not in node and "$ref" in node:
                node = self.resolve(node["$ref"])
            try:
                parent, node = node, node[key]
            except (KeyError, IndexError, TypeError):
                break
            if key == "then" and isinstance(parent, dict):
                found = node.get("description") or parent.get("description") or found
        return found


def explain(schema, error):
    """(pointer parts, message) lines for one jsonschema error."""
    path = list(error.absolute_path)
    v = error.validator
    if v == "required":
        missing = [p for p in error.validator_value if isinstance(error.instance, dict) and p not in error.instance]
        name = next((p for p in missing if error.message.startswith(repr(p))), missing[0] if missing else None)
        if name is not None:
            return [(path + [name], "missing (a required field)")]
    if v == "additionalProperties" and isinstance(error.instance, dict):
        known = set(error.schema.get("properties", {}))
        extra = sorted(k for k in error.instance if k not in known)
        return [(path + [k], "unknown field (the format defines no such field here; readers ignore it)") for k in extra]
    if v in ("anyOf", "oneOf") and error.context and isinstance(error.instance, (dict, list)):
        # Only the branches of the instance's own type: when one is left, its errors name the field.
        branches = {}
        for sub in error.context:
            branches.setdefault(sub.schema_path[0] if sub.schema_path else None, []).append(sub)
        fitting = [errs for errs in branches.values() if not any(e.validator == "type" and not e.path for e in errs)]
        if len(fitting) == 1:
            return [line for sub in fitting[0] for line in explain(schema, sub)]
    message = error.message
    if len(message) > 300:
        message = message[:300] + "..."
    rule = schema.rule_description(error.schema_path)
    if rule:
        message += f" ({rule})"
    elif v in ("anyOf", "oneOf") and isinstance(error.schema, dict) and error.schema.get("description"):
        message += f" ({error.schema['description']})"
    return [(path, message)]


def forward_problems(f, base):
    """The per-pass rules a schema cannot state (sizes that depend on other fields)."""
    out = []
    if not isinstance(f, dict) or not all(isinstance(f.get(k), list) for k in ("positions", "slots")):
        return out
    mask = f.get("mask")
    if not isinstance(mask, dict) or not isinstance(mask.get("rows"), list) or not isinstance(mask.get("cols"), int):
        return out
    # One entry per query; batch_beam_search has no queries (no tree): its positions count.
    lead = "queries" if isinstance(f.get("queries"), list) else "positions"
    n = len(f[lead])
    for key in ("positions", "slots"):
        if key != lead and len(f[key]) != n:
            out.append((base + [key], f"{len(f[key])} entries for {n} {lead} (one per query)"))
    rows, cols = mask["rows"], mask["cols"]
    if len(rows) != n:
        out.append((base + ["mask", "rows"], f"{len(rows)} rows for {n} {lead} (one row per query)"))
    want = 2 * math.ceil(cols / 8)
    for i, row in enumerate(rows):
        if not isinstance(row, str):
            continue
        if len(row) != want:
            out.append((base + ["mask", "rows", i], f"{len(row)} hex digits, a row of cols = {cols} bits has {want}"))
            continue
        try:
            bits = int.from_bytes(bytes.fromhex(row), "little")
        except ValueError:
            continue  # not hex: the schema's pattern says so
        if bits >> cols:
            out.append((base + ["mask", "rows", i], f"bits past cols = {cols} are set (they must be zero)"))
    return out


def record_problems(rec, header_verify_kind):
    """The cross-field rules of one record that passed the schema."""
    out = []
    kind = rec.get("kind")
    if kind == "step":
        if "forward" in rec:
            out += forward_problems(rec["forward"], ["forward"])
        if "draft_forward" in rec:
            out += forward_problems(rec["draft_forward"], ["draft_forward"])
        for i, f in enumerate(rec.get("draft_forwards") or []):
            out += forward_problems(f, ["draft_forwards", i])
        verify = rec.get("verify")
        if isinstance(verify, dict) and isinstance(verify.get("kind"), str):
            if header_verify_kind is None:
                out.append((["verify", "kind"], f"\"{verify['kind']}\", but the header names no verify_kind (so no step has a verify object)"))
            elif verify["kind"] != header_verify_kind:
                out.append((["verify", "kind"], f"\"{verify['kind']}\", but the header's verify_kind is \"{header_verify_kind}\""))
    elif kind == "gc":
        before = rec.get("slots_before")
        for i, mv in enumerate(rec.get("moves") or []):
            for j, s in enumerate(mv if isinstance(mv, list) else []):
                if isinstance(s, int) and isinstance(before, int) and s >= before:
                    out.append((["moves", i, j], f"slot {s} is not below slots_before = {before}"))
    return out


def reject_constant(name):
    raise ValueError(f"{name} is not JSON")


def validate_file(schema, path, max_errors, emit):
    """Validates one trace; returns (records, errors)."""
    errors = 0

    def report(lineno, parts, message):
        nonlocal errors
        errors += 1
        if errors <= max_errors:
            where = f"field {pointer(parts)}" if parts else "record"
            emit(f"{path}:{lineno}: {where}: {message}")

    records = 0
    header_verify_kind = None
    seen_header = False
    summary_line = None
    try:
        f = open(path, encoding="utf-8")
    except OSError as e:
        emit(f"{path}: cannot read: {e.strerror}")
        return 0, 1
    with f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            records += 1
            try:
                rec = json.loads(line, parse_constant=reject_constant)
            except ValueError as e:
                report(lineno, [], f"not JSON: {e}")
                continue
            kind = rec.get("kind") if isinstance(rec, dict) else None
            if records == 1 and kind != "header":
                report(lineno, ["kind"] if isinstance(rec, dict) else [],
                       f"the first record must be the header, got {json.dumps(kind) if kind is not None else 'no kind'}")
            elif records > 1 and kind == "header":
                report(lineno, ["kind"], "a header after the first record: only the first record is the header")
            if summary_line is not None:
                report(lineno, ["kind"] if isinstance(rec, dict) else [], f"a record after the summary (line {summary_line}): the summary is the last record")
            if kind == "summary" and summary_line is None:
                summary_line = lineno
            if kind == "header" and not seen_header:
                seen_header = True
                header_verify_kind = rec.get("verify_kind") if isinstance(rec.get("verify_kind"), str) else None
            key = (line, header_verify_kind)
            if key in schema.valid_lines:
                continue  # the same record, in the same context, was valid before (cpu and cuda traces share most)
            lines = []
            for error in schema.validator.iter_errors(rec):
                lines += explain(schema, error)
            if not lines and isinstance(rec, dict):
                lines = record_problems(rec, header_verify_kind)
            if not lines:
                schema.valid_lines.add(key)
            for parts, message in sorted(set((tuple(p), m) for p, m in lines), key=lambda pm: [str(p) for p in pm[0]]):
                report(lineno, list(parts), message)
    if records == 0:
        emit(f"{path}: empty trace (no header record)")
        errors += 1
    elif summary_line is None:
        emit(f"{path}: no summary record: a trace ends with its summary (this one was cut short?)")
        errors += 1
    if errors > max_errors:
        emit(f"{path}: {errors - max_errors} more error(s) not shown (--max-errors {max_errors})")
    return records, errors


def main(argv=None):
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `... | head` ends quietly
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 epilog="Exit status 0: valid; 1: errors (FILE:LINE: field POINTER: message); 2: bad usage.")
    ap.add_argument("traces", nargs="+", metavar="TRACE", help="trace files (JSON Lines)")
    ap.add_argument("--schema", default=DEFAULT_SCHEMA, help="the schema (default: docs/trace-format.schema.json beside this script)")
    ap.add_argument("--strict", action="store_true", help="also refuse fields the format does not define")
    ap.add_argument("--max-errors", type=int, default=20, metavar="N", help="errors shown per trace (default 20)")
    args = ap.parse_args(argv)
    if args.max_errors < 1:
        ap.error("--max-errors must be >= 1")
    schema = Schema(args.schema, args.strict)
    total_records = total_errors = bad = 0
    for path in args.traces:
        records, errors = validate_file(schema, path, args.max_errors, print)
        total_records += records
        total_errors += errors
        bad += errors > 0
    mode = " (--strict)" if args.strict else ""
    if total_errors:
        print(f"validate_trace_schema{mode}: {total_errors} error(s) in {bad} of {len(args.traces)} trace(s)")
        return 1
    print(f"validate_trace_schema{mode}: {len(args.traces)} trace(s), {total_records} records: valid")
    return 0


if __name__ == "__main__":
    sys.exit(main())
