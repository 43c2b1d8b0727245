"""What keeps `trainsizer estimate` fast, checked by what it imports and does (never by timing it: the timing is
benchmarks/bench_front_door.py): the probe and burn-in commands load only when named, PyYAML only when YAML
text is parsed, and the executable leaves the final garbage collection out."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from typer.testing import CliRunner

from trainsizer.cli import app

RUN = """
import json, sys
from trainsizer.cli import main
sys.argv = ["trainsizer", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
"""  # a command run in a fresh interpreter, its modules left in sys.modules

PROBE = RUN + """
names = ("trainsizer.probe.cli", "trainsizer.probe.burnin.cli", "yaml", "numpy", "numpy.random", "rich")
found = {n: n in sys.modules for n in names}
# what estimate never uses: the planner, prices, servers and sites, the web app, the report's pages and charts
unused = ("trainsizer.plan", "trainsizer.cost", "trainsizer.system", "trainsizer.web", "trainsizer.workflows.plan_job",
          "trainsizer.report.html", "trainsizer.report.charts", "jinja2", "fastapi")
found["unused"] = sorted(m for m in sys.modules if m.startswith(unused))
print(json.dumps(found), file=sys.stderr)
"""


def _modules_after(args: list[str], cache: str) -> dict[str, bool]:
    env = {**os.environ, "TRAINSIZER_CACHE_DIR": cache}
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stderr.strip().splitlines()[-1])


def test_estimate_imports_neither_the_probes_nor_pyyaml_once_the_data_cache_is_warm(tmp_path):
    cold = _modules_after(["estimate", "--json"], str(tmp_path))  # the first run parses the shipped YAML
    assert cold["yaml"] and not cold["trainsizer.probe.cli"]
    warm = _modules_after(["estimate", "--json"], str(tmp_path))
    assert warm == {"trainsizer.probe.cli": False, "trainsizer.probe.burnin.cli": False, "yaml": False,
                    "numpy": False, "numpy.random": False, "rich": False, "unused": []}
    table = _modules_after(["estimate"], str(tmp_path))
    assert table["rich"] and not table["yaml"] and not table["trainsizer.probe.cli"] and table["unused"] == []
    assert _modules_after(["plan", "--help"], str(tmp_path))["unused"] == []  # the plan command loads on use
    job = tmp_path / "job.yaml"
    job.write_text("model: {preset: qwen2.5-0.5b}\ntraining: {method: lora, micro_batch_size: 1, seq_len: 512}\n")
    planned = _modules_after(["plan", str(job), "--gpu", "rtx-4090-24gb", "--max-gpus", "1", "--json"], str(tmp_path))
    assert "trainsizer.plan.search" in planned["unused"] and planned["numpy"]  # the probe sees what a command uses
    again = _modules_after(["plan", str(job), "--gpu", "rtx-4090-24gb", "--max-gpus", "1", "--json"], str(tmp_path))
    assert not again["yaml"]  # the job's text was parsed by the first run (datafiles.user_yaml)
    # the confidence's seeded draws were kept by the first run (workflows.normal_draws)
    assert planned["numpy.random"] and not again["numpy.random"]


def test_lazy_sub_apps_are_listed_resolved_and_suggested():
    runner = CliRunner()
    listed = runner.invoke(app, ["--help"])
    assert listed.exit_code == 0 and "burnin" in listed.output and "probe" in listed.output
    probe = runner.invoke(app, ["probe", "--help"])
    assert probe.exit_code == 0 and "memory" in probe.output and "comm" in probe.output
    assert "[probe]" in probe.output  # rich markup would swallow an unescaped [probe]
    typo = runner.invoke(app, ["prob"])
    assert typo.exit_code != 0 and "probe" in typo.output


def test_the_executable_freezes_the_collector_only_at_exit():
    script = """
import gc, sys
from trainsizer.cli import console, main
sys.argv = ["trainsizer", "catalog", "links", "--json"]
main()
after_main = gc.get_freeze_count()
console()
print(after_main, gc.get_freeze_count() > 0, file=sys.stderr)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stderr.split()[-2:] == ["0", "True"]  # main() (tests, the API) leaves the collector alone
    assert len(done.stdout.strip().splitlines()) > 2  # both outputs complete


LOADED = RUN + """
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""
# what a command of its own needs: its module, the web app, the probes, the replay of cases, the report files
OTHER_COMMANDS = ("trainsizer.commands.", "trainsizer.scenario_flags", "trainsizer.web", "trainsizer.probe",
                  "trainsizer.evidence", "trainsizer.cli_catalog", "trainsizer.report.write", "trainsizer.report.html",
                  "trainsizer.workflows.quotes", "trainsizer.workflows.scale_job", "fastapi")


def _loaded(args: list[str], cache: str) -> list[str]:
    env = {**os.environ, "TRAINSIZER_CACHE_DIR": cache}
    done = subprocess.run([sys.executable, "-c", LOADED, *args], capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stderr.strip().splitlines()[-1])


def test_a_command_loads_its_own_module_only_and_help_builds_no_options(tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text("model: {preset: qwen2.5-0.5b}\ntraining: {method: lora, micro_batch_size: 1, seq_len: 512}\n")
    planned = _loaded(["plan", str(job), "--gpu", "rtx-4090-24gb", "--max-gpus", "1"], str(tmp_path))
    assert "trainsizer.commands.plan" in planned and "trainsizer.plan.search" in planned  # it planned
    assert [m for m in planned if m.startswith(OTHER_COMMANDS) and m != "trainsizer.commands.plan"] == []
    estimated = _loaded(["estimate", "--json"], str(tmp_path))
    assert "trainsizer.scenario_flags" in estimated
    assert [m for m in estimated if m.startswith(OTHER_COMMANDS)
            and m not in ("trainsizer.commands.estimate", "trainsizer.scenario_flags")] == []
    listed = _loaded(["--help"], str(tmp_path))  # every command's docstring, none of their options or models
    assert "trainsizer.commands.estimate" in listed and "trainsizer.commands.plan" in listed
    assert "trainsizer.scenario" not in listed and "trainsizer.workflows.jobs" not in listed
    assert not [m for m in listed if m.startswith("pydantic")]
