"""Where a ``trainsizer estimate`` / ``trainsizer plan`` process spends its CPU time (issue 25): each figure the
min / median CPU time (user + system) of ``--runs`` fresh interpreters, bytecode compiled first as pip does.

- the floor (``python -c pass``: the interpreter and this environment's ``site``);
- importing the third-party stack each command loads (every module outside trainsizer that the command leaves in
  ``sys.modules``: typer with its pydantic adapters, pydantic, rich, numpy and numpy.random for plan), with the
  executable's collector threshold (cli.console);
- the same plus trainsizer's modules for the command (what trainsizer's own imports add), with the kept code of
  the dataclasses' methods (method_code_cache), as the executable imports them;
- the whole command (what running it adds: validation schemas, data, the estimate or plan, the tables);
- the dataclasses and pydantic models the command creates at import, and their time (``--classes``).

Usage: python benchmarks/profile_process.py [--runs 7] [--classes]
Summaries of what it printed, with py-spy and cProfile views of the same commands: profile_process.md.
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JOB = str(ROOT / "examples" / "jobs" / "qwen2.5-7b-lora.yaml")
COMMANDS = {"estimate": ["estimate"], "plan": ["plan", JOB]}
# Runs the command given in the child's arguments, its output discarded (the snippets below start with it).
RUN_COMMAND = """
sys.argv = ["trainsizer", *sys.argv[1:]]
with contextlib.redirect_stdout(io.StringIO()):
    try:
        runpy.run_module("trainsizer.cli", run_name="__main__")
    except SystemExit:
        pass
"""
# The modules a command leaves loaded, outside trainsizer and in it, one per line after a "--" line (a child process).
LOADED = """
import contextlib, io, runpy, sys
before = set(sys.modules)
""" + RUN_COMMAND + """
loaded = [m for m in sys.modules if m not in before and not m.startswith("__")]
print("\\n".join([m for m in loaded if m.split(".")[0] != "trainsizer"] + ["--"]
                 + [m for m in loaded if m.split(".")[0] == "trainsizer" and m != "trainsizer.cli"]))
"""
# Imports the listed modules as the executable would (its collector threshold; trainsizer's dataclasses from the
# kept code of their methods), then stops.
IMPORTS = """
import gc, importlib, sys
gc.set_threshold(100_000, *gc.get_threshold()[1:])
third, ours = sys.argv[1].split("--")
try:  # a tree without method_code_cache (an older checkout) imports them as Python does
    from trainsizer import method_code_cache
except ImportError:
    method_code_cache = None
if method_code_cache is not None and ours.split():
    method_code_cache.install()
for name in third.split() + ours.split():
    try:
        importlib.import_module(name)
    except Exception:  # a module that only loads inside its package's own import (e.g. a platform shim)
        pass
gc.freeze()
"""
# Counts the classes made by dataclasses and pydantic while the command runs, and the time dataclasses spends on
# them (a measurement hook in this child process only; the product does not do this).
CLASSES = """
import dataclasses, runpy, sys, time, io, contextlib
made = {}
original = dataclasses._process_class
def timed(cls, *a, **k):
    t0 = time.perf_counter(); out = original(cls, *a, **k)
    key = "trainsizer" if cls.__module__.startswith("trainsizer") else "others"
    n, s = made.get(key, (0, 0.0)); made[key] = (n + 1, s + time.perf_counter() - t0)
    return out
dataclasses._process_class = timed
""" + RUN_COMMAND + """
import pydantic
models = [c for c in pydantic.BaseModel.__subclasses__()]
seen, todo = set(), list(models)
while todo:
    c = todo.pop(); seen.add(c); todo += [s for s in c.__subclasses__() if s not in seen]
ours = sum(c.__module__.startswith("trainsizer") for c in seen)
for key, (n, s) in sorted(made.items()):
    print(f"  dataclasses ({key}): {n}, {s * 1000:.0f} ms")
print(f"  pydantic models: {ours} of trainsizer's, {len(seen) - ours} others")
"""


def _cpu(argv: list[str], env: dict[str, str], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        if os.waitstatus_to_exitcode(status):
            raise SystemExit(f"{' '.join(argv)} failed")
        out.append(usage.ru_utime + usage.ru_stime)
    return out


def _line(label: str, values: list[float]) -> str:
    return f"  {label:28} {min(values) * 1000:5.0f} / {statistics.median(values) * 1000:5.0f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--classes", action="store_true", help="count the classes each command creates")
    args = parser.parse_args()
    src = str(ROOT / "src")
    compileall.compile_dir(src, quiet=1)
    # as the `trainsizer` executable runs (cli.console / cli.main set these two before anything loads)
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "PYTHONPATH": src,
           "PYDANTIC_DISABLE_PLUGINS": "1", "OPENBLAS_NUM_THREADS": "1"}
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"{cores} cores, load average {os.getloadavg()[0]:.2f}; CPU time min / median of {args.runs} processes")
    print(_line("python -c pass", _cpu([sys.executable, "-c", "pass"], env, args.runs)))
    for command, cli_args in COMMANDS.items():
        print(f"trainsizer {command}:")
        argv = [sys.executable, "-m", "trainsizer.cli", *cli_args]
        _cpu(argv, env, 1)  # the data caches and the kept methods written
        third, ours = subprocess.run([sys.executable, "-c", LOADED, *cli_args], env=env, check=True, text=True,
                                     capture_output=True).stdout.split("--\n")
        for label, listed in (("+ third-party stack", f"{third}--"), ("+ trainsizer's modules", f"{third}--{ours}")):
            print(_line(label, _cpu([sys.executable, "-c", IMPORTS, listed], env, args.runs)))
        print(_line("the whole command", _cpu(argv, env, args.runs)))
        if args.classes:
            subprocess.run([sys.executable, "-c", CLASSES, *COMMANDS[command]], env=env, check=True)


if __name__ == "__main__":
    main()
