#!/usr/bin/env python3
"""Planted corruptions of golden traces fail scripts/validate_trace_schema.py, each
with the record's line and the JSON pointer of the broken field named; the traces
they are made from pass; bad usage exits 2.

usage: check_corruptions.py --validator scripts/validate_trace_schema.py --golden traces/golden --work DIR
Prints one line per case; exit status 0 when every case behaves, 1 otherwise.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys


def dump(rec):
    return json.dumps(rec, separators=(",", ":"), sort_keys=True)


def first(records, pred):
    return next(i for i, r in enumerate(records) if pred(r))


def is_step(r):
    return r.get("kind") == "step"


class Case:
    """A corruption: `edit(records, lines)` changes the parsed records (or the raw
    lines) in place and returns (line number, expected pointer or "record" / None
    for a file-level error, expected words of the message)."""

    def __init__(self, name, base, edit, strict=False):
        self.name, self.base, self.edit, self.strict = name, base, edit, strict


def step_with(key):
    return lambda r: is_step(r) and key in r


def edit_record(pick, change):
    def edit(records, lines):
        i = pick(records)
        pointer, words = change(records[i])
        lines[i] = dump(records[i])
        return i + 1, pointer, words

    return edit


def at(pred):
    return lambda records: first(records, pred)


def drop_phase(r):
    del r["phase"]
    return "/phase", "missing"


def kv_slots_string(r):
    r["kv"]["slots"] = str(r["kv"]["slots"])
    return "/kv/slots", "is not of type 'integer'"


def kind_snapshot(r):
    r["kind"] = "snapshot"
    return "/kind", "is not one of"


def mask_row_not_hex(r):
    r["forward"]["mask"]["rows"][1] = "0g" + r["forward"]["mask"]["rows"][1][2:]
    return "/forward/mask/rows/1", "does not match"


def mask_row_too_long(r):
    r["forward"]["mask"]["rows"][0] += "00"
    return "/forward/mask/rows/0", "hex digits"


def mask_bit_past_cols(r):
    m = r["forward"]["mask"]
    row = bytearray(bytes.fromhex(m["rows"][0]))
    row[-1] |= 0x80  # cols % 8 != 0: the last byte's top bit lies past cols
    m["rows"][0] = row.hex()
    return "/forward/mask/rows/0", "bits past cols"


def negative_slot(r):
    r["added"][0]["slot"] = -2
    return "/added/0/slot", "less than the minimum of -1"


def live_without_slot(r):
    r["added"][0]["slot"] = -1
    r["added"][0]["status"] = "live"
    return "/added/0/slot", "live node always holds a slot"


def unknown_status(r):
    r["added"][0]["status"] = "alive"
    return "/added/0/status", "is not one of"


def drop_decisions(r):
    del r["verify"]["decisions"]
    return "/verify/decisions", "missing"


def gc_move_past_slots(r):
    r["moves"][0][0] = r["slots_before"]
    return "/moves/0/0", "not below slots_before"


def version_3(r):
    r["version"] = 3
    return "/version", "2 was expected"


def sampled_missing(r):
    k = first(r["verify"]["layers"], lambda L: L["passed"] is False)
    del r["verify"]["layers"][k]["sampled"]
    return f"/verify/layers/{k}/sampled", "missing"


def constraint_path(r):
    r["constraint"][0]["path"] = "fast"
    return "/constraint/0/path", "is not one of"


def prefill_phase(r):
    r["phase"] = "expand"
    return "/phase", "'prefill' was expected"


def chosen_prob_negative(r):
    r["chosen"][0]["prob"] = -0.5
    return "/chosen/0/prob", "less than the minimum of 0"


def unknown_node_field(r):
    r["added"][0]["colour"] = "red"
    return "/added/0/colour", "unknown field"


def header_not_first(records, lines):
    lines[0], lines[1] = lines[1], lines[0]
    return 1, "/kind", "the first record must be the header"


def verify_kind_mismatch(records, lines):
    records[0]["verify_kind"] = "dsbd_layers"
    lines[0] = dump(records[0])
    i = first(records, step_with("verify"))
    return i + 1, "/verify/kind", "the header's verify_kind is \"dsbd_layers\""


def step_as_float(records, lines):
    i = first(records, lambda r: is_step(r) and r["step"] > 0)
    n = records[i]["step"]
    old = f'"step":{n}'
    assert old in lines[i]
    lines[i] = lines[i].replace(old, f'"step":{n}.0', 1)
    return i + 1, "/step", "is not of type 'integer'"


def nan_logprob(records, lines):
    i = first(records, lambda r: is_step(r) and r.get("added"))
    lines[i] = lines[i].replace('"logprob":', '"logprob":NaN,"x":', 1)
    return i + 1, "record", "not JSON"


def no_summary(records, lines):
    assert records[-1]["kind"] == "summary"
    del lines[-1]
    return None, None, "no summary record"


def after_summary(records, lines):
    lines.append(lines[-2])  # the last keyframe again, after the summary
    return len(lines), "/kind", "a record after the summary"


SPEC = "speculative_synthetic.trace.jsonl"
DSBD = "dsbd_synthetic.trace.jsonl"
STATIC = "static_figure1.trace.jsonl"
BEAMS = "beam_sampling_synthetic.trace.jsonl"


def odd_cols(r):
    return is_step(r) and "forward" in r and r["forward"]["mask"]["cols"] % 8 != 0


CASES = [
    Case("missing required field", SPEC, edit_record(at(is_step), drop_phase)),
    Case("wrong type", SPEC, edit_record(at(step_with("kv")), kv_slots_string)),
    Case("unknown record kind", SPEC, edit_record(at(lambda r: r.get("kind") == "keyframe"), kind_snapshot)),
    Case("mask row not hex", SPEC, edit_record(at(lambda r: is_step(r) and len(r.get("forward", {}).get("mask", {}).get("rows", [])) > 1), mask_row_not_hex)),
    Case("mask row of the wrong length", SPEC, edit_record(at(step_with("forward")), mask_row_too_long)),
    Case("mask bit past cols", SPEC, edit_record(at(odd_cols), mask_bit_past_cols)),
    Case("negative slot", SPEC, edit_record(at(lambda r: is_step(r) and r.get("added")), negative_slot)),
    Case("live node without a slot", DSBD, edit_record(at(lambda r: is_step(r) and r.get("added") and r["step"] > 0), live_without_slot)),
    Case("unknown node status", SPEC, edit_record(at(lambda r: is_step(r) and r.get("added")), unknown_status)),
    Case("verify payload field missing", SPEC, edit_record(at(step_with("verify")), drop_decisions)),
    Case("gc move past slots_before", SPEC, edit_record(at(lambda r: r.get("kind") == "gc"), gc_move_past_slots)),
    Case("unsupported version", SPEC, edit_record(at(lambda r: r.get("kind") == "header"), version_3)),
    Case("dsbd layer fell short without sampled", DSBD,
         edit_record(at(lambda r: is_step(r) and any(not L["passed"] for L in r.get("verify", {}).get("layers", []))), sampled_missing)),
    Case("constraint path unknown", STATIC, edit_record(at(step_with("constraint")), constraint_path)),
    Case("step 0 is not the prefill", SPEC, edit_record(at(lambda r: is_step(r) and r["step"] == 0), prefill_phase)),
    Case("negative probability", BEAMS, edit_record(at(lambda r: is_step(r) and r.get("chosen")), chosen_prob_negative)),
    Case("header not first", SPEC, header_not_first),
    Case("verify kind not the header's", SPEC, verify_kind_mismatch),
    Case("integer written as 2.0", SPEC, step_as_float),
    Case("NaN is not JSON", SPEC, nan_logprob),
    Case("no summary", SPEC, no_summary),
    Case("record after the summary", SPEC, after_summary),
    Case("unknown field (--strict)", SPEC, edit_record(at(lambda r: is_step(r) and r.get("added")), unknown_node_field), strict=True),
]


def run(python, validator, *args):
    p = subprocess.run([python, validator, *args], capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout + p.stderr


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--validator", required=True)
    ap.add_argument("--golden", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--python", default=sys.executable)
    args = ap.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    results = []

    def expect(ok, what):
        print(("ok    " if ok else "FAIL  ") + what)
        results.append(ok)

    bases = sorted({c.base for c in CASES})
    rc, out = run(args.python, args.validator, "--strict", *[os.path.join(args.golden, b) for b in bases])
    expect(rc == 0, f"the untouched traces pass --strict (exit {rc})" + ("" if rc == 0 else "\n" + out))

    planted = {False: [], True: []}
    for n, case in enumerate(CASES):
        with open(os.path.join(args.golden, case.base), encoding="utf-8") as f:
            lines = f.read().splitlines()
        records = [json.loads(line) for line in lines]
        line, pointer, words = case.edit(records, lines)
        path = os.path.join(args.work, f"case{n:02d}.trace.jsonl")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        planted[case.strict].append((case, path, line, pointer, words))

    for strict, cases in planted.items():
        if not cases:
            continue
        flags = ["--strict"] if strict else []
        rc, out = run(args.python, args.validator, *flags, "--max-errors", "50", *[c[1] for c in cases])
        expect(rc == 1, f"{len(cases)} planted corruptions{' (--strict)' if strict else ''} exit 1 (got {rc})")
        for case, path, line, pointer, words in cases:
            if line is None:
                prefix = f"{path}: "
            elif pointer == "record":
                prefix = f"{path}:{line}: record: "
            else:
                prefix = f"{path}:{line}: field {pointer}: "
            hits = [o for o in out.splitlines() if o.startswith(prefix)]
            ok = any(words in h for h in hits)
            mine = [o for o in out.splitlines() if o.startswith(path)]
            expect(ok, f"{case.name}: {prefix}...{words}..." + ("" if ok else "\n      got: " + "\n      got: ".join(mine or ["nothing"])))
        if strict:
            # Readers ignore unknown fields: without --strict the same traces pass.
            rc, out = run(args.python, args.validator, *[c[1] for c in cases])
            expect(rc == 0, f"without --strict an unknown field passes (exit {rc})" + ("" if rc == 0 else "\n" + out))

    rc, _ = run(args.python, args.validator)
    expect(rc == 2, f"no trace named: exit 2 (got {rc})")
    rc, _ = run(args.python, args.validator, "--schema", os.path.join(args.work, "missing.json"), os.path.join(args.golden, SPEC))
    expect(rc == 2, f"an unreadable schema: exit 2 (got {rc})")
    rc, out = run(args.python, args.validator, os.path.join(args.work, "no_such.trace.jsonl"))
    expect(rc == 1 and "cannot read" in out, f"a missing trace: exit 1 naming it (got {rc})")

    failed = results.count(False)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
