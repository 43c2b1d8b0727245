"""Jobs and scenarios as the faces receive them: a YAML file, command-line flags, a web form."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from trainsizer.datafiles import packaged_yaml, user_yaml
from trainsizer.errors import N_, InputError
from trainsizer.lookup import unknown_id
from trainsizer.scenario import HardwareSpec, Scenario, scenario_from_dict

EXAMPLE = "default.yaml"
DEFAULT_PLAN_GPU = "h100-sxm5-80gb"  # any catalog id: the planner replaces it; only the job's shape matters
PLANNER_CHOOSES = ("tp", "pp", "cp", "virtual_pp", "zero", "offload", "sequence_parallel", "distributed_optimizer",
                   "ep", "pipeline_split")


def job_from_dict(data: Any, gpu_ids: list[str] | tuple[str, ...] | None = None, source: str = "job") -> Scenario:
    """A job: a scenario whose parallel and hardware blocks may be left out (the planner fills them). Hardware left
    out is a placeholder with no field set (``stated_gpu``: the job names no GPU)."""
    if not isinstance(data, dict):
        raise InputError("job", N_("{source} must be a YAML mapping with model and training"), source=source)
    data = {**data}
    parallel = dict(data.get("parallel") or {})
    data["hardware"] = data.get("hardware") or HardwareSpec.model_construct(
        _fields_set=set(), gpu=(list(gpu_ids or []) or [DEFAULT_PLAN_GPU])[0])
    for key in PLANNER_CHOOSES:
        parallel.pop(key, None)
    parallel["gpus"] = 1
    data["parallel"] = parallel
    return scenario_from_dict(data, source=source)


def stated_gpu(job: Scenario) -> str | None:
    """The GPU id the job itself names (its ``hardware.gpu``); None where it names none (job_from_dict's placeholder)
    or describes its GPU inline."""
    hardware = job.hardware
    return hardware.gpu if "gpu" in hardware.model_fields_set and isinstance(hardware.gpu, str) else None


def load_job(path: str | Path, gpu_ids: list[str] | tuple[str, ...] | None = None,
             framework: str | None = None) -> Scenario:
    """The job of a file, with its framework's profile applied (``framework``, else its ``training.framework``, else
    the one assumed for its method: ``trainsizer.frameworks.resolve``)."""
    from trainsizer.frameworks import resolve

    return resolve(job_from_dict(user_yaml(path, field="job"), gpu_ids, str(path)), framework)[0]


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def parse_duration(text: str | None) -> float | None:
    """'36h', '7d', '90m', '3600s' -> seconds; a number without a unit is refused (30 days or 30 seconds?)."""
    if text is None:
        return None
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
    t = str(text).strip().lower()
    if _is_number(t):
        raise InputError("--deadline", N_("{value!r} has no unit (30 days or 30 seconds?); accepted: a number with "
                                          "s, m, h, d or w (e.g. 30d, 36h)"), value=text)
    try:
        value = float(t[:-1]) * units[t[-1]] if t and t[-1] in units else float("nan")
        if value != value:
            raise ValueError(t)
    except ValueError:
        raise InputError("--deadline", N_("{value!r}; accepted: a number with s, m, h, d or w (e.g. 7d, 36h)"),
                         value=text) from None
    if not value > 0 or value == float("inf"):
        raise InputError("--deadline", N_("{value!r}; accepted: a finite positive duration (e.g. 7d, 36h)"),
                         value=text)
    return value


def _set(data: dict[str, Any], dotted: str, value: Any) -> None:
    section, key = dotted.split(".", 1)
    target = data.setdefault(section, {})
    if not isinstance(target, dict):
        raise InputError(section, "must be a mapping")
    if "." in key:
        sub, leaf = key.split(".", 1)
        target = target.setdefault(sub, {})
        key = leaf
    target[key] = value


# what a scenario built from `trainsizer estimate` flags alone cannot do without: dotted key -> (flag, accepted)
FLAGS_ALONE_NEED = {
    "model": ("--model", N_("a preset id (trainsizer catalog models) or a Hugging Face config.json path")),
    "training.method": ("--method", "full, lora, qlora, freeze"),
    "hardware.gpu": ("--gpu", N_("a GPU id (trainsizer catalog gpus)")),
}


def _check_model_flag(model: Any) -> None:
    """An unknown preset id given with ``--model`` as the error about ``--model``."""
    if model is None or str(model).endswith(".json"):
        return
    from trainsizer.models.catalog import closest_presets, find_preset, model_ids

    if find_preset(str(model)) is None:
        raise unknown_id("--model", str(model), model_ids(), "trainsizer catalog models", closest_presets(str(model)))


def scenario_data(path: Path | None, flags: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The scenario mapping from a file (or the built-in example, or flags alone) with dotted flags over it,
    and a label of where it came from."""
    given = {k: v for k, v in flags.items() if v is not None}
    if path is not None:
        data = user_yaml(path, field="scenario")
        if not isinstance(data, dict):
            raise InputError("scenario", f"{path} must be a YAML mapping with model, training, parallel, hardware")
        origin = str(path)
    elif not given:
        data = json.loads(json.dumps(packaged_yaml("trainsizer.examples", EXAMPLE)))
        origin = f"built-in example ({EXAMPLE})"
    else:
        _check_model_flag(given.get("model"))  # a misspelt --model first: it is the mistake, not the flags missing
        for dotted, (flag, accepted) in FLAGS_ALONE_NEED.items():
            if dotted not in given:
                raise InputError(flag, N_("is required when flags alone describe the job (give a scenario file "
                                          "instead, or no flags at all for the built-in example); accepted: "
                                          "{accepted}"), accepted=accepted)
        data = {"training": {"micro_batch_size": 1, "seq_len": 2048}, "parallel": {"gpus": 1}}
        origin = "command-line flags"
    model = given.pop("model", None)
    if model is not None:
        data["model"] = {"hf_config": model} if str(model).endswith(".json") else {"preset": model}
    for dotted, value in given.items():
        _set(data, dotted, value)
    return data, origin
