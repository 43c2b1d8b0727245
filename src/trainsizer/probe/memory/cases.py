"""Probe results as validation cases (``validation/FORMAT.md``, "Case file"), with the machine they
ran on, so that ``trainsizer validate`` and ``trainsizer calibrate`` read them like published cases."""

from __future__ import annotations

import datetime
import platform
import socket
from importlib import metadata
from pathlib import Path
from typing import Any, NotRequired, TypedDict

import yaml

from trainsizer.errors import InputError
from trainsizer.probe.memory.measure import MeasurementJSON
from trainsizer.scenario import InlineGpu, Scenario

LIBRARIES = ("torch", "transformers", "peft", "bitsandbytes", "flash-attn", "nvidia-ml-py", "trainsizer")


class Environment(TypedDict):
    """The machine a case was measured on: host, Python, platform, date, library versions, and its GPU (name,
    memory, count, CUDA, compute capability, driver) or, without CUDA, its CPU."""

    hostname: str
    python: str
    platform: str
    date: str
    libraries: NotRequired[dict[str, str]]
    gpu_name: NotRequired[str | None]
    gpu_memory_gib: NotRequired[float]
    gpu_count: NotRequired[int]
    cuda: NotRequired[str | None]
    compute_capability: NotRequired[str]
    driver: NotRequired[str | None]
    cpu: NotRequired[str]


class ComparisonRow(TypedDict):
    """One figure predicted for the scenario as it ran, beside what was measured; error = (predicted - measured)
    / measured."""

    metric: str
    predicted: float
    measured: float | None
    error: float | None


class MemoryProbeJSON(TypedDict):
    """``probe memory --json``: the GPU as a catalog id or inline spec, the machine, the measurement, the figures
    predicted beside it, the GPU's capacity (a catalog GPU), the case file written and its cases' ids."""

    gpu: str | dict[str, str | float]
    environment: Environment
    measurement: MeasurementJSON
    comparison: list[ComparisonRow]
    capacity_gib: float | None
    cases_file: str | None
    cases: list[str]


def environment() -> Environment:
    """GPU, driver, CUDA and library versions of this machine (what a reader needs to reproduce a case)."""
    import torch

    env = Environment(hostname=socket.gethostname(), python=platform.python_version(), platform=platform.platform(),
                      date=datetime.date.today().isoformat())
    libs = {}
    for name in LIBRARIES:
        try:
            libs[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    env["libraries"] = libs
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        env["gpu_name"] = props.name
        env["gpu_memory_gib"] = round(props.total_memory / 2**30, 2)
        env["gpu_count"] = torch.cuda.device_count()
        env["cuda"] = torch.version.cuda
        env["compute_capability"] = f"{props.major}.{props.minor}"
        try:
            import pynvml

            pynvml.nvmlInit()
            env["driver"] = pynvml.nvmlSystemGetDriverVersion()
        except Exception:  # nvidia-ml-py is optional; the driver version is then unknown
            env["driver"] = None
    else:
        env["gpu_name"] = None
        env["cpu"] = platform.processor() or platform.machine()
    return env


def case_scenario(scenario: Scenario, gpu: str | InlineGpu) -> dict[str, Any]:
    """The scenario as it ran, as a case file writes it: the detected GPU, the global batch the probe ran, every
    default made explicit."""
    from trainsizer.probe.workload.config import probe_accumulation

    ran = probe_accumulation(scenario)
    as_run = scenario.model_copy(update={
        "hardware": scenario.hardware.model_copy(update={"gpu": gpu}),
        "training": scenario.training.model_copy(update={
            "global_batch_size": scenario.training.micro_batch_size * scenario.parallel.dp * ran})})
    return as_run.model_dump(exclude_none=True)


def case_id(scenario: Scenario, gpu: str) -> str:
    tr = scenario.training
    model = scenario.model.preset or ("hf-config" if scenario.model.hf_config else
                                      str((scenario.model.architecture or {}).get("model_type", "inline")))
    parts = [gpu, model, tr.method, tr.precision, tr.optimizer, f"mbs{tr.micro_batch_size}", f"s{tr.seq_len}",
             f"ckpt-{tr.activation_checkpointing}", f"gpus{scenario.parallel.gpus}", f"zero{scenario.parallel.zero}"]
    return "probe-" + "-".join(str(p) for p in parts)


def measured_cases(scenario: Scenario, gpu: str | InlineGpu, measurement: Any, env: Environment,
                   source: str) -> list[dict[str, Any]]:
    """One case per measured quantity (FORMAT.md compares one metric per case): allocated, reserved,
    device memory and, when the step is a whole optimizer step, its time."""
    base_id = case_id(scenario, gpu if isinstance(gpu, str) else gpu.name)
    data = case_scenario(scenario, gpu)
    note = "; ".join(measurement.notes) or "measured at full depth"
    common = {"source": source, "scenario": data, "environment": env, "probe": measurement.to_dict(),
              "notes": f"trainsizer probe memory, {measurement.meter} meter; {note}"}
    cases = []
    for metric in ("allocated", "reserved", "device"):
        value = getattr(measurement, f"{metric}_gib")
        if value is not None:
            cases.append({"id": f"{base_id}-{metric}", **common,
                          "measured": {"memory_gib": round(value, 4), "memory_metric": metric}})
    if measurement.step_time_s and measurement.meter == "cuda":
        step = round(measurement.step_time_s, 5)
        cases.append({"id": f"{base_id}-step", **common, "measured": {"step_time_s": step}})
    return cases


def compare_with_estimate(measurement: Any, as_run: Scenario) -> list[ComparisonRow]:
    """Predicted vs measured rows (memory metrics, and the step time on a GPU) for the scenario as it ran
    (``case_scenario``); the error is (predicted - measured) / measured as in ``trainsizer validate``."""
    from trainsizer.estimate.estimator import estimate

    predicted = estimate(as_run, with_limits=False)
    rows = []
    for metric in ("allocated", "reserved", "device"):
        value = getattr(measurement, f"{metric}_gib")
        pred = predicted.memory.metric_gib(metric)
        rows.append(ComparisonRow(metric=f"{metric}_gib", predicted=round(pred, 3),
                                  measured=None if value is None else round(value, 3),
                                  error=None if not value else round((pred - value) / value, 4)))
    if predicted.performance is not None and measurement.meter == "cuda":
        pred_t = predicted.performance.step_time_s  # the case scenario's global batch is what ran
        rows.append(ComparisonRow(metric=f"step_time_s ({as_run.grad_accumulation_steps} micro-batch(es))",
                                  predicted=round(pred_t, 4), measured=round(measurement.step_time_s, 4),
                                  error=round((pred_t - measurement.step_time_s) / measurement.step_time_s, 4)))
    return rows


def write_cases(path: Path, cases: list[dict[str, Any]], overwrite: bool = False, append: bool = False) -> None:
    """Write (or append to) a case file; an existing file is never replaced without ``overwrite``."""
    existing: list[Any] = []
    if path.exists():
        if append:
            from trainsizer.evidence.cases import case_documents, load_cases

            load_cases(path, stated=False)  # a file that is not a case file is refused before it is written to
            existing = case_documents(path)  # written back as it was
            known = {c.get("id") for c in existing}
            cases = [c for c in cases if c["id"] not in known]
        elif not overwrite:
            raise InputError("--out", f"{path} exists; pass --append to add to it or --overwrite to replace it")
    path.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(existing + cases, sort_keys=False, allow_unicode=True, width=110)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)  # atomic: a crash never leaves half a case file
