"""Shared fixtures of the peer tests: where the build and the sources are."""
import os
import pathlib

import pytest


def _dir(var: str) -> pathlib.Path:
    value = os.environ.get(var)
    if not value:
        raise RuntimeError(f"{var} is not set: run these tests through ctest (label peer)")
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
