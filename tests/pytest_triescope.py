"""The pytest plugin of every Python test (labels peer and python), loaded by
triescope_add_pytest with `-p pytest_triescope`: where the build and the
sources are, the CLI, and a runner for it."""
import os
import pathlib
import subprocess

import pytest


def _dir(var: str) -> pathlib.Path:
    value = os.environ.get(var)
    if not value:
        raise RuntimeError(f"{var} is not set: run these tests through ctest (labels peer, python)")
    return pathlib.Path(value)


@pytest.fixture(scope="session")
def build_dir() -> pathlib.Path:
    return _dir("TRIESCOPE_BINARY_DIR")


@pytest.fixture(scope="session")
def source_dir() -> pathlib.Path:
    return _dir("TRIESCOPE_SOURCE_DIR")


@pytest.fixture(scope="session")
def triescope_cli(build_dir: pathlib.Path) -> pathlib.Path:
    cli = build_dir / "app" / "triescope"
    assert cli.exists(), f"{cli} is missing: build the triescope target first"
    return cli


@pytest.fixture(scope="session")
def run_cli(triescope_cli):
    """Runs `triescope <args>`; returns the CompletedProcess (text)."""

    def run(*args, expect=0):
        p = subprocess.run([str(triescope_cli), *map(str, args)], capture_output=True, text=True, timeout=240)
        if expect is not None:
            assert p.returncode == expect, f"triescope {' '.join(map(str, args))}: exit {p.returncode}\n{p.stdout}\n{p.stderr}"
        return p

    return run
