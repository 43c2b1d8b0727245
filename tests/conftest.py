import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# The measured cases the shipped parameters are fitted on, in the repository (validation/cases/README.md): every
# test reads only files inside the repository.
VALIDATION = REPO / "validation" / "cases"


def base_scenario(**overrides):
    """A small valid scenario mapping; keyword overrides use section__key names."""
    data = {
        "model": {"preset": "llama-3.1-8b"},
        "training": {"method": "full", "precision": "bf16-mixed", "optimizer": "adamw",
                     "micro_batch_size": 1, "seq_len": 2048},
        "parallel": {"gpus": 1},
        "hardware": {"gpu": "h100-sxm5-80gb"},
    }
    for key, value in overrides.items():
        section, field = key.split("__", 1)
        if value is None:
            data[section].pop(field, None)
        else:
            data[section][field] = value
    return data


@pytest.fixture(scope="session")
def shipped_validation():
    """``trainsizer validate --view user --json`` run alone, as a user runs it: every shipped case, held out by
    publication and by GPU family, with the ranges' nested coverage (tests/test_shipped_fit.py, test_ranges.py).
    From another folder, with this package: the cases are found from the package, not the working directory. The
    timeout only stops a hung run (minutes on two cores; benchmarks/bench_validate.py times it, not a test)."""
    import trainsizer

    env = {**os.environ, "PYTHONPATH": str(Path(trainsizer.__file__).resolve().parents[1])}
    proc = subprocess.run([sys.executable, "-m", "trainsizer.cli", "validate", "--view", "user", "--json"],
                          capture_output=True, text=True, timeout=3600, cwd=REPO.parent, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture
def scenario_data():
    return base_scenario()



def price_list(data, currency="CNY", fx_override=None):
    """A test's own price list, parsed as a user's --prices file is; rows it gives no source or date get a test
    one (the checks on shipped rows' sources are tests/test_price_data.py's)."""
    from trainsizer.cost.prices import Prices, check_price_file

    def sourced(row):
        return {"source": "test", "as_of": "2026-12-01", **row} if isinstance(row, dict) else row

    rows = {k: ([sourced(r) for r in v] if isinstance(v, list) else {n: sourced(r) for n, r in v.items()})
            for k, v in data.items()}
    return Prices(check_price_file(rows, "test prices"), currency, fx_override)


def run_cli(args: list[str], monkeypatch, capsys) -> tuple[int, str]:
    """``trainsizer ARGS`` through ``cli.main`` as a person runs it: its exit code and what it printed."""
    import sys

    from trainsizer.cli import main

    monkeypatch.setattr(sys, "argv", ["trainsizer", *args])
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out = capsys.readouterr()
    return code, out.out + out.err
