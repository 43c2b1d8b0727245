"""The GPU types a plan searches under the job's named framework: those whose vendor its release trains on (the
profile's ``parallelism.vendors``, ``frameworks/parallelism.py``): Megatron-LM trains on NVIDIA GPUs, its Ascend port
is MindSpeed-LLM."""

from __future__ import annotations

from trainsizer.frameworks import Parallelism, gpu_refused, load_profile, method_families, parallelism_of
from trainsizer.hardware.catalog import Catalog
from trainsizer.messages import Message, clauses, msg
from trainsizer.scenario import Scenario
from trainsizer.workflows.jobs import stated_gpu


def framework_gpus(job: Scenario, cat: Catalog, gpus: tuple[str, ...],
                   named: bool) -> tuple[tuple[str, ...], Message | None]:
    """The GPU types of ``gpus`` the job's named framework trains on (its profile's ``parallelism.vendors``), and one
    line on those left out; a GPU the user named (``named``: --gpu, or the job's own ``hardware.gpu``) that it does
    not train on is refused."""
    runs = parallelism_of(job.training.framework, job.training.method)
    if runs is None or runs.vendors is None:
        return gpus, None
    own = stated_gpu(job)  # the job's own GPU, checked as an estimate checks it
    if own is not None and own in cat.accelerators and not runs.runs_vendor(cat.accelerators[own].vendor):
        _refuse("hardware.gpu", own, job, cat, runs)
    kept = tuple(g for g in gpus if runs.runs_vendor(cat.accelerator(g, "--gpu").vendor))
    left = [g for g in gpus if g not in kept]
    if not left:
        return gpus, None
    vendors = sorted({cat.accelerator(g, "--gpu").vendor for g in left})
    if named:
        _refuse("--gpu", left[0], job, cat, runs)
    others = [msg("plan.framework_on_vendors", framework=f, vendors=[v for v in vendors if runs_on.runs_vendor(v)])
              for f in method_families(job.training.method)
              if (runs_on := load_profile(f).parallelism).vendors is not None
              and any(runs_on.runs_vendor(v) for v in vendors)]
    names = left[:6] + (["..."] if len(left) > 6 else [])
    return kept, clauses([msg("plan.framework_vendors", framework=job.training.framework, n=len(left),
                              vendors=list(runs.vendors.runs), gpus_list=names),
                          msg("plan.framework_vendors_others", frameworks=others) if others else None])


def _refuse(field: str, gpu: str, job: Scenario, cat: Catalog, runs: Parallelism) -> None:
    """One line: ``gpu`` (named by ``field``) is of a vendor the job's framework does not train on, and the
    frameworks that train on it."""
    vendor = cat.accelerator(gpu, field).vendor
    others = [f for f in method_families(job.training.method)
              if (p := load_profile(f).parallelism).vendors is not None and p.runs_vendor(vendor)]
    assert runs.vendors is not None and job.training.framework is not None
    raise gpu_refused(field, gpu, vendor, job.training.framework, runs.vendors.runs, others)
