"""The model preset catalog (``presets.yaml``) and resolving a scenario's ``model`` block."""

from __future__ import annotations

import json
import re
import unicodedata
from functools import cache
from pathlib import Path
from typing import Any

from trainsizer.datafiles import packaged_yaml
from trainsizer.errors import InputError
from trainsizer.lookup import closest_ids, unknown_id
from trainsizer.models.architecture import Architecture, architecture_from_config


@cache
def _presets() -> dict[str, dict[str, Any]]:
    data = packaged_yaml("trainsizer.models", "presets.yaml")
    return {entry["id"]: entry for entry in data["presets"]}


def model_ids() -> list[str]:
    return sorted(_presets())


# names people type for a model family (Chinese names, the company's) -> the family as the preset ids spell it
FAMILY_NAMES = (("通义千问", "qwen"), ("千问", "qwen"), ("智谱", "glm"), ("深度求索", "deepseek"),
                ("羊驼", "llama"), ("米斯特拉尔", "mistral"))
# the tuned variants a Hugging Face repo publishes beside its base model: the same architecture
VARIANTS = ("-instruct", "-chat", "-it", "-base", "-hf")


def _normal(name: str) -> str:
    """A model name as compared: full-width forms folded (NFKC), lower case, Chinese family names as the ids spell
    them, spaces and underscores as hyphens, an organisation prefix (``Qwen/``) dropped."""
    text = unicodedata.normalize("NFKC", str(name)).strip().lower()
    for chinese, family in FAMILY_NAMES:
        text = text.replace(chinese, family)
    text = re.sub(r"[\s_]+", "-", text).strip("-")
    return text.rsplit("/", 1)[-1]


@cache
def _names() -> dict[str, str]:
    """Every spelling a preset is found by (its id, its Hugging Face repository's name) -> its id."""
    names: dict[str, str] = {}
    for pid, entry in _presets().items():
        for name in (entry.get("hf_repo") or "", pid):
            if name:
                names[_normal(name)] = pid
    return names


def find_preset(name: str) -> tuple[str, str | None] | None:
    """The preset a name people type means, and the tuned variant it named (``instruct``, ``chat``, ...: the
    base model's architecture), or None. ``Qwen2.5-7B-Instruct``, ``千问2.5-7B``, ``qwen/qwen2.5-7b`` -> qwen2.5-7b."""
    if name in _presets():
        return name, None
    key, names = _normal(name), _names()
    if key in names:
        return names[key], None
    for suffix in VARIANTS:
        if key.endswith(suffix) and key[:-len(suffix)] in names:
            return names[key[:-len(suffix)]], suffix.lstrip("-")
    return None


def closest_presets(name: str) -> list[str]:
    """The preset ids closest to a name that is none of them (compared as :func:`find_preset` compares)."""
    return closest_ids(_normal(name), _presets())


def preset_entry(preset_id: str) -> dict[str, Any]:
    presets = _presets()
    found = find_preset(preset_id)
    if found is None:
        raise unknown_id("model.preset", preset_id, presets, close=closest_presets(preset_id))
    return presets[found[0]]


@cache
def preset_architecture(preset_id: str) -> Architecture:
    """A preset's architecture (frozen), read once: the planner resolves the job's model for every layout it
    re-checks (an unknown id raises each time: nothing is cached for it)."""
    entry = preset_entry(preset_id)
    return architecture_from_config(entry["config"], where=f"presets.yaml[{entry['id']}].config", name=entry["id"])


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
