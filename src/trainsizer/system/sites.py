"""Sites (datacentre rooms) as user-extensible YAML data: rack power, cooling, PUE, tariff, rent.

A site may carry its grid's time-of-use bands (``electricity_tou``: band, hours per day, price); the price
a load pays is then the hour-weighted mean over the bands it draws in (``Site.effective_electricity_price``;
a training run draws flat round the clock). ``with_electricity_price`` puts the user's own bill in their place.
"""

# Annotations stay objects here (no `from __future__ import annotations`): pydantic reads each field's type as
# is, without compiling its text into a ForwardRef first (~0.1 ms a model class, at every command's import).
import math
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from trainsizer.datafiles import packaged_yaml, user_yaml
from trainsizer.errors import InputError
from trainsizer.input_checks import IsoDate, Number, checked_once, known_keys, parse_model
from trainsizer.lookup import unknown_id

TOU_PROFILES = ("flat-24h",)
Confidence = Literal["H", "M", "L"]


class TouBand(BaseModel):
    """One time-of-use band: its name, the hours per day it lasts (a year's average where seasons differ) and
    its price per kWh in the site's currency."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, defer_build=True)
    band: str = Field(min_length=1)  # e.g. peak | flat | valley | critical-peak
    hours_per_day: Number = Field(gt=0, le=24)
    price: Number = Field(ge=0, le=100)
    source: str | None = None
    as_of: IsoDate | None = None
    kind: Literal["estimate"] | None = None  # derived by this project (derived_from says from what), not a tariff
    derived_from: str | None = None
    confidence: Confidence | None = None


class Site(BaseModel):
    # numbers finite and never true/false; unknown keys refused with the closest one
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True, allow_inf_nan=False)
    id: str = Field(min_length=1)
    name: str
    rack_power_kw: Number = Field(gt=0, le=500)
    cooling: Literal["air", "rear-door", "liquid"]
    max_air_kw_per_rack: Number = Field(gt=0, le=500)
    pue: Number = Field(ge=1.0, le=3.0)
    electricity_price: Number = Field(ge=0, le=100)
    # the grid's time-of-use bands (hours sum to 24); None: a flat price, electricity_price
    electricity_tou: tuple[TouBand, ...] | None = None
    rack_rent_per_month: Number | None = Field(None, ge=0, le=1e7)
    rack_rent_per_kw_month: Number | None = Field(None, ge=0, le=1e6)
    currency: Literal["CNY", "USD"] = "CNY"
    region: str | None = None
    country: str | None = None  # ISO 3166 alpha-2, e.g. CN (the default market follows it: hardware/market.py)
    source: str
    as_of: IsoDate
    confidence: Confidence | None = None
    notes: str | None = None

    @model_validator(mode="after")
    def _tou_covers_the_day(self) -> "Site":
        if self.electricity_tou:
            hours = sum(b.hours_per_day for b in self.electricity_tou)
            if abs(hours - 24) > 1e-6:
                raise ValueError(f"electricity_tou: the bands' hours_per_day add up to {hours:g}, not 24")
        return self

    def effective_electricity_price(self, profile: str = "flat-24h") -> float:
        """Price per kWh for a load with this daily ``profile``: ``flat-24h`` (a training run drawing the same
        power round the clock) weights each TOU band by its hours, sum(hours x price) / 24. Without TOU data:
        ``electricity_price``."""
        if profile not in TOU_PROFILES:
            raise InputError("electricity profile", f"{profile!r}; accepted: {', '.join(TOU_PROFILES)}")
        if not self.electricity_tou:
            return self.electricity_price
        return sum(b.hours_per_day * b.price for b in self.electricity_tou) / 24.0

    @property
    def cooling_kw_per_rack(self) -> float:
        return self.max_air_kw_per_rack

    @property
    def usable_kw_per_rack(self) -> float:
        return min(self.rack_power_kw, self.cooling_kw_per_rack)

    def rack_rent(self, kw: float) -> float:
        """Monthly rent of one rack drawing ``kw``."""
        if self.rack_rent_per_month is not None:
            return self.rack_rent_per_month
        return (self.rack_rent_per_kw_month or 0.0) * kw


def with_electricity_price(site: Site, price: float) -> Site:
    """A copy of ``site`` that pays ``price`` per kWh (the user's own bill, in the site's currency) flat round the
    clock: its TOU bands are dropped, so ``effective_electricity_price()`` returns ``price``."""
    if not (isinstance(price, (int, float)) and math.isfinite(price) and 0 <= price <= 100):
        raise InputError("--electricity-price", f"{price!r}; accepted: a price per kWh from 0 to 100 ({site.currency})")
    data = site.model_dump()
    data.update(electricity_price=float(price), electricity_tou=None,
                notes=f"{site.notes or ''} Electricity: the user's own bill, {price:g} {site.currency}/kWh "
                      "(replaces the tariff and TOU bands above).".strip())
    return _parse(data, "--electricity-price")


def _parse(entry: Any, where: str) -> Site:
    return parse_model(Site, entry, where)


@cache
def default_sites() -> dict[str, Site]:
    """The shipped sites, checked once and kept in the user's cache folder (``datafiles.cached_objects``: keyed on
    sites.yaml and the code that checks it), else checked here."""
    done = checked_once("sites", "trainsizer.system", ["sites.yaml"], __file__, _checked_sites)
    return _checked_sites() if done is None else done


def _checked_sites() -> dict[str, Site]:
    data = packaged_yaml("trainsizer.system", "sites.yaml")
    return {s["id"]: _parse(s, f"sites.yaml[{s['id']}]") for s in data["sites"]}


def load_sites(paths: list[str | Path] | None = None) -> dict[str, Site]:
    sites = dict(default_sites())
    for path in paths or []:
        data = user_yaml(path, field="sites")
        if not isinstance(data, dict) or not isinstance(data.get("sites"), list):
            raise InputError(str(path), "a sites file needs a 'sites:' list")
        known_keys(data, ("schema_version", "sites"), f"{path}:")
        for i, entry in enumerate(data["sites"]):
            site = _parse(entry, f"{path}: sites[{i}]")
            sites[site.id] = site
    return sites


def get_site(site_id: str, sites: dict[str, Site] | None = None) -> Site:
    sites = sites or default_sites()
    if site_id not in sites:
        raise unknown_id("--site", site_id, sites)
    return sites[site_id]


def default_site_id(sites: dict[str, Site] | None = None, market: str = "cn") -> str:
    """The site used when none is named: in the global market the first site outside China (a US wholesale hall in
    the shipped data, priced in US dollars), else a modern colocation room (about 30 kW per rack)."""
    sites = sites or default_sites()
    abroad = [s for s in sites.values() if (s.country or "CN") != "CN"]
    if market == "global" and abroad:
        return abroad[0].id
    modern = [s for s in sites.values() if "modern" in s.id]
    if modern:
        return modern[0].id
    return min(sites.values(), key=lambda s: abs(s.rack_power_kw - 30)).id
