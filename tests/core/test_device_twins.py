#!/usr/bin/env python3
"""scripts/check_device_twins.py on a fixture tree: a kernel file with an
existing twin passes; one without the line, or naming a missing file, fails
with its name.

usage: test_device_twins.py <source dir>
"""
import os
import subprocess
import sys
import tempfile

CHECK = os.path.join(os.path.abspath(sys.argv[1]), "scripts", "check_device_twins.py")


def run(root):
    p = subprocess.run([sys.executable, CHECK, "--root", root], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def write(root, rel, text):
    os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
    with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
        f.write(text)


with tempfile.TemporaryDirectory() as tmp:
    write(tmp, "core/select/philox.h", "")
    write(tmp, "cuda/philox_draws.cu", "// CPU twin: core/select/philox.h (philox_uniform)\n")
    write(tmp, "cuda/host_runtime/src/any.cu", "no twin line: the runtime is not a kernel file\n")
    rc, out = run(tmp)
    assert rc == 0, out
    write(tmp, "cuda/static/static_mask.cu", '#include "x.h"\n')
    write(tmp, "cuda/dsbd_verify.cu", "// CPU twin: core/decode/gone.h (dsbd_verify_layer)\n")
    rc, out = run(tmp)
    assert rc == 1, out
    assert "cuda/static/static_mask.cu:1: does not start with" in out, out
    assert "cuda/dsbd_verify.cu:1: twin core/decode/gone.h does not exist" in out, out
print("ok: a kernel file without its twin line, and one naming a missing twin, fail")
