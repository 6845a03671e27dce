"""What the planted-violation self-tests of the source checkers share
(test_include_layers.py, test_trace_field_literals.py): run a checker on a
copied tree and fail loudly, with the checker's output, when an expectation
does not hold."""
import subprocess
import sys


def run_check(check, root):
    """Runs `check --root root`; returns (exit status, stdout + stderr)."""
    p = subprocess.run([sys.executable, check, "--root", root], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def expect(cond, what, out):
    """Exits 1 printing `what` and the checker's output unless `cond`."""
    if not cond:
        print(f"FAILED: {what}\n--- check output ---\n{out}")
        sys.exit(1)
