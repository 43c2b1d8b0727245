"""Parsing YAML text strictly: PyYAML's safe loader (libyaml's C loader where built), and a duplicate key
anywhere is an error (YAML 1.2 forbids it; PyYAML would keep the last value silently).

Kept apart from ``trainsizer.datafiles`` so that PyYAML is imported only when YAML text is really parsed.
"""

from __future__ import annotations

from typing import Any

import yaml

# libyaml's C loader when PyYAML was built with it (8x faster on the catalogs), else pure Python
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MERGE_TAG = "tag:yaml.org,2002:merge"


class DuplicateKey(yaml.YAMLError):
    """A mapping names the same key twice (YAML 1.2 forbids it; PyYAML would keep the last one silently)."""

    def __init__(self, path: str, mark: Any):
        self.path, self.problem_mark = path, mark
        super().__init__(f"duplicate key {path!r}")


def _check_unique_keys(node: yaml.Node, path: str = "") -> None:
    """Walk the composed document: every mapping's scalar keys are unique (merge keys ``<<`` excepted)."""
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != _MERGE_TAG:
                key = f"{path}.{key_node.value}" if path else str(key_node.value)
                if key_node.value in seen:
                    raise DuplicateKey(key, key_node.start_mark)
                seen.add(key_node.value)
                _check_unique_keys(value_node, key)
            else:
                _check_unique_keys(value_node, path)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _check_unique_keys(item, f"{path}[{i}]")


def load_yaml_text(text: str) -> Any:
    """Parse with the safe loader; a duplicate key anywhere raises DuplicateKey (a yaml.YAMLError)."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_unique_keys(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()
