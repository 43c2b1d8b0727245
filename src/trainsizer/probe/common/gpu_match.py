"""Which catalog accelerator a device is, from the name CUDA reports (``torch.cuda.get_device_name``).

The model token of the name (h200, a100, 4090, mi300x) must appear in the catalog entry's name or id; a
form-factor word (pcie, nvl) in one name but not the other rules an entry out (H100 SXM vs PCIe vs NVL);
the memory CUDA reports breaks the remaining ties (A100 40 GB vs 80 GB).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trainsizer.scenario import InlineGpu

_NAME_NOISE = {"nvidia", "amd", "tesla", "geforce", "instinct", "generation", "hgx", "gpu", "of", "a", "one"}
_FORM_FACTORS = ("pcie", "nvl")


def name_tokens(name: str) -> set[str]:
    return {t for t in re.split(r"[^a-z0-9]+", name.lower()) if t and t not in _NAME_NOISE}


def _model_tokens(tokens: set[str]) -> set[str]:
    models = {t for t in tokens if re.search(r"\d", t) and re.search(r"[a-z]", t) and not t.endswith("gb")}
    return models | {t for t in tokens if t.isdigit() and len(t) == 4}  # "RTX 4090", "RTX 6000 Ada"


def candidate_ids(device_name: str, catalog: Any) -> list[tuple[int, str]]:
    """(shared-token count, catalog id) of every entry the device name can be."""
    tokens = name_tokens(device_name)
    models = _model_tokens(tokens)
    if not models:
        return []
    found = []
    for acc_id in catalog.accelerators:
        acc_tokens = name_tokens(catalog.accelerators[acc_id].name) | name_tokens(acc_id)
        if not models & acc_tokens:
            continue
        if any((ff in tokens) != (ff in acc_tokens) for ff in _FORM_FACTORS):
            continue
        found.append((len(tokens & acc_tokens), acc_id))
    return found


def detect_gpu_id(device_name: str, memory_gib: float | None = None, catalog: Any = None) -> str | None:
    """The catalog id of the device, or None when nothing (or more than one entry, without memory) matches."""
    from trainsizer.hardware.catalog import default_catalog

    catalog = catalog or default_catalog()
    found = candidate_ids(device_name, catalog)
    if not found:
        return None
    best = max(score for score, _ in found)
    ids = [acc_id for score, acc_id in found if score == best]
    if memory_gib is not None:
        return min(ids, key=lambda i: abs(catalog.accelerators[i].memory_gib - memory_gib))
    return ids[0] if len(ids) == 1 else None


def intra_link_for_device(device_name: str, catalog: Any) -> str | None:
    """The catalog's ``default_intra_node`` of the device, or None when the name matches nothing or the
    candidates disagree (e.g. "NVIDIA H100 80GB HBM3" -> nvlink4, the SXM part; "NVIDIA A100-PCIE-40GB" -> pcie4)."""
    found = candidate_ids(device_name, catalog)
    if not found:
        return None
    best = max(score for score, _ in found)
    links = {catalog.accelerators[i].default_intra_node for score, i in found if score == best} - {None}
    return links.pop() if len(links) == 1 else None


def local_gpu() -> str | InlineGpu | None:
    """This machine's first CUDA GPU as a scenario's ``hardware.gpu``: its catalog id, or an inline spec
    (name, memory) when the catalog does not know it; None without CUDA."""
    import torch

    from trainsizer.scenario import InlineGpu

    if not torch.cuda.is_available():
        return None
    props = torch.cuda.get_device_properties(0)
    memory_gib = round(props.total_memory / 2**30, 2)
    return detect_gpu_id(props.name, memory_gib) or InlineGpu(name=props.name, memory_gib=memory_gib)
