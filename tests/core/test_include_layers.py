#!/usr/bin/env python3
"""The include-layers check (scripts/check_include_layers.py) on a copy of
core/, cuda/ and docs/architecture.md: clean as copied, then each planted include
against the layers must fail, naming the file, the line and the rule.

usage: test_include_layers.py <source dir>
"""
import os
import shutil
import sys
import tempfile

from planted_check import expect, run_check

SRC = os.path.abspath(sys.argv[1])
CHECK = os.path.join(SRC, "scripts", "check_include_layers.py")


def run(root):
    return run_check(CHECK, root)


def copy_tree(dst):
    shutil.copytree(os.path.join(SRC, "core"), os.path.join(dst, "core"))
    shutil.copytree(os.path.join(SRC, "cuda"), os.path.join(dst, "cuda"))
    os.makedirs(os.path.join(dst, "docs"))
    shutil.copy(os.path.join(SRC, "docs", "architecture.md"), os.path.join(dst, "docs"))


def plant(root, rel, include):
    """Appends `#include "include"` to root/rel; returns its line number."""
    path = os.path.join(root, rel)
    with open(path, encoding="utf-8") as f:
        n = sum(1 for _ in f)
    with open(path, "a", encoding="utf-8") as f:
        f.write(f'#include "{include}"\n')
    return n + 1


def case_planted(rel, include, room):
    with tempfile.TemporaryDirectory() as tmp:
        copy_tree(tmp)
        rc, out = run(tmp)
        expect(rc == 0, "the unchanged copy passes", out)
        line = plant(tmp, rel, include)
        rc, out = run(tmp)
        expect(rc == 1, f"{rel} including {include} fails (exit 1)", out)
        expect(f"{rel}:{line}: includes {include}: {room} may include" in out, "the message names file, line and rule", out)
        print(f"ok: {rel}:{line} -> {include} refused")


def case_cycle():
    with tempfile.TemporaryDirectory() as tmp:
        copy_tree(tmp)
        doc = os.path.join(tmp, "docs", "architecture.md")
        with open(doc, encoding="utf-8") as f:
            text = f.read()
        row = "| `core/common` | — |"
        expect(row in text, "the table has the core/common row", text)
        with open(doc, "w", encoding="utf-8") as f:
            f.write(text.replace(row, "| `core/common` | `core/decode` |"))
        rc, out = run(tmp)
        expect(rc == 2 and "cycle" in out, "a table whose rooms include each other is refused (exit 2)", out)
        print("ok: a cyclic table refused")


case_planted("core/constraint/static_constraint.h", "core/decode/beam_config.h", "core/constraint")
case_planted("core/select/philox.h", "core/decode/decode_result.h", "core/select")
case_planted("core/model/model.cpp", "core/trace/trace.h", "core/model")
case_planted("core/decode/run_sample.cpp", "cuda/cuda_backend.h", "core/decode")
# cuda/'s rooms: the kernels sit below the backend and cuda/static; the host
# runtime includes nothing outside itself.
case_planted("cuda/dsbd_verify.cpp", "cuda/cuda_backend.h", "cuda")
case_planted("cuda/tree_attention.cu", "cuda/static/static_mask.cuh", "cuda")
case_planted("cuda/static/static_mask.cu", "cuda/cuda_backend.h", "cuda/static")
case_planted("cuda/host_runtime/src/fiber.cpp", "cuda/cuda_common.cuh", "cuda/host_runtime")
case_cycle()
