"""An option's verdict and why-not in the reader's language, from its ``per_run``, ``availability`` and site
fit (the same parts :func:`trainsizer.workflows.recommend.recommend_options` writes its English verdict
from). The reasons a part cannot be had in a market are data (accelerators.yaml, one English line with
its sources): English keeps them; Chinese says what the status means and leaves the line out."""

from __future__ import annotations

from typing import Any

from trainsizer.i18n import N_, tr
from trainsizer.report import words as w
from trainsizer.report.sentences import say

_NOT_BUYABLE = "cannot be bought new in market "
_NOT_RENTABLE = "not rentable in market "


def unavailable(text: str | None, acquisition: str, option: dict[str, Any], lang: str) -> str:
    """Why the option cannot be rented or bought, in ``lang``."""
    if not text:
        return ""
    for prefix, acq in ((_NOT_BUYABLE, "buy"), (_NOT_RENTABLE, "rent")):
        if text.startswith(prefix) and acq == acquisition:
            market, _, reason = text[len(prefix):].partition(": ")
            avail = (option.get("availability") or {}).get(acq) or {}
            status = w.word(w.STATUSES, avail.get("status"), lang)
            msg = N_("cannot be bought new in the {market}") if acq == "buy" else N_("not rentable in the {market}")
            head = tr(msg, lang, market=w.word(w.MARKETS, market, lang))
            return f"{head}: {reason}" if lang != w.ZH else f"{head}（{status}）"
    return say(text, lang)


def _rent_clause(pr: dict[str, Any], lang: str) -> str:
    r, cur = pr["rent"], pr["currency"]
    return tr("rent: {cost} a run from {provider} ({term}, {hours} billed)", lang,
              cost=w.money(r["cost"], cur, lang), provider=r["provider"], term=w.word(w.TERMS, r["term"], lang),
              hours=w.count(w.HOURS, r["billed_hours"], lang, 2))


def verdict(option: dict[str, Any], lang: str) -> str:
    """What the option costs a run and how it is had, else why it cannot be."""
    pr = option.get("per_run") or {}
    cur = pr.get("currency", "")
    acq = pr.get("acquisition")
    rent_no = unavailable(pr.get("rent_unavailable"), "rent", option, lang)
    buy_no = unavailable(pr.get("buy_unavailable"), "buy", option, lang)
    parts: list[str] = []
    if pr.get("cost") is None and pr.get("cost_per_million_tokens"):
        parts.append(tr("{acquisition}: {price} per million tokens", lang,
                        acquisition=w.word(w.ACQUISITIONS, acq, lang),
                        price=w.small_money(pr["cost_per_million_tokens"], cur, lang)))
        parts.append(say(pr.get("reason"), lang) if pr.get("reason") else "")
    elif acq == "rent":
        parts.append(_rent_clause(pr, lang))
        if pr.get("buy"):
            parts.append(tr("buying would cost {cost} a run at {workload}", lang,
                            cost=w.money(pr["buy"]["cost"], cur, lang), workload=say(pr["workload"], lang)))
        elif buy_no:
            parts.append(tr("buying: {reason}", lang, reason=buy_no))
    elif acq == "buy":
        parts.append(tr("buy: {cost} a run at {workload}, {commitment} up front", lang,
                        cost=w.money(pr["buy"]["cost"], cur, lang), workload=say(pr["workload"], lang),
                        commitment=w.money(pr["buy"]["commitment"], cur, lang)))
        if pr.get("rent"):
            parts.append(tr("renting would cost {cost} a run", lang, cost=w.money(pr["rent"]["cost"], cur, lang)))
    else:
        reasons = [r for r in (rent_no, buy_no) if r] or [say(pr.get("reason"), lang)]
        horizon = say((option.get("cost") or {}).get("verdict"), lang) or tr("no purchase price", lang)
        parts.append(tr("no per-run cost: {reasons}. Over the horizon: {verdict}", lang,
                        reasons=w.join(reasons, lang), verdict=horizon))
    fit = (option.get("system") or {}).get("site_fit")
    if fit and not fit.get("fits"):
        parts.append(say("rented: runs in the provider's data centre, your site's racks do not apply", lang)
                     if acq == "rent" else tr("site: {verdict}", lang, verdict=say(fit["verdict"], lang)))
    return w.join(parts, lang)


def why(option: dict[str, Any], lang: str) -> str:
    """What binds the option (memory headroom, the dominant step-time term, MFU)."""
    return say(option.get("why"), lang)


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
