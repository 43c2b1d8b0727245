"""A real training step built from a scenario: the model from its architecture with random weights (no
download), the method (full, freeze, LoRA through peft, QLoRA through bitsandbytes), the precision,
optimizer, checkpointing and a synthetic batch of the scenario's shape.

The memory probe, the CPU simulation and the step profile all run this one workload, so what they
measure is the same job the estimator predicts. Framework conventions it follows, each what the
estimator assumes (``estimate/training_state.py``):

- fp16-/bf16-mixed full training keeps fp32 weights and runs under ``torch.autocast`` (PyTorch AMP
  docs); bf16-true keeps bf16 weights, gradients and optimizer states; fp16-mixed uses a GradScaler.
- LoRA/QLoRA load the frozen base in the 16-bit dtype; peft keeps adapters in fp32
  (``autocast_adapter_dtype=True``); method freeze trains the last N layers in fp32 (LLaMA-Factory).
- QLoRA replaces the base linears (not the output head) by bitsandbytes ``Linear4bit``/``Linear8bitLt``
  (Dettmers et al. 2023, arXiv:2305.14314), quantized when moved to the GPU.
- Full activation checkpointing is Hugging Face's non-reentrant ``gradient_checkpointing_enable``;
  ``optimizer_in_backward`` steps each parameter in its post-accumulate-grad hook and frees the
  gradient (PyTorch tutorial "How to save memory by fusing the optimizer step into the backward pass").

torch, transformers and peft are imported here, so this module is only imported by the probe commands.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from trainsizer.errors import InputError
from trainsizer.probe.workload.config import (
    BNB_OPTIMIZERS,
    PROBE_OPTIMIZERS,
    PROBE_PRECISIONS,
    check_supported,
    config_with_depth,
    hf_config_dict,
    load_probe_scenario,
    probe_accumulation,
    transformers_config,
)
from trainsizer.scenario import Scenario

# the scenario side stays importable from here (``from trainsizer.probe.workload.build import load_probe_scenario``)
__all__ = ["BNB_OPTIMIZERS", "PROBE_OPTIMIZERS", "PROBE_PRECISIONS", "Workload", "build_workload", "check_supported",
           "config_with_depth", "hf_config_dict", "load_probe_scenario", "probe_accumulation", "transformers_config"]

# FORMAT.md model_type -> the transformers Auto class that trains it as the estimator counts it
MASKED_LM_TYPES = {"bert"}
LEARNING_RATE = 1e-5  # any small value: the probe measures memory and time, not convergence


@dataclass
class Workload:
    """One model, optimizer and synthetic batch; ``step()`` runs one optimizer step."""

    scenario: Scenario
    model: torch.nn.Module
    optimizer: Any  # a torch.optim.Optimizer, or a dict of per-parameter optimizers (optimizer in backward)
    device: torch.device
    layers_built: int
    layers_full: int
    vocab_size: int
    autocast_dtype: torch.dtype | None
    scaler: Any = None
    masked_lm: bool = False
    accumulation: int = 1
    notes: list[str] = field(default_factory=list)
    before_micro_batch: Callable[[], None] | None = None  # e.g. MemTracker.reset_mod_stats (one pass at a time)

    @property
    def micro_batch_size(self) -> int:
        return self.scenario.training.micro_batch_size

    @property
    def seq_len(self) -> int:
        return self.scenario.training.seq_len

    @property
    def tokens_per_step(self) -> int:
        """Tokens of one optimizer step on this process."""
        return self.micro_batch_size * self.seq_len * self.accumulation

    @property
    def trainable_params(self) -> int:
        return sum(p.numel() for p in self.model.parameters() if p.requires_grad)

    @property
    def total_params(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    def batch(self) -> dict[str, torch.Tensor]:
        """A synthetic batch of random token ids (labels = inputs, as causal LM training shifts them)."""
        ids = torch.randint(0, self.vocab_size, (self.micro_batch_size, self.seq_len), device=self.device)
        return {"input_ids": ids, "labels": ids}

    def _autocast(self) -> contextlib.AbstractContextManager[Any]:
        if self.autocast_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=self.autocast_dtype)

    def forward_backward(self, batch: dict[str, torch.Tensor] | None = None) -> torch.Tensor:
        batch = batch if batch is not None else self.batch()
        with self._autocast():
            loss = self.model(**batch).loss
        (self.scaler.scale(loss) if self.scaler else loss).backward()
        return loss

    def optimizer_step(self) -> None:
        if isinstance(self.optimizer, dict):  # stepped inside backward already
            return
        if self.scaler:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)

    def run_step(self) -> torch.Tensor:
        """One optimizer step: ``accumulation`` micro-batches forward and backward, then the optimizer step and
        zero_grad. Returns the last loss without synchronising (fake tensors have no value)."""
        for _ in range(self.accumulation):
            if self.before_micro_batch is not None:
                self.before_micro_batch()
            loss = self.forward_backward()
        self.optimizer_step()
        return loss

    def step(self) -> float:
        """One full optimizer step (``run_step``); returns the loss as a float."""
        return float(self.run_step().detach())


def _attention_implementation(scenario: Scenario, device: torch.device) -> str:
    """flash -> flash_attention_2 where the flash-attn package is installed, else PyTorch SDPA (whose CUDA
    backend selects the FlashAttention-2 kernel for bf16/fp16, PyTorch SDPA docs); eager -> eager."""
    wanted = scenario.training.attention
    if wanted == "eager":
        return "eager"
    if wanted == "flash" and device.type == "cuda":
        import importlib.util

        if importlib.util.find_spec("flash_attn") is not None:
            return "flash_attention_2"
    return "sdpa"


@contextlib.contextmanager
def _default_dtype(dtype: torch.dtype) -> Iterator[None]:
    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(old)


def _load_dtype(scenario: Scenario) -> torch.dtype:
    """The dtype the weights are created in (see the module docstring)."""
    tr = scenario.training
    half = torch.float16 if tr.precision == "fp16-mixed" else torch.bfloat16
    if tr.precision == "fp32":
        return torch.float32
    if tr.precision == "bf16-true":
        return torch.bfloat16
    if tr.method in ("lora", "qlora", "freeze"):
        return half
    return torch.float32


def _build_model(scenario: Scenario, config: Any, device: torch.device) -> torch.nn.Module:
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM

    auto = AutoModelForMaskedLM if config.model_type in MASKED_LM_TYPES else AutoModelForCausalLM
    config._attn_implementation = _attention_implementation(scenario, device)
    # quantized bases are built on the CPU and quantized when moved to the device (bitsandbytes Params4bit)
    build_device = torch.device("cpu") if scenario.training.method == "qlora" else device
    with _default_dtype(_load_dtype(scenario)), build_device:
        model = auto.from_config(config, attn_implementation=config._attn_implementation)
    return model


def _quantize_linears(model: torch.nn.Module, scenario: Scenario, compute_dtype: torch.dtype) -> None:
    """Replace the base linears (not the output head) by bitsandbytes quantized linears (QLoRA)."""
    import bitsandbytes as bnb

    quant = scenario.training.quantization
    skip = {"lm_head", "score", "classifier"}
    for parent_name, parent in list(model.named_modules()):
        for child_name, child in list(parent.named_children()):
            if not isinstance(child, torch.nn.Linear) or child_name in skip:
                continue
            if quant == "int8":
                new: torch.nn.Module = bnb.nn.Linear8bitLt(child.in_features, child.out_features,
                                                           child.bias is not None, has_fp16_weights=False)
                new.weight = bnb.nn.Int8Params(child.weight.data, requires_grad=False, has_fp16_weights=False)
            else:
                quant_type = "nf4" if quant in ("nf4", "nf4-dq") else "fp4"
                new = bnb.nn.Linear4bit(child.in_features, child.out_features, child.bias is not None,
                                        compute_dtype=compute_dtype, compress_statistics=quant == "nf4-dq",
                                        quant_type=quant_type)
                new.weight = bnb.nn.Params4bit(child.weight.data, requires_grad=False, quant_type=quant_type,
                                               compress_statistics=quant == "nf4-dq")
            if child.bias is not None:
                new.bias = torch.nn.Parameter(child.bias.data, requires_grad=False)
            setattr(parent, child_name, new)
        del parent_name


def _apply_method(model: torch.nn.Module, scenario: Scenario, layers_built: int) -> torch.nn.Module:
    tr = scenario.training
    if tr.method == "full":
        return model
    if tr.method == "freeze":
        keep = min(tr.freeze_trainable_layers, layers_built)
        trainable = {str(i) for i in range(layers_built - keep, layers_built)}
        for name, param in model.named_parameters():
            parts = name.split(".")
            in_top_layer = any(parts[i] in ("layers", "h", "layer") and parts[i + 1] in trainable
                               for i in range(len(parts) - 1))
            param.requires_grad_(in_top_layer)
            if in_top_layer and tr.precision != "bf16-true":
                param.data = param.data.float()  # LLaMA-Factory upcasts the trainable layers to fp32
        return model
    from peft import LoraConfig, get_peft_model

    from trainsizer.estimate.training_state import PEFT_DEFAULT_TARGETS

    lora = tr.lora
    targets: Any = lora.targets if lora and lora.targets is not None else None
    if targets is None and scenario.model.preset is None and model.config.model_type in PEFT_DEFAULT_TARGETS:
        targets = PEFT_DEFAULT_TARGETS[model.config.model_type]
    config = LoraConfig(r=lora.rank if lora else 8, lora_alpha=lora.alpha if lora else 16,
                        lora_dropout=lora.dropout if lora else 0.05, target_modules=targets,
                        task_type="CAUSAL_LM" if model.config.model_type not in MASKED_LM_TYPES else None)
    try:
        return get_peft_model(model, config)
    except ValueError as exc:
        raise InputError("training.lora.targets", f"peft: {exc}") from None


def _optimizer(params: list[torch.nn.Parameter], name: str, zero_1: bool = False) -> Any:
    """The scenario's optimizer from torch (or bitsandbytes for the 8-bit, paged and Lion ones); with
    ``zero_1`` torch's ZeroRedundancyOptimizer shards its states over the data-parallel ranks."""
    if name in BNB_OPTIMIZERS:
        import bitsandbytes as bnb

        cls: Any = getattr(bnb.optim, BNB_OPTIMIZERS[name])
        kwargs: dict[str, Any] = {}
    elif name == "adamw":
        cls, kwargs = torch.optim.AdamW, {}
    elif name == "adafactor":
        cls, kwargs = torch.optim.Adafactor, {}
    elif name == "sgd-momentum":
        cls, kwargs = torch.optim.SGD, {"momentum": 0.9}
    else:
        cls, kwargs = torch.optim.SGD, {}
    if zero_1:
        from torch.distributed.optim import ZeroRedundancyOptimizer

        return ZeroRedundancyOptimizer(params, optimizer_class=cls, lr=LEARNING_RATE, **kwargs)
    return cls(params, lr=LEARNING_RATE, **kwargs)


def _optimizer_in_backward(model: torch.nn.Module, name: str) -> dict[torch.nn.Parameter, Any]:
    """One optimizer per parameter, stepped (and its gradient freed) as soon as the gradient is ready."""
    optimizers = {p: _optimizer([p], name) for p in model.parameters() if p.requires_grad}

    def hook(param: torch.Tensor) -> None:
        optimizers[param].step()  # type: ignore[index]
        optimizers[param].zero_grad(set_to_none=True)  # type: ignore[index]

    for p in optimizers:
        p.register_post_accumulate_grad_hook(hook)
    return optimizers


def _enable_checkpointing(model: torch.nn.Module, method: str) -> None:
    """Hugging Face's non-reentrant full activation checkpointing (module docstring)."""
    # transformers 5 renamed gradient_checkpointing_enable to activation_checkpointing_enable
    if hasattr(model, "activation_checkpointing_enable"):
        model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if method in ("lora", "qlora", "freeze"):
        model.enable_input_require_grads()  # checkpointed blocks need an input that requires grad


def _materialise_fake(model: torch.nn.Module, fake_mode: Any, dev: torch.device) -> None:
    # a module .to() swaps fake parameters (impossible while the mode holds a weak reference), so the
    # model is built on meta and given fresh fake storage once; tied weights are re-tied after
    with fake_mode:
        model.to_empty(device=dev)
    if hasattr(model, "tie_weights"):
        model.tie_weights()


def _notes(scenario: Scenario, layers: int | None, layers_full: int, accumulation: int) -> list[str]:
    notes = []
    if layers is not None and layers < layers_full:
        notes.append(f"scaled down to {layers} of {layers_full} layers")
    if accumulation < scenario.grad_accumulation_steps:
        notes.append(f"{accumulation} of the scenario's {scenario.grad_accumulation_steps} micro-batches per "
                     "optimizer step (the same peak; the case records what ran)")
    return notes


def build_workload(scenario: Scenario, device: str | torch.device = "cpu", layers: int | None = None,
                   wrap: Callable[[torch.nn.Module, Scenario], torch.nn.Module] | None = None,
                   multi_process: bool = False, fake_mode: Any = None) -> Workload:
    """Build the scenario's model (``layers`` decoder layers when scaled down), method, optimizer.

    ``wrap`` shards or replicates the model for data parallelism (DDP / FSDP) before the optimizer is
    built; the memory probe passes it when it runs under torchrun. With ``fake_mode`` (a FakeTensorMode)
    the model is built on the meta device and materialised as fake tensors: no memory is used, and the
    steps must then run inside that mode (the CPU simulation)."""
    from trainsizer.models.catalog import resolve_model

    check_supported(scenario, multi_process)
    if fake_mode is not None and scenario.training.method == "qlora":
        raise InputError("training.method", "qlora: bitsandbytes kernels cannot run on fake tensors; "
                         "simulate lora with the same rank instead, or run the probe for real")
    dev = torch.device(device)
    arch = resolve_model(scenario.model)
    config = transformers_config(scenario, layers)
    tr = scenario.training
    model = _build_model(scenario, config, torch.device("meta") if fake_mode is not None else dev)
    half = torch.float16 if tr.precision == "fp16-mixed" else torch.bfloat16
    if tr.method == "qlora":
        _quantize_linears(model, scenario, half)
        model = model.to(dev)  # quantizes the bitsandbytes weights
    if tr.activation_checkpointing == "full":
        _enable_checkpointing(model, tr.method)
    model = _apply_method(model, scenario, layers or arch.num_layers)
    model.train()
    if fake_mode is not None:
        _materialise_fake(model, fake_mode, dev)
    if wrap is not None:
        model = wrap(model, scenario)
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise InputError("training.method", f"{tr.method}: no trainable parameters in this model")
    with fake_mode if fake_mode is not None else contextlib.nullcontext():
        optimizer: Any = (_optimizer_in_backward(model, tr.optimizer) if tr.optimizer_in_backward
                          else _optimizer(params, tr.optimizer, multi_process and scenario.parallel.zero == 1))
    autocast = None if tr.precision in ("fp32", "bf16-true") else half
    if multi_process and scenario.parallel.zero >= 2:
        autocast = None  # FSDP's MixedPrecisionPolicy casts the gathered parameters instead
    scaler = None
    if tr.precision == "fp16-mixed" and not tr.optimizer_in_backward:
        scaler = torch.amp.GradScaler(dev.type)
    accumulation = probe_accumulation(scenario)
    notes = _notes(scenario, layers, arch.num_layers, accumulation)
    return Workload(scenario, model, optimizer, dev, layers or arch.num_layers, arch.num_layers,
                    int(config.vocab_size), autocast, scaler, config.model_type in MASKED_LM_TYPES, accumulation,
                    notes)
