"""Sites (datacentre rooms) as user-extensible YAML data: rack power, cooling, PUE, tariff, rent."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from trainsizer.datafiles import packaged_yaml, user_yaml
from trainsizer.errors import InputError
from trainsizer.lookup import unknown_id


class Site(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
    id: str
    name: str
    rack_power_kw: float = Field(gt=0, le=500)
    cooling: Literal["air", "rear-door", "liquid"]
    max_air_kw_per_rack: float = Field(gt=0, le=500)
    pue: float = Field(ge=1.0, le=3.0)
    electricity_price: float = Field(ge=0, le=100)
    rack_rent_per_month: float | None = Field(None, ge=0)
    rack_rent_per_kw_month: float | None = Field(None, ge=0)
    currency: Literal["CNY", "USD"] = "CNY"
    region: str | None = None
    country: str | None = None  # ISO 3166 alpha-2, e.g. CN (the default market follows it: hardware/market.py)
    source: str
    as_of: str
    confidence: str | None = None
    notes: str | None = None

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


def _parse(entry: Any, where: str) -> Site:
    try:
        return Site.model_validate(entry)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        raise InputError(f"{where}.{loc}", err["msg"].lower()) from None


@cache
def default_sites() -> dict[str, Site]:
    data = packaged_yaml("trainsizer.system", "sites.yaml")
    return {s["id"]: _parse(s, f"sites.yaml[{s['id']}]") for s in data["sites"]}


def load_sites(paths: list[str | Path] | None = None) -> dict[str, Site]:
    sites = dict(default_sites())
    for path in paths or []:
        data = user_yaml(path, field="sites")
        if not isinstance(data, dict) or not isinstance(data.get("sites"), list):
            raise InputError(str(path), "a sites file needs a 'sites:' list")
        for i, entry in enumerate(data["sites"]):
            site = _parse(entry, f"{path}: sites[{i}]")
            sites[site.id] = site
    return sites


def get_site(site_id: str, sites: dict[str, Site] | None = None) -> Site:
    sites = sites or default_sites()
    if site_id not in sites:
        raise unknown_id("--site", site_id, sites)
    return sites[site_id]


def default_site_id(sites: dict[str, Site] | None = None) -> str:
    """The site used when none is named: a modern colocation room (about 30 kW per rack)."""
    sites = sites or default_sites()
    modern = [s for s in sites.values() if "modern" in s.id]
    if modern:
        return modern[0].id
    return min(sites.values(), key=lambda s: abs(s.rack_power_kw - 30)).id
