"""Every ```python block of docs/python.md runs as it stands, and prints what it says."""
import re
import subprocess
import sys

import pytest


def blocks(source_dir):
    return re.findall(r"```python\n(.*?)```", (source_dir / "docs" / "python.md").read_text(), re.S)


def test_doc_has_the_three_uses(source_dir):
    assert len(blocks(source_dir)) == 3


@pytest.mark.parametrize("i", range(3))
def test_doc_block_runs(source_dir, tmp_path, i):
    code = blocks(source_dir)[i]
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=180)
    assert p.returncode == 0, p.stderr
    # A "# value" comment after a print() is what it prints.
    want = [m.group(1).strip() for m in re.finditer(r"^print\(.*\)[ \t]+# (.*)$", code, re.M)]
    got = p.stdout.splitlines()
    for w in want:
        assert w in got, (w, got)
