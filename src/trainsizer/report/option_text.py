"""An option's verdict, why-not and why in the reader's language: the engine's messages (the option's
``verdict`` and ``why``, its per-run ``rent_unavailable`` / ``buy_unavailable``) rendered through
:mod:`trainsizer.report.message_text`; the layout, servers and links from the option's figures."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trainsizer.i18n import N_, ntr, tr
from trainsizer.report import words as w
from trainsizer.report.message_text import text

if TYPE_CHECKING:  # the plan document's keys (workflows.plan_schema)
    from trainsizer.workflows.plan_schema import OptionJSON, RecommendationJSON


def verdict(option: OptionJSON, lang: str) -> str:
    """What the option costs a run and how it is had, else why it cannot be."""
    return text(option.get("verdict"), lang)


def why(option: OptionJSON, lang: str) -> str:
    """What binds the option (memory headroom, the dominant step-time term, MFU)."""
    return text(option.get("why"), lang)


def links(option: OptionJSON, lang: str) -> str:
    """The option's links by name: "NVLink 4.0 + InfiniBand NDR 400 Gb/s"."""
    hw = option["hardware"]
    return w.links((hw.get("intra_node"), hw.get("inter_node")), lang)


LAYOUT_WORDS = {"tp": N_("tensor parallel {n}"), "pp": N_("pipeline {n}"), "vpp": N_("{n} virtual stages"),
                "cp": N_("context parallel {n}"), "dp": N_("data parallel {n}"), "ep": N_("expert parallel {n}"),
                "zero": N_("ZeRO-{n}"), "shard": N_("sharded within groups of {n}"),
                "split": N_("embedding and loss counted as layers"),
                "dist-opt": N_("distributed optimizer"), "offload": N_("offloaded to CPU memory: {n}"),
                "mbs": N_("micro-batch {n}"), "ckpt": N_("recomputation: {n}")}
CHECKPOINTING = {"none": N_("none"), "selective": N_("selective"), "full": N_("full")}
OFFLOAD = {"optimizer": N_("optimizer states"), "optimizer+params": N_("optimizer states and weights")}


def layout(option: OptionJSON, lang: str = "en") -> str:
    """The parallel layout: the planner's notation in English (``tp4 · pp1 · … · ckpt full``, as the CLI's flags
    and the JSON spell it), in words in another language (``张量并行 4 · 流水线 1 · …``)."""
    if lang == "en":
        return _layout_codes(option)
    p, t = option["parallel"], option["training"]

    def part(key: str, n: Any) -> str:
        return tr(LAYOUT_WORDS[key], lang, n=n)

    pp = part("pp", p["pp"]) + (f" ({part('vpp', p['virtual_pp'])})" if p.get("virtual_pp", 1) > 1 else "") \
        + (f" ({tr(LAYOUT_WORDS['split'], lang)})" if p.get("pipeline_split", "even") != "even" else "")
    parts = [part("tp", p["tp"]), pp, part("cp", p.get("cp", 1)), part("dp", p["dp"]),
             *([part("ep", p["ep"])] if p.get("ep", 1) > 1 else []), part("zero", p["zero"])]
    if p.get("zero_shard_gpus"):
        parts.append(part("shard", p["zero_shard_gpus"]))
    if p.get("distributed_optimizer"):
        parts.append(tr(LAYOUT_WORDS["dist-opt"], lang))
    if p.get("offload", "none") != "none":
        parts.append(part("offload", w.word(OFFLOAD, p["offload"], lang)))
    ckpt = t["activation_checkpointing"]
    parts += [part("mbs", t["micro_batch_size"]), part("ckpt", w.word(CHECKPOINTING, ckpt, lang))]
    return " · ".join(parts)


def _layout_codes(option: OptionJSON) -> str:
    p, t = option["parallel"], option["training"]
    parts = [f"tp{p['tp']}", f"pp{p['pp']}" + (f"×v{p['virtual_pp']}" if p.get("virtual_pp", 1) > 1 else "")
             + (f" ({p['pipeline_split']})" if p.get("pipeline_split", "even") != "even" else ""),
             f"cp{p.get('cp', 1)}", f"dp{p['dp']}", *([f"ep{p['ep']}"] if p.get("ep", 1) > 1 else []),
             f"zero{p['zero']}" + (f"/{p['zero_shard_gpus']}" if p.get("zero_shard_gpus") else "")]
    if p.get("distributed_optimizer"):
        parts.append("dist-opt")
    if p.get("offload", "none") != "none":
        parts.append(f"offload {p['offload']}")
    parts += [f"mbs {t['micro_batch_size']}", f"ckpt {t['activation_checkpointing']}"]
    return " · ".join(parts)


def servers_text(option: OptionJSON, lang: str) -> str:
    """ "2 servers of 8 GPUs" """
    hw = option["hardware"]
    return tr("{servers} of {gpus}", lang, servers=w.servers(hw["nodes"], lang), gpus=w.gpus(hw["gpus_per_node"], lang))


def _unit(seconds: float) -> tuple[tuple[str, str], float]:
    """The unit ``words.duration`` would choose for ``seconds`` and its size in seconds."""
    if seconds < 120:
        return w._SECONDS, 1.0
    if seconds < 3600:
        return w._MINUTES, 60.0
    if seconds < 172800:
        return w.HOURS, 3600.0
    return w._DAYS, 86400.0


def duration_range(span: list[float] | None, lang: str, like: float | None = None) -> str:
    """ "26–34 hours": both ends in the unit of the longer one, or of the figure ``like`` (the range follows it:
    "3 minutes (2.1–4.6 minutes)", one unit per figure)."""
    if not span:
        return w.MISSING
    forms, size = _unit(float(span[1] if like is None else like))
    digits = 0 if span[1] / size >= 10 else (2 if span[1] / size < 1 else 1)
    return ntr(forms, 2, lang, n=f"{w._num(span[0] / size, digits)}–{w._num(span[1] / size, digits)}")


# The table cells below put an option's 80 % range after its figure, ``gap`` between them (a terminal table: a new
# line, so the figure itself never wraps).


def time_cell(o: OptionJSON, lang: str, gap: str = " ") -> str:
    """The time to train with its 80 % range: "9 hours (8–12 hours)"."""
    time = w.duration(o["performance"].get("time_to_train_s"), lang)
    span = (o.get("range") or {}).get("time_to_train_s")
    return f"{time}{gap}({duration_range(span, lang)})" if span else time


def run_cell(o: OptionJSON, currency: str, lang: str, gap: str = " ") -> str:
    """One run's cost on its terms with its 80 % range: "rent 39 CNY (31–50 CNY)"; a rental on a contract names
    its term, since the cost is the contract's bill ("rent, 3-year contract: 2.30 M CNY")."""
    pr = o.get("per_run") or {}
    if pr.get("cost") is None:
        return w.MISSING
    run = contract_cost(o, currency, lang) or (f"{w.word(w.ACQUISITIONS, pr['acquisition'], lang)} "
                                               f"{w.money(pr['cost'], currency, lang)}")
    span = (o.get("range") or {}).get("per_run_cost")
    return f"{run}{gap}({w.money(span[0], currency, lang)}–{w.money(span[1], currency, lang)})" if span else run


def contract_cost(o: OptionJSON, currency: str, lang: str) -> str | None:
    """A run's cost where it is a rental contract's bill, with the term ("rent, 3-year contract: 2.30 M CNY"); None
    for a pay-as-you-go rental, a purchase or no cost."""
    pr = o.get("per_run") or {}
    rent = pr.get("rent") if pr.get("acquisition") == "rent" and pr.get("cost") is not None else None
    if not rent or rent["term"] in w.PAY_AS_YOU_GO:
        return None
    term = w.contract(rent["term"], rent.get("min_term_hours") or rent.get("billed_hours"), lang)
    return tr("{acquisition}, {term}: {cost}", lang, acquisition=w.word(w.ACQUISITIONS, "rent", lang), term=term,
              cost=w.money(pr["cost"], currency, lang))


def memory_cell(o: OptionJSON, sep: str = "/", gap: str = " ", lang: str = "en") -> str:
    """GiB used of the capacity with the 80 % range of the use, and the chance of running out of memory where it is
    a real risk (``oom_mark``): "66.7/80 (60–113)", "31.8/32 (26–38) OOM 54%"."""
    mem = o["memory"]
    used = f"{mem['device_gib']:.1f}{sep}{mem['capacity_gib']:.0f}"
    span = (o.get("range") or {}).get("device_gib")
    cell = f"{used}{gap}({span[0]:.0f}–{span[1]:.0f})" if span else used
    mark = oom_mark(o, lang)
    return f"{cell}{gap}{mark}" if mark else cell


def oom_mark(o: OptionJSON, lang: str) -> str:
    """ "OOM 54%": the option's chance of running out of GPU memory where its range calls it a real risk
    (``range.at_risk``); "" otherwise. A layout above the plan's --max-oom-risk is never the answer."""
    r = o.get("range") or {}
    return tr("OOM {pct}", lang, pct=f"{r['p_exceeds_capacity']:.0%}") if r.get("at_risk") else ""


def tokens_cell(o: OptionJSON, gap: str = " ") -> str:
    """Tokens per second with its 80 % range (the step time's, read inversely): "59,871 (48,000–72,000)"."""
    perf = o["performance"]
    span = (o.get("range") or {}).get("step_time_s")
    tps = f"{perf['tokens_per_s']:,.0f}"
    if not span:
        return tps
    lo, hi = (perf["tokens_per_s"] * perf["step_time_s"] / t for t in (span[1], span[0]))
    return f"{tps}{gap}({lo:,.0f}–{hi:,.0f})"


def span(o: OptionJSON, what: str, currency: str, lang: str) -> str:
    """The 80 % range of one of an option's figures in brackets, to follow the figure on a page: ``what`` is time
    (to train), step (time), tokens (per second), memory (GiB) or run (its cost); "" without a range."""
    r, perf = o.get("range") or {}, o["performance"]
    if what == "time" and r.get("time_to_train_s"):
        return f"({duration_range(r['time_to_train_s'], lang, like=perf.get('time_to_train_s'))})"
    if what in ("step", "tokens") and r.get("step_time_s"):
        lo, hi = r["step_time_s"]
        if what == "step":
            return f"({duration_range([lo, hi], lang, like=perf['step_time_s'])})"
        tokens = perf["tokens_per_s"] * perf["step_time_s"]  # per step: a speed is the step time read inversely
        return f"({tokens / hi:,.0f}–{tokens / lo:,.0f})"
    if what == "memory" and r.get("device_gib"):
        return f"({r['device_gib'][0]:.1f}–{r['device_gib'][1]:.1f})"
    if what == "run" and r.get("per_run_cost"):
        return f"({w.money(r['per_run_cost'][0], currency, lang)}–{w.money(r['per_run_cost'][1], currency, lang)})"
    return ""


def range_text(option: OptionJSON, currency: str, lang: str, cost: list[float] | None = None) -> str:
    """An option's 80 % ranges as people read them: time to train, cost per run, the chance of running out of
    memory ("26–34 hours; 1,100–1,900 CNY a run; fits unless memory is 12 % above the estimate"). ``cost``: the
    range of the cost the answer states where it is not the option's priced run (a quote's floor; [] for none)."""
    r = option.get("range") or {}
    if not r:
        return w.MISSING
    parts = []
    if r.get("time_to_train_s"):
        parts.append(duration_range(r["time_to_train_s"], lang))
    span = r.get("per_run_cost") if cost is None else cost
    if span:
        lo, hi = span
        parts.append(tr("{lo}–{hi} a run", lang, lo=w.money(lo, currency, lang), hi=w.money(hi, currency, lang)))
    above = r.get("fits_unless_above")
    if above is not None and above >= 0:
        parts.append(tr("fits unless memory is {pct} above the estimate", lang, pct=f"{above:.0%}"))
    parts.append(tr("chance of running out of memory {p}", lang, p=f"{r['p_exceeds_capacity']:.0%}"))
    return w.join(parts, lang)


def confidence(rec: RecommendationJSON) -> float | None:
    """How often the choice holds: the plan's share, never above its chance of running (``confidence.runs``, 1 − the
    chance of running out of memory: a layout that runs out of memory holds in no outcome)."""
    conf = rec.get("confidence")
    return conf["share"] if conf else None


def confidence_text(rec: RecommendationJSON, lang: str, oom: float | None = None) -> str:
    """ "holds in 72 % of the plausible outcomes" (the pick is best, meets the deadline and the budget); with the
    pick's chance of running out of memory ``oom``, what lowers it."""
    share = confidence(rec)
    if share is None:
        return w.MISSING
    said = tr("the choice holds in {pct} of the plausible outcomes (the ranges sampled)", lang, pct=f"{share:.0%}")
    if oom and oom >= 0.005:  # a chance said as 1 % or more
        said = w.join([said, tr("lowered by its {pct} chance of running out of memory", lang, pct=f"{oom:.0%}")],
                      lang)
    return said
