"""The answer first: one card with what to rent or buy, from which offer or where, how many, the cost of a
run, the money to commit, the time to train and one sentence on why; then the runner-ups and what each
trades. Every face shows this card first (terminal, HTML and Markdown report, web page), built from the
plan's ``recommendation`` object: the figures are the plan's, only their wording is done here. Without a
recommendation the card says why, with the plan's suggestions and notes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from trainsizer.i18n import N_, tr
from trainsizer.report import words as w
from trainsizer.report.message_text import text, texts
from trainsizer.report.option_text import confidence, confidence_text, contract_cost, range_text

if TYPE_CHECKING:  # the plan document's keys (workflows.plan_schema)
    from trainsizer.workflows.plan_schema import OfferJSON, PlanJSON, RecommendationJSON



def _action(acquisition: str, gpus: int, gpu: str, offer: OfferJSON | None, lang: str) -> str:
    hardware = w.hardware(gpus, gpu, lang)
    if acquisition == "rent" and offer:
        return tr("Rent {hardware} from {provider} ({term})", lang, hardware=hardware, provider=offer["provider"],
                  term=w.word(w.TERMS, offer["term"], lang))
    return tr(N_("Rent {hardware}") if acquisition == "rent" else N_("Buy {hardware}"), lang, hardware=hardware)


def _cost(rec: RecommendationJSON, lang: str) -> str:
    cur = rec["currency"]
    if rec.get("per_run") is not None:
        return w.money(rec["per_run"], cur, lang)
    if rec.get("cost_per_million_tokens") is not None:
        return tr("{price} per million tokens", lang, price=w.small_money(rec["cost_per_million_tokens"], cur, lang))
    return w.MISSING


def _time(out: PlanJSON, index: int, days: float | None, lang: str) -> str:
    """The option's time to train as its performance states it (the recommendation rounds it to days)."""
    options = out.get("options") or []
    seconds = options[index]["performance"].get("time_to_train_s") if 0 <= index < len(options) else None
    if seconds is None and days is not None:
        seconds = days * 86400
    return w.duration(seconds, lang)


def trade(message: Any, lang: str) -> str:
    """What a runner-up trades ("+3% per run, 1.1 days slower, commits 38 CNY")."""
    return text(message, lang)


def why(rec: RecommendationJSON, lang: str) -> str:
    """The one sentence: what, for how much, how long, the objective and what bound the choice (the plan's
    ``why`` message)."""
    return text(rec.get("why"), lang)


def _where(rec: RecommendationJSON, site: str, lang: str) -> tuple[str, str]:
    offer, cur = rec.get("offer"), rec["currency"]
    if rec["acquisition"] == "rent" and offer:
        billing = w.word(w.BILLING, offer["billing"], lang) if offer.get("billing") else ""
        stale = (tr("price from {year}: check before you sign", lang, year=str(offer["as_of"])[:4])
                 if offer.get("stale") and offer.get("as_of") else "")
        return tr("From", lang), w.listing([offer["provider"], w.word(w.TERMS, offer["term"], lang), billing,
                                            w.rate(offer["price_per_gpu_hour"], cur, lang), stale], lang)
    return tr("Where", lang), tr("bought and hosted at {site}", lang, site=w.site_name(site, lang))


def _ranges(out: PlanJSON, rec: RecommendationJSON, lang: str) -> list[tuple[str, str]]:
    """The pick's 80 % ranges and how often the choice holds across them (``workflows/robust.py``); a quoted
    answer's cost range is its floor's (``offer_gap.floor_range``), the cost it states, not the option's priced run."""
    options = out.get("options") or []
    if rec["option"] >= len(options) or not options[rec["option"]].get("range"):
        return []
    option = options[rec["option"]]
    cost = ((out.get("offer_gap") or {}).get("floor_range") or []) if rec["acquisition"] == "quote" else None
    oom = option["range"].get("p_exceeds_capacity")
    spans = range_text(option, rec["currency"], lang, cost)
    if (risk := rec.get("deadline_risk")) is not None:  # with --deadline: the chance of missing it
        spans = w.join([spans, text(risk["message"], lang)], lang)
    return [(tr("Range (80 %)", lang), spans),
            (tr("Confidence", lang), confidence_text(rec, lang, oom))]


class Odds(TypedDict):
    oom: float | None  # the pick's chance of running out of memory (None: no range)
    confidence: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class RunnerFigures:
    """A runner-up's figures as the card's HTML states them (``data-*`` attributes)."""

    option: int
    gpu: str
    gpus: int
    acquisition: str | None
    per_run: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class CardFigures:
    """The answer's figures as the card's HTML states them (``data-*`` attributes), for tests and scripts: the
    option, what to get, the run's cost, whether the quote to ask for leads (``quote``) or the pick (``pick``), and
    its odds (:class:`Odds`)."""

    option: int
    gpu: str
    gpus: int
    servers: int
    acquisition: str
    per_run: int | None
    currency: str
    leads: str
    oom: float | None
    confidence: float | None


class RunnerCard(TypedDict):
    title: str
    facts: list[tuple[str, str]]
    summary: str
    trade: str
    data: RunnerFigures


class Card(TypedDict):
    """The answer card (:func:`card`): with a recommendation, its facts, why and runner-ups; without one, why not
    (``reason``, ``cause``) and what to do (``advice``)."""

    ok: bool
    title: str
    facts: NotRequired[list[tuple[str, str]]]
    why: NotRequired[str]
    runner_ups: NotRequired[list[RunnerCard]]
    runner_ups_title: NotRequired[str]
    data: NotRequired[CardFigures]
    reason: NotRequired[str]
    cause: NotRequired[str]
    advice: NotRequired[list[str]]


def _odds(out: PlanJSON, rec: RecommendationJSON) -> Odds:
    """The pick's chance of running out of memory and the confidence the card says (at most 1 − that chance)."""
    options = out.get("options") or []
    r = options[rec["option"]].get("range") or {} if rec["option"] < len(options) else {}
    oom = r.get("p_exceeds_capacity")
    return {"oom": oom, "confidence": confidence(rec)}


def _voucher_possible(out: PlanJSON, rec: RecommendationJSON, lang: str) -> list[tuple[str, str]]:
    """A voucher whose eligibility is not confirmed is a possibility, not the price (the plan prices the run without
    it, ``workflows.pricing``): the run and the commitment, and beside the run what the voucher would take off if
    approved ([] when no such voucher was claimed)."""
    options = out.get("options") or []
    rent = (options[rec["option"]].get("per_run") or {}).get("rent") or {} if rec["option"] < len(options) else {}
    v, before = rent.get("voucher") or {}, rec.get("per_run")
    if rec["acquisition"] != "rent" or not v.get("possible") or before is None:
        return []
    cur, saved = rec["currency"], v["saved"]
    maybe = tr("if {voucher} is approved, {saved} less: {net}", lang, voucher=w.voucher_name(v["id"], lang),
               saved=w.money(saved, cur, lang), net=w.money(before - saved, cur, lang))
    brackets = "（{}）" if lang.startswith("zh") else " ({})"
    return [(tr("Per run", lang), w.money(before, cur, lang) + brackets.format(maybe)),
            (tr("Commitment", lang), w.money(rec.get("commitment"), cur, lang))]


CAUSES = {"budget": N_("The budget binds: no option that fits can be had within it."),
          "limits": N_("No option can be had within the deadline, the budget and this market."),
          "deadline": N_("The deadline binds: nothing that can be had finishes in time."),
          "memory": N_("Nothing fits in memory within these limits.")}


def _cause(out: PlanJSON) -> str:
    """What binds a plan without a recommendation: the budget where every option that fits was left out for it."""
    codes = {getattr(m, "code", None) for m in out.get("suggestions") or []}
    if "plan.nothing_within_budget" in codes:
        return "budget"
    if "plan.shortest_time" in codes:  # lifting the deadline gets one (workflows.feasible)
        return "deadline"
    return "limits" if out.get("options") or out.get("blocked") == "market" else "memory"


def card(out: PlanJSON, lang: str) -> Card:
    """The answer card of a plan's output: ``ok``, ``title``, ``facts`` [(label, text)], ``why``,
    ``runner_ups`` [{title, facts, trade, data}], ``data`` (the raw figures, for tests and scripts); without a
    recommendation ``reason`` and ``advice`` (suggestions, then notes)."""
    rec = out.get("recommendation")
    if not rec:
        cause, notes = _cause(out), out.get("notes") or []
        first = [n for n in notes if getattr(n, "code", None) == "plan.least_budget"]  # what would make it feasible
        return {"ok": False, "title": tr("No recommendation", lang), "reason": tr(CAUSES[cause], lang), "cause": cause,
                "advice": texts(first, lang) + texts(out.get("suggestions"), lang)
                + texts([n for n in notes if n not in first], lang)}
    cur = rec["currency"]
    time = _time(out, rec["option"], rec.get("time_to_train_days"), lang)
    facts = [(tr("What", lang), _action(rec["acquisition"], rec["gpus"], rec["gpu"], None, lang)),
             _where(rec, out.get("site", ""), lang),
             (tr("How many", lang), tr("{gpus} in {servers}", lang, gpus=w.gpus(rec["gpus"], lang),
                                        servers=w.servers(rec["servers"], lang))),
             (tr("Per run", lang), _cost(rec, lang)),
             (tr("Commitment", lang), w.money(rec.get("commitment"), cur, lang)),
             (tr("Time to train", lang), time)]
    facts[3:5] = _voucher_possible(out, rec, lang) or facts[3:5]
    quote = _quote_first(out, rec, lang)
    gap = out.get("offer_gap")
    if quote:  # the quote to ask for leads; the priced pick's figures in one line beside it where it is near
        facts = quote
    elif gap:  # no known offer rents it by the hour: its compute floor and what would hold it
        facts.insert(4, (tr("By the hour", lang), text(gap["message"], lang)))
    adjusted = texts(rec.get("adjustments"), lang)  # voucher, minimum term, workload, tight fit, time value
    facts += _ranges(out, rec, lang) + ([(tr("Adjusted for", lang), w.join(adjusted, lang))] if adjusted else [])
    runners: list[RunnerCard] = []
    for r in rec.get("runner_ups") or []:
        # a contract's bill names its term, as the tables do (option_text.contract_cost)
        billed = contract_cost(out["options"][r["option"]], cur, lang)
        r_facts = [(tr("Per run", lang), billed or w.money(r.get("per_run"), cur, lang)),
                   (tr("Time to train", lang), _time(out, r["option"], r.get("days"), lang))]
        runners.append({
            "title": _action(r["acquisition"], r["gpus"], r["gpu"], None, lang), "facts": r_facts,
            "summary": w.join([w.labelled(k, v, lang) for k, v in r_facts], lang),
            "trade": trade(r.get("trade"), lang),
            "data": RunnerFigures(option=r["option"], gpu=r["gpu"], gpus=r["gpus"], acquisition=r["acquisition"],
                                  per_run=r.get("per_run"))})
    return {"ok": True, "title": tr("Answer", lang), "facts": facts, "why": why(rec, lang), "runner_ups": runners,
            "runner_ups_title": tr("Runner-ups and what each trades", lang),
            "data": CardFigures(option=rec["option"], gpu=rec["gpu"], gpus=rec["gpus"], servers=rec["servers"],
                                acquisition=rec["acquisition"], per_run=rec.get("per_run"), currency=cur,
                                leads="quote" if quote else "pick", **_odds(out, rec))}


def _quote_first(out: PlanJSON, rec: RecommendationJSON, lang: str) -> list[tuple[str, str]]:
    """Where the answer is the layout to ask a cloud to quote (``recommendation.acquisition`` "quote"): what, its
    GPU time and what would hold it, its time, then the priced answer beside it in one line (a purchase with its
    payback against the floor) unless it costs many times the quote (``offer_gap.priced_far``); [] otherwise."""
    gap = out.get("offer_gap") or {}
    if rec["acquisition"] != "quote" or not gap.get("leads"):
        return []
    lead = [(tr("What", lang), tr("Rent {hardware} from a provider who quotes it", lang,
                                  hardware=w.hardware(gap["gpus"], gap["gpu"], lang))),
            (tr("By the hour", lang), text(gap["message"], lang)),
            (tr("Time to train", lang), w.duration(gap["hours"] * 3600, lang))]
    priced = rec.get("priced")
    if priced is None or gap.get("priced_far"):
        return lead
    cur = rec["currency"]
    beside = tr("{action}: {cost} a run, commits {commitment}, {time} to train", lang,
                action=_action(priced["acquisition"], priced["gpus"], priced["gpu"], priced.get("offer"), lang),
                cost=_cost(priced, lang),
                commitment=w.money(priced.get("commitment"), cur, lang),
                time=_time(out, priced["option"], priced.get("time_to_train_days"), lang))
    payback = text((gap.get("payback") or {}).get("message"), lang)
    return lead + [(tr("Beside it", lang), w.join([beside, payback], lang) if payback else beside)]
