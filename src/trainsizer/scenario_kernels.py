"""Scenario extensions that say how the framework runs the model's kernels between steps and within a layer: the
fields ``trainsizer.scenario.TrainingSpec`` takes from :class:`KernelSettings` (docs/guide-scenarios.md, "Extensions";
validation/FORMAT.md). Their effects: ``trainsizer.estimate.activation_ops`` (step time), ``zero_grad`` in
``trainsizer.estimate.memory`` (gradients between steps), ``liger_kernel`` in ``trainsizer.estimate.activations``
(the loss's logits)."""

# Annotations stay objects here (no `from __future__ import annotations`): pydantic reads each field's type as
# is, without compiling its text into a ForwardRef first (~0.1 ms a model class, at every command's import).

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, Strict

# Megatron-Core's selective recomputation modules (megatron/core/transformer/transformer_config.py
# @ d98e8a64ddf34856e74b24714e3bedb2f5a39553, TransformerConfig.recompute_modules; the linear-attention ones left out)
RecomputeModule = Literal["core_attn", "layernorm", "mla_up_proj", "mlp", "moe", "moe_act", "shared_experts"]


class KernelSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True, allow_inf_nan=False)

    zero_grad: Literal["none", "zeros"] = Field(
        "none", description="extension: gradients between steps (docs/guide-scenarios.md)")
    activation_kernel: Literal["fused", "unfused"] = Field(
        "fused", description="extension: how the MLP activation runs: 'fused' = one kernel (PyTorch's F.gelu / "
        "silu, Megatron's bias-GELU fusion, anything under torch.compile); 'unfused' = written as separate PyTorch "
        "element-wise ops, each reading and writing the whole intermediate (Hugging Face transformers' gelu_new / "
        "NewGELUActivation, the activation of GPT-2 and phi)")
    autocast: Annotated[bool, Strict()] = Field(
        False, description="extension (precision fp16-mixed / bf16-mixed): the mixed precision is torch.cuda.amp "
        "autocast over fp32 module weights (Hugging Face Trainer --fp16 / --bf16 without DeepSpeed, plain PyTorch "
        "AMP), which runs the ops of autocast's fp32 list (pow, softmax, layer_norm, ...) in fp32 and casts only the "
        "linears' weights to 16 bits; false = 16-bit weights and activations (DeepSpeed's fp16 / bf16 engine, "
        "Megatron, apex O2)")
    liger_kernel: Annotated[bool, Strict()] = Field(
        False, description="the run turns on Liger Kernel (LLaMA-Factory enable_liger_kernel, ms-swift and Hugging "
        "Face Trainer use_liger_kernel): its fused linear cross-entropy computes the loss chunk by chunk, so no "
        "whole logits are held (training.loss standard is read as chunked); its fused RMSNorm, RoPE and SwiGLU "
        "kernels are not priced apart")
    recompute_modules: tuple[RecomputeModule, ...] | None = Field(
        None, description="extension (activation_checkpointing selective): the modules Megatron-Core's selective "
        "recomputation runs again in backward (--recompute-modules): 'core_attn' the attention core, 'layernorm' "
        "the norms feeding attention and the MLP, 'mla_up_proj' MLA's up projections, 'mlp' a dense layer's MLP, "
        "'moe' a whole MoE layer (router, dispatch, experts, combine), 'moe_act' the experts' activation, "
        "'shared_experts'; default: ['core_attn']; read under selective only, as Megatron reads it")


class CommSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True, allow_inf_nan=False)

    overlap_grad_reduce: Annotated[bool, Strict()] = Field(
        True, description="extension: the data-parallel gradient reduction runs beside backward (PyTorch DDP's "
        "buckets, Megatron --overlap-grad-reduce, DeepSpeed overlap_comm: true); false: the step waits for all of it "
        "(DeepSpeed ZeRO-1/2 with overlap_comm left at its default false, DeepSpeed's engine without ZeRO)")
    tp_comm_overlap: Annotated[bool, Strict()] = Field(
        False, description="extension: the tensor-parallel collectives are chunked and pipelined with the GEMMs that "
        "produce or consume them (Megatron --tp-comm-overlap, NeMo tp_comm_overlap: Transformer Engine userbuffers; "
        "needs sequence parallelism); false: Megatron's default schedule, where only the backward input-gradient "
        "collectives run beside a GEMM (estimate/tp_schedule.py)")
