#!/usr/bin/env python3
"""Makes this Python's numpy, and only numpy, importable in the virtual
environment VENV, so that a wheel needing numpy installs there with
`pip install --no-index` (no network): a folder VENV/linked-numpy holds links
to numpy's package and its metadata, and a .pth file puts that folder on
VENV's sys.path (the venv sees nothing else of this Python's packages, unlike
--system-site-packages). Used by tests/python/test_pip_install.py and
scripts/ci-recipe-local.sh.

usage: venv-link-numpy.py VENV   (run with the Python whose numpy to link)
Exit status: 0 linked; 2 no numpy here, or VENV is not a virtual environment.
"""
import glob
import os
import pathlib
import subprocess
import sys


def fail(msg: str) -> None:
    print(f"venv-link-numpy: {msg}", file=sys.stderr)
    sys.exit(2)


def main() -> None:
    if len(sys.argv) != 2:
        fail("usage: venv-link-numpy.py VENV")
    venv = pathlib.Path(sys.argv[1]).resolve()
    python = venv / "bin" / "python"
    if not (venv / "pyvenv.cfg").is_file() or not python.exists():
        fail(f"{venv}: not a virtual environment (no pyvenv.cfg or bin/python)")
    try:
        import numpy
    except ImportError as e:
        fail(f"{sys.executable} cannot import numpy: {e}")
    package = pathlib.Path(numpy.__file__).parent
    # The metadata beside it: numpy-X.dist-info (pip) or numpy-X.egg-info (Debian).
    meta = [pathlib.Path(p) for p in glob.glob(str(package.parent / f"numpy-{numpy.__version__}*.*-info"))]
    if len(meta) != 1:
        fail(f"{package.parent}: expected one numpy-{numpy.__version__} .dist-info or .egg-info, found {len(meta)}")
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    linked = venv / "linked-numpy"
    linked.mkdir(exist_ok=True)
    for src in (package, meta[0]):
        dst = linked / src.name
        if dst.is_symlink() or dst.exists():
            dst.unlink()
        dst.symlink_to(src)
    pathlib.Path(site, "linked-numpy.pth").write_text(f"{linked}\n")
    got = subprocess.run([str(python), "-c", "import numpy; print(numpy.__version__)"], capture_output=True, text=True,
                         env={k: v for k, v in os.environ.items() if not k.startswith("PYTHON")})
    if got.returncode != 0 or got.stdout.strip() != numpy.__version__:
        fail(f"{python} does not import the linked numpy {numpy.__version__}: {got.stderr.strip()[-500:]}")
    print(f"venv-link-numpy: numpy {numpy.__version__} ({package}) importable in {venv}")


if __name__ == "__main__":
    main()
