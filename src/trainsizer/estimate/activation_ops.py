"""An activation function run as separate PyTorch ops: the element-wise traffic beyond a fused kernel's.

Hugging Face transformers' ``gelu_new`` (GPT-2's and phi's ``activation_function``) is the tanh approximation of
GELU written as eight PyTorch ops, ``0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 *
torch.pow(x, 3.0))))`` (huggingface/transformers ``src/transformers/activations.py`` @ v4.12.0, ``gelu_new``; the
same formula in ``NewGELUActivation`` since). In eager mode each op is a kernel that reads and writes the whole MLP
intermediate, and autograd runs each op's backward and sums the three gradients of ``x``; a fused GELU reads ``x``
and writes ``y`` once (forward) and reads ``x`` and ``dy`` and writes ``dx`` once (backward), the work the
element-wise term (``elementwise_bytes_per_saved_byte``) already prices. Under ``torch.cuda.amp`` autocast ``pow``
is on autocast's fp32 list (pytorch/pytorch ``aten/src/ATen/autocast_mode.cpp`` @ v1.10.0, ``KERNEL(..., pow, ...,
fp32)``), so the chain after it runs in fp32 and its result is cast back for the next matmul. Under torch.compile
Inductor fuses the chain into one kernel (Ansel et al. 2024, "PyTorch 2", ASPLOS, section 5): no extra traffic.
HBM bytes per intermediate element, op by op: ``performance_model.yaml`` ``unfused_activation_extra_bytes``.
"""

from __future__ import annotations

from typing import Any

from trainsizer.estimate.model_params import PerformanceModel
from trainsizer.models.architecture import Architecture
from trainsizer.scenario import Scenario

MIXED = ("fp16-mixed", "bf16-mixed")  # autocast's precisions: fp32 weights, 16-bit compute


def unfused_width(scenario: Scenario, arch: Architecture) -> float:
    """Intermediate elements per token per layer (before tp) that an unfused activation runs over; 0 where the
    activation is fused (``training.activation_kernel: fused``, the default) or compiled."""
    tr = scenario.training
    if tr.activation_kernel != "unfused" or tr.compile:
        return 0.0
    if arch.moe:  # the routed experts each token visits and the shared expert
        return float(arch.moe.experts_per_token * arch.moe.expert_intermediate_size
                     + (arch.moe.shared_intermediate_size or 0))
    return float(arch.intermediate_size)


def extra_bytes(params: PerformanceModel, precision: str, autocast: bool) -> tuple[float, float]:
    """(forward, backward) HBM bytes per intermediate element beyond a fused kernel's: fp32 training, the chain
    under autocast (mixed precision with ``training.autocast``), or 16-bit tensors throughout."""
    table = params.memory_bound.unfused_activation_extra_bytes
    key = "fp32" if precision == "fp32" else ("autocast" if autocast and precision in MIXED else "16-bit")
    return float(table["forward"][key]), float(table["backward"][key])


def activation_ops_s(elements: Any, forward_b: float, backward_b: float, recomputed: Any, hbm: float) -> Any:
    """Seconds of one micro-batch's extra activation traffic over ``elements`` intermediate elements (layers x
    tokens x width on one GPU): the forward chain once more where backward recomputes it. Floats or arrays (the
    planner's screen prices every layout with it)."""
    return elements * (forward_b * (1.0 + recomputed) + backward_b) / hbm


def activation_ops_mb(ctx: Any, recomputed: Any) -> Any:
    """:func:`activation_ops_s` of one micro-batch on one GPU of each layout of ``ctx`` (tp splits the intermediate);
    ``ctx`` is the step's ``step_terms.StepContext``."""
    width = unfused_width(ctx.scenario, ctx.arch)
    if not width:
        return 0.0
    tr = ctx.scenario.training
    forward_b, backward_b = extra_bytes(ctx.params, tr.precision, tr.autocast)
    elements = ctx.layers_per_stage * ctx.local_tokens * width / ctx.layout.tp
    return activation_ops_s(elements, forward_b, backward_b, recomputed, ctx.hbm_bytes_per_s)
