"""``trainsizer estimate`` in the terminal, in the reader's language: the scenario, the memory table (each
component's name from :data:`COMPONENTS`, where it comes from as the engine's message), what still fits,
the speed and its largest step-time terms, the seed guide's rule beside the estimate and the notes."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table

from trainsizer.i18n import N_, resolve_lang, t, tr
from trainsizer.report import words as w
from trainsizer.report.message_text import STEP_TERMS, text

COMPONENTS = {
    "weights": N_("weights"), "lora_adapters": N_("LoRA adapters"), "master_weights": N_("fp32 master weights"),
    "optimizer_states": N_("optimizer states"), "gradients": N_("gradients"), "activations": N_("activations"),
    "logits_and_loss": N_("logits and loss"), "backward_working_set": N_("backward working set"),
    "optimizer_step_temporaries": N_("optimizer step temporaries"), "buffers": N_("buffers"),
    "full_state_dict": N_("full checkpoint on every rank"),
}
PHASES = {"forward+loss": N_("forward and loss"), "backward": N_("backward"), "optimizer step": N_("optimizer step"),
          "checkpoint load": N_("checkpoint load")}
TERMS = {**STEP_TERMS, "mfu_ceiling": N_("held at the MFU ceiling"), "overhead": N_("other overhead")}


def _phase(mem: Any, lang: str) -> str:
    phase = w.word(PHASES, mem.phase, lang) if mem.phase else mem.peak_phase
    if mem.stage is None:
        return phase
    return tr("{phase} (pipeline stage {stage})", lang, phase=phase, stage=mem.stage)


def _scenario_lines(result: Any, origin: str, lang: str) -> list[str]:
    sc, arch = result.scenario, result.architecture
    trn, par = sc.training, sc.parallel
    active = tr(" ({n} B active)", lang, n=f"{result.params.active / 1e9:.1f}") if arch.moe else ""
    layout = f"tp={par.tp} pp={par.pp} cp={par.cp} dp={par.dp} zero={par.zero}"
    model = tr("{model}: {params} B params{active}; {method} {precision} {optimizer}; micro-batch {mbs} x {seq} "
               "tokens, global batch {batch}; checkpointing {ckpt}, attention {attention}", lang,
               model=arch.name or arch.model_type, params=f"{result.params.total / 1e9:.2f}", active=active,
               method=trn.method, precision=trn.precision, optimizer=trn.optimizer, mbs=trn.micro_batch_size,
               seq=trn.seq_len, batch=sc.global_batch_size, ckpt=trn.activation_checkpointing,
               attention=trn.attention)
    return [f"[bold]{t('scenario', lang)}[/bold]: {escape(origin)}", f"  {escape(model)}",
            f"  {par.gpus} x {result.gpu.name} ({result.gpu.memory_gib:.1f} GiB); {layout}"]


def _memory_table(mem: Any, lang: str) -> Table:
    table = Table(title=t("title", lang), title_justify="left")
    table.add_column(t("component", lang))
    table.add_column(t("gib", lang), justify="right")
    table.add_column(t("why", lang), overflow="fold")
    for c in mem.components:
        if c.bytes > 0:
            table.add_row(w.word(COMPONENTS, c.name, lang), f"{c.gib:.2f}", escape(text(c.why, lang)))
    table.add_section()
    table.add_row(t("allocated", lang), f"{mem.allocated_gib:.2f}", f"{t('peak_phase', lang)} {_phase(mem, lang)}")
    table.add_row(t("reserved", lang), f"{mem.reserved_gib:.2f}", "")
    verdict = (f"[green]{t('fits', lang)}[/green]" if mem.fits else f"[red]{t('no_fit', lang)}[/red]")
    table.add_row(t("device", lang), f"{mem.device_gib:.2f}",
                  f"{verdict}: {t('capacity', lang)} {mem.capacity_gib:.2f} GiB, "
                  f"{t('headroom', lang)} {mem.capacity_gib - mem.device_gib:+.2f} GiB")
    return table


def _speed_lines(perf: Any, lang: str) -> list[str]:
    head = tr("step {step} s, {tps} tokens/s ({per_gpu} per GPU), {tflops} TFLOPS/GPU, MFU {mfu} of {peak} dense",
              lang, step=f"{perf.step_time_s:.3f}", tps=f"{perf.tokens_per_s:,.0f}",
              per_gpu=f"{perf.tokens_per_s_per_gpu:,.0f}", tflops=f"{perf.tflops_per_gpu:.0f}", mfu=f"{perf.mfu:.0%}",
              peak=f"{perf.peak_tflops:g}")
    speed = tr("Speed", lang)
    lines = [f"[bold]{speed}[/bold]: {head}"]
    top = sorted(((v, k) for k, v in perf.breakdown_s.items() if v > 0), reverse=True)[:5]
    lines.append("  " + w.listing([f"{w.word(TERMS, k, lang)} {v / perf.step_time_s:.0%}" for v, k in top], lang))
    if perf.time_to_train_s:
        lines.append("  " + w.labelled(tr("time to train", lang), w.listing(
            [w.days(perf.time_to_train_s / 86400, lang),
             tr("{n} GPU-hours", lang, n=f"{perf.gpu_hours:,.0f}")], lang), lang))
    return lines


def _range_lines(result: Any, lang: str) -> list[str]:
    """The 80 % ranges as people read them: "35.1–69.3 GiB", "fits unless memory is 12 % above the estimate"."""
    mem, perf = result.intervals()
    lo, hi = mem["device_gib"]
    above = mem["fits_unless_above"]
    fit = (tr("fits unless memory is {pct} above the estimate", lang, pct=f"{above:.0%}") if above is not None
           and above >= 0 else tr("does not fit unless memory is {pct} below the estimate", lang,
                                  pct=f"{-above:.0%}" if above is not None else "?"))
    title = tr("Range (80 %)", lang)
    lines = [w.labelled(f"[bold]{title}[/bold]", escape(tr(
        "device memory {lo}–{hi} GiB; {fit}; chance of running out of memory {p}", lang, lo=f"{lo:.1f}",
        hi=f"{hi:.1f}", fit=fit, p=f"{mem['p_exceeds_capacity']:.0%}")), lang)]
    if perf:
        speed = tr("step {lo}–{hi} s, {tlo}–{thi} tokens/s", lang, lo=f"{perf['step_time_s'][0]:.3g}",
                   hi=f"{perf['step_time_s'][1]:.3g}", tlo=f"{perf['tokens_per_s'][0]:,.0f}",
                   thi=f"{perf['tokens_per_s'][1]:,.0f}")
        if "time_to_train_s" in perf:
            speed = w.join([speed, tr("time to train {lo}–{hi} hours", lang,
                                      lo=f"{perf['time_to_train_s'][0] / 3600:,.0f}",
                                      hi=f"{perf['time_to_train_s'][1] / 3600:,.0f}")], lang)
        lines.append("  " + escape(speed))
    lines += ["  " + escape(text(n, lang)) for n in [*mem["notes"], *(perf["notes"] if perf else [])]]
    return lines


def print_estimate(result: Any, origin: str, lang: str | None) -> None:
    from trainsizer.report.text import _console

    lang = resolve_lang(lang)
    con = _console()
    mem = result.memory
    for line in _scenario_lines(result, origin, lang):
        con.print(line)
    con.print(_memory_table(mem, lang))
    if result.limits:
        lim = result.limits
        mbs = str(lim.max_micro_batch_size) if lim.max_micro_batch_size else t("nothing_fits", lang)
        seq = f"{lim.max_seq_len:,}" if lim.max_seq_len else t("nothing_fits", lang)
        con.print(f"[bold]{t('limits', lang)}[/bold]: {t('max_mbs', lang)} {mbs}; {t('max_seq', lang)} {seq}")
    if result.performance:
        for line in _speed_lines(result.performance, lang):
            con.print(line)
    for line in _range_lines(result, lang):
        con.print(line)
    rule = result.rule_of_thumb
    con.print(f"[bold]{t('rule', lang)}[/bold]: " + escape(tr(
        "{formula} = {total} GB total, {rule_value} {per_gpu} GiB vs {estimate} {estimate_gib} GiB ({off_by} {error})",
        lang, formula=text(rule.formula, lang), total=f"{rule.total_gb:,.1f}", rule_value=t("rule_value", lang),
        per_gpu=f"{rule.per_gpu_gib:.1f}", estimate=t("estimate", lang), estimate_gib=f"{rule.estimate_gib:.1f}",
        off_by=t("off_by", lang), error=f"{rule.error:+.0%}")))
    for reason in rule.reasons:
        con.print(f"  - {escape(text(reason, lang))}")
    notes = [*mem.notes, *(result.performance.notes if result.performance else [])]
    if notes:
        con.print(f"[bold]{t('notes', lang)}[/bold]:")
        for note in notes:
            con.print(f"  - {escape(text(note, lang))}")
