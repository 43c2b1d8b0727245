"""Every bad input is refused with one clear line (issue 13): a corpus of bad scenario files (one bad field each),
bad flags, output paths into missing folders and GPU probes without a GPU, each run through the real CLI entry
point (``trainsizer.cli.main``, in-process: the same code path as the console script). Each must exit 2 with
exactly one output line that names the field (and the file, for a scenario file), no traceback, and no file
written. Entries whose fix belongs to a module this corpus does not own are strict xfails naming what is
needed, so they turn green (and then fail as XPASS) once fixed. Every --json output is finite JSON."""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from trainsizer.cli import main
from trainsizer.report.message_text import text as _text

TORCH = importlib.util.find_spec("torch") is not None and importlib.util.find_spec("transformers") is not None

BASE: dict[str, Any] = {
    "model": {"preset": "llama-3.2-1b"},
    "training": {"method": "full", "micro_batch_size": 1, "seq_len": 2048},
    "parallel": {"gpus": 1},
    "hardware": {"gpu": "h100-sxm5-80gb"},
}
TINY_ARCH = {"model_type": "llama", "hidden_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4,
             "num_key_value_heads": 2, "intermediate_size": 256, "vocab_size": 512}
MOE_ARCH = {"model_type": "mixtral", "hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
            "intermediate_size": 256, "vocab_size": 512, "num_local_experts": 8, "num_experts_per_tok": 2}
INLINE_GPU = {"name": "my-gpu", "memory_gib": 80}
PLAN_JOB = {"model": {"preset": "qwen2.5-0.5b"},
            "training": {"method": "lora", "micro_batch_size": 1, "seq_len": 1024, "tokens": 1.0e+8}}
PLAN = ["plan", "{tmp}/job.yaml", "--gpu", "rtx-4090-24gb", "--max-gpus", "4"]
REPORT = ["report", "{tmp}/job.yaml", "--gpu", "rtx-4090-24gb", "--max-gpus", "4"]
EST = ["estimate", "{tmp}/job.yaml"]
FLAGS = ["estimate", "--model", "llama-3.2-1b", "--method", "lora", "--gpu", "h100-sxm5-80gb"]
SHIPPED_LINK = {"id": "pcie4", "name": "PCIe 4.0 x16", "scope": "pcie", "per_direction_gbps": 32,
                "source": "test", "as_of": "2026-01-01"}
SHIPPED_GPU = {"id": "my-npu", "name": "My NPU", "memory_gib": 32, "source": "vendor", "as_of": "2026-12-01"}
QUOTE = {"name": "offer", "gpu": "rtx-4090-24gb", "gpus_per_server": 8, "price": 1.98, "unit": "gpu-hour",
         "currency": "CNY", "billing": "per-second", "topology": "pcie"}
SITE = {"id": "my-room", "name": "My room", "rack_power_kw": 10, "cooling": "air", "max_air_kw_per_rack": 10,
        "pue": 1.5, "electricity_price": 0.8, "rack_rent_per_month": 5000, "currency": "CNY", "source": "us",
        "as_of": "2026-01-01"}


@dataclass
class Bad:
    id: str
    args: list[str]
    field: str
    job: dict[str, Any] | str | None = None  # written to {tmp}/job.yaml (a dict as YAML, a str as is)
    files: dict[str, Any] = field(default_factory=dict)  # more files under {tmp} (dicts/lists as YAML)
    names_file: bool = False  # the line must name {tmp}/job.yaml too
    names: str | None = None  # the line must name this file too (a data file: {tmp}/cat.yaml, ...)
    xfail: str | None = None
    torch: bool = False  # a probe: needs torch / transformers installed

    def param(self) -> Any:
        marks = []
        if self.xfail:
            marks.append(pytest.mark.xfail(reason=self.xfail, strict=True))
        if self.torch:
            marks.append(pytest.mark.skipif(not TORCH, reason="needs the [probe] extra"))
        return pytest.param(self, id=self.id, marks=marks)


def job(path: str, value: Any, base: dict[str, Any] | None = None) -> dict[str, Any]:
    """BASE (or ``base``) with one dotted key set (``None`` removes it)."""
    data = copy.deepcopy(base or BASE)
    *parents, key = path.split(".")
    target = data
    for p in parents:
        target = target.setdefault(p, {})
    if value is None:
        target.pop(key, None)
    else:
        target[key] = value
    return data


def scenario(id: str, path: str, value: Any, field_name: str | None = None, base: dict[str, Any] | None = None,
             **kw: Any) -> Bad:
    """One bad field in an otherwise valid scenario file, through `trainsizer estimate FILE`."""
    return Bad(id, EST, field_name or path, job(path, value, base), names_file=kw.pop("names_file", True), **kw)


def raw(id: str, text: str, field_name: str = "scenario", **kw: Any) -> Bad:
    return Bad(id, EST, field_name, text, names_file=kw.pop("names_file", True), **kw)


def layout(id: str, field_name: str, **changes: Any) -> Bad:
    data = copy.deepcopy(BASE)
    for dotted, value in changes.items():
        section, key = dotted.split("__")
        data[section][key] = value
    return Bad(id, EST, field_name, data, names_file=False)


LORA = job("training.method", "lora")
FREEZE = job("training.method", "freeze")
INLINE = job("hardware.gpu", INLINE_GPU)

CAT, QUOTES, PRICES, SITES, CAL, CASES = ("{tmp}/cat.yaml", "{tmp}/q.yaml", "{tmp}/p.yaml", "{tmp}/s.yaml",
                                          "{tmp}/cal.yaml", "{tmp}/cases.yaml")
ROW = {"source": "us", "as_of": "2026-01-01"}
SERVER_ROW = {"id": "mine", "gpu": "rtx-4090-24gb", "gpus": 8, "price": 100000, "currency": "CNY", **ROW}
CARD_ROW = {"gpu": "rtx-4090-24gb", "price": 15000, "currency": "CNY", **ROW}
RENTAL_ROW = {"provider": "us", "gpu": "rtx-4090-24gb", "price_per_gpu_hour": 2.0, "currency": "CNY", **ROW}
FX_ROW = {"pair": "USD/CNY", "rate": 7.1, **ROW}
CASE = {"id": "c1", "scenario": BASE, "measured": {"memory_gib": 30.0, "memory_metric": "allocated"}}


def with_key(base: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    """``base`` with one dotted key set (``None`` removes it), as ``job`` does for scenarios."""
    return job(dotted, value, base)


def gpu_entry(id: str, dotted: str, value: Any, field_name: str | None = None) -> Bad:
    """A user catalog with one GPU entry that has one bad field, listed by `trainsizer catalog gpus`."""
    return Bad(id, ["catalog", "gpus", "--catalog", CAT], field_name or dotted,
               files={"cat.yaml": {"accelerators": [with_key(SHIPPED_GPU, dotted, value)]}}, names=CAT)


def link_entry(id: str, dotted: str, value: Any, field_name: str | None = None) -> Bad:
    return Bad(id, ["catalog", "links", "--catalog", CAT], field_name or dotted,
               files={"cat.yaml": {"links": [with_key(SHIPPED_LINK, dotted, value)]}}, names=CAT)


def quote(id: str, dotted: str, value: Any, field_name: str | None = None) -> Bad:
    return Bad(id, ["quotes", QUOTES, "--json"], field_name or dotted,
               files={"q.yaml": {"quotes": [with_key(QUOTE, dotted, value)]}}, names=QUOTES)


def prices(id: str, data: dict[str, Any], field_name: str) -> Bad:
    """A user prices file (``--prices``) read by `trainsizer quotes` (no job: no planning before the check)."""
    return Bad(id, ["quotes", QUOTES, "--prices", PRICES], field_name,
               files={"q.yaml": {"quotes": [QUOTE]}, "p.yaml": data}, names=PRICES)


def site(id: str, dotted: str, value: Any, field_name: str | None = None) -> Bad:
    return Bad(id, ["catalog", "sites", "--sites", SITES], field_name or dotted,
               files={"s.yaml": {"sites": [with_key(SITE, dotted, value)]}}, names=SITES)


def calibration(id: str, profile: Any, field_name: str) -> Bad:
    return Bad(id, [*EST, "--calibration", CAL], field_name, BASE, files={"cal.yaml": profile}, names=CAL)


def measured(id: str, dotted: str, value: Any, field_name: str | None = None) -> Bad:
    """A case file whose one case has one bad ``measured`` field, replayed by `trainsizer validate`."""
    return Bad(id, ["validate", CASES], field_name or dotted,
               files={"cases.yaml": [with_key(CASE, dotted, value)]}, names=CASES)


CORPUS = [
    # --- types: a bool, a float or a string where a count goes ----------------------------------------------
    scenario("mbs-true", "training.micro_batch_size", True),
    scenario("mbs-float", "training.micro_batch_size", 2.0),
    scenario("mbs-string", "training.micro_batch_size", "4"),
    scenario("seq-false", "training.seq_len", False),
    scenario("seq-fraction", "training.seq_len", 1.5),
    scenario("gbs-true", "training.global_batch_size", True),
    scenario("gpus-true", "parallel.gpus", True),
    scenario("gpus-fraction", "parallel.gpus", 1.5),
    scenario("tp-true", "parallel.tp", True),
    scenario("pp-string", "parallel.pp", "2"),
    scenario("cp-float", "parallel.cp", 2.0),
    scenario("virtual-pp-true", "parallel.virtual_pp", True),
    scenario("ep-false", "parallel.ep", False),
    scenario("zero-true", "parallel.zero", True),
    scenario("zero-string", "parallel.zero", "1"),
    scenario("sequence-parallel-int", "parallel.sequence_parallel", 1),
    scenario("sequence-parallel-yes-string", "parallel.sequence_parallel", "yes"),
    scenario("distributed-optimizer-int", "parallel.distributed_optimizer", 0),
    scenario("optimizer-in-backward-string", "training.optimizer_in_backward", "true"),
    scenario("gpus-per-node-true", "hardware.gpus_per_node", True),
    scenario("nics-per-node-fraction", "hardware.nics_per_node", 8.5),
    scenario("lora-rank-true", "training.lora.rank", True, base=LORA),
    scenario("lora-alpha-true", "training.lora.alpha", True, base=LORA),
    scenario("freeze-layers-true", "training.freeze_trainable_layers", True, base=FREEZE),
    scenario("tokens-true", "training.tokens", True),
    scenario("preset-number", "model.preset", 8),
    scenario("inline-gpu-memory-true", "hardware.gpu.memory_gib", True, base=INLINE),
    # --- the data shape (scenario_data.py) and trainsizer data-shape ---------------------------------------------
    scenario("data-packing-string", "data.packing", "yes"),
    scenario("data-padding-unknown", "data.padding", "max"),
    scenario("data-mean-true", "data.mean_tokens", True, base=job("data", {"max_tokens": 100})),
    scenario("data-mean-over-max", "data.mean_tokens", 500, base=job("data", {"max_tokens": 100})),
    scenario("data-max-zero", "data.max_tokens", 0, base=job("data", {"mean_tokens": 10})),
    scenario("data-lengths-missing", "data.mean_tokens", None, base=job("data", {"max_tokens": 100})),
    scenario("data-histogram-descending", "data.length_histogram",
             [{"up_to": 100, "samples": 1}, {"up_to": 50, "samples": 1}]),
    scenario("data-histogram-empty", "data.length_histogram", [{"up_to": 100, "samples": 0}]),
    scenario("data-histogram-mapping", "data.length_histogram", {"up_to": 100, "samples": 3}),
    scenario("data-histogram-bin-key", "data.length_histogram", [{"up_to": 100, "count": 1}],
             field_name="data.length_histogram.0."),
    scenario("data-documents-unpacked", "data.per_document_attention", True,
             base=job("data", {"mean_tokens": 10, "max_tokens": 100})),
    scenario("data-and-sequence-lengths", "training.sequence_lengths", "variable",
             base=job("data", {"mean_tokens": 10, "max_tokens": 100})),
    Bad("data-shape-not-json", ["data-shape", "{tmp}/d.jsonl", "--chars-per-token", "4"], "d.jsonl:2",
        files={"d.jsonl": '{"text": "a"}\nnot json\n'}),
    Bad("data-shape-no-text", ["data-shape", "{tmp}/d.jsonl", "--chars-per-token", "4"], "d.jsonl:1",
        files={"d.jsonl": '{"prompt": 3}\n'}),
    Bad("data-shape-empty", ["data-shape", "{tmp}/d.jsonl", "--chars-per-token", "4"], "d.jsonl",
        files={"d.jsonl": "\n"}),
    Bad("data-shape-deep", ["data-shape", "{tmp}/d.jsonl", "--chars-per-token", "4"], "d.jsonl:1",
        files={"d.jsonl": "[" * 100_000 + "\n"}),
    Bad("data-shape-ratio", ["data-shape", "{tmp}/d.jsonl", "--chars-per-token", "0"], "--chars-per-token",
        files={"d.jsonl": '{"text": "a"}\n'}),
    Bad("data-shape-missing-file", ["data-shape", "{tmp}/none.jsonl", "--chars-per-token", "4"], "none.jsonl"),
    Bad("data-shape-no-model", ["data-shape", "{tmp}/d.jsonl"], "--model", files={"d.jsonl": '{"text": "a"}\n'}),
    # --- NaN and infinity -------------------------------------------------------------------------------------
    scenario("tokens-nan", "training.tokens", float("nan")),
    scenario("tokens-inf", "training.tokens", float("inf")),
    scenario("tokens-minus-inf", "training.tokens", float("-inf")),
    scenario("tokens-nan-string", "training.tokens", "nan"),
    scenario("seq-nan", "training.seq_len", float("nan")),
    scenario("lora-alpha-nan", "training.lora.alpha", float("nan"), base=LORA),
    scenario("lora-alpha-inf", "training.lora.alpha", float("inf"), base=LORA),
    scenario("lora-dropout-nan", "training.lora.dropout", float("nan"), base=LORA),
    scenario("inline-memory-nan", "hardware.gpu.memory_gib", float("nan"), base=INLINE),
    scenario("inline-memory-inf", "hardware.gpu.memory_gib", float("inf"), base=INLINE),
    scenario("inline-bf16-inf", "hardware.gpu.bf16_tflops", float("inf"), base=INLINE),
    scenario("inline-hbm-nan", "hardware.gpu.hbm_gbps", float("nan"), base=INLINE),
    # --- out of physical range ----------------------------------------------------------------------------------
    scenario("mbs-zero", "training.micro_batch_size", 0),
    scenario("mbs-negative", "training.micro_batch_size", -1),
    scenario("seq-zero", "training.seq_len", 0),
    scenario("seq-huge", "training.seq_len", 10**12),
    scenario("gpus-zero", "parallel.gpus", 0),
    scenario("gpus-negative", "parallel.gpus", -8),
    scenario("gpus-huge", "parallel.gpus", 2_000_000),
    scenario("tp-zero", "parallel.tp", 0),
    scenario("zero-four", "parallel.zero", 4),
    scenario("zero-negative", "parallel.zero", -1),
    scenario("gbs-zero", "training.global_batch_size", 0),
    scenario("tokens-negative", "training.tokens", -1),
    scenario("tokens-zero", "training.tokens", 0),
    scenario("tokens-huge", "training.tokens", 1e17),
    scenario("lora-rank-zero", "training.lora.rank", 0, base=LORA),
    scenario("lora-alpha-negative", "training.lora.alpha", -1, base=LORA),
    scenario("lora-dropout-one", "training.lora.dropout", 1.0, base=LORA),
    scenario("lora-dropout-negative", "training.lora.dropout", -0.1, base=LORA),
    scenario("inline-memory-zero", "hardware.gpu.memory_gib", 0, base=INLINE),
    scenario("inline-memory-negative", "hardware.gpu.memory_gib", -80, base=INLINE),
    scenario("inline-tdp-huge", "hardware.gpu.tdp_w", 1e9, base=INLINE),
    scenario("gpus-per-node-zero", "hardware.gpus_per_node", 0),
    scenario("nics-per-node-huge", "hardware.nics_per_node", 100),
    scenario("freeze-layers-zero", "training.freeze_trainable_layers", 0, base=FREEZE),
    # --- unknown keys and typos (the closest key is named) ---------------------------------------------------------
    scenario("typo-micro-batch", "training.micro_batch", 1),
    scenario("typo-seqlen", "training.seqlen", 1024),
    scenario("typo-zero-stage", "parallel.zero_stage", 3),
    scenario("typo-gpu-id", "hardware.gpu_id", "h100-sxm5-80gb"),
    scenario("typo-section", "trainig", {"method": "full"}),
    scenario("typo-presets", "model.presets", "llama-3.2-1b", field_name="model"),
    scenario("typo-lora-ranks", "training.lora.ranks", 8, base=LORA),
    scenario("typo-inline-memory-gb", "hardware.gpu.memory_gb", 80, base=job("hardware.gpu", {"name": "x",
                                                                                             "memory_gib": 80})),
    # --- closed enums ------------------------------------------------------------------------------------------
    scenario("method-typo", "training.method", "lorra"),
    scenario("method-pretrain", "training.method", "pretrain"),  # pre-training is method full
    scenario("method-number", "training.method", 1),
    scenario("precision-bf16", "training.precision", "bf16"),
    scenario("optimizer-adam", "training.optimizer", "adam"),
    scenario("checkpointing-partial", "training.activation_checkpointing", "partial"),
    scenario("attention-flash2", "training.attention", "flash2"),
    scenario("quantization-fp4", "training.quantization", "fp4", base=job("training.method", "qlora")),
    scenario("offload-cpu", "parallel.offload", "cpu"),
    scenario("loss-fused", "training.loss", "fused"),
    # --- duplicate keys -------------------------------------------------------------------------------------------
    raw("duplicate-model", "model: {preset: llama-3.2-1b}\nmodel: {preset: qwen2.5-0.5b}\n"
                           "training: {method: full, micro_batch_size: 1, seq_len: 128}\n"),
    raw("duplicate-method", "model: {preset: llama-3.2-1b}\ntraining:\n  method: full\n  micro_batch_size: 1\n"
                            "  method: lora\n  seq_len: 128\nparallel: {gpus: 1}\nhardware: {gpu: h100-sxm5-80gb}\n"),
    raw("duplicate-gpus", "model: {preset: llama-3.2-1b}\ntraining: {method: full, micro_batch_size: 1, seq_len: 128}\n"
                          "parallel: {gpus: 1, gpus: 8}\nhardware: {gpu: h100-sxm5-80gb}\n"),
    raw("duplicate-lora-rank", "model: {preset: llama-3.2-1b}\ntraining:\n  method: lora\n  micro_batch_size: 1\n"
                               "  seq_len: 128\n  lora:\n    rank: 8\n    rank: 16\nparallel: {gpus: 1}\n"
                               "hardware: {gpu: h100-sxm5-80gb}\n"),
    # --- malformed YAML ----------------------------------------------------------------------------------------
    raw("yaml-unclosed-bracket", "model:\n  preset: [llama\ntraining: {}\n"),
    raw("yaml-tab-indent", "model:\n\tpreset: llama-3.2-1b\n"),
    raw("yaml-top-level-list", "- model\n- training\n"),
    raw("yaml-empty", ""),
    raw("yaml-scalar", "hello\n"),
    raw("yaml-python-tag", "model: !!python/object:os.system {}\n"),
    Bad("yaml-not-utf8", EST, "scenario", None, files={"job.yaml": b"model: {preset: \xff\xfe}\n"}, names_file=True),
    Bad("scenario-missing-file", ["estimate", "{tmp}/nothing.yaml"], "scenario"),
    scenario("section-not-mapping", "training", "full", field_name="training"),
    scenario("required-missing", "training.micro_batch_size", None),
    # --- unknown ids (the closest ones and the catalog command, never the whole list) -------------------------------
    scenario("preset-typo", "model.preset", "llama-3-8b"),
    scenario("preset-unknown", "model.preset", "gpt-5"),
    scenario("gpu-prefix", "hardware.gpu", "h100", names_file=False),
    scenario("gpu-unknown", "hardware.gpu", "rtx-9090", names_file=False),
    scenario("gpu-unknown-names-file", "hardware.gpu", "rtx-9090"),
    scenario("intra-node-unknown", "hardware.intra_node", "nvlink9", names_file=False),
    scenario("inter-node-unknown", "hardware.inter_node", "ib-xyz", names_file=False, base=job("parallel.gpus", 16)),
    scenario("model-empty", "model", {}, field_name="model"),
    scenario("model-two-sources", "model", {"preset": "llama-3.2-1b", "hf_config": "x.json"}, field_name="model"),
    scenario("hf-config-missing", "model", {"hf_config": "missing/config.json"}, field_name="model.hf_config",
             names_file=False),
    # --- architectures ------------------------------------------------------------------------------------------
    scenario("moe-zero-experts", "model", {"architecture": {**MOE_ARCH, "num_local_experts": 0}},
             field_name="model.architecture.num_local_experts"),
    scenario("moe-more-active-than-experts", "model", {"architecture": {**MOE_ARCH, "num_experts_per_tok": 9}},
             field_name="model.architecture.num_experts_per_tok"),
    scenario("arch-hidden-true", "model", {"architecture": {**TINY_ARCH, "hidden_size": True}},
             field_name="model.architecture.hidden_size"),
    scenario("arch-layers-negative", "model", {"architecture": {**TINY_ARCH, "num_hidden_layers": -2}},
             field_name="model.architecture.num_hidden_layers"),
    scenario("arch-heads-do-not-divide", "model", {"architecture": {**TINY_ARCH, "num_attention_heads": 3}},
             field_name="model.architecture.num_"),
    scenario("arch-unknown-type", "model", {"architecture": {**TINY_ARCH, "model_type": "transformer-9000"}},
             field_name="model.architecture.model_type"),
    # --- layouts that do not divide -------------------------------------------------------------------------------
    layout("tp-does-not-divide-gpus", "parallel.gpus", parallel__gpus=8, parallel__tp=3),
    layout("tp-does-not-divide-heads", "parallel.tp", parallel__gpus=3, parallel__tp=3),
    layout("pp-above-layers", "parallel.pp", parallel__gpus=64, parallel__pp=64),
    layout("cp-does-not-divide-seq", "parallel.cp", parallel__gpus=2, parallel__cp=2, training__seq_len=1001),
    layout("zero3-with-pp", "parallel.zero", parallel__gpus=4, parallel__pp=2, parallel__zero=3),
    layout("gbs-not-a-multiple", "training.global_batch_size", parallel__gpus=2, training__global_batch_size=3),
    layout("gpus-per-node-does-not-divide", "hardware.gpus_per_node", parallel__gpus=16, hardware__gpus_per_node=3),
    layout("ep-does-not-divide-dp", "parallel.ep", parallel__gpus=8, parallel__ep=3),
    layout("ep-under-a-framework-without-it", "parallel.ep", model__preset="deepseek-v2-lite", parallel__gpus=8,
           parallel__ep=2, training__framework="llama-factory"),
    layout("virtual-pp-without-pp", "parallel.virtual_pp", parallel__virtual_pp=2),
    layout("param-offload-without-zero3", "parallel.offload", parallel__gpus=2, parallel__zero=1,
           parallel__offload="optimizer+params"),
    layout("quantization-without-qlora", "training.quantization", training__method="lora",
           training__quantization="nf4"),
    # --- flags: NaN, infinity, negative, zero ------------------------------------------------------------------
    # a misspelt required key is named as the unknown key it is (with its suggestion), not as the missing one
    Bad("plan-required-key-misspelt", PLAN, "training.seq_lenght: unknown key (did you mean 'seq_len'?)",
        {**PLAN_JOB, "training": {"method": "lora", "micro_batch_size": 1, "seq_lenght": 1024, "tokens": 1.0e+8}},
        names_file=True),
    Bad("estimate-required-key-misspelt", EST, "training.seq_lenght: unknown key (did you mean 'seq_len'?)",
        {**BASE, "training": {"method": "full", "micro_batch_size": 1, "seq_lenght": 2048}}, names_file=True),
    # the job's own GPU id is checked like --gpu's, whether or not --gpu narrows the search
    Bad("plan-job-gpu-unknown", ["plan", "{tmp}/job.yaml", "--max-gpus", "4"],
        "hardware.gpu: unknown id 'h100-sxm-80gb'; did you mean h100-sxm5-80gb",
        {**PLAN_JOB, "hardware": {"gpu": "h100-sxm-80gb"}}, names_file=True),
    Bad("plan-job-gpu-unknown-with-flag", PLAN, "hardware.gpu: unknown id 'h100-sxm-80gb'; did you mean h100-sxm5-80gb",
        {**PLAN_JOB, "hardware": {"gpu": "h100-sxm-80gb"}}, names_file=True),
    Bad("plan-deadline-nan", [*PLAN, "--deadline", "nan"], "--deadline", PLAN_JOB),
    Bad("plan-deadline-inf", [*PLAN, "--deadline", "inf"], "--deadline", PLAN_JOB),
    Bad("plan-deadline-inf-days", [*PLAN, "--deadline", "infd"], "--deadline", PLAN_JOB),
    Bad("plan-deadline-negative", [*PLAN, "--deadline", "-1d"], "--deadline", PLAN_JOB),
    Bad("plan-deadline-zero", [*PLAN, "--deadline", "0"], "--deadline", PLAN_JOB),
    Bad("plan-deadline-garbage", [*PLAN, "--deadline", "7x"], "--deadline", PLAN_JOB),
    Bad("plan-deadline-no-unit", [*PLAN, "--deadline", "30"], "--deadline", PLAN_JOB),  # 30 days or 30 seconds?
    Bad("plan-time-value-negative", [*PLAN, "--time-value", "-1"], "--time-value", PLAN_JOB),
    Bad("plan-time-value-nan", [*PLAN, "--time-value", "nan"], "--time-value", PLAN_JOB),
    Bad("plan-budget-nan", [*PLAN, "--budget", "nan"], "--budget", PLAN_JOB),
    Bad("plan-budget-inf", [*PLAN, "--budget", "inf"], "--budget", PLAN_JOB),
    Bad("plan-budget-negative", [*PLAN, "--budget", "-5"], "--budget", PLAN_JOB),
    Bad("plan-budget-zero", [*PLAN, "--budget", "0"], "--budget", PLAN_JOB),
    Bad("plan-max-gpus-zero", [*PLAN, "--max-gpus", "0"], "--max-gpus", PLAN_JOB),
    Bad("plan-max-gpus-negative", [*PLAN, "--max-gpus", "-1"], "--max-gpus", PLAN_JOB),
    Bad("plan-top-zero", [*PLAN, "--top", "0"], "--top", PLAN_JOB),
    Bad("plan-top-negative", [*PLAN, "--top", "-3"], "--top", PLAN_JOB),
    Bad("plan-horizon-nan", [*PLAN, "--horizon", "nan"], "--horizon", PLAN_JOB),
    Bad("plan-horizon-inf", [*PLAN, "--horizon", "inf"], "--horizon", PLAN_JOB),
    Bad("plan-utilisation-zero", [*PLAN, "--utilisation", "0"], "--utilisation", PLAN_JOB),
    Bad("plan-utilisation-nan", [*PLAN, "--utilisation", "nan"], "--utilisation", PLAN_JOB),
    Bad("plan-gpus-per-node-three", [*PLAN, "--gpus-per-node", "3"], "--gpus-per-node", PLAN_JOB),
    Bad("plan-currency", [*PLAN, "--currency", "EUR"], "--currency", PLAN_JOB),
    Bad("plan-site-unknown", [*PLAN, "--site", "the-moon"], "--site", PLAN_JOB),
    Bad("plan-gpu-unknown", ["plan", "{tmp}/job.yaml", "--gpu", "h100"], "--gpu", PLAN_JOB),
    Bad("report-deadline-nan", [*REPORT, "--deadline", "nan", "--out", "{tmp}/r.html"], "--deadline", PLAN_JOB),
    Bad("report-budget-inf", [*REPORT, "--budget", "inf", "--out", "{tmp}/r.html"], "--budget", PLAN_JOB),
    Bad("scale-max-gpus-zero", ["scale", "{tmp}/job.yaml", "--gpu", "rtx-4090-24gb", "--max-gpus", "0"],
        "--max-gpus", PLAN_JOB),
    Bad("flag-gpus-zero", [*FLAGS, "--gpus", "0"], "parallel.gpus"),
    Bad("flag-model-typo-without-gpu", ["estimate", "--model", "qwen2.5-7bb", "--method", "lora"], "--model"),
    Bad("flag-mbs-negative", [*FLAGS, "--mbs", "-1"], "training.micro_batch_size"),
    Bad("flag-seq-zero", [*FLAGS, "--seq-len", "0"], "training.seq_len"),
    Bad("flag-tokens-nan", [*FLAGS, "--tokens", "nan"], "training.tokens"),
    Bad("flag-tokens-inf", [*FLAGS, "--tokens", "inf"], "training.tokens"),
    Bad("flag-lora-alpha-inf", [*FLAGS, "--lora-alpha", "inf"], "training.lora.alpha"),
    Bad("flag-lora-rank-zero", [*FLAGS, "--lora-rank", "0"], "training.lora.rank"),
    Bad("flag-zero-five", [*FLAGS, "--zero", "5"], "parallel.zero"),
    Bad("flag-tp-zero", [*FLAGS, "--tp", "0"], "parallel.tp"),
    Bad("flag-method-typo", [*FLAGS, "--method", "lorra"], "training.method"),
    Bad("flag-lang", ["estimate", "--lang", "fr"], "--lang"),
    # flags alone (no scenario file) must say what the job is: the flag is named, not the scenario key
    Bad("flags-alone-without-model", ["estimate", "--seq-len", "4096"], "--model"),
    Bad("flags-alone-without-gpu", ["estimate", "--model", "llama-3.2-1b", "--method", "lora"], "--gpu"),
    Bad("calibrate-holdout-zero", ["calibrate", "{tmp}/cases.yaml", "--holdout", "0", "--out", "{tmp}/c.yaml"],
        "--holdout", files={"cases.yaml": [{"id": "c1", "scenario": BASE, "measured": {"memory_gib": 30.0,
                                                                                      "memory_metric": "allocated"}}]}),
    Bad("serve-port-zero", ["serve", "--port", "0"], "--port"),
    # --- user data files: catalogs, quotes, prices, sites, calibration profiles ----------------------------------
    Bad("catalog-duplicate-key", ["estimate", "--catalog", "{tmp}/cat.yaml"], "catalog",
        files={"cat.yaml": "links:\n  - id: pcie4\n    id: pcie5\n"}),
    Bad("catalog-link-inf", ["estimate", "--catalog", "{tmp}/cat.yaml", "--json"], "per_direction_gbps",
        files={"cat.yaml": {"links": [{**SHIPPED_LINK, "per_direction_gbps": float("inf")}]}}),
    Bad("catalog-gpu-memory-true", ["catalog", "gpus", "--catalog", "{tmp}/cat.yaml"], "memory_gib",
        files={"cat.yaml": {"accelerators": [{**SHIPPED_GPU, "memory_gib": True}]}}),
    Bad("catalog-gpu-memory-negative", ["catalog", "gpus", "--catalog", "{tmp}/cat.yaml"], "memory_gib",
        files={"cat.yaml": {"accelerators": [{**SHIPPED_GPU, "memory_gib": -1}]}}),
    Bad("quotes-price-inf", ["quotes", "{tmp}/q.yaml", "--json"], "price",
        files={"q.yaml": {"quotes": [{**QUOTE, "price": float("inf")}]}}),
    Bad("quotes-price-true", ["quotes", "{tmp}/q.yaml", "--json"], "price",
        files={"q.yaml": {"quotes": [{**QUOTE, "price": True}]}}),
    Bad("quotes-price-negative", ["quotes", "{tmp}/q.yaml"], "price",
        files={"q.yaml": {"quotes": [{**QUOTE, "price": -1}]}}),
    Bad("quotes-gpu-unknown", ["quotes", "{tmp}/q.yaml"], "quotes[0].gpu",
        files={"q.yaml": {"quotes": [{**QUOTE, "gpu": "rtx-9090"}]}}),
    Bad("prices-server-price-nan", [*PLAN, "--prices", "{tmp}/p.yaml", "--json"], "price", PLAN_JOB,
        files={"p.yaml": {"servers": [{"id": "mine", "gpu": "rtx-4090-24gb", "gpus": 8, "price": float("nan"),
                                       "currency": "USD", "source": "us", "as_of": "2026-01-01"}]}}),
    Bad("sites-rack-power-true", ["catalog", "sites", "--sites", "{tmp}/s.yaml"], "rack_power_kw",
        files={"s.yaml": {"sites": [{**SITE, "rack_power_kw": True}]}}),
    Bad("sites-pue-nan", ["catalog", "sites", "--sites", "{tmp}/s.yaml"], "pue",
        files={"s.yaml": {"sites": [{**SITE, "pue": float("nan")}]}}),
    Bad("calibration-nan", [*EST, "--calibration", "{tmp}/cal.yaml", "--json"], "implementation_factor", BASE,
        files={"cal.yaml": {"memory": {"activations": {"implementation_factor": float("nan")}}}}),
    Bad("calibration-unknown-section", [*EST, "--calibration", "{tmp}/cal.yaml"], "--calibration.memory.weights",
        BASE, files={"cal.yaml": {"memory": {"weights": {"x": 1}}}}),
    # --- user catalogs: numbers finite, positive and in range, never true/false; closed scopes; typos named ------
    gpu_entry("catalog-gpu-bf16-negative", "dense_tflops.bf16", -5),
    gpu_entry("catalog-gpu-bf16-zero", "dense_tflops.bf16", 0),
    gpu_entry("catalog-gpu-fp8-string", "dense_tflops.fp8", "fast"),
    gpu_entry("catalog-gpu-sparse-inf", "sparse_tflops.fp8", float("inf")),
    gpu_entry("catalog-gpu-memory-inf", "memory_gib", float("inf")),
    gpu_entry("catalog-gpu-memory-nan", "memory_gib", float("nan")),
    gpu_entry("catalog-gpu-tdp-negative", "tdp_w", -300),
    gpu_entry("catalog-gpu-tdp-true", "tdp_w", True),
    gpu_entry("catalog-gpu-bandwidth-nan", "memory_bandwidth_gbps", float("nan")),
    gpu_entry("catalog-gpu-bandwidth-zero", "memory_bandwidth_gbps", 0),
    gpu_entry("catalog-gpu-pcie-gen-float", "pcie_gen", 4.0),
    gpu_entry("catalog-gpu-p2p-string", "p2p", "yes"),
    gpu_entry("catalog-gpu-gpus-per-node-true", "gpus_per_node", True),
    gpu_entry("catalog-gpu-scale-up-bandwidth-inf", "scale_up.bidirectional_gbps_per_gpu", float("inf")),
    gpu_entry("catalog-gpu-typo-memory-gibs", "memory_gibs", 32,
              "memory_gibs: unknown key (did you mean 'memory_gib', 'memory_gb' or 'memory_type'?)"),
    gpu_entry("catalog-gpu-typo-bf16", "dense_tflops.bf_16", 100,
              "dense_tflops.bf_16: unknown key (did you mean 'bf16' or 'fp16'?)"),
    gpu_entry("catalog-gpu-as-of-not-a-date", "as_of", "last year"),
    gpu_entry("catalog-gpu-cooling-enum", "cooling", "water"),
    gpu_entry("catalog-gpu-intra-node-infiniband", "default_intra_node", "ib-ndr-400"),
    gpu_entry("catalog-gpu-inter-node-nvlink", "default_inter_node", "nvlink4"),
    gpu_entry("catalog-gpu-inter-node-unknown", "default_inter_node", "ib-xyz"),
    link_entry("catalog-link-scope-unknown", "scope", "nvswitch"),
    link_entry("catalog-link-bandwidth-zero", "per_direction_gbps", 0),
    link_entry("catalog-link-bandwidth-true", "per_direction_gbps", True),
    link_entry("catalog-link-latency-negative", "latency_us", -1),
    link_entry("catalog-link-busbw-nan", "measured_allreduce_busbw_gbps", [{"setup": "x", "busbw_gbps": float("nan")}],
               "measured_allreduce_busbw_gbps[0].busbw_gbps"),
    link_entry("catalog-link-prefer-measured-string", "prefer_measured", "yes"),
    Bad("catalog-top-level-typo", ["catalog", "gpus", "--catalog", CAT], "accelerator: unknown key (did you mean "
        "'accelerators'?)", files={"cat.yaml": {"links": [SHIPPED_LINK], "accelerator": [SHIPPED_GPU]}}, names=CAT),
    # --- a scenario's links in their scope; its precision one its GPU supports ----------------------------------
    scenario("intra-node-infiniband", "hardware.intra_node", "ib-ndr-400"),
    scenario("intra-node-roce", "hardware.intra_node", "roce-400"),
    scenario("inter-node-nvlink", "hardware.inter_node", "nvlink4"),
    scenario("inter-node-pcie", "hardware.inter_node", "pcie5"),
    scenario("inter-node-hccs", "hardware.inter_node", "hccs", base=job("parallel.gpus", 16)),
    scenario("precision-fp8-on-rtx-3090", "training.precision", "fp8-mixed",
             base=job("hardware.gpu", "rtx-3090-24gb")),
    scenario("precision-fp8-on-a100", "training.precision", "fp8-mixed", base=job("hardware.gpu", "a100-sxm4-80gb")),
    scenario("precision-fp8-on-inline-gpu", "training.precision", "fp8-mixed", base=INLINE),
    Bad("flag-precision-fp8-on-rtx-3090", [*FLAGS, "--gpu", "rtx-3090-24gb", "--precision", "fp8-mixed"],
        "training.precision"),
    Bad("plan-precision-fp8-on-named-gpu", ["plan", "{tmp}/job.yaml", "--gpu", "rtx-3090-24gb", "--max-gpus", "4"],
        "training.precision", job("training.precision", "fp8-mixed", PLAN_JOB)),
    # --- quotes: numbers finite, positive, never true/false; counts integers; closed sets; typos named -----------
    quote("quotes-price-nan", "price", float("nan")),
    quote("quotes-price-string", "price", "cheap"),
    quote("quotes-servers-true", "servers", True),
    quote("quotes-servers-float", "servers", 2.0),
    quote("quotes-gpus-per-server-zero", "gpus_per_server", 0),
    quote("quotes-min-term-inf", "min_term_months", float("inf")),
    quote("quotes-sla-negative", "replacement_sla_hours", -4),
    quote("quotes-storage-tb-inf", "storage.included_tb", float("inf")),
    quote("quotes-split-nan", "split", {"compute": float("nan")}, "split.compute"),
    quote("quotes-split-over-one", "split", {"compute": 0.8, "storage": 0.3},
          "quotes[0].split: the shares of quote 'offer' sum to 1.1"),
    quote("quotes-split-over-one-by-service", "split", {"compute": 0.7, "network": 0.2, "service": 0.2},
          "quotes[0].split: the shares of quote 'offer' sum to 1.1"),
    quote("quotes-onsite-staff-string", "onsite_staff", "yes"),
    quote("quotes-unit-enum", "unit", "gpu-hr", "unit: 'gpu-hr' is not accepted (did you mean 'gpu-hour'?)"),
    quote("quotes-currency-enum", "currency", "EUR"),
    quote("quotes-typo-price", "prise", 2.0, "prise: unknown key (did you mean 'price'?)"),
    quote("quotes-inter-node-nvlink", "inter_node", "nvlink4", "quotes[0].inter_node"),
    quote("quotes-inter-node-unknown", "inter_node", "ib-xyz", "quotes[0].inter_node"),
    Bad("quotes-top-level-typo", ["quotes", QUOTES], "qoutes: unknown key (did you mean 'quotes'?)",
        files={"q.yaml": {"quotes": [QUOTE], "qoutes": []}}, names=QUOTES),
    # --- prices: every row checked (finite, > 0, counts >= 1, a plausible rate), typos named, never a KeyError ----
    prices("prices-server-price-inf", {"servers": [{**SERVER_ROW, "price": float("inf")}]}, "servers[0].price"),
    prices("prices-server-price-negative", {"servers": [{**SERVER_ROW, "price": -100}]}, "servers[0].price"),
    prices("prices-server-price-true", {"servers": [{**SERVER_ROW, "price": True}]}, "servers[0].price"),
    prices("prices-server-zero-gpus", {"servers": [{**SERVER_ROW, "gpus": 0}]}, "servers[0].gpus"),
    prices("prices-server-typo", {"servers": [{**SERVER_ROW, "gpu_count": 8}]},
           "servers[0].gpu_count: unknown key"),
    prices("prices-card-price-negative", {"gpu_cards": [{**CARD_ROW, "price": -1}]}, "gpu_cards[0].price"),
    prices("prices-card-price-nan", {"gpu_cards": [{**CARD_ROW, "price": float("nan")}]}, "gpu_cards[0].price"),
    prices("prices-rental-price-inf", {"rental": [{**RENTAL_ROW, "price_per_gpu_hour": float("inf")}]},
           "rental[0].price_per_gpu_hour"),
    prices("prices-rental-price-zero", {"rental": [{**RENTAL_ROW, "price_per_gpu_hour": 0}]},
           "rental[0].price_per_gpu_hour"),
    prices("prices-rental-typo", {"rental": [{**{k: v for k, v in RENTAL_ROW.items() if k != "price_per_gpu_hour"},
                                              "price_per_gpu_hr": 2.0}]},
           "rental[0].price_per_gpu_hr: unknown key (did you mean 'price_per_gpu_hour'?)"),
    prices("prices-rental-contract-term", {"rental": [{**RENTAL_ROW, "contract": {"term": "dayly"}}]},
           "rental[0].contract.term: 'dayly' is not accepted (did you mean 'daily'?)"),
    prices("prices-rental-contract-hours-inf", {"rental": [{**RENTAL_ROW, "contract": {
        "term": "monthly", "min_term_hours": float("inf")}}]}, "rental[0].contract.min_term_hours"),
    prices("prices-currency-enum", {"servers": [{**SERVER_ROW, "currency": "EUR"}]}, "servers[0].currency"),
    # a GPU id the catalog does not know would never match a plan's GPU: the price would be silently ignored
    prices("prices-rental-unknown-gpu", {"rental": [{**RENTAL_ROW, "gpu": "rtx4090"}]}, "rental[0].gpu"),
    prices("prices-server-unknown-gpu", {"servers": [{**SERVER_ROW, "gpu": "h100-sxm-80gb"}]}, "servers[0].gpu"),
    prices("prices-card-unknown-gpu", {"gpu_cards": [{**CARD_ROW, "gpu": "a100"}]}, "gpu_cards[0].gpu"),
    prices("prices-fx-zero", {"fx": [{**FX_ROW, "rate": 0}]}, "fx[0].rate"),
    prices("prices-fx-nan", {"fx": [{**FX_ROW, "rate": float("nan")}]}, "fx[0].rate"),
    prices("prices-component-price-string", {"components": {"nic_400g": {"price": "a lot", **ROW}}},
           "components.nic_400g.price"),
    prices("prices-component-price-inf", {"components": {"nic_400g": {"price": float("inf"), **ROW}}},
           "components.nic_400g.price"),
    prices("prices-opex-nan", {"opex": {"staff_cost_per_year": {"value": float("nan"), "currency": "CNY", **ROW}}},
           "opex.staff_cost_per_year.value"),
    prices("prices-opex-inf", {"opex": {"staff_cost_per_year": {"value": float("inf"), "currency": "CNY", **ROW}}},
           "opex.staff_cost_per_year.value"),
    prices("prices-opex-fraction-above-one", {"opex": {"maintenance_fraction_per_year": {"value": 2.0, **ROW}}},
           "opex.maintenance_fraction_per_year.value"),
    prices("prices-top-level-typo", {"rentals": [RENTAL_ROW]}, "rentals: unknown key (did you mean 'rental'?)"),
    prices("prices-not-a-mapping", [SERVER_ROW], "p.yaml"),
    # --- sites: numbers finite and never true/false, closed sets, typos named -------------------------------------
    site("sites-rack-rent-nan", "rack_rent_per_month", float("nan")),
    site("sites-rack-rent-inf", "rack_rent_per_month", float("inf")),
    site("sites-rack-rent-per-kw-negative", "rack_rent_per_kw_month", -1),
    site("sites-electricity-price-true", "electricity_price", True),
    site("sites-electricity-price-inf", "electricity_price", float("inf")),
    site("sites-pue-string", "pue", "good"),
    site("sites-cooling-enum", "cooling", "water"),
    site("sites-typo-rack-power", "rack_power", 10, "rack_power: unknown key (did you mean 'rack_power_kw'?)"),
    site("sites-tou-price-inf", "electricity_tou", [{"band": "flat", "hours_per_day": 24, "price": float("inf")}],
         "electricity_tou[0].price"),
    site("sites-tou-hours-not-24", "electricity_tou", [{"band": "flat", "hours_per_day": 12, "price": 0.5}],
         "electricity_tou"),
    site("sites-as-of-not-a-date", "as_of", "soon"),
    Bad("sites-top-level-typo", ["catalog", "sites", "--sites", SITES], "site: unknown key (did you mean 'sites'?)",
        files={"s.yaml": {"sites": [SITE], "site": []}}, names=SITES),
    # --- calibration profiles: fitted sections only, known keys, finite numbers in their physical range ----------
    calibration("calibration-inf", {"memory": {"activations": {"implementation_factor": float("inf")}}},
                "--calibration.memory.activations.implementation_factor"),
    calibration("calibration-reserved-negative", {"memory": {"allocator": {"reserved_fraction_dynamic": -0.1}}},
                "--calibration.memory.allocator.reserved_fraction_dynamic"),
    calibration("calibration-fraction-above-one", {"memory": {"allocator": {"reserved_fraction_static": 1.5}}},
                "--calibration.memory.allocator.reserved_fraction_static"),
    calibration("calibration-efficiency-true", {"performance": {"compute": {"max_efficiency": {"hopper": True}}}},
                "--calibration.performance.compute.max_efficiency.hopper"),
    calibration("calibration-string", {"performance": {"overhead": {"per_step_s": "fast"}}},
                "--calibration.performance.overhead.per_step_s"),
    calibration("calibration-efficiency-above-one", {"performance": {"compute": {"max_efficiency": {"hopper": 3}}}},
                "--calibration.performance.compute.max_efficiency.hopper"),
    calibration("calibration-typo-key", {"memory": {"activations": {"implementation_factr": 1.1}}},
                "--calibration.memory.activations.implementation_factr: unknown key (did you mean "
                "'implementation_factor'?)"),
    calibration("calibration-section-not-mapping", {"memory": {"activations": 1.1}},
                "--calibration.memory.activations"),
    calibration("calibration-top-level-typo", {"memory": {"allocator": {"reserved_fraction_static": 0.05}},
                                               "sumary": {}}, "--calibration.sumary: unknown key (did you mean "
                                                              "'summary'?)"),
    # --- measured case files: figures finite and above 0, closed metrics, typos named ------------------------------
    measured("cases-memory-lots", "measured.memory_gib", "lots"),
    measured("cases-memory-zero", "measured.memory_gib", 0),
    measured("cases-memory-mapping", "measured.memory_gib", {"allocated": 30}),
    measured("cases-memory-nan", "measured.memory_gib", float("nan")),
    measured("cases-memory-true", "measured.memory_gib", True),
    measured("cases-metric-unknown", "measured.memory_metric", "peak"),
    measured("cases-measured-typo", "measured.memory_gb", 30.0, "measured.memory_gb: unknown key (did you mean "
                                                                "'memory_gib' or 'memory_metric'?)"),
    Bad("cases-tokens-fast", ["validate", CASES], "measured.tokens_per_s",
        files={"cases.yaml": [{**CASE, "measured": {"tokens_per_s": "fast"}}]}, names=CASES),
    Bad("cases-tokens-negative", ["validate", CASES], "measured.tokens_per_s",
        files={"cases.yaml": [{**CASE, "measured": {"tokens_per_s": -100.0}}]}, names=CASES),
    Bad("cases-tokens-nan", ["validate", CASES], "measured.tokens_per_s",
        files={"cases.yaml": [{**CASE, "measured": {"tokens_per_s": float("nan")}}]}, names=CASES),
    Bad("cases-mfu-above-one", ["validate", CASES], "measured.mfu",
        files={"cases.yaml": [{**CASE, "measured": {"mfu": 1.5}}]}, names=CASES),
    Bad("cases-measured-empty", ["validate", CASES], "measured",
        files={"cases.yaml": [{**CASE, "measured": {}}]}, names=CASES),
    # --- output paths: checked before any work, never into a missing folder, never over a file -------------------
    Bad("report-out-missing-folder", [*REPORT, "--out", "{tmp}/missing/plan.html"], "--out", PLAN_JOB),
    Bad("report-out-extension", [*REPORT, "--out", "{tmp}/plan.txt"], "--out", PLAN_JOB),
    Bad("report-out-existing", [*REPORT, "--out", "{tmp}/old.html"], "--out", PLAN_JOB, files={"old.html": "old"}),
    Bad("report-out-is-a-folder", [*REPORT, "--out", "{tmp}/folder.html"], "--out", PLAN_JOB,
        files={"folder.html/keep": "x"}),
    Bad("calibrate-out-missing-folder", ["calibrate", "{tmp}/cases.yaml", "--out", "{tmp}/missing/cal.yaml"], "--out",
        files={"cases.yaml": []}),
    Bad("calibrate-out-existing", ["calibrate", "{tmp}/cases.yaml", "--out", "{tmp}/cal.yaml"], "--out",
        files={"cases.yaml": [], "cal.yaml": "old"}),
    Bad("burnin-db-missing-folder", ["burnin", "--backend", "fake", "--duration", "1s", "--db", "{tmp}/missing/r.db"],
        "--db"),
    Bad("burnin-db-existing", ["burnin", "--backend", "fake", "--duration", "1s", "--db", "{tmp}/old.db"], "--db",
        files={"old.db": "old"}),
    Bad("probe-memory-out-missing-folder", ["probe", "memory", "{tmp}/job.yaml", "--cpu", "--out",
                                            "{tmp}/missing/cases.yaml"], "--out",
        job("model", {"architecture": TINY_ARCH}), torch=True),
    Bad("probe-memory-out-not-cases", ["probe", "memory", "{tmp}/job.yaml", "--cpu", "--out", "{tmp}/notes.yaml"],
        "cases", job("model", {"architecture": TINY_ARCH}), files={"notes.yaml": "just: notes\n"}, torch=True),
    Bad("probe-profile-trace-out-missing-folder", ["probe", "profile", "{tmp}/job.yaml", "--cpu", "--trace-out",
                                                   "{tmp}/missing/t.json"], "--trace-out",
        job("model", {"architecture": TINY_ARCH}), torch=True),
    Bad("probe-comm-out-missing-folder", ["probe", "comm", "--cpu", "--out", "{tmp}/missing/r.json"], "--out",
        torch=True),
    Bad("probe-comm-profile-missing-folder", ["probe", "comm", "--cpu", "--link-profile", "{tmp}/missing/l.yaml"],
        "--link-profile", torch=True),
    Bad("probe-comm-out-existing", ["probe", "comm", "--cpu", "--out", "{tmp}/old.json"], "--out",
        files={"old.json": "{}"}, torch=True),
    # --- probes without a GPU (the CUDA check is patched: the same on any machine) -------------------------------
    Bad("probe-memory-no-gpu", ["probe", "memory", "{tmp}/job.yaml"], "--device",
        job("model", {"architecture": TINY_ARCH}), torch=True),
    Bad("probe-memory-device-cuda", ["probe", "memory", "{tmp}/job.yaml", "--device", "cuda"], "--device",
        job("model", {"architecture": TINY_ARCH}), torch=True),
    Bad("probe-memory-device-tpu", ["probe", "memory", "{tmp}/job.yaml", "--device", "tpu"], "--device",
        job("model", {"architecture": TINY_ARCH}), torch=True),
    Bad("probe-memory-cpu-and-cuda", ["probe", "memory", "{tmp}/job.yaml", "--cpu", "--device", "cuda"], "--cpu",
        job("model", {"architecture": TINY_ARCH}), torch=True),
    Bad("probe-memory-steps-one", ["probe", "memory", "{tmp}/job.yaml", "--cpu", "--steps", "1"], "--steps",
        job("model", {"architecture": TINY_ARCH}), torch=True),
    Bad("probe-memory-too-big-for-cpu", ["probe", "memory", "{tmp}/job.yaml", "--cpu"], "--layers",
        job("model.preset", "llama-3.1-8b"), torch=True),
    Bad("probe-memory-bad-scenario", ["probe", "memory", "{tmp}/job.yaml", "--simulate"], "training.seq_len",
        job("training.seq_len", True), names_file=True, torch=True),
    Bad("probe-profile-no-gpu", ["probe", "profile", "{tmp}/job.yaml"], "--device",
        job("model", {"architecture": TINY_ARCH}), torch=True),
    Bad("probe-profile-too-big-for-cpu", ["probe", "profile", "{tmp}/job.yaml", "--cpu"], "--layers",
        job("model.preset", "llama-3.1-8b"), torch=True),
    Bad("probe-comm-no-gpu", ["probe", "comm"], "--backend", torch=True),
    Bad("probe-comm-nccl-no-gpu", ["probe", "comm", "--backend", "nccl"], "--backend", torch=True),
    Bad("probe-comm-cpu-and-nccl", ["probe", "comm", "--cpu", "--backend", "nccl"], "--cpu", torch=True),
    Bad("probe-comm-ops", ["probe", "comm", "--cpu", "--ops", "broadcast"], "--ops", torch=True),
]


def test_the_corpus_is_large_and_ids_are_unique():
    assert len(CORPUS) >= 100
    assert len({b.id for b in CORPUS}) == len(CORPUS)


def _write(path: Path, content: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_text(yaml.safe_dump(content, sort_keys=False), encoding="utf-8")


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def run_cli(args: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """``trainsizer ARGS`` through the console entry point; (exit status, stdout + stderr)."""
    monkeypatch.setattr(sys, "argv", ["trainsizer", *args])
    code: Any = 0
    try:
        main()
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return (code if isinstance(code, int) else 1), out.out + out.err


@pytest.fixture
def no_gpu(monkeypatch):
    """No CUDA anywhere, whatever the machine; and a machine of 8 GiB for the CPU size guard."""
    if TORCH:
        import trainsizer.probe.comm.settings as comm_settings
        import trainsizer.probe.workload.safety as safety

        monkeypatch.setattr(safety, "cuda_available", lambda: False)
        monkeypatch.setattr(safety, "machine_memory_bytes", lambda: 8.0 * 2**30)
        monkeypatch.setattr(comm_settings, "_cuda_available", lambda: False)


@pytest.mark.parametrize("bad", [b.param() for b in CORPUS])
def test_bad_input_exits_2_with_one_line_naming_the_field(bad, tmp_path, monkeypatch, capsys, no_gpu):
    if bad.job is not None:
        _write(tmp_path / "job.yaml", bad.job)
    for name, content in bad.files.items():
        _write(tmp_path / name, content)
    monkeypatch.chdir(tmp_path)
    before = _snapshot(tmp_path)
    code, output = run_cli([a.format(tmp=tmp_path) for a in bad.args], monkeypatch, capsys)
    lines = [line for line in output.splitlines() if line.strip()]
    assert code == 2, output[-2000:]
    assert "Traceback" not in output
    assert len(lines) == 1, output[-2000:]
    assert lines[0].startswith("error: ") and bad.field in lines[0], lines[0]
    if bad.names_file:
        assert str(tmp_path / "job.yaml") in lines[0], lines[0]
    if bad.names:
        assert bad.names.format(tmp=tmp_path) in lines[0], lines[0]
    assert "known:" not in lines[0] and len(lines[0]) < 600  # closest ids only, never a whole catalog
    assert _snapshot(tmp_path) == before  # nothing written, nothing replaced


CAL_EST = ["estimate", "job.yaml", "--calibration", "cal.yaml"]  # files named as a user types them
UNKNOWN_KEYS = [
    pytest.param(["catalog", "gpus", "--catalog", "cat.yaml"], {"cat.yaml": {"accelerators": [
        with_key(SHIPPED_GPU, "memroy_bandwidth_gbps", 2000)]}}, "accelerators[0].memroy_bandwidth_gbps",
                 ["memory_bandwidth_gbps"], id="catalog-close-key"),
    pytest.param(["catalog", "gpus", "--catalog", "cat.yaml"], {"cat.yaml": {"accelerators": [
        with_key(SHIPPED_GPU, "zzzz_qqq", 1)]}}, "accelerators[0].zzzz_qqq", [], id="catalog-no-close-key"),
    pytest.param(["catalog", "links", "--catalog", "cat.yaml"], {"cat.yaml": {"links": [
        with_key(SHIPPED_LINK, "per_direction", 10)]}}, "links[0].per_direction", ["per_direction_gbps"],
                 id="catalog-link-close-key"),
    pytest.param(CAL_EST, {"cal.yaml": {"performance": {"compute": {"max_efficency": {"hopper": 0.7}}}}},
                 "--calibration.performance.compute.max_efficency",
                 ["max_efficiency", "max_efficiency_fp32"], id="calibration-close-keys"),
    pytest.param(CAL_EST, {"cal.yaml": {"memory": {"allocator": {"zzzz_qqq": 0.1}}}},
                 "--calibration.memory.allocator.zzzz_qqq", [], id="calibration-no-close-key"),
]


@pytest.mark.parametrize(("args", "files", "field_name", "close"), UNKNOWN_KEYS)
def test_an_unknown_key_names_itself_and_at_most_three_close_keys_in_a_short_line(
        args, files, field_name, close, tmp_path, monkeypatch, capsys):
    """Issue 20: an unknown key in a catalog or calibration file is one line of at most 200 characters that names
    the key and at most three close keys (never the model's whole key list)."""
    for name, content in files.items():
        _write(tmp_path / name, content)
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(BASE), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code, output = run_cli(args, monkeypatch, capsys)  # files as a user types them: relative to the folder
    lines = [line for line in output.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1, output[-2000:]
    line = lines[0]
    assert f"{field_name}: unknown key" in line and len(line) <= 200, (len(line), line)
    assert f" {next(a for a in args if a.endswith('.yaml') and a != 'job.yaml')}" in line  # the file is named
    named = line.split("did you mean ", 1)[1].split("?")[0].count("'") // 2 if "did you mean" in line else 0
    assert named == len(close) <= 3 and all(f"'{c}'" in line for c in close), line


# --- every --json output is finite JSON ------------------------------------------------------------------------

JSON_COMMANDS = [
    pytest.param(["estimate", "--json"], id="estimate"),
    pytest.param(["estimate", "{tmp}/inline.yaml", "--json"], id="estimate-inline-gpu"),
    pytest.param(["scale", "{tmp}/job.yaml", "--gpu", "rtx-4090-24gb", "--max-gpus", "4", "--json"], id="scale"),
    pytest.param([*PLAN, "--deadline", "30d", "--json"], id="plan"),
    pytest.param(["quotes", "examples/quotes.yaml", "--json"], id="quotes"),
    pytest.param(["validate", "{tmp}/cases.yaml", "--json"], id="validate"),
    pytest.param(["catalog", "gpus", "--json"], id="catalog-gpus"),
    pytest.param(["catalog", "links", "--json"], id="catalog-links"),
    pytest.param(["catalog", "sites", "--json"], id="catalog-sites"),
    pytest.param(["catalog", "models", "--json"], id="catalog-models"),
]


@pytest.mark.parametrize("args", JSON_COMMANDS)
def test_json_output_is_finite_and_strict(args, tmp_path, monkeypatch, capsys):
    from conftest import REPO

    monkeypatch.setenv("TRAINSIZER_STRICT_JSON", "1")  # a NaN or infinity raises instead of turning into null
    _write(tmp_path / "job.yaml", PLAN_JOB)
    _write(tmp_path / "inline.yaml", job("hardware.gpu", {"name": "x", "memory_gib": 24, "bf16_tflops": 100}))
    _write(tmp_path / "cases.yaml", [CASE, {**CASE, "id": "c2", "measured": {"step_time_s": 0.5}}])
    monkeypatch.chdir(REPO)
    code, output = run_cli([a.format(tmp=tmp_path) for a in args], monkeypatch, capsys)
    assert code == 0, output[-2000:]
    json.loads(output[output.index("{") if output.lstrip().startswith("{") else output.index("["):],
               parse_constant=lambda c: pytest.fail(f"{c} in JSON output"))


def test_report_json_is_finite_and_strict(tmp_path, monkeypatch, capsys):
    """The report's plan.json goes through the same strict writer as --json."""
    monkeypatch.setenv("TRAINSIZER_STRICT_JSON", "1")
    _write(tmp_path / "job.yaml", PLAN_JOB)
    out = tmp_path / "plan.json"
    code, output = run_cli([a.format(tmp=tmp_path) for a in [*REPORT, "--deadline", "30d", "--out", str(out)]],
                           monkeypatch, capsys)
    assert code == 0, output[-2000:]
    data = json.loads(out.read_text(encoding="utf-8"), parse_constant=lambda c: pytest.fail(f"{c} in plan.json"))
    assert data["plan"]["options"]


def test_precision_error_names_the_precisions_the_gpu_supports(tmp_path, monkeypatch, capsys):
    _write(tmp_path / "job.yaml", job("training.precision", "fp8-mixed", job("hardware.gpu", "rtx-3090-24gb")))
    code, output = run_cli(["estimate", str(tmp_path / "job.yaml")], monkeypatch, capsys)
    assert code == 2 and "accepted on it: fp32, fp16-mixed, bf16-mixed, bf16-true" in output, output
    _write(tmp_path / "ok.yaml", job("training.precision", "fp8-mixed", job("hardware.gpu", "rtx-4090-24gb")))
    code, output = run_cli(["estimate", str(tmp_path / "ok.yaml"), "--json"], monkeypatch, capsys)
    assert code == 0, output[-2000:]
    # plan --gpu: the job file's precision against the flag's GPU; the message names the file it came from
    code, output = run_cli(["plan", str(tmp_path / "ok.yaml"), "--gpu", "rtx-3090-24gb"], monkeypatch, capsys)
    assert code == 2 and "accepted on it: fp32" in output and f"(in {tmp_path / 'ok.yaml'})" in output, output


def test_the_planner_keeps_gpus_without_fp8_for_an_fp8_job_it_was_not_told_to_use():
    """Only a GPU the user names must support the precision; the planner's own candidates fall back to bf16."""
    from trainsizer.estimate.estimator import estimate
    from trainsizer.scenario import scenario_from_dict

    sc = scenario_from_dict(job("training.precision", "fp8-mixed", job("hardware.gpu", "rtx-3090-24gb")))
    result = estimate(sc, with_limits=False)  # a Scenario without a source: a candidate the program built
    assert any(n.code == "step.no_fp8" for n in result.performance.notes)


def test_dumps_strict_turns_non_finite_into_null_with_a_reason_or_raises():
    from trainsizer.jsonout import NonFiniteNumber, dumps_strict

    text = dumps_strict({"step_s": float("inf"), "rows": [1.0, float("nan")], "ok": 2.5}, strict=False)
    assert json.loads(text) == {"step_s": None, "step_s_reason": "unbounded (+infinity)", "rows": [1.0, None],
                                "ok": 2.5}
    with pytest.raises(NonFiniteNumber, match=r"\$\.rows\[1\]"):
        dumps_strict({"rows": [1.0, float("nan")]}, strict=True)


@pytest.mark.parametrize("value", [None, 1, 0.5, "2", 7.0])
def test_finite_positive_accepts_finite_positive_numbers(value):
    from trainsizer.input_checks import finite_positive

    assert finite_positive(value, "--x") == (None if value is None else float(value))


@pytest.mark.parametrize("value", [0, -1, float("nan"), float("inf"), float("-inf"), True, "x", "nan"])
def test_finite_positive_refuses_the_rest(value):
    from trainsizer.errors import InputError
    from trainsizer.input_checks import finite_positive

    with pytest.raises(InputError) as err:
        finite_positive(value, "--x")
    assert err.value.field == "--x" and "\n" not in str(err.value)


@pytest.mark.parametrize(("args", "job", "says"), [
    ([*PLAN, "--deadline", "30"], PLAN_JOB, "s, m, h, d or w"),  # the accepted units
    (EST, job("training.method", "pretrain"), "method full"),  # what pre-training is called
    (["estimate", "--model", "qwen2.5-7bb", "--method", "lora"], None, "qwen2.5-7b"),  # the misspelt model first
])
def test_the_edge_cases_say_what_is_accepted(args, job, says, tmp_path, monkeypatch, capsys):
    if job is not None:
        _write(tmp_path / "job.yaml", job)
    monkeypatch.chdir(tmp_path)
    code, output = run_cli([a.format(tmp=tmp_path) for a in args], monkeypatch, capsys)
    assert code == 2 and says in output, output


def en(message):
    """An engine message in English."""
    return _text(message, "en")


# --- hostile YAML: bounded everywhere a user's file is read ------------------------------------------------------

def yaml_bomb(levels: int) -> str:
    """A 'billion laughs' file: a list of nine strings, then ``levels`` lists of nine aliases to the one before
    (eight levels: 342 bytes that expand to 9**9 = 387 million strings)."""
    names = "abcdefghijklmnopqrstuvwxyz"
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"{names[i]}: &{names[i]} [{','.join([f'*{names[i - 1]}'] * 9)}]" for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


HOSTILE_COMMANDS = [  # (the command, the field its file is read for); {f}: the hostile file
    pytest.param(["estimate", "{f}"], "scenario", id="estimate"),
    pytest.param(["plan", "{f}", "--gpu", "rtx-4090-24gb"], "job", id="plan"),
    pytest.param(["quotes", "{f}"], "quotes", id="quotes"),
    pytest.param(["validate", "{f}"], "cases", id="validate"),
    pytest.param(["estimate", "--catalog", "{f}"], "catalog", id="catalog"),
]


def _hostile_run(args: list[str], text: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                 capsys: pytest.CaptureFixture[str], big: int = 0) -> tuple[int, str, Path]:
    """Run ``args`` on ``{tmp}/hostile.yaml`` (``text``, or ``big`` bytes of a YAML list) with the cache in its own
    folder; (exit status, output, the cache folder)."""
    hostile = tmp_path / "hostile.yaml"
    if big:
        with hostile.open("w", encoding="utf-8") as f:
            line = "- 12345678\n"
            f.write(line * (big // len(line) + 1))
    else:
        hostile.write_text(text or "", encoding="utf-8")
    cache = tmp_path / "cache"
    monkeypatch.setenv("TRAINSIZER_CACHE_DIR", str(cache))
    monkeypatch.chdir(tmp_path)
    code, output = run_cli([a.format(f=hostile) for a in args], monkeypatch, capsys)
    return code, output, cache


def _user_copies(cache: Path) -> list[Path]:
    """The parsed copies of users' files in the cache (the shipped files' copies may be written by any command)."""
    return sorted(cache.rglob("user-*")) if cache.exists() else []


@pytest.mark.parametrize("levels", [8, 9])
@pytest.mark.parametrize(("args", "field_name"), HOSTILE_COMMANDS)
def test_a_yaml_bomb_is_refused_in_one_line_and_nothing_is_cached(args, field_name, levels, tmp_path, monkeypatch,
                                                                    capsys):
    """Eight and nine levels of aliases (387 million and 3.5 billion strings written out): refused while the file
    is composed, counting each alias as the values it names (never expanding it), in one line that names the
    field, the file and the bound; nothing reaches the parsed-file cache."""
    code, output, cache = _hostile_run(args, yaml_bomb(levels), tmp_path, monkeypatch, capsys)
    lines = [line for line in output.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in output, output[-2000:]
    assert lines[0].startswith(f"error: {field_name}: ") and "hostile.yaml" in lines[0], lines[0]
    assert "200,000 values with its aliases expanded" in lines[0] and len(lines[0]) < 300, lines[0]
    assert _user_copies(cache) == []


@pytest.mark.parametrize(("args", "field_name"), HOSTILE_COMMANDS[:2])
def test_a_50_mb_file_is_refused_unread(args, field_name, tmp_path, monkeypatch, capsys):
    """A file over yaml_limits.MAX_YAML_BYTES is refused from its size (stat), before it is read or parsed."""
    from trainsizer.yaml_limits import MAX_YAML_BYTES

    code, output, cache = _hostile_run(args, None, tmp_path, monkeypatch, capsys, big=50 * 2**20)
    lines = [line for line in output.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1, output[-2000:]
    assert lines[0] == (f"error: {field_name}: {tmp_path / 'hostile.yaml'} is over {MAX_YAML_BYTES:,} bytes; "
                        f"accepted: YAML files up to {MAX_YAML_BYTES:,} bytes")
    assert _user_copies(cache) == []


@pytest.mark.parametrize(("text", "says"), [
    pytest.param("model: &m {a: [*m]}\n", "alias *m in", id="alias-inside-its-value"),
    pytest.param("model: " + "[" * 100_000 + "]" * 100_000 + "\n", "nests over 64 levels", id="nested-100000-deep"),
    pytest.param("k: &k [1]\n" + "".join(f"k{i}: *k\n" for i in range(1_001)), "over 1,000 aliases",
                 id="1001-aliases"),
    pytest.param("model: " + "x" * 3_000_000 + "\n", "(got 'xxxxx", id="3-mb-scalar"),
    pytest.param("model: *" + "x" * 100_000 + "\n", "found undefined alias 'xxx", id="long-undefined-alias"),
    pytest.param("model:\n  " + "k" * 1_000 + ": 1\n  " + "k" * 1_000 + ": 2\n", "duplicate key 'model.kkk",
                 id="long-duplicate-key"),
])
def test_hostile_yaml_gets_one_short_line_quoting_at_most_an_excerpt(text, says, tmp_path, monkeypatch, capsys):
    """Recursion, depth (libyaml's own composer overflows the C stack at 100,000 levels), alias count, and errors
    that quote the input: one line, exit 2, the input quoted in at most errors.MAX_INPUT_TEXT characters."""
    code, output, cache = _hostile_run(["estimate", "{f}"], text, tmp_path, monkeypatch, capsys)
    lines = [line for line in output.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in output, output[-2000:]
    assert says in lines[0] and len(lines[0]) < 300, lines[0][:2000]


def test_aliases_the_yaml_warrants_load_but_their_expansion_is_not_cached(tmp_path, monkeypatch, capsys):
    """Four alias levels (59,049 strings from 202 bytes) are within the bounds and load, but their JSON copy would
    be far larger than the file: the cache keeps no copy (datafiles.CACHE_GROWTH). A plain job file is kept."""
    from trainsizer.datafiles import user_yaml

    monkeypatch.setenv("TRAINSIZER_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "four.yaml").write_text(yaml_bomb(4), encoding="utf-8")
    data = user_yaml(tmp_path / "four.yaml")
    assert len(data["e"]) == 9 and data["e"][0][0][0][0] == ["lol"] * 9
    assert _user_copies(tmp_path / "cache") == []
    _write(tmp_path / "job.yaml", BASE)
    assert user_yaml(tmp_path / "job.yaml") == BASE
    assert len(_user_copies(tmp_path / "cache")) == 1


def test_every_shipped_yaml_file_is_within_the_bounds():
    """The shipped data (src/, validation/, examples/) loads through the bounded loader as PyYAML's own loader
    reads it (anchors and aliases included)."""
    from conftest import REPO

    from trainsizer.yaml_text import load_yaml_text

    files = [p for d in ("src", "validation", "examples") for p in sorted((REPO / d).rglob("*.y*ml"))]
    assert len(files) > 30
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert load_yaml_text(text) == yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)), path
