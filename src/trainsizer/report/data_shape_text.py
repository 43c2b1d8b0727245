"""``trainsizer data-shape`` in the terminal, in the reader's language: the counts, the histogram, and the ``data:``
block to paste into a scenario (``--yaml`` prints the block alone)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trainsizer.i18n import N_, tr

if TYPE_CHECKING:
    from trainsizer.workflows.data_shape import DataBlockJSON

BAR_WIDTH = 40


def data_block_yaml(block: DataBlockJSON) -> str:
    """The ``data:`` block as YAML, one histogram bin per line."""
    lines = ["data:", f"  packing: {str(block['packing']).lower()}", f"  mean_tokens: {block['mean_tokens']:g}",
             f"  max_tokens: {block['max_tokens']}", "  length_histogram:"]
    lines += [f"    - {{up_to: {b['up_to']}, samples: {b['samples']}}}" for b in block["length_histogram"]]
    return "\n".join(lines)


def data_shape_lines(stats: Any, source: str, lang: str, packing: bool = False) -> list[str]:
    out = [tr(N_("Tokens per sample of {source}: {n} samples, counted with {tokenizer}"), lang, source=source,
              n=f"{stats.samples:,}", tokenizer=stats.counted_with)]
    if stats.approximate:
        out.append(tr(N_("approximation: characters / {ratio}, not the tokenizer's count (the chat template's tokens "
                         "are not counted)"), lang, ratio=stats.counted_with.split("/", 1)[1]))
    out.append(tr(N_("mean {mean}, p50 {p50}, p90 {p90}, p99 {p99}, max {longest}"), lang,
                  mean=f"{stats.mean:,.1f}", p50=f"{stats.p50:,}", p90=f"{stats.p90:,}", p99=f"{stats.p99:,}",
                  longest=f"{stats.longest:,}"))
    out.append("")
    head = (tr(N_("up to"), lang), tr(N_("samples"), lang), tr(N_("share"), lang))
    out.append(f"{head[0]:>10}  {head[1]:>10}  {head[2]:>6}")
    most = max(n for _, n in stats.bins)
    for up, n in stats.bins:
        bar = "#" * max(1, round(BAR_WIDTH * n / most))
        out.append(f"{up:>10,}  {n:>10,}  {n / stats.samples:>6.1%}  {bar}")
    out.append("")
    out.append(tr(N_("In a scenario (memory takes the longest micro-batch, step time the mean; --yaml prints this "
                     "alone):"), lang))
    out.append(data_block_yaml(stats.data_block(packing)))
    return out
