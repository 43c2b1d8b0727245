"""The model preset catalog (``presets.yaml``) and resolving a scenario's ``model`` block."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from trainsizer.datafiles import packaged_yaml
from trainsizer.errors import InputError
from trainsizer.lookup import unknown_id
from trainsizer.models.architecture import Architecture, architecture_from_config


@cache
def _presets() -> dict[str, dict[str, Any]]:
    data = packaged_yaml("trainsizer.models", "presets.yaml")
    return {entry["id"]: entry for entry in data["presets"]}


def model_ids() -> list[str]:
    return sorted(_presets())


def preset_entry(preset_id: str) -> dict[str, Any]:
    presets = _presets()
    if preset_id not in presets:
        raise unknown_id("model.preset", preset_id, presets)
    return presets[preset_id]


@cache
def preset_architecture(preset_id: str) -> Architecture:
    """A preset's architecture (frozen), read once: the planner resolves the job's model for every layout it
    re-checks (an unknown id raises each time: nothing is cached for it)."""
    entry = preset_entry(preset_id)
    return architecture_from_config(entry["config"], where=f"presets.yaml[{preset_id}].config", name=preset_id)


def read_hf_config(path: str | Path) -> Any:
    """A config.json's keys; a multimodal config's ``text_config`` when the language model sits there."""
    p = Path(path)
    if not p.is_file():
        raise InputError("model.hf_config", f"no such file: {p}")
    try:
        config = json.loads(p.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError("model.hf_config", f"{p} is not valid JSON: {exc}") from None
    if isinstance(config, dict) and "text_config" in config and "hidden_size" not in config:
        config = {**config["text_config"], "model_type": config["text_config"].get("model_type")}
    return config


def hf_config_architecture(path: str | Path) -> Architecture:
    p = Path(path)
    return architecture_from_config(read_hf_config(p), where="model.hf_config", name=p.parent.name or p.stem)


def resolve_model(spec: Any) -> Architecture:
    """Architecture of a scenario's ``model`` block (preset, hf_config path, or inline keys)."""
    if spec.preset is not None:
        return preset_architecture(spec.preset)
    if spec.hf_config is not None:
        return hf_config_architecture(spec.hf_config)
    return architecture_from_config(spec.architecture, where="model.architecture", name="inline")
