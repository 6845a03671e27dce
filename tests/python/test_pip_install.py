"""pip install of this checkout (pyproject.toml, scikit-build-core): the wheel is built
from the checkout, installed into a fresh virtual environment outside it (no system site
packages, no network), and used from a folder outside it: `import triescope` (without
numpy), `triescope --version` equal to triescope.__version__, a TraceWriter round trip read
back by triescope.Trace and judged by triescope.check and the installed `triescope check`.

The wheel is built with the peer environment's pinned scikit-build-core
(scripts/requirements-engines.txt) without build isolation, and links the suite's own
core archive (TRIESCOPE_PIP_CORE_ARCHIVE) instead of compiling core/ again;
TRIESCOPE_PIP_FULL_BUILD=1 compiles everything, as `pip install .` does. The wheel stays
in build/tests/python/pip_install/dist for app_ci_recipe_local (ctest fixture
triescope_wheel); the environment is removed.
"""
import os
import pathlib
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
import zipfile

import pytest

VERSION_RE = re.compile(r'^#define TRIESCOPE_VERSION "([0-9]+\.[0-9]+\.[0-9]+)"$', re.M)
# What the module and the CLI may need at run time: the C and C++ runtimes only.
RUNTIME_LIBS = re.compile(r"^(libstdc\+\+|libm|libgcc_s|libc|libpthread|libdl|ld-linux[-\w]*)\.so")


def clean_env(venv: pathlib.Path) -> dict:
    """The environment of a user who activated `venv`: none of the suite's Python paths."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "TRIESCOPE_", "LD_"))}
    env.pop("VIRTUAL_ENV", None)
    env["PATH"] = f"{venv / 'bin'}:/usr/bin:/bin"
    return env


def run(cmd, cwd, env=None, expect=0, timeout=120):
    p = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if expect is not None:
        assert p.returncode == expect, f"{' '.join(map(str, cmd))}: exit {p.returncode}, expected {expect}\n{p.stdout[-4000:]}\n{p.stderr[-4000:]}"
    return p


@pytest.fixture(scope="module")
def wheel(build_dir, source_dir):
    # Without build isolation the build backend is this environment's: the pinned one.
    requires = tomllib.loads((source_dir / "pyproject.toml").read_text())["build-system"]["requires"]
    pin = next(r.split("==")[1] for r in requires if r.startswith("scikit-build-core=="))
    try:
        import scikit_build_core
    except ImportError:
        pytest.fail(f"{sys.executable} has no scikit-build-core: scripts/install-engines.sh installs it "
                    "(scripts/requirements-engines.txt)")
    assert scikit_build_core.__version__ == pin, \
        f"scikit-build-core {scikit_build_core.__version__} in {sys.executable}; pyproject.toml pins {pin}"
    out = build_dir / "tests" / "python" / "pip_install"
    dist = out / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--disable-pip-version-check",
           "-w", dist, f"--config-settings=build-dir={out / 'cmake'}"]
    full = os.environ.get("TRIESCOPE_PIP_FULL_BUILD") == "1"
    if not full:
        archive = os.environ.get("TRIESCOPE_PIP_CORE_ARCHIVE")
        assert archive and pathlib.Path(archive).is_file(), f"TRIESCOPE_PIP_CORE_ARCHIVE={archive!r}: no such file (ctest sets it)"
        cmd.append(f"--config-settings=cmake.define.TRIESCOPE_PIP_CORE_ARCHIVE={archive}")
    else:  # a stale cache would keep the archive: start over
        shutil.rmtree(out / "cmake", ignore_errors=True)
    before, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
    p = run([*cmd, source_dir], cwd=out, expect=None, timeout=1500)
    after, wall = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic() - t0
    assert p.returncode == 0, f"pip wheel: exit {p.returncode}\n{p.stdout[-6000:]}\n{p.stderr[-6000:]}"
    # What the build cost, kept beside the wheel (CI time, docs/python.md).
    cost = (f"pip wheel: {wall:.0f} s wall, {after.ru_utime - before.ru_utime:.0f} s user + "
            f"{after.ru_stime - before.ru_stime:.0f} s system CPU ({'full build' if full else 'core archive reused'})\n")
    (out / "wheel-build-time.txt").write_text(cost)
    print(cost, end="")
    wheels = sorted(dist.glob("triescope-*.whl"))
    assert len(wheels) == 1, f"{dist}: expected one triescope wheel, found {[w.name for w in wheels]}"
    return wheels[0]


@pytest.fixture(scope="module")
def version(source_dir):
    m = VERSION_RE.search((source_dir / "core" / "common" / "version.h").read_text())
    assert m, "core/common/version.h: no TRIESCOPE_VERSION line"
    return m.group(1)


@pytest.fixture(scope="module")
def outside(source_dir, build_dir):
    """A folder outside the checkout and the build, removed afterwards."""
    d = pathlib.Path(tempfile.mkdtemp(prefix="triescope-pip-")).resolve()
    for inside in (source_dir.resolve(), build_dir.resolve()):
        assert inside not in d.parents, f"{d} is inside {inside}"
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def venv(wheel, outside):
    """A fresh virtual environment with the wheel installed and nothing else."""
    v = outside / "venv"
    # sys._base_executable: Debian's python3 under the peer environment, so the new one
    # inherits none of its packages.
    run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", v], cwd=outside, timeout=120)
    run([v / "bin" / "python", "-m", "pip", "install", "--no-index", "--no-deps", "--disable-pip-version-check", wheel],
        cwd=outside, env=clean_env(v))
    return v


def test_wheel_holds_the_package_and_the_cli_only(wheel, source_dir, version):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert wheel.name.startswith(f"triescope-{version}-"), wheel.name
    src = source_dir / "python" / "triescope"
    py = {f"triescope/{p.relative_to(src).as_posix()}" for p in src.rglob("*")
          if p.is_file() and (p.suffix in (".py", ".pyi") or p.name == "py.typed") and "__pycache__" not in p.parts}
    core = {n for n in names if re.fullmatch(r"triescope/_core\.[\w.-]+\.so", n)}
    cli = {f"triescope-{version}.data/scripts/triescope"}
    meta = {n for n in names if n.startswith(f"triescope-{version}.dist-info/")}
    assert len(core) == 1, sorted(names)
    assert names - py - core - cli - meta == set(), f"unexpected in the wheel: {sorted(names - py - core - cli - meta)}"
    assert py - names == set() and cli <= names, f"missing from the wheel: {sorted((py | cli) - names)}"
    md = zipfile.ZipFile(wheel).read(f"triescope-{version}.dist-info/METADATA").decode()
    assert f"\nVersion: {version}\n" in md
    assert "Requires-Dist: numpy" in md and "Provides-Extra: engines" in md
    assert 'Requires-Dist: llama-cpp-python==0.3.36; extra == "engines"' in md, md[:2000]


def test_binaries_need_only_the_c_and_cxx_runtimes(venv):
    site = next((venv / "lib").glob("python3*/site-packages"))
    for binary in [*site.glob("triescope/_core.*.so"), venv / "bin" / "triescope"]:
        dyn = run(["readelf", "-d", binary], cwd=venv).stdout
        assert "RPATH" not in dyn and "RUNPATH" not in dyn, f"{binary}: a run path\n{dyn}"
        needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dyn)
        others = [n for n in needed if not RUNTIME_LIBS.match(n)]
        assert needed and not others, f"{binary}: needs {others} (core should be linked in statically)"


def test_import_version_and_cli_from_outside(venv, outside, version):
    env = clean_env(venv)
    p = run([venv / "bin" / "python", "-c",
             "import sys, triescope; print(triescope.__version__); print(triescope.__file__); print('numpy' in sys.modules)"],
            cwd=outside, env=env)
    got_version, path, numpy_loaded = p.stdout.split("\n")[:3]
    assert got_version == version
    assert pathlib.Path(path).resolve().is_relative_to(venv.resolve()), f"triescope imported from {path}, not the venv"
    assert numpy_loaded == "False", "import triescope loaded numpy"
    assert shutil.which("triescope", path=env["PATH"]) == str(venv / "bin" / "triescope")
    cli = run(["triescope", "--version"], cwd=outside, env=env)
    assert cli.stdout == f"{version}\n" and cli.stdout.strip() == got_version, cli.stdout
    # numpy is a declared dependency that is not there yet
    pc = run([venv / "bin" / "python", "-m", "pip", "check"], cwd=outside, env=env, expect=1)
    assert "requires numpy" in pc.stdout, pc.stdout


def test_trace_writer_round_trip_and_check(venv, outside, source_dir):
    env = clean_env(venv)
    run([sys.executable, source_dir / "scripts" / "venv-link-numpy.py", venv], cwd=outside)
    run([venv / "bin" / "python", "-m", "pip", "check"], cwd=outside, env=env)
    script = outside / "round_trip.py"
    script.write_text('''
import sys
import numpy as np
import triescope

good, bad = sys.argv[1], sys.argv[2]
for path, last_row in ((good, [1, 1, 0, 1]), (bad, [1, 1, 1, 1])):
    # A prompt "a b", then two candidates under "b"; `bad` lets "d" see its sibling "c".
    with triescope.TraceWriter(path, algorithm="my_engine", vocab=["a", "b", "c", "d"]) as w:
        w.step(added=[(-1, 0, 0), (0, 1, 1)], queries=[0, 1], mask=np.tril(np.ones((2, 2), bool)), positions=[0, 1])
        w.step(added=[(1, 2, 2), (1, 3, 3)], queries=[2, 3], mask=np.array([[1, 1, 1, 0], last_row], dtype=bool),
               positions=[2, 2])
    t = triescope.Trace(path)
    assert len(t.steps) == 2 and list(t.vocab) == ["a", "b", "c", "d"], (list(t.steps), t.vocab)
    fwd = t.at(1).forward
    assert fwd.queries == [2, 3] and fwd.positions == [2, 2] and fwd.mask.tolist()[1] == [bool(b) for b in last_row]
    assert [(n.id, n.parent, n.token) for n in t.at(1).nodes] == [(0, -1, 0), (1, 0, 1), (2, 1, 2), (3, 1, 3)]
report = triescope.check(good)
assert report.ok and report.violation_count == 0, report.violations
report = triescope.check(bad)
assert not report.ok and report.violation_count == 1
print(report.violations[0])
''')
    good, bad = outside / "good.trace.jsonl", outside / "bad.trace.jsonl"
    p = run([venv / "bin" / "python", script, good, bad], cwd=outside, env=env)
    assert "step 1 (forward), row 1, query node 3, slot 2 (node 2): sees a sibling's slot" in p.stdout, p.stdout
    ok = run(["triescope", "check", good], cwd=outside, env=env, expect=0)
    assert "2 forward passes, 4 mask rows: every mask row and position id follows the ancestor rule" in ok.stdout, ok.stdout
    planted = run(["triescope", "check", bad], cwd=outside, env=env, expect=1)
    assert "step 1 (forward), row 1, query node 3, slot 2 (node 2): sees a sibling's slot" in planted.stdout, planted.stdout
