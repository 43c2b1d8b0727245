"""Markets: where a team buys or rents its accelerators, and whether a part can be had there.

Export rules decide what a Chinese team can buy (the H20, L20, RTX 4090 D and RTX 5090 D exist because of
them; H200 sales to China were licensed case by case in 2026; new state-funded computing centres must use
domestic chips). The facts live in ``accelerators.yaml``: every entry has an ``availability`` mapping,
per market (``cn``, ``global``) and per way of getting the part (``buy`` = bought new, ``rent`` = rented
from a cloud or lessor there), each with a ``status``, a ``reason_code`` (the kind of reason: what a reader is
told, the message ``availability.<code>``), a one-line ``reason`` (the entry's own sentence, quoted data),
``source`` and ``as_of``.

The closed sets of values (markets, acquisitions, statuses) are types of the catalog (``catalog.py``, which
validates the data with them; imported from there, so the two modules do not import each other); this module
owns the rule that picks a default market from what the user told us, and the lookup :func:`availability`.

Statuses (closed set):

- ``yes``: can be had through ordinary public channels.
- ``restricted``: possible only under conditions (export licence, duty, government approval, broker or
  closed deals, buyer-type limits): plan with delay, extra cost and the risk of not getting it.
- ``no``: no legal or practical channel was found (not approved for export, end of life, not sold there).
- ``unknown``: not established; the reason says what is missing.

``available`` in :class:`MarketAvailability` is True for ``yes`` only.

A user's catalog file (``--catalog``) can override availability for a shipped part with an entry that has
only the ``id`` and the fields to change (see ``catalog.py``; ``reason_code`` may be left out: the reader is then
told the file says so), e.g.::

    accelerators:
      - id: h200-sxm-141gb
        availability:
          cn:
            buy: {status: "yes", reason: "our integrator holds a licence", source: "quote Q-17", as_of: "2026-11-20"}
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, TypedDict

from trainsizer.errors import InputError

# the closed sets are the catalog's types (its availability entries use them); re-exported here for callers
from trainsizer.hardware.catalog import (  # noqa: F401
    ACQUISITIONS,
    MARKETS,
    REASON_CODES,
    STATUSES,
    Accelerator,
    Acquisition,
    Catalog,
    Market,
    Status,
)
from trainsizer.messages import Message, msg

# Site regions (system/sites.yaml `region`) and country codes that mean mainland China. Shipped sites carry
# `country: CN`; a region or site id starting with one of these prefixes counts as Chinese too.
_CN_COUNTRIES = frozenset({"cn", "chn", "china"})
_CN_PREFIXES = ("chengdu", "sichuan", "ningxia", "inner-mongolia", "east-china", "beijing", "shanghai",
                "guangzhou", "shenzhen", "hangzhou", "guizhou", "gansu", "ulanqab", "zhongwei", "yaan")
_NOT_CN_ZH_REGIONS = frozenset({"tw", "sg", "my"})  # zh locales of Taiwan, Singapore, Malaysia


class MarketAvailabilityJSON(TypedDict):
    """``hardware.market.MarketAvailability.to_dict``: whether the part can be had one way in the market."""

    gpu: str
    market: str
    acquisition: str
    available: bool
    status: str
    reason: Message
    detail: str | None
    source: str
    as_of: str
    confidence: str | None


@dataclass(frozen=True)
class MarketAvailability:
    """Whether ``gpu`` can be bought new / rented in ``market``: the reason as a message (its kind) and the data's
    own sentence (``detail``) with its source."""

    gpu: str
    market: str
    acquisition: str
    available: bool  # True only for status "yes"
    status: str  # one of STATUSES
    reason: Message  # availability.<reason_code>: what a reader is told
    detail: str | None  # the entry's own sentence (English, quoted data beside its source); None without data
    source: str
    as_of: str
    confidence: str | None = None  # H / M / L as in prices.yaml, where the data gives it

    @property
    def obtainable(self) -> bool:
        """Whether the planner offers it: available, or not known to be barred (status yes or unknown)."""
        return self.status in (Status.YES, Status.UNKNOWN)

    def to_dict(self) -> MarketAvailabilityJSON:
        # every field is a str, bool or None: the field's value as is (dataclasses.asdict deep-copies each one,
        # ~20 us a call, and a plan dumps two per option)
        return {f.name: getattr(self, f.name) for f in fields(self)}


# each kind of reason as its message (one per code: the lookup runs for every GPU of a plan); "stated": an entry of a
# user's file that gives no reason_code
_REASONS: dict[str, Message] = {code: msg(f"availability.{code}") for code in (*REASON_CODES, "stated")}


def _closed(value: Any, field: str, accepted: tuple[str, ...]) -> str:
    text = str(getattr(value, "value", value)).strip().lower() if value is not None else ""
    if text not in accepted:
        raise InputError(field, f"{value!r} is not accepted; accepted: {', '.join(accepted)}")
    return text


def parse_market(value: Any, field: str = "market") -> Market:
    """A market id from user input (case-insensitive); anything else is an InputError naming ``field``."""
    return Market(_closed(value, field, MARKETS))


def parse_acquisition(value: Any, field: str = "acquisition") -> Acquisition:
    return Acquisition(_closed(value, field, ACQUISITIONS))


def _is_cn_place(text: str) -> bool:
    t = text.strip().lower().replace("_", "-").replace(" ", "-")
    return bool(t) and (t in _CN_COUNTRIES or t.startswith(_CN_PREFIXES))


def _site_is_cn(site: Any) -> bool:
    """A site id, a region / country string, or a Site object (anything with country/region/id)."""
    if site is None:
        return False
    if not isinstance(site, str):
        fields = [getattr(site, name, None) for name in ("country", "region", "id")]
        return any(isinstance(f, str) and _is_cn_place(f) for f in fields)
    return _is_cn_place(site)  # a site id or place name; callers with a Site pass the object (its country)


def _lang_is_cn(lang: str | None) -> bool:
    if not lang:
        return False
    parts = lang.split(".")[0].replace("_", "-").lower().split("-")
    return parts[0] == "zh" and not (_NOT_CN_ZH_REGIONS & set(parts[1:]))


def default_market(currency: str | None = None, site: Any = None, lang: str | None = None) -> Market:
    """The market to assume when the user did not name one.

    ``cn`` when any of these holds, else ``global``:
    - ``currency`` is ``CNY`` (case-insensitive);
    - ``site`` is a Chinese site: a Site object whose ``country`` is CN, or a site id / region that starts with a
      Chinese place (``chengdu-...``), a region or country string such as ``chengdu``, ``sichuan-yaan``,
      ``CN``, or a Site object with such a ``country``/``region``;
    - ``lang`` is a Chinese locale (``zh``, ``zh-CN``, ``zh_CN.UTF-8``, ``zh-Hans``), except Taiwan,
      Singapore and Malaysia (``zh-TW``, ``zh-SG``, ``zh-MY``), which are outside the China export rules.

    Only an unknown ``currency`` is an error (InputError naming ``currency``); unknown sites simply count
    as not Chinese.
    """
    if currency is not None:
        from trainsizer.currency import CURRENCIES

        code = str(currency).strip().upper()
        if code not in CURRENCIES:
            raise InputError("currency", f"{currency!r} is not accepted; accepted: {', '.join(CURRENCIES)}")
        if code == "CNY":
            return Market.CN
    if _site_is_cn(site) or _lang_is_cn(lang):
        return Market.CN
    return Market.GLOBAL


def availability(accelerator: Accelerator, market: Any, acquisition: Any = "buy") -> MarketAvailability:
    """Whether ``accelerator`` can be bought new (``buy``) or rented (``rent``) in ``market``.

    Unknown ``market`` / ``acquisition`` values raise InputError naming the field and the accepted values.
    A part without data for that market (e.g. a user's own entry) gets status ``unknown``.
    """
    key = (id(accelerator), str(getattr(market, "value", market)), str(getattr(acquisition, "value", acquisition)))
    hit = _SEEN.get(key)
    if hit is not None and hit[0] is accelerator:
        return hit[1]
    found = _availability(accelerator, market, acquisition)
    if len(_SEEN) >= _KEPT:
        _SEEN.clear()
    _SEEN[key] = (accelerator, found)
    return found


# Each (part, market, acquisition) looked up once: a plan asks for each of a hundred options several times. The part
# is held with its answer, so that its id is not reused while the answer is kept (parts and answers are frozen).
_SEEN: dict[tuple[int, str, str], tuple[Accelerator, MarketAvailability]] = {}
_KEPT = 4096


def _availability(accelerator: Accelerator, market: Any, acquisition: Any) -> MarketAvailability:
    m = parse_market(market)
    acq = parse_acquisition(acquisition)
    per_market = (accelerator.availability or {}).get(m)
    entry = getattr(per_market, acq.value, None) if per_market is not None else None
    if entry is None:
        return MarketAvailability(accelerator.id, m.value, acq.value, False, Status.UNKNOWN.value,
                                  msg("availability.no_data"), None, "", "", None)
    status = Status(entry.status)
    return MarketAvailability(accelerator.id, m.value, acq.value, status is Status.YES, status.value,
                              _REASONS[entry.reason_code or "stated"], entry.reason, entry.source, entry.as_of,
                              entry.confidence)


def available_ids(catalog: Catalog, market: Any, acquisition: Any = "buy",
                  statuses: tuple[str, ...] = ("yes",)) -> list[str]:
    """Catalog ids whose status for (market, acquisition) is in ``statuses`` (default: ``yes`` only).

    For the planner: ``statuses=("yes", "restricted")`` keeps licensed parts (to show with a warning).
    """
    for s in statuses:
        _closed(s, "statuses", STATUSES)
    return [gpu_id for gpu_id, acc in catalog.accelerators.items()
            if availability(acc, market, acquisition).status in statuses]


MARKET_ONLY_REASONS = ("china_market_only", "domestic_market_only")  # catalog.REASON_CODES of a part sold in China only


def china_market_ids(catalog: Catalog) -> list[str]:
    """Catalog ids of the China-market parts: those not bought new outside China because they are a China-market
    SKU (H20, H800, A800, L20, RTX 4090 D) or a Chinese domestic part (Ascend, ...), as their ``global`` ``buy``
    entry's ``reason_code`` says (the accuracy report's per-part rows)."""
    out = []
    for gpu_id, acc in catalog.accelerators.items():
        per_market = (acc.availability or {}).get(Market.GLOBAL)
        entry = getattr(per_market, "buy", None) if per_market is not None else None
        if entry is not None and entry.reason_code in MARKET_ONLY_REASONS:
            out.append(gpu_id)
    return out
