"""Subsidies on compute spend (e.g. Chengdu's compute voucher, 算力券) as data: ``subsidies:`` in prices.yaml.

A subsidy pays ``fraction`` of an eligible amount up to a cap; the cap counts what was already claimed
(``already_used``) in the cap's period (a year, or the whole grant for ``cap_period: total``):

    saved = min(amount x fraction, max(0, cap - already_used));  net = amount - saved

(the rule as the Chengdu policies word it: '按照算力成本30%申领总额不超过300万元' / '最高可抵扣不超过60%的算力
购买费用,每家算力需求方每年累计可领取最高500万元'; sources per entry in prices.yaml). Subsidies are optional:
nothing here is applied unless a caller (the per-run pricing, on the user's request) calls ``apply_subsidy``.
Amounts and caps are in the subsidy's ``currency``; ``Prices.in_currency`` converts a subsidy for a price list.
"""

# Annotations stay objects here (no `from __future__ import annotations`): pydantic reads each field's type as
# is, without compiling its text into a ForwardRef first (~0.1 ms a model class, at every command's import).

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from trainsizer.errors import InputError
from trainsizer.input_checks import Flag, IsoDate, Number
from trainsizer.system.sites import Site


class Subsidy(BaseModel):
    """One subsidy scheme (a ``subsidies:`` row of prices.yaml)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, defer_build=True)
    id: str = Field(min_length=1)
    name: str | None = None
    region: str = Field(min_length=1)  # matched against a site's `region` (e.g. chengdu)
    fraction: Number = Field(gt=0, le=1)  # share of the eligible spend paid
    cap_per_year: Number | None = Field(None, ge=0, le=1e12)  # in `currency`; None = no cap
    cap_period: Literal["year", "total"] = "year"  # total: the cap covers the whole grant
    currency: Literal["CNY", "USD"] = "CNY"
    eligible: Literal["rental", "purchase", "any"] = "rental"
    centres: tuple[str, ...] = ()  # providers the spend must go to; empty = any provider in the scheme
    applicant: Literal["firm", "institution", "any"] = "any"
    conditions: str | None = None
    # listed: the scheme names its providers (``centres``); unknown: it names none that could be found, so the
    # voucher stays out of every default answer and a claim carries a note to check the provider
    eligibility: Literal["listed", "unknown"] = "unknown"
    # the policy words the fraction as a ceiling ('最高…不超过'): the saving is an upper bound, said on the answer
    upper_bound: Flag = False
    source: str = Field(min_length=1)
    as_of: IsoDate
    read_on: IsoDate | None = None
    relay: str | None = None
    confidence: Literal["H", "M", "L"]
    stale: Flag = False
    notes: str | None = None

    @property
    def confirmed(self) -> bool:
        """Its eligibility is confirmed (``listed``): only then does it lower the price a plan ranks and shows."""
        return self.eligibility == "listed"


def subsidy_for(region_or_site: str | Site | None, subsidies: list[Subsidy]) -> list[Subsidy]:
    """The subsidies of a region (or of a site's ``region``), in data order; none for a site without a region."""
    region = region_or_site.region if isinstance(region_or_site, Site) else region_or_site
    if not region:
        return []
    key = region.strip().lower()
    return [s for s in subsidies if s.region.strip().lower() == key]


def applies_to(subsidy: Subsidy, provider: str) -> bool:
    """Whether the subsidy can be claimed on a rental from ``provider``: a rental scheme whose named centres
    (if it names any) include the provider."""
    return subsidy.eligible != "purchase" and (not subsidy.centres or provider in subsidy.centres)


def apply_subsidy(amount: float, subsidy: Subsidy, already_used: float = 0.0) -> tuple[float, float]:
    """(net amount, amount saved) for ``amount`` of eligible spend, with the cap honoured: ``already_used`` is what
    was already claimed against the cap in its period. Amounts are in the subsidy's currency."""
    for name, value in (("amount", amount), ("already_used", already_used)):
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
            raise InputError(f"subsidy {name}", f"{value!r}; accepted: a finite amount >= 0")
    saved = amount * subsidy.fraction
    if subsidy.cap_per_year is not None:
        saved = min(saved, max(0.0, subsidy.cap_per_year - already_used))
    return amount - saved, saved
