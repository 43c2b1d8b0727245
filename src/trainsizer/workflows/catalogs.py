"""What the catalogs hold, as rows for ``trainsizer catalog`` and the web's catalog endpoints and forms."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from trainsizer.hardware.catalog import load_catalog
from trainsizer.models.catalog import model_ids, preset_architecture, preset_entry
from trainsizer.models.params import count_params
from trainsizer.system.sites import default_site_id, load_sites

KINDS = ("models", "gpus", "links", "sites")


@cache
def _model_rows() -> tuple[dict[str, Any], ...]:
    rows = []
    for mid in model_ids():
        counts = count_params(preset_architecture(mid))
        entry = preset_entry(mid)
        rows.append({"id": mid, "name": entry.get("name", mid), "params": counts.total,
                     "active_params": counts.active, "published_params": entry.get("published_params"),
                     "source": entry.get("source")})
    return tuple(rows)


def model_rows() -> list[dict[str, Any]]:
    """Model presets with their exact parameter counts."""
    return [dict(r) for r in _model_rows()]


def gpu_rows(catalogs: list[Path] | tuple[Path, ...] = ()) -> list[dict[str, Any]]:
    return [a.model_dump() for a in load_catalog(list(catalogs)).accelerators.values()]


def link_rows(catalogs: list[Path] | tuple[Path, ...] = ()) -> list[dict[str, Any]]:
    return [link.model_dump() for link in load_catalog(list(catalogs)).links.values()]


def site_rows(sites: list[Path] | tuple[Path, ...] = ()) -> list[dict[str, Any]]:
    return [s.model_dump() for s in load_sites(list(sites)).values()]


def default_site(sites: list[Path] | tuple[Path, ...] = ()) -> str:
    return default_site_id(load_sites(list(sites)))


def rows(kind: str) -> list[dict[str, Any]]:
    return {"models": model_rows, "gpus": gpu_rows, "links": link_rows, "sites": site_rows}[kind]()


def accelerators_and_links(catalogs: list[Path] | tuple[Path, ...] = ()) -> Any:
    """The GPU and link catalog (shipped, with the user's files over it)."""
    return load_catalog(list(catalogs))


def sites(paths: list[Path] | tuple[Path, ...] = ()) -> dict[str, Any]:
    return load_sites(list(paths))
