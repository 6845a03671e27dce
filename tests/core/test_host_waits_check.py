#!/usr/bin/env python3
"""The host-waits check (scripts/check_host_waits.py) on a copy of cuda/:
clean as copied, then each planted raw wait or download must fail naming its
file and line; look-alikes (a comment, an upload, the host runtime) pass.

usage: test_host_waits_check.py <source dir>
"""
import os
import shutil
import sys
import tempfile

from planted_check import expect, run_check

SRC = os.path.abspath(sys.argv[1])
CHECK = os.path.join(SRC, "scripts", "check_host_waits.py")
TMP = tempfile.TemporaryDirectory()
shutil.copytree(os.path.join(SRC, "cuda"), os.path.join(TMP.name, "cuda"), ignore=shutil.ignore_patterns("*.o"))
rc, out = run_check(CHECK, TMP.name)
expect(rc == 0, "the unchanged copy passes", out)


def case(rel, code, fails):
    path = os.path.join(TMP.name, rel)
    existed = os.path.exists(path)
    old = open(path, encoding="utf-8").read() if existed else ""
    line = old.count("\n") + 1
    with open(path, "w", encoding="utf-8") as f:
        f.write(old + code + "\n")
    rc, out = run_check(CHECK, TMP.name)
    if fails:
        expect(rc == 1 and f"{rel}:{line}:" in out, f"{rel}: planted {code!r} is refused at line {line}", out)
    else:
        expect(rc == 0, f"{rel}: look-alike {code!r} passes", out)
    if existed:
        with open(path, "w", encoding="utf-8") as f:
            f.write(old)
    else:
        os.remove(path)


case("cuda/cuda_synthetic_model.cpp", "void f(cudaStream_t s) { cudaStreamSynchronize(s); }", True)
case("cuda/device_selector.cpp", "void g(void* h, void* d, cudaStream_t s) { cudaMemcpyAsync(h, d, 8,\n    cudaMemcpyDeviceToHost, s); }", True)
case("cuda/static/static_step.cu", "void h(void* a, void* b) { cudaMemcpy(a, b, 4, cudaMemcpyDefault); }", True)
case("cuda/new_kernel.cuh", "inline void w() { cudaDeviceSynchronize(); }", True)
case("cuda/device_selector.cpp", "// cudaStreamSynchronize(s) is counted_stream_sync's job", False)
case("cuda/device_selector.cpp", "void u(void* d, const void* h, cudaStream_t s) { cudaMemcpyAsync(d, h, 8, cudaMemcpyHostToDevice, s); }", False)
case("cuda/host_runtime/src/extra.cpp", "void r(cudaStream_t s) { cudaStreamSynchronize(s); }", False)
print("host waits check: 4 planted waits refused by file and line, 3 look-alikes pass")
