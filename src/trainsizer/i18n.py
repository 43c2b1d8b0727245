"""Labels in English and Chinese. The language comes from --lang, else from the locale."""

from __future__ import annotations

import locale
import os

from trainsizer.errors import InputError

LANGS = ("en", "zh-CN")

LABELS: dict[str, dict[str, str]] = {
    "title": {"en": "Per-GPU memory (most loaded GPU)", "zh-CN": "单卡显存（负载最重的 GPU）"},
    "scenario": {"en": "Scenario", "zh-CN": "场景"},
    "component": {"en": "Component", "zh-CN": "组成"},
    "gib": {"en": "GiB", "zh-CN": "GiB"},
    "why": {"en": "Where it comes from", "zh-CN": "来源与说明"},
    "allocated": {"en": "allocated (torch max_memory_allocated)", "zh-CN": "已分配（max_memory_allocated）"},
    "reserved": {"en": "reserved (allocator cache)", "zh-CN": "已预留（分配器缓存）"},
    "device": {"en": "device (nvidia-smi: + CUDA context, NCCL)", "zh-CN": "设备占用（nvidia-smi，含 CUDA 上下文）"},
    "capacity": {"en": "capacity", "zh-CN": "显存容量"},
    "fits": {"en": "FITS", "zh-CN": "可以放下"},
    "no_fit": {"en": "DOES NOT FIT", "zh-CN": "放不下"},
    "headroom": {"en": "headroom", "zh-CN": "余量"},
    "limits": {"en": "Largest that still fits", "zh-CN": "仍可放下的上限"},
    "max_mbs": {"en": "micro-batch (at this seq_len)", "zh-CN": "微批大小（当前序列长度）"},
    "max_seq": {"en": "sequence length (at this micro-batch)", "zh-CN": "序列长度（当前微批）"},
    "rule": {"en": "Seed guide's rule of thumb", "zh-CN": "指南中的经验公式"},
    "rule_value": {"en": "rule per GPU", "zh-CN": "经验公式（每卡）"},
    "estimate": {"en": "trainsizer per GPU", "zh-CN": "trainsizer 估算（每卡）"},
    "off_by": {"en": "off by", "zh-CN": "偏差"},
    "peak_phase": {"en": "peak during", "zh-CN": "峰值出现在"},
    "notes": {"en": "Notes", "zh-CN": "说明"},
    "nothing_fits": {"en": "not even 1", "zh-CN": "1 也放不下"},
    "validation": {"en": "Validation: predicted vs measured", "zh-CN": "验证：预测值与实测值"},
    "case": {"en": "case", "zh-CN": "案例"},
    "metric": {"en": "metric", "zh-CN": "指标"},
    "measured": {"en": "measured", "zh-CN": "实测"},
    "predicted": {"en": "predicted", "zh-CN": "预测"},
    "error": {"en": "error", "zh-CN": "误差"},
    "excluded": {"en": "excluded from fit", "zh-CN": "未参与拟合"},
}


def resolve_lang(lang: str | None) -> str:
    if lang is None:
        env = os.environ.get("LC_ALL") or os.environ.get("LANG") or (locale.getlocale()[0] or "")
        return "zh-CN" if env.lower().startswith("zh") else "en"
    if lang not in LANGS:
        raise InputError("--lang", f"{lang!r} is not accepted; accepted: {', '.join(LANGS)}")
    return lang


def t(key: str, lang: str) -> str:
    return LABELS[key][lang]
