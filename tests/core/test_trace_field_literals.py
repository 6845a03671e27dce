#!/usr/bin/env python3
"""The trace-field-literals check (scripts/check_trace_field_literals.py) on a
copy of the product code and the JSON Schema: clean as copied, then each
planted raw read or write of a typed group's field must fail, naming the
file, the line and the field; a look-alike that is no trace field must pass.

usage: test_trace_field_literals.py <source dir>
"""
import os
import shutil
import sys
import tempfile

from planted_check import expect, run_check

SRC = os.path.abspath(sys.argv[1])
CHECK = os.path.join(SRC, "scripts", "check_trace_field_literals.py")
DIRS = ("core", "gui", "app", "cuda", os.path.join("python", "bindings"))


def run(root):
    return run_check(CHECK, root)


def copy_tree(dst):
    for d in DIRS:
        shutil.copytree(os.path.join(SRC, d), os.path.join(dst, d),
                        ignore=shutil.ignore_patterns("*.o", "__pycache__"))
    os.makedirs(os.path.join(dst, "docs"))
    shutil.copy(os.path.join(SRC, "docs", "trace-format.schema.json"), os.path.join(dst, "docs"))


def plant(root, rel, code):
    """Appends `code` as a line of root/rel; returns its line number and the old text."""
    path = os.path.join(root, rel)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    with open(path, "w", encoding="utf-8") as f:
        f.write(text + ("" if text.endswith("\n") else "\n") + code + "\n")
    return text.count("\n") + (0 if text.endswith("\n") else 1) + 1, text


TMP = tempfile.TemporaryDirectory()
copy_tree(TMP.name)
rc, out = run(TMP.name)
expect(rc == 0, "the unchanged copy passes", out)


def case(rel, code, field, fails=True):
    line, text = plant(TMP.name, rel, code)
    rc, out = run(TMP.name)
    with open(os.path.join(TMP.name, rel), "w", encoding="utf-8") as f:
        f.write(text)  # each case on the clean copy
    if fails:
        expect(rc == 1, f"{rel}: {code} fails (exit 1)", out)
        expect(f'{rel}:{line}: "{field}"' in out, "the message names file, line and field", out)
        print(f"ok: {rel}:{line} {code} refused")
    else:
        expect(rc == 0, f"{rel}: {code} passes (no trace field)", out)
        print(f"ok: {rel}:{line} {code} passes")


# kv: a raw read by subscript, by value(), a distinctive name anywhere, a raw write.
case("app/cmd_inspect.cpp", 'int64_t planted_a(const json& rec) { return rec["kv"]["peak"].get<int64_t>(); }', "peak")
case("core/analysis/summary_check.cpp", 'int64_t planted_b(const json& kv) { return kv.value("slots", 0); }', "slots")
case("gui/trace_document.cpp", 'static const char* planted_c = "live_beams";', "live_beams")
case("core/decode/greedy_decode.cpp", 'json planted_d() { return {{"kv", {{"bytes", 1}}}}; }', "bytes")
case("core/decode/lookahead.cpp", 'bool planted_e(const json& r) { return r.contains("kv"); }', "kv")
# forward: its fields beside the group, the draft passes' keys anywhere.
case("python/bindings/bind_trace.cpp", 'size_t planted_f(const json& fwd) { return fwd["queries"].size(); }', "queries")
case("gui/trace_context.cpp", 'size_t planted_g(const json& r) { return r["forward"]["positions"].size(); }', "positions")
case("core/analysis/mask_check.cpp", 'static const char* planted_h = "draft_forwards";', "draft_forwards")
case("cuda/cuda_backend.cpp", 'json planted_i(const json& m) { return {{"forward", {{"mask", m}}}}; }', "mask")
# gc and keyframe records.
case("app/cmd_inspect.cpp", 'int64_t planted_l(const json& r) { return r.value("slots_before", 0); }', "slots_before")
case("gui/trace_context.cpp", 'size_t planted_m(const json& gc) { return gc["moves"].size(); }', "moves")
case("core/analysis/step_narration.cpp", 'size_t planted_n(const json& keyframe) { return keyframe["nodes"].size(); }', "nodes")
# header and summary records: the distinctive verify_kind anywhere, ordinary
# words beside `header` / `summary`.
case("app/report_check.cpp", 'static const char* planted_o = "verify_kind";', "verify_kind")
case("gui/trace_document.cpp", 'std::string planted_p(const json& header) { return header.value("algorithm", ""); }', "algorithm")
case("core/analysis/mask_check.cpp", 'bool planted_q(const json& header) { return header.contains("config"); }', "config")
case("python/bindings/bind_trace.cpp", 'json planted_r(const json& summary) { return summary["outputs"]; }', "outputs")
case("core/trace/trace_diff.cpp", 'double planted_s(const json& summary) { return summary.value("seconds", 0.0); }', "seconds")
# Look-alikes: the same words with no group named on the line.
case("core/constraint/baselines.cpp", 'json planted_j(int64_t b) { return {{"bytes", b}}; }', "bytes", fails=False)
case("gui/main_window.cpp", 'static const char* planted_k = "kv";', "kv", fails=False)
case("app/cmd_inspect.cpp", 'static const char* planted_t = "algorithm";', "algorithm", fails=False)
case("app/cmd_run.cpp", 'json planted_u(double s) { return {{"seconds", s}}; }', "seconds", fails=False)
# verify payloads: a distinctive name anywhere (a nested one too), an ordinary
# word beside `verify`, the DSBD draft step's key; the same name in another
# kind's record files passes (the kinds share accept_prob).
case("core/analysis/speculative_chain.cpp", 'static const char* planted_v = "accept_prob";', "accept_prob")
case("gui/panes/verify_pane.cpp", 'size_t planted_w(const json& verify) { return verify["decisions"].size(); }', "decisions")
case("core/decode/dsbd.cpp", 'static const char* planted_x = "surviving_drafts";', "surviving_drafts")
case("app/cmd_inspect.cpp", 'bool planted_y(const json& r) { return r.contains("draft_layers"); }', "draft_layers")
case("core/analysis/lookahead_candidates.cpp", 'static const char* planted_z = "accepted_tokens";', "accepted_tokens")
case("core/trace/dsbd_layers_verify_record.cpp", 'static const char* planted_aa = "accept_prob";', "accept_prob", fails=False)
