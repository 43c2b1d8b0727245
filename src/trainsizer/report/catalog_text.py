"""``trainsizer catalog gpus | links | sites | models | prices | vouchers`` in the terminal, headings and words in
the reader's language; ids, product names, units and sources as the data files have them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.markup import escape
from rich.table import Table

from trainsizer.i18n import N_, tr
from trainsizer.report import words as w
from trainsizer.report.message_text import COOLING

if TYPE_CHECKING:
    from trainsizer.system.sites import Site
    from trainsizer.workflows.catalogs import ModelRow, PriceRow

SCOPES = {"scale-up": N_("scale-up"), "pcie": N_("PCIe"), "scale-out": N_("scale-out"),
          "network": N_("network")}


def _table(title: str, columns: tuple[str, ...], lang: str) -> Table:
    table = Table(title=tr(title, lang), title_justify="left")
    for col in columns:
        table.add_column(tr(col, lang), overflow="fold")
    return table


def print_gpus(cat: Any, lang: str = "en") -> None:
    from trainsizer.report.text import _console

    table = _table(N_("Accelerators (dense TFLOPS)"), (
        N_("id"), N_("GiB"), N_("GB/s"), "bf16", "fp8", "fp4", N_("scale-up"), N_("TDP W"), N_("source")), lang)
    for a in cat.accelerators.values():
        d = a.dense_tflops
        link = a.scale_up.link if a.scale_up and a.scale_up.link else "-"
        table.add_row(a.id, f"{a.memory_gib:g}", f"{a.memory_bandwidth_gbps or 0:g}", f"{d.bf16 or '-'}",
                      f"{d.fp8 or '-'}", f"{d.fp4 or '-'}", link, f"{a.tdp_w or '-'}", escape(a.source[:60]))
    _console().print(table)


def print_links(cat: Any, lang: str = "en") -> None:
    from trainsizer.report.text import _console

    table = _table(N_("Links (GB/s per direction)"), (N_("id"), N_("scope"), N_("GB/s"), N_("latency us"),
                                                       N_("name")), lang)
    for link in cat.links.values():
        table.add_row(link.id, w.word(SCOPES, link.scope, lang), f"{link.per_direction_gbps:g}",
                      f"{link.latency_us or '-'}", escape(link.name))
    _console().print(table)


def print_models(rows: list[ModelRow], lang: str = "en") -> None:
    from trainsizer.report.text import _console

    table = _table(N_("Model presets"), (N_("id"), N_("params (B)"), N_("active (B)"), N_("published (B)"),
                                         N_("name")), lang)
    for r in rows:
        pub = r["published_params"]
        table.add_row(r["id"], f"{r['params'] / 1e9:.3f}", f"{r['active_params'] / 1e9:.3f}",
                      f"{float(pub) / 1e9:.3f}" if pub else "-", escape(r["name"]))
    _console().print(table)


def print_sites(sites: dict[str, Site], lang: str = "en") -> None:
    from trainsizer.report.text import _console

    table = _table(N_("Sites"), (N_("id"), N_("kW/rack"), N_("cooling"), N_("PUE"), N_("power price"),
                                 N_("rack rent"), N_("name")), lang)
    for s in sites.values():
        rent = (tr("{amount}/rack-month", lang, amount=f"{s.rack_rent_per_month:,.0f}")
                if s.rack_rent_per_month is not None
                else tr("{amount}/kW-month", lang, amount=f"{s.rack_rent_per_kw_month or 0:,.0f}"))
        table.add_row(s.id, f"{s.rack_power_kw:g}", w.word(COOLING, s.cooling, lang), f"{s.pue:g}",
                      w.small_money(s.electricity_price, s.currency, lang), rent, escape(w.site_name(s.id, lang)))
    _console().print(table)


PRICE_COLUMNS = (N_("section"), N_("item"), N_("price"), N_("kind"), N_("as of"), N_("source"))


def print_prices(rows: list[PriceRow], lang: str = "en") -> None:
    """The price rows with their source and the figure's date; stale ones flagged (check before you sign)."""
    from trainsizer.report.text import _console

    table = _table(N_("Prices and their sources"), PRICE_COLUMNS, lang)
    for r in rows:
        value = r["price"] if r["price"] is not None else 0
        amount = f"{value:,.0f}" if value >= 1000 else f"{value:g}"
        price = f"{amount} {r['currency'] or ''} /{r['unit']}" if r["unit"] else amount
        if r["price"] is None and r["section"] == "rental":  # the offer is public, its price is not
            price = tr("ask for a quote", lang)
        when = str(r["as_of"]) + (" " + tr("STALE", lang) if r["stale"] else "")
        if r["read_on"]:
            when += " " + tr("(read {date})", lang, date=r["read_on"])
        source = str(r["source"]) + (" " + tr("[relayed by {relay}]", lang, relay=r["relay"]) if r["relay"] else "")
        source += " " + tr("[derived: {rule}]", lang, rule=r["derived_from"]) if r["derived_from"] else ""
        table.add_row(escape(r["section"]), escape(str(r["item"])), price,
                      f"{r['kind'] or '-'} {r['confidence'] or ''}", when, escape(source))
    _console().print(table)


VOUCHER_COLUMNS = (N_("id"), N_("region"), N_("share of the spend"), N_("cap"), N_("covers"), N_("providers"),
                   N_("as of"), N_("source"))
SPEND = {"rental": N_("rentals"), "purchase": N_("purchases"), "any": N_("rentals and purchases")}


def print_vouchers(rows: list[dict[str, Any]], lang: str = "en") -> None:
    """The compute vouchers ``--voucher`` can claim: a ceiling said as one ("up to 60%: an upper bound"), the cap
    and its period, the spend and providers covered (unknown: check the provider), source and date."""
    from trainsizer.report.text import _console

    table = _table(N_("Compute vouchers (--voucher)"), VOUCHER_COLUMNS, lang)
    for r in rows:
        share = (tr("up to {pct}: an upper bound", lang, pct=w.percent(r["fraction"])) if r["upper_bound"]
                 else w.percent(r["fraction"]))
        cap = (w.MISSING if r["cap_per_year"] is None else
               tr("{money} a year", lang, money=w.money(r["cap_per_year"], r["currency"], lang))
               if r["cap_period"] == "year" else
               tr("{money} in total", lang, money=w.money(r["cap_per_year"], r["currency"], lang)))
        providers = (w.listing(list(r["centres"]), lang) if r["centres"] else
                     tr("unknown: check that the provider is in the scheme", lang) if r["eligibility"] == "unknown"
                     else tr("any in the scheme", lang))
        when = str(r["as_of"]) + (" " + tr("STALE", lang) if r["stale"] else "")
        table.add_row(escape(r["id"]), escape(r["region"]), share, cap, w.word(SPEND, r["eligible"], lang),
                      escape(providers), when, escape(str(r["source"])))
    _console().print(table)
