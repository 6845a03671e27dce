"""Planted faults in real traces for the report tests (tests/app/test_*.py):
a violation for `check`, a divergence for `diff`, a token that is markup.
Each fixture returns the paths and what the planted fault must be named by
(step, pass, node), read from the trace it planted into, never hard-coded."""
import json
import os
import pathlib
import subprocess


def run(cmd, **kw):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=120, **kw)


def read_jsonl(path):
    return [json.loads(line) for line in pathlib.Path(path).read_text().splitlines() if line.strip()]


def write_jsonl(path, records):
    pathlib.Path(path).write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records))


def step_record(records, step):
    return next(r for r in records if r.get("kind") == "step" and r.get("step") == step)


def flip_bit(row_hex, bit):
    b = bytearray.fromhex(row_hex)
    b[bit // 8] ^= 1 << (bit % 8)
    return b.hex()


class Fixtures:
    def __init__(self, triescope, source, work):
        self.triescope, self.source, self.work = pathlib.Path(triescope), pathlib.Path(source), pathlib.Path(work)
        self.work.mkdir(parents=True, exist_ok=True)

    def base_trace(self):
        """The trie paper's Figure 1 decode (trie beam search, a vocabulary)."""
        out = self.work / "figure1.jsonl"
        if not out.exists():
            r = run([self.triescope, "run", self.source / "samples/figure1_once_upon_a_time.json", "--out", out])
            assert r.returncode == 0, r.stderr
        return out

    def planted_violation(self, token_text=None):
        """Step 1's row 1 also sees the slot of row 0's node (its sibling): a violation.
        `token_text` replaces the vocabulary string of that row's token (markup tests)."""
        recs = read_jsonl(self.base_trace())
        rec = step_record(recs, 1)
        f = rec["forward"]
        f["mask"]["rows"][1] = flip_bit(f["mask"]["rows"][1], f["slots"][0])
        node = f["queries"][1]
        if token_text is not None:
            token = next(n["token"] for n in rec["added"] if n["id"] == node)
            recs[0]["vocab"][token] = token_text
            recs[0]["model"]["note"] = token_text  # header strings are shown too
        out = self.work / ("planted_violation_markup.jsonl" if token_text else "planted_violation.jsonl")
        write_jsonl(out, recs)
        return out, {"step": 1, "pass": "forward", "node": node, "slot": f["slots"][0]}

    def planted_divergence(self):
        """A bundled golden trace (traces/golden/synthetic_long, recorded on a GPU) and a copy
        with one mask bit of step 3's last row cleared (the row's own slot)."""
        golden = self.source / "traces/golden/synthetic_long.trace.jsonl"
        recs = read_jsonl(golden)
        rec = step_record(recs, 3)
        f = rec["forward"]
        row = len(f["queries"]) - 1
        f["mask"]["rows"][row] = flip_bit(f["mask"]["rows"][row], f["slots"][row])
        out = self.work / "planted_divergence.jsonl"
        write_jsonl(out, recs)
        return golden, out, {"step": 3, "pass": "forward", "node": f["queries"][row], "row": row, "slot": f["slots"][row]}
