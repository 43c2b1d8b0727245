"""A scenario as the probes run it, before anything is built: the file (or a planner job) read for this machine,
the model's Hugging Face config at any depth, the micro-batches a probe step runs, and what the probes refuse.

Nothing here imports torch; transformers is imported inside ``transformers_config`` only. ``workload.py`` builds
the real training step from these.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainsizer.errors import InputError
from trainsizer.scenario import Scenario

PROBE_PRECISIONS = ("fp32", "fp16-mixed", "bf16-mixed", "bf16-true")
PROBE_OPTIMIZERS = ("adamw", "adamw-8bit", "paged-adamw-8bit", "adafactor", "sgd-momentum", "sgd", "lion")
BNB_OPTIMIZERS = {"adamw-8bit": "AdamW8bit", "paged-adamw-8bit": "PagedAdamW8bit", "lion": "Lion"}


def load_probe_scenario(path: str | Path) -> Scenario:
    """A scenario file, or a planner job without ``parallel``/``hardware`` (``trainsizer plan`` input): the
    probe runs it on this machine, so a missing GPU is the one here (by its CUDA name) on one process."""
    from trainsizer.datafiles import user_yaml
    from trainsizer.scenario import relative_to_file, scenario_from_dict

    data = user_yaml(path, field="scenario")
    if isinstance(data, dict):
        from trainsizer.probe.common.gpu_match import local_gpu

        # on a CPU a placeholder GPU: the probe reports the device it really ran on
        if not data.get("hardware"):
            here = local_gpu() or "h100-sxm5-80gb"
            data = {**data, "hardware": {"gpu": here if isinstance(here, str) else here.model_dump(exclude_none=True)}}
        data = {**data, "parallel": data.get("parallel") or {"gpus": 1}}
    return relative_to_file(scenario_from_dict(data, source=str(path)), path)


def probe_accumulation(scenario: Scenario) -> int:
    """Micro-batches per optimizer step in the probe: the scenario's, at most 2. From the second micro-batch on,
    the gradients of the earlier ones are alive through forward and backward, so every later micro-batch
    repeats the second one's memory; running all of them would only take longer."""
    return min(scenario.grad_accumulation_steps, 2)


def hf_config_dict(scenario: Scenario) -> dict[str, Any]:
    """The Hugging Face config keys of the scenario's model (preset, config.json or inline block)."""
    spec = scenario.model
    if spec.preset is not None:
        from trainsizer.models.catalog import preset_entry

        return dict(preset_entry(spec.preset)["config"])
    if spec.hf_config is not None:
        from trainsizer.models.catalog import read_hf_config

        return dict(read_hf_config(spec.hf_config))
    return dict(spec.architecture or {})


def config_with_depth(config: dict[str, Any], layers: int) -> dict[str, Any]:
    """Hugging Face config keys with the depth set to ``layers`` (under whichever alias the config uses);
    leading dense layers of an MoE model (first_k_dense_replace) keep at least one MoE layer."""
    from trainsizer.models.architecture import ALIASES

    out = {k: v for k, v in config.items() if k != "layer_types"}  # per-layer lists sized for the full depth
    for key in ALIASES["num_hidden_layers"]:
        if key in out:
            out[key] = layers
    if out.get("first_k_dense_replace", 0) >= layers:
        out["first_k_dense_replace"] = max(0, layers - 1)
    return out


def transformers_config(scenario: Scenario, layers: int | None = None) -> Any:
    """A transformers config of the scenario's model, with ``layers`` decoder layers when scaled down."""
    from transformers import AutoConfig

    from trainsizer.models.catalog import resolve_model

    arch = resolve_model(scenario.model)  # validates the keys with the estimator's own reader
    raw = {k: v for k, v in hf_config_dict(scenario).items() if k not in ("architectures", "torch_dtype", "dtype")}
    model_type = raw.pop("model_type")
    if layers is not None:
        if not 1 <= layers <= arch.num_layers:
            raise InputError("--layers", f"{layers}; accepted: 1 to the model's {arch.num_layers} layers")
        raw = config_with_depth(raw, layers)
    raw.pop("layer_types", None)  # per-layer lists sized for the full depth (qwen3, gemma)
    try:
        config = AutoConfig.for_model(model_type, **raw)
    except ValueError as exc:
        raise InputError("model.architecture.model_type", f"transformers cannot build {model_type!r}: {exc}") \
            from None
    config.use_cache = False
    return config


def check_supported(scenario: Scenario, multi_process: bool = False) -> None:
    """Refuse what the probe cannot run faithfully, naming the field and what it accepts."""
    tr, par = scenario.training, scenario.parallel
    if tr.precision not in PROBE_PRECISIONS:
        raise InputError("training.precision", f"{tr.precision!r} needs NVIDIA Transformer Engine, which the probe "
                         f"does not drive; accepted: {', '.join(PROBE_PRECISIONS)}")
    if tr.activation_checkpointing == "selective":
        raise InputError("training.activation_checkpointing", "'selective' recomputation is Megatron-Core's; "
                         "the probe runs Hugging Face models; accepted: none, full")
    if tr.loss != "standard":
        raise InputError("training.loss", "the probe runs the model's own loss; accepted: standard")
    for name in ("tp", "pp", "cp", "ep"):
        if getattr(par, name) > 1:
            raise InputError(f"parallel.{name}", f"{getattr(par, name)}: the probe runs data parallelism "
                             "(DDP, ZeRO-1, FSDP) only; accepted: 1")
    if par.offload == "optimizer":
        raise InputError("parallel.offload", "optimizer-only offload is DeepSpeed's; the probe's FSDP offloads "
                         "parameters and optimizer together; accepted: none, optimizer+params")
    if par.gpus > 1 and not multi_process:
        raise InputError("parallel.gpus", f"{par.gpus} GPUs need one process each: run through torchrun "
                         "(trainsizer probe memory does that when the GPUs are local)")
    if tr.method == "qlora" or tr.optimizer in BNB_OPTIMIZERS:
        import importlib.util

        if importlib.util.find_spec("bitsandbytes") is None:
            what = "training.method" if tr.method == "qlora" else "training.optimizer"
            raise InputError(what, "needs bitsandbytes: pip install -e '.[qlora]'")


def scaled_scenario(scenario: Scenario, layers: int) -> Scenario:
    """The scenario with the model's depth set to ``layers`` (inline architecture)."""
    from trainsizer.scenario import scenario_from_dict

    data = scenario.model_dump(exclude_none=True)
    data["model"] = {"architecture": config_with_depth(hf_config_dict(scenario), layers)}
    return scenario_from_dict(data)
