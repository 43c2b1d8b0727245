"""Amounts, durations, counts and names as a reader of either language expects them: money in 万元 / 亿元
for CNY in Chinese, "1 server" / "2 servers", "< 1 day", the names of GPUs, links, sites, servers and vouchers
instead of their ids. Every face (terminal, HTML and Markdown report, web page, spreadsheet) formats through
here, with the catalog of :mod:`trainsizer.i18n`."""

from __future__ import annotations

from functools import cache
from typing import Any

from trainsizer.i18n import N_, NP_, ntr, tr

MISSING = "-"
ZH = "zh-CN"

ACQUISITIONS = {"rent": N_("rent"), "buy": N_("buy"), "quote": N_("rent on a quote")}
ACTIONS = {"rent": N_("Rent"), "buy": N_("Buy")}
MARKETS = {"cn": N_("China market"), "global": N_("global market")}
TERMS = {"on-demand": N_("on-demand"), "preemptible": N_("preemptible"), "daily": N_("daily contract"),
         "monthly": N_("monthly contract"), "yearly": N_("yearly contract"), "multi-year": N_("multi-year contract")}
PAY_AS_YOU_GO = ("on-demand", "preemptible")  # the terms that bill the run itself; the others bill a contract
HOURS_PER_YEAR = 8760.0  # the price data's year (cost.price_rows)
BILLING = {"per-second": N_("billed per second"), "per-minute": N_("billed per minute"),
           "per-hour": N_("billed per hour"), "per-day": N_("billed per day"), "per-month": N_("billed per month")}
ZH_CURRENCY = {"CNY": "元", "USD": "美元"}

HOURS = NP_("{n} hour", "{n} hours")
_SERVERS = NP_("{n} server", "{n} servers")
_GPUS = NP_("{n} GPU", "{n} GPUs")
_DAYS = NP_("{n} day", "{n} days")
_MINUTES = NP_("{n} minute", "{n} minutes")
_SECONDS = NP_("{n} second", "{n} seconds")
_MONTHS = NP_("{n} month", "{n} months")
_RACKS = NP_("{n} rack", "{n} racks")


def _num(x: float, digits: int) -> str:
    """``x`` with up to ``digits`` decimals and thousands separators, trailing zeros dropped."""
    text = f"{x:,.{digits}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def money(amount: Any, currency: str, lang: str) -> str:
    """37 元, 5,259 元, 12.3 万元, 1.2 亿元 (CNY in Chinese); 5,259 CNY, 1.23 M CNY (English)."""
    if amount is None:
        return MISSING
    x = float(amount)
    if lang == ZH and currency in ZH_CURRENCY:
        unit = ZH_CURRENCY[currency]
        if abs(x) >= 1e8:
            return f"{_num(x / 1e8, 1 if abs(x) < 1e10 else 0)} 亿{unit}"
        if abs(x) >= 1e4:
            return f"{_num(x / 1e4, 1 if abs(x) < 1e6 else 0)} 万{unit}"
        return f"{x:,.0f} {unit}"
    return f"{x / 1e6:,.2f} M {currency}" if abs(x) >= 1e6 else f"{x:,.0f} {currency}"


def _significant(x: float, digits: int = 3) -> str:
    """``x`` to ``digits`` significant figures, never in exponent form: 7.62, 76.2, 762, 1,000."""
    whole = len(str(int(abs(x)))) if abs(x) >= 1 else 1
    return _num(x, max(0, digits - whole))


def big(n: Any, lang: str) -> str:
    """A large count: 7.62 B / 76.2 亿, 200 M / 2 亿, 1 T / 1 万亿 (no exponents)."""
    if n is None:
        return MISSING
    x = float(n)
    if lang == ZH:
        units = ((1e12, "万亿"), (1e8, "亿"), (1e4, "万"))
    else:
        units = ((1e12, "T"), (1e9, "B"), (1e6, "M"))
    for scale, unit in units:
        if abs(x) >= scale:
            return f"{_significant(x / scale)} {unit}"
    return f"{x:,.0f}"


def rate(amount: Any, currency: str, lang: str) -> str:
    """A price per GPU-hour: 10.50 元/卡时, 2.49 USD/GPU-hour."""
    if amount is None:
        return MISSING
    unit = f"{ZH_CURRENCY.get(currency, currency)}" if lang == ZH else currency
    return tr("{price} {unit}/GPU-hour", lang, price=f"{float(amount):,.2f}", unit=unit)


def small_money(amount: Any, currency: str, lang: str) -> str:
    """A small amount with cents: 0.12 元, 0.12 USD."""
    if amount is None:
        return MISSING
    unit = ZH_CURRENCY.get(currency, currency) if lang == ZH else currency
    return f"{float(amount):,.2f} {unit}"


def count(forms: tuple[str, str], n: Any, lang: str, digits: int = 1) -> str:
    """``n`` things, in the singular or plural form (``forms`` from ``NP_``)."""
    value = float(n)
    shown = _num(value, digits)
    return ntr(forms, 1 if shown == "1" else (int(value) if value.is_integer() else value), lang, n=shown)


def servers(n: Any, lang: str) -> str:
    return count(_SERVERS, n, lang)


def gpus(n: Any, lang: str) -> str:
    return count(_GPUS, n, lang)


def racks(n: Any, lang: str) -> str:
    return count(_RACKS, n, lang)


def months(n: Any, lang: str) -> str:
    return MISSING if n is None else count(_MONTHS, n, lang, 0)


def days(d: Any, lang: str) -> str:
    """Days: "< 1 day" / "不到 1 天" below one, else "1.5 days"."""
    if d is None:
        return MISSING
    if float(d) < 1:
        return tr("< 1 day", lang)
    return count(_DAYS, d, lang)


def duration(seconds: Any, lang: str) -> str:
    """A time in the unit that reads best: seconds, minutes, hours (under two days) or days."""
    if seconds is None:
        return MISSING
    s = float(seconds)
    if s < 120:
        return count(_SECONDS, float(f"{s:.3g}"), lang, 3)
    if s < 3600:
        return count(_MINUTES, s / 60, lang, 0)
    if s < 172800:
        return count(HOURS, s / 3600, lang)
    return count(_DAYS, s / 86400, lang)


def contract(term: str, hours: float | None, lang: str) -> str:
    """A rental's term as a reader names it ("monthly contract"); a multi-year one by its years ("3-year contract")
    where its length in ``hours`` is known."""
    if term == "multi-year" and hours:
        return tr("{n}-year contract", lang, n=_num(float(hours) / HOURS_PER_YEAR, 1))
    return word(TERMS, term, lang)


def percent(x: Any) -> str:
    return MISSING if x is None else f"{float(x):.0%}"


def word(table: dict[str, str], key: Any, lang: str) -> str:
    """A code's word in ``lang`` (the code itself when the table has none)."""
    return tr(table[key], lang) if key in table else (MISSING if key is None else str(key))


def yes_no(value: bool | None, lang: str) -> str:
    return {True: tr("yes", lang), False: tr("no", lang), None: MISSING}[value]


@cache
def _gpu_names(lang: str = "en") -> dict[str, str]:
    from trainsizer.workflows.catalogs import gpu_names

    names = {gid: tr(name, lang) if name else gid for gid, name in gpu_names().items()}  # the catalog's names
    short = {gid: _short_name(name) for gid, name in names.items()}
    if len(set(short.values())) < len(short):  # keep the full name where the short ones collide
        taken = [n for n in short.values()]
        short = {gid: (n if taken.count(n) == 1 else names[gid]) for gid, n in short.items()}
    return short


def _short_name(name: str) -> str:
    """ "NVIDIA H800 SXM5 80GB" -> "H800 SXM5 80GB"; a trailing remark in parentheses is left out (the Chinese
    bracket too)."""
    return _remark_cut(name).removeprefix("NVIDIA ").strip()


def gpu_name(gpu_id: Any, lang: str = "en") -> str:
    """The product name of a GPU id from the catalog, in ``lang`` (the catalog translates the names a Chinese
    reader knows otherwise: 华为昇腾, 摩尔线程, 海光); the id itself for a GPU it does not list."""
    if gpu_id is None:
        return MISSING
    return _gpu_names(ZH if lang == ZH else "en").get(str(gpu_id), str(gpu_id))


@cache
def _site_names() -> dict[str, str]:
    from trainsizer.workflows.catalogs import site_rows

    return {r["id"]: r["name"] for r in site_rows()}


def site_name(site_id: Any, lang: str) -> str:
    """A site's name from sites.yaml, in ``lang`` (the catalog translates the shipped names)."""
    name = _site_names().get(str(site_id))
    return tr(name, lang) if name else str(site_id)


def _remark_cut(name: str) -> str:
    """A name without its trailing remark in brackets: "InfiniBand NDR 400 Gb/s (ConnectX-7)" -> "InfiniBand NDR
    400 Gb/s" (the Chinese bracket too)."""
    for opening, closing in ((" (", ")"), ("（", "）")):
        if name.endswith(closing) and opening in name:
            return name[: name.rindex(opening)].strip()
    return name


@cache
def _link_names() -> tuple[dict[str, str], frozenset[str]]:
    """Each link's name, and the ids whose name without its remark is still unique."""
    from trainsizer.workflows.catalogs import link_names

    names = link_names()
    short = [_remark_cut(n) for n in names.values()]
    return names, frozenset(i for i, n in names.items() if short.count(_remark_cut(n)) == 1)


def link_name(link_id: Any, lang: str) -> str:
    """A link's name from links.yaml in ``lang`` ("NVLink 4.0", "InfiniBand NDR 400 Gb/s"), its remark left out
    where the name stays unique; the id itself for a link the catalog does not list."""
    if link_id is None:
        return MISSING
    names, short = _link_names()
    name = names.get(str(link_id))
    if name is None:
        return str(link_id)
    local = tr(name, lang)
    return _remark_cut(local) if link_id in short else local


def links(ids: Any, lang: str) -> str:
    """Links one after the other, by name: "NVLink 4.0 + InfiniBand NDR 400 Gb/s"."""
    return " + ".join(link_name(i, lang) for i in ids if i)


@cache
def _price_names() -> dict[str, dict[str, str]]:
    from trainsizer.workflows.catalogs import price_names

    return price_names()


def server(row: Any, lang: str) -> str:
    """A priced server ({id, gpus, gpu}) by its name in the price data, in ``lang``; a row without one as its
    GPUs and the word server ("8 × H800 SXM5 80GB server")."""
    name = _price_names()["servers"].get(str(row.get("id")))
    if name:
        return tr(name, lang)
    return tr("{hardware} server", lang, hardware=hardware(row["gpus"], row["gpu"], lang))


def voucher_name(voucher_id: Any, lang: str) -> str:
    """A compute voucher's name from the price data, in ``lang`` (the id for one it does not name)."""
    name = _price_names()["subsidies"].get(str(voucher_id))
    return tr(name, lang) if name else str(voucher_id)


def hardware(n: Any, gpu_id: Any, lang: str = "en") -> str:
    """ "8 × H800 SXM5 80GB" """
    return f"{n} × {gpu_name(gpu_id, lang)}"


def join(parts: list[str], lang: str) -> str:
    """Clauses joined as each language punctuates them."""
    return ("；" if lang == ZH else "; ").join(p for p in parts if p)


def labelled(label: str, value: str, lang: str) -> str:
    """ "Per run: 37 CNY" / "单次训练费用：37 元" """
    return f"{label}：{value}" if lang == ZH else f"{label}: {value}"


def sentences(first: str, second: str, lang: str) -> str:
    return f"{first}{second}" if lang == ZH else f"{first} {second}"


def listing(parts: list[str], lang: str) -> str:
    return ("，" if lang == ZH else ", ").join(p for p in parts if p)
