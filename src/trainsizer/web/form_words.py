"""The form's choices in words: each select keeps the value the API takes (``lora``, ``bf16-true``) and shows a
name in the page's language (``FORM_CHOICES`` in render.py lists the values)."""

from __future__ import annotations

from typing import Any

from trainsizer.i18n import N_, tr

CHOICE_WORDS = {
    "methods": {"full": N_("full fine-tune"), "lora": N_("LoRA"), "qlora": N_("QLoRA (quantized base)"),
                "freeze": N_("freeze most layers")},
    "precisions": {"bf16-mixed": N_("BF16 mixed precision"), "bf16-true": N_("BF16 throughout"),
                   "fp16-mixed": N_("FP16 mixed precision"), "fp32": N_("FP32 single precision"),
                   "fp8-mixed": N_("FP8 mixed precision")},
    "optimizers": {"adamw": N_("AdamW"), "adamw-8bit": N_("AdamW, 8-bit states"),
                   "paged-adamw-8bit": N_("paged AdamW, 8-bit states"), "adafactor": N_("Adafactor"),
                   "sgd-momentum": N_("SGD with momentum"), "sgd": N_("SGD"), "lion": N_("Lion")},
    "checkpointing": {"none": N_("no recomputation"), "selective": N_("selective recomputation"),
                      "full": N_("full recomputation")},
    "quantizations": {"nf4": N_("NF4 4-bit"), "nf4-dq": N_("NF4 4-bit, double quantization"),
                      "int8": N_("INT8 8-bit"), "int4": N_("INT4 4-bit")},
    "lora_targets": {"all-linear": N_("all linear layers")},
}


def labelled(choices: dict[str, list[Any]], lang: str) -> dict[str, list[tuple[Any, str]]]:
    """Each select's options as (value, what the page shows)."""
    out: dict[str, list[tuple[Any, str]]] = {}
    for key, values in choices.items():
        words = CHOICE_WORDS.get(key, {})
        out[key] = [(v, tr(words[v], lang) if v in words else str(v)) for v in values]
    return out
