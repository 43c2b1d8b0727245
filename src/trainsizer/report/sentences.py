"""The engine's sentences (notes, suggestions, site fit, network and storage reasons, cost verdicts,
timeline and verification steps) in the reader's language.

The layers below the faces write fixed English templates with figures in them. Each template is listed
here once: the pattern it matches (the engine's English with ``{fields}``) and the message the faces show
(a catalog message id with the same fields, often the pattern itself). A field's name says how its value
is shown: ``money`` in 万元 for CNY in Chinese, ``gpu`` as the product name, ``n_servers`` as "2 servers",
``clause`` as a sentence of its own, and so on (:data:`KINDS`). A sentence is read clause by clause
(``; `` outside parentheses); a clause no template matches is shown as the engine wrote it, and
:func:`untranslated` lists those (tests/test_i18n.py fails on them for the shipped examples).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any

from trainsizer.i18n import N_, NP_, ntr, tr
from trainsizer.report import words as w

STEP_TERMS = {
    "compute": N_("compute"), "elementwise": N_("element-wise kernels"), "tp_comm": N_("tensor-parallel traffic"),
    "pp_p2p": N_("pipeline sends"), "pp_bubble": N_("the pipeline bubble"), "cp_comm": N_("context-parallel traffic"),
    "zero3_gather": N_("ZeRO-3 parameter gathers"), "dp_grad_sync": N_("the gradient all-reduce"),
    "optimizer": N_("the optimizer step"), "offload": N_("CPU offload"), "moe_all_to_all": N_("MoE all-to-all"),
    "data_loading": N_("data loading"), "launch_overhead": N_("kernel launches"),
    "dequantization": N_("dequantization"),
}
COOLING = {"air": N_("air"), "rear-door": N_("rear-door"), "liquid": N_("liquid")}
BINDS = {"power": N_("power"), "cooling": N_("cooling")}
STORAGE = {"nas": N_("NAS"), "parallel fs": N_("parallel file system")}
_MONEY = re.compile(r"(-?[\d,]+(?:\.\d+)?)( M)? ([A-Z]{3})")


def _money(value: str, lang: str) -> str:
    m = _MONEY.fullmatch(value.strip())
    if not m:
        return value
    amount = float(m.group(1).replace(",", "")) * (1e6 if m.group(2) else 1)
    return w.money(amount, m.group(3), lang)


def _gpu_list(value: str, lang: str) -> str:
    ids = [v.strip() for v in value.split(",")]
    return w.listing([tr("…", lang) if i == "..." else w.gpu_name(i) for i in ids], lang)


def _number(value: str) -> float:
    return float(value.replace(",", ""))


KINDS: dict[str, Callable[[str, str], str]] = {
    "money": _money,
    "gpu": lambda v, lang: w.gpu_name(v),
    "gpus_list": _gpu_list,
    "site": lambda v, lang: w.site_name(v, lang),
    "market": lambda v, lang: w.word(w.MARKETS, v, lang),
    "term": lambda v, lang: w.word(w.TERMS, v, lang),
    "cooling": lambda v, lang: w.word(COOLING, v, lang),
    "binds": lambda v, lang: w.word(BINDS, v, lang),
    "step": lambda v, lang: w.word(STEP_TERMS, v, lang),
    "storage": lambda v, lang: w.word(STORAGE, v, lang),
    "span": lambda v, lang: w.days(_number(v), lang) if _number(v) < 0.1 else w.duration(_number(v) * 86400, lang),
    "clause": lambda v, lang: say(v, lang),
    "n_gpus": lambda v, lang: w.gpus(_number(v), lang),
    "n_servers": lambda v, lang: w.servers(_number(v), lang),
    "n_racks": lambda v, lang: w.racks(_number(v), lang),
    "n_days": lambda v, lang: w.days(_number(v), lang),
    "n_months": lambda v, lang: w.months(_number(v), lang),
}


@dataclass(frozen=True)
class S:
    """One engine template: ``match`` (its English, ``{fields}`` for the figures) shown as ``show`` (a message
    id, or a singular and plural from ``NP_`` chosen by the field ``count``)."""

    match: str
    show: str | tuple[str, str] | None = None
    count: str = "n"
    regex: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        parts = re.split(r"\{(\w+)\}", self.match)
        body = "".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>.+?)" for i, p in enumerate(parts))
        object.__setattr__(self, "regex", re.compile(body, re.S))

    def render(self, m: re.Match[str], lang: str) -> str:
        values = {}
        for name, raw in m.groupdict().items():
            kind = KINDS.get(name.rstrip("0123456789"))
            values[name] = kind(raw, lang) if kind else raw
        if isinstance(self.show, tuple):
            return ntr(self.show, _number(m.group(self.count)), lang, **values)
        return tr(self.show or self.match, lang, **values)


TEMPLATES: tuple[S, ...] = (
    # plan/search.py: why an option, what would make the job fit, notes
    S(N_("memory has {gib} GiB headroom")),
    S(N_("memory: {used} of {cap} GiB used")),
    S(N_("step time dominated by {step} ({pct})")),
    S(N_("MFU {pct}")),
    S(N_("{clause}: fits on {gpus} x {gpu} (tp={tp}, pp={pp}, zero={zero}, checkpointing {ckpt}), {tps} tokens/s")),
    S(N_("an 8-bit optimizer (optimizer: adamw-8bit)")),
    S(N_("LoRA instead of full fine-tuning (method: lora)")),
    S(N_("QLoRA with NF4 base weights (method: qlora, quantization: nf4)")),
    S(N_("more GPUs (--max-gpus {n})")),
    S(N_("larger GPUs (the whole catalog)")),
    S(N_("a shorter sequence (seq_len {n})")),
    S(N_("nothing in the searched space fits, even with an 8-bit optimizer, LoRA/QLoRA or 8x more GPUs: a "
         "larger-memory GPU, CPU offload of parameters, or a smaller model is needed")),
    S(N_("the deadline may be what binds: try without --deadline to see the fastest option's time")),
    S(N_("global batch not given: {n} sequences per step assumed for every option")),
    # workflows/plan_job.py and recommend.py: market, budget, workload
    S("market {market}: {n} of {total} GPU types left out, they cannot be bought or rented there ({gpus_list})",
      N_("{market}: {n} of {total} GPU types left out, they cannot be bought or rented there ({gpus_list})")),
    S(N_("name one with --gpu or override its availability in a --catalog file")),
    S(N_("time valued at {money} an hour of the run (one engineer's loaded pay, assumed): the answer weighs it "
         "against the cost")),
    S(N_("--time-value sets it, 0 ranks by cost alone")),
    S(N_("nothing can be had within the budget of {money}: raise it, or relax the GPU count / the model")),
    S("{n} option(s) left out: every way to get them commits more than the budget of {money}",
      NP_("{n} option left out: every way to get it commits more than the budget of {money}",
          "{n} options left out: every way to get them commits more than the budget of {money}")),
    S(N_("no per-run cost: the job states no training.tokens (the run's length)")),
    S(N_("no purchase price for this GPU in the price data (add one with --prices)")),
    S(N_("does not fit the site (see site fit); rent it instead")),
    # ... the same read clause by clause, where it follows another reason (a verdict joins them with "; ")
    S(N_("does not fit the site (see site fit)")),
    S(N_("rent it instead")),
    S(N_("commitment {money} is over the budget of {money2}")),
    S(N_("this one run (say --runs-per-month or --utilisation if the hardware will stay busy)")),
    S("{n} run(s) a month", NP_("{n} run a month", "{n} runs a month")),
    S(N_("{pct} utilisation")),
    S(N_("rented: runs in the provider's data centre, your site's racks do not apply")),
    # cost/per_run.py
    S("no rental offer for {gpu} in market {market} in the price data (add one with --prices)",
      N_("no rental offer for {gpu} in the {market} in the price data (add one with --prices)")),
    S("no offer for {gpu} in market {market} rents {n_gpus} GPUs on {n_servers} networked server(s): the per-card "
      "clouds rent single machines (add a cluster lease with --prices)",
      N_("no offer for {gpu} in the {market} rents {n_gpus} across {n_servers}: the per-card clouds rent single "
         "machines (add a cluster lease with --prices)")),
    S(N_("{term} contract: bills at least {hours} h for a {run} h run")),
    S(N_("preemptible: the run may be interrupted")),
    S(N_("checkpoint often")),
    S(N_("price from {year}: check before you sign")),
    S(N_("{voucher}: eligible providers unknown, check that this provider is in the scheme")),
    # cost/tco.py: the horizon view, seed checks
    S(N_("buy: no rental offer for this GPU in the price data (add one with --prices)")),
    S(N_("rent: renting costs less per month than owning would (power, space, maintenance)")),
    S("rent: the job needs {n_days} days", N_("rent: the job needs {n_days}")),
    S("buying pays back only after {n_months} months at {pct} utilisation, beyond the {years}-year horizon",
      N_("buying pays back only after {n_months} at {pct} utilisation, beyond the {years}-year horizon")),
    S(N_("rent: at {pct} utilisation owning costs more than renting (break-even utilisation {pct2})")),
    S("buy: pays back in {n_months} months at {pct} utilisation, within the {years}-year horizon (seed: buy for "
      "more than two years of steady use)",
      N_("buy: pays back in {n_months} at {pct} utilisation, within the {years}-year horizon (seed: buy for more "
         "than two years of steady use)")),
    S("rent: buying pays back only after {n_months} months ({years} years), beyond the {horizon}-year horizon",
      N_("rent: buying pays back only after {n_months} ({years} years), beyond the {horizon}-year horizon")),
    S(N_("break-even utilisation {pct}")),
    S(N_("storage is {pct} of hardware spend here")),
    S(N_("the seed's rule of thumb is ~{pct} (teams that also buy a parallel file system for many jobs)")),
    S(N_("GPUs are {pct} of the server price here")),
    S(N_("the seed says 40-60 %")),
    S(N_("first-year cost {x}x the server price")),
    S(N_("the seed budgets 1.6-1.8x")),
    S(N_("server price scaled from a {n}-GPU {gpu} server")),
    S(N_("no server price for {gpu}: GPU cards at {pct} of the server (seed rule)")),
    S(N_("shared storage: {tb} TB is below the smallest {storage} minimum configuration")),
    S(N_("priced at that configuration")),
    # system/: host, storage, network, power and site fit
    S(N_("seed: host RAM >= 2x the parameter bytes (7B -> 64 GB, 70B -> 512 GB)")),
    S(N_("~1 TB per node for multi-node")),
    S(N_("seed rule: {tflops} TFLOPS x 32 GB/s per TFLOPS = {gbps} GB/s")),
    S(N_("dimensionally it ties bytes to FLOPs, and here it is {x} times the {mbps} MB/s the GPUs actually read "
         "(tokens/s x {b} B/token x {k}). Checkpoint bursts ({write} GB/s) size the storage, not the rule.")),
    S(N_("one server: no scale-out fabric (front-end network only)")),
    S("{n_gpus} GPUs: RoCE is adequate below ~100 GPUs and cheaper than InfiniBand",
      N_("{n_gpus}: RoCE is adequate below ~100 GPUs and cheaper than InfiniBand")),
    S("{n_gpus} GPUs: RoCE is adequate below ~100 GPUs and cheaper than InfiniBand ({fabric} is this part's own "
      "fabric)", N_("{n_gpus}: RoCE is adequate below ~100 GPUs and cheaper than InfiniBand ({fabric} is this "
                    "part's own fabric)")),
    S("{n_gpus} GPUs: InfiniBand (adaptive routing, SHARP)", N_("{n_gpus}: InfiniBand (adaptive routing, SHARP)")),
    S(N_("the seed guide finds RoCE strained beyond ~100 GPUs")),
    S("{n_gpus} GPUs: {fabric} (RoCE would also do at this size)",
      N_("{n_gpus}: {fabric} (RoCE would also do at this size)")),
    S("{n_gpus} GPUs: {fabric}, the part's own fabric (no InfiniBand for it)",
      N_("{n_gpus}: {fabric}, the part's own fabric (no InfiniBand for it)")),
    S(N_("the seed guide finds RoCE strained beyond ~100 GPUs, so plan lossless Ethernet tuning (PFC/ECN, adaptive "
         "routing) as large RoCE clusters do (Meta, Llama 3 on 24K-GPU RoCE)")),
    S(N_("{fabric} replaced")),
    S(N_("{fabric} replaced by {fabric2}: this part's servers ship RoCE, not InfiniBand")),
    S("fits: {n_servers} server(s) of {kw} kW per rack ({usable} kW usable of {rack} kW; {binds} binds), "
      "{n_racks} racks incl. {extra} for network/storage",
      N_("fits: {n_servers} of {kw} kW per rack ({usable} kW usable of {rack} kW; {binds} binds), {n_racks} incl. "
         "{extra} for network/storage")),
    S("does NOT fit: one {kw} kW server exceeds the {usable} kW usable of a {rack} kW rack ({binds} limit, "
      "80 % continuous load, {cooling} cooling)",
      N_("does NOT fit: one {kw} kW server exceeds the {usable} kW usable of a {rack} kW rack ({binds} limit, "
         "continuous load at most 80%, {cooling} cooling)")),
    S(N_("cap each GPU at {w} W (nvidia-smi -pl {w2}): one server per rack, about {pct} of full throughput")),
    S(N_("power capping cannot bring a {kw} kW server under {usable} kW (it would need {pct} of TDP)")),
    S(N_("use {n}-GPU servers (about {kw} kW each) - loses the 8-GPU NVLink domain")),
    S(N_("host in a higher-density or liquid-cooled site (30-60+ kW per rack)")),
    S(N_("{gpu} ({form}) comes as one {cooling}-cooled rack of {n} GPUs drawing ~{kw} kW")),
    S("fits: {clause}", N_("fits: {clause}")),
    S("does NOT fit: {clause}", N_("does NOT fit: {clause}")),
    S("{n_racks} such rack(s) within {usable} kW usable, {n_racks2} racks incl. {extra} for network/storage",
      N_("{n_racks} within {usable} kW usable, {n_racks2} incl. {extra} for network/storage")),
    S(N_("it needs liquid cooling and {site} is {cooling}-cooled")),
    S("{kw} kW exceeds the {usable} kW usable of a {rack} kW rack (80 % continuous load)",
      N_("{kw} kW exceeds the {usable} kW usable of a {rack} kW rack (continuous load at most 80%)")),
    S(N_("host it in a liquid-cooled site with >= {kw} kW per rack (direct liquid cooling, CDU and facility water)")),
    S(N_("or choose 8-GPU baseboard servers (HGX B200/H200) that a 30-60 kW site can take")),
    # workflows/recommend.py: deployment timeline and verification on hardware
    S(N_("evaluation and quotes")),
    S(N_("vendor delivery of bought servers")),
    S(N_("server preparation (delivery, racking, cabling)")),
    S(N_("environment (drivers, NCCL, containers, storage mounts)")),
    S(N_("data preparation and acceptance tests")),
    S(N_("machines rented or in stock")),
    S(N_("bought servers: delivery lead time included")),
    S(N_("1. measure real peak memory on one GPU")),
    S(N_("2. profile a training step")),
    S(N_("3. run a 3-5 day small-scale training on the target machine")),
    S(N_("torch.cuda.max_memory_allocated and nvidia-smi against the estimate")),
    S("data loading plus gradient sync above 20 % of the step means storage or network binds",
      N_("when data loading plus gradient sync exceed 20%, storage or network binds")),
    S(N_("throttling, ECC / XID errors, throughput drift, thermals")),
    # workflows/decide.py: what a runner-up trades (its parts, joined with ", ")
    S(N_("{pct} per run")),
    S("{span} days faster", N_("{span} faster")),
    S("{span} days slower", N_("{span} slower")),
    S(N_("commits {money}")),
    S(N_("tight fit ({pct} of memory)")),
    S(N_("similar")),
    # plan/scale.py: the scaling curve's verdicts
    S(N_("{clause}: {n} GPUs are SLOWER than {m} ({a} vs {b} tokens/s; {step} dominates)")),
    S(N_("{clause}: from {n} GPUs scaling efficiency falls below 50% ({pct}; {step} dominates)")),
    S(N_("{links} (data parallel only)")),
    S(N_("{links} (best layout)")),
    # workflows/report_model.py: what each assumption is
    S(N_("GPU {gpu}: {gib} GiB, {tflops} TFLOPS bf16 dense, {gbps} GB/s, {watts} W")),
    S(N_("link {link}: {gbps} GB/s per direction")),
    S(N_("site {site}: {kw} kW/rack, {cooling}, PUE {pue}, {price}/kWh")),
    S(N_("memory model: {section}")),
    S(N_("step-time model: {section}")),
    S(N_("system sizing: {section}")),
    S(N_("planner: {section}")),
    S(N_("price")),
    S(N_("rental offer: {gpu} from {provider} ({term})")),
    S(N_("server price: {n} x {gpu}")),
    S(N_("card price: {gpu}")),
    S(N_("component price: {component}")),
    S(N_("operating cost: {opex}")),
    S(N_("availability to rent: {gpu} in the {market}")),
    S(N_("availability to buy: {gpu} in the {market}")),
)


def clauses(text: str) -> list[str]:
    """``text`` split at ``; `` outside parentheses."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0 and text.startswith("; ", i):
            out.append(text[start:i])
            start = i + 2
    out.append(text[start:])
    return [c for c in out if c]


@cache
def _by_start() -> dict[str, list[S]]:
    """Templates by their first word (those starting with a field under "")."""
    index: dict[str, list[S]] = {}
    for s in TEMPLATES:
        index.setdefault("" if s.match.startswith("{") else s.match.split(" ")[0], []).append(s)
    return index


def _find(clause: str) -> tuple[S, re.Match[str]] | None:
    index = _by_start()
    for s in index.get(clause.split(" ")[0], []) + index.get("", []):
        m = s.regex.fullmatch(clause)
        if m:
            return s, m
    return None


@lru_cache(maxsize=4096)
def say(text: Any, lang: str) -> str:
    """An engine sentence in ``lang``, clause by clause."""
    if text is None or text == "":
        return ""
    out = []
    for clause in clauses(str(text)):
        found = _find(clause)
        out.append(found[0].render(found[1], lang) if found else clause)
    return w.join(out, lang)


def say_all(texts: Any, lang: str) -> list[str]:
    return [say(t, lang) for t in texts or []]


def untranslated(text: Any) -> list[str]:
    """The clauses of ``text`` no template matches (what a reader of Chinese would see in English)."""
    return [c for c in clauses(str(text or "")) if _find(c) is None]
