"""Run a user's training script in-process under torch.profiler, one profiler step per optimizer step.

    python -m trainsizer.probe.profile.runner --trace-out T.json [--steps N] [--warmup W] -- train.py args...
    python -m trainsizer.probe.profile.runner --trace-out T.json -- -m my_package.train args...
    torchrun --nproc-per-node 8 -m trainsizer.probe.profile.runner --trace-out T.json -- train.py args...

The script runs with ``runpy`` as ``__main__`` (its own ``sys.argv``, its directory first on ``sys.path``).
A global optimizer step post-hook (``torch.optim.optimizer.register_optimizer_step_post_hook``) calls
``prof.step()`` after each ``step()`` of the first optimizer that steps, so a profiler step is one training
step whatever the loop looks like (gradient accumulation included). After ``wait + warmup + steps`` optimizer
steps the trace is written, the hook removed and the script continues unprofiled. If the script ends first,
whatever was recorded is written. Under torchrun only rank 0 (env RANK) profiles; the others just run.

Exit status: the script's own; 3 when the script ended before a single step was recorded (message on stderr).
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys
from pathlib import Path
from typing import Any

NO_TRACE_EXIT = 3
WAIT_STEPS = 1  # optimizer steps skipped before the warmup (lazy initialisation, allocator growth)


class _OptimizerStepProfiler:
    """torch.profiler stepped by optimizer steps; stops itself after the active steps."""

    def __init__(self, trace_out: Path, steps: int, warmup: int):
        import torch
        from torch.profiler import ProfilerActivity, schedule

        from trainsizer.probe.profile.analysis import export_trace

        self.trace_out = trace_out
        self.total_steps = WAIT_STEPS + warmup + steps
        self.done = 0
        self.written = False
        self._optimizer_id: int | None = None

        def ready(prof: Any) -> None:
            export_trace(prof, trace_out)
            self.written = True

        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
        self.prof: Any = torch.profiler.profile(activities=activities, on_trace_ready=ready,
                                                schedule=schedule(wait=WAIT_STEPS, warmup=warmup, active=steps,
                                                                  repeat=1))
        self.active = False
        self.handle: Any = None

    def start(self) -> None:
        from torch.optim.optimizer import register_optimizer_step_post_hook

        self.prof.start()
        self.active = True
        self.handle = register_optimizer_step_post_hook(self._after_optimizer_step)

    def _after_optimizer_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        # with several optimizers (GAN, per-group optimizers) only the first one to step marks training steps
        if self._optimizer_id is None:
            self._optimizer_id = id(optimizer)
        if not self.active or id(optimizer) != self._optimizer_id:
            return
        self.prof.step()
        self.done += 1
        if self.done >= self.total_steps:  # the schedule has just written the trace: stop profiling
            self.stop()

    def stop(self) -> None:
        if self.handle is not None:
            self.handle.remove()
            self.handle = None
        if self.active:
            self.active = False
            self.prof.stop()  # writes what was recorded if the script ended inside the active steps


def _parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    if "--" in argv:
        i = argv.index("--")
        own, target = argv[:i], argv[i + 1:]
    else:
        own, target = argv, []
    parser = argparse.ArgumentParser(prog="python -m trainsizer.probe.profile.runner",
                                     description="Profile a training script: one profiler step per optimizer step.")
    parser.add_argument("--trace-out", required=True, type=Path, help="Chrome trace to write (.json or .json.gz).")
    parser.add_argument("--steps", type=int, default=5, help="Optimizer steps to record (1-1000).")
    parser.add_argument("--warmup", type=int, default=2, help="Optimizer steps traced then discarded (0-100).")
    args = parser.parse_args(own)
    if not target:
        parser.error("give the script after --: -- train.py args...  or  -- -m package.module args...")
    if not 1 <= args.steps <= 1000:
        parser.error(f"--steps: {args.steps}; accepted: 1 to 1000")
    if not 0 <= args.warmup <= 100:
        parser.error(f"--warmup: {args.warmup}; accepted: 0 to 100")
    if target[0] in ("-m", "--module") and len(target) < 2:
        parser.error("-m needs a module name")
    if target[0] not in ("-m", "--module") and not Path(target[0]).is_file():
        parser.error(f"script: no such file: {target[0]}")
    return args, target


def _run_target(target: list[str]) -> None:
    # sys.path[0] is the working directory here (this runner was started with -m): `python -m` keeps it,
    # `python script.py` has the script's directory there instead
    if target[0] in ("-m", "--module"):
        sys.argv = [target[1], *target[2:]]
        runpy.run_module(target[1], run_name="__main__", alter_sys=True)
    else:
        script = str(Path(target[0]).resolve())
        sys.argv = [target[0], *target[1:]]
        if sys.path and sys.path[0] in ("", os.getcwd()):
            sys.path[0] = str(Path(script).parent)
        else:
            sys.path.insert(0, str(Path(script).parent))
        runpy.run_path(script, run_name="__main__")


def main(argv: list[str] | None = None) -> int:
    args, target = _parse(list(sys.argv[1:] if argv is None else argv))
    if int(os.environ.get("RANK", "0")) != 0:  # torchrun: only rank 0 profiles
        _run_target(target)
        return 0
    profiler = _OptimizerStepProfiler(args.trace_out, args.steps, args.warmup)
    profiler.start()
    code: int = 0
    try:
        _run_target(target)
    except SystemExit as exc:  # the script's sys.exit(): keep its status, still write the trace
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        profiler.stop()
    if not profiler.written:
        print(f"profile_runner: no trace written to {args.trace_out}: the script made {profiler.done} optimizer "
              f"step(s); at least {WAIT_STEPS + args.warmup + 1} are needed (1 skipped + --warmup {args.warmup} "
              "+ 1 recorded). Lower --warmup or let the script run longer.", file=sys.stderr)
        return code or NO_TRACE_EXIT
    return code


if __name__ == "__main__":
    sys.exit(main())
