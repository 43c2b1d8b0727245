"""An option's verdict, why-not and why in the reader's language: the engine's messages (the option's
``verdict`` and ``why``, its per-run ``rent_unavailable`` / ``buy_unavailable``) rendered through
:mod:`trainsizer.report.message_text`; the layout and servers from the option's figures."""

from __future__ import annotations

from typing import Any

from trainsizer.i18n import tr
from trainsizer.report import words as w
from trainsizer.report.message_text import text


def verdict(option: dict[str, Any], lang: str) -> str:
    """What the option costs a run and how it is had, else why it cannot be."""
    return text(option.get("verdict"), lang)


def why(option: dict[str, Any], lang: str) -> str:
    """What binds the option (memory headroom, the dominant step-time term, MFU)."""
    return text(option.get("why"), lang)


def links(option: dict[str, Any]) -> str:
    hw = option["hardware"]
    return " + ".join(x for x in (hw.get("intra_node"), hw.get("inter_node")) if x)


def layout(option: dict[str, Any]) -> str:
    """The parallel layout in the planner's notation (codes, the same in every language)."""
    p, t = option["parallel"], option["training"]
    parts = [f"tp{p['tp']}", f"pp{p['pp']}" + (f"×v{p['virtual_pp']}" if p.get("virtual_pp", 1) > 1 else ""),
             f"cp{p.get('cp', 1)}", f"dp{p['dp']}", f"zero{p['zero']}"]
    if p.get("distributed_optimizer"):
        parts.append("dist-opt")
    if p.get("offload", "none") != "none":
        parts.append(f"offload {p['offload']}")
    parts += [f"mbs {t['micro_batch_size']}", f"ckpt {t['activation_checkpointing']}"]
    return " · ".join(parts)


def servers_text(option: dict[str, Any], lang: str) -> str:
    """ "2 servers of 8 GPUs" """
    hw = option["hardware"]
    return tr("{servers} of {gpus}", lang, servers=w.servers(hw["nodes"], lang), gpus=w.gpus(hw["gpus_per_node"], lang))
