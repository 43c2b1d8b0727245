"""The code base stays ruff clean (run as part of the test command, so CI enforces it)."""

import shutil
import subprocess

import pytest
from conftest import REPO


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff not installed (pip install -e '.[test]')")
def test_ruff_clean():
    proc = subprocess.run(["ruff", "check", "src", "tests", "tools", "benchmarks"], cwd=REPO,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
