"""Prices as data (``prices.yaml``, each with source and as_of), currency conversion, lookups.

Users override any figure with their own quotes file of the same shape (``--prices FILE``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from trainsizer.datafiles import packaged_yaml, user_yaml
from trainsizer.errors import InputError

CURRENCIES = ("CNY", "USD")


@dataclass(frozen=True)
class Prices:
    data: dict[str, Any]
    currency: str = "CNY"
    fx_override: float | None = None  # USD/CNY rate to use instead of the data's
    used: list[str] = field(default_factory=list, compare=False)  # sources consulted, for the report

    @property
    def usd_cny(self) -> float:
        if self.fx_override:
            return self.fx_override
        for entry in self.data.get("fx", []):
            if entry.get("pair") == "USD/CNY":
                return float(entry["rate"])
        raise InputError("prices.fx", "no USD/CNY rate in the price data")

    def convert(self, amount: float, currency: str) -> float:
        if currency == self.currency:
            return amount
        if (currency, self.currency) == ("USD", "CNY"):
            return amount * self.usd_cny
        if (currency, self.currency) == ("CNY", "USD"):
            return amount / self.usd_cny
        raise InputError("currency", f"{currency!r}; accepted: {', '.join(CURRENCIES)}")

    def _cite(self, entry: dict[str, Any]) -> None:
        self.used.append(f"{entry.get('source', '?')} (as of {entry.get('as_of', '?')})")

    def server(self, gpu: str, gpus: int) -> tuple[float, dict[str, Any]] | None:
        """Price of one ``gpus``-GPU server with that GPU, in the chosen currency."""
        exact = [s for s in self.data.get("servers", []) if s["gpu"] == gpu and int(s["gpus"]) == gpus]
        same_gpu = [s for s in self.data.get("servers", []) if s["gpu"] == gpu]
        entry = (exact or same_gpu or [None])[0]
        if entry is None:
            return None
        price = self.convert(float(entry["price"]), entry.get("currency", "CNY")) * gpus / int(entry["gpus"])
        self._cite(entry)
        return price, entry

    def card(self, gpu: str) -> float | None:
        for entry in self.data.get("gpu_cards", []):
            if entry["gpu"] == gpu:
                self._cite(entry)
                return self.convert(float(entry["price"]), entry.get("currency", "CNY"))
        return None

    def component(self, key: str) -> float:
        entry = self.data.get("components", {}).get(key)
        if not entry:
            raise InputError(f"prices.components.{key}", "missing from the price data")
        self._cite(entry)
        return self.convert(float(entry["price"]), entry.get("currency", "CNY"))

    def opex(self, key: str) -> float:
        entry = self.data.get("opex", {}).get(key)
        if not entry:
            raise InputError(f"prices.opex.{key}", "missing from the price data")
        self._cite(entry)
        value = float(entry["value"])
        return self.convert(value, entry["currency"]) if entry.get("currency") else value

    def rule(self, key: str) -> dict[str, Any]:
        return self.data.get("rules_of_thumb", {}).get(key, {})

    def rentals(self, gpu: str) -> list[tuple[float, dict[str, Any]]]:
        """Offers for a GPU, cheapest first; well-sourced (H/M) commercial on-demand or term offers before
        low-confidence, preemptible or internal ones."""
        out = []
        for entry in self.data.get("rental", []):
            if entry.get("gpu") == gpu:
                out.append((self.convert(float(entry["price_per_gpu_hour"]), entry.get("currency", "CNY")), entry))

        def weak(entry: dict[str, Any]) -> bool:
            text = f"{entry.get('notes', '')} {entry.get('provider', '')}".lower()
            return entry.get("confidence") == "L" or any(w in text for w in ("preempt", "spot", "internal"))

        return sorted(out, key=lambda x: (weak(x[1]), x[0]))


@cache
def _default_data() -> dict[str, Any]:
    return packaged_yaml("trainsizer.cost", "prices.yaml")


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, list) and isinstance(out.get(key), list):
            out[key] = value + out[key]  # user entries first: they win lookups
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


def load_prices(currency: str = "CNY", paths: list[str | Path] | None = None, fx: float | None = None) -> Prices:
    if currency not in CURRENCIES:
        raise InputError("--currency", f"{currency!r}; accepted: {', '.join(CURRENCIES)}")
    if fx is not None and not 1 <= fx <= 20:
        raise InputError("--fx", f"{fx} is not a plausible USD/CNY rate (1 to 20)")
    data = _default_data()
    for path in paths or []:
        extra = user_yaml(path, field="prices")
        if not isinstance(extra, dict):
            raise InputError(str(path), "a prices file is a mapping like prices.yaml")
        data = _merge(data, extra)
    return Prices(data, currency, fx)
