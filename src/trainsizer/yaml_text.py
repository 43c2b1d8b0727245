"""Parsing YAML text strictly and within bounds: PyYAML's safe loader (libyaml's C parser where built), a duplicate
key anywhere is an error (YAML 1.2 forbids it; PyYAML would keep the last value silently), and a file too large,
nested too deep or with aliases that expand too far is refused before any of it is built (a "billion laughs" file
of a few hundred bytes would otherwise expand to hundreds of millions of values).

Kept apart from ``trainsizer.datafiles`` so that PyYAML is imported only when YAML text is really parsed.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from trainsizer.errors import excerpt
from trainsizer.yaml_limits import MAX_YAML_ALIASES, MAX_YAML_BYTES, MAX_YAML_DEPTH, MAX_YAML_VALUES

_MERGE_TAG = "tag:yaml.org,2002:merge"

try:  # libyaml's C parser when PyYAML was built with it (the events 8x faster on the catalogs), else pure Python
    from yaml.cyaml import CParser as _CParser

    _PARSER: tuple[type, ...] = (_CParser,)
except ImportError:  # pragma: no cover - PyYAML without libyaml
    from yaml.parser import Parser
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    _CParser = None
    _PARSER = (Reader, Scanner, Parser)


class DuplicateKey(yaml.YAMLError):
    """A mapping names the same key twice (YAML 1.2 forbids it; PyYAML would keep the last one silently)."""

    def __init__(self, path: str, mark: Any):
        self.path, self.problem_mark = path, mark
        super().__init__(f"duplicate key {path!r}")


class YamlLimit(yaml.YAMLError):
    """YAML text beyond a bound: ``what`` is 'bytes', 'values', 'aliases', 'depth' or 'recursive' (an alias inside
    the value it names: YAML 1.2.2 §3.2.2.2 allows it, PyYAML would build a cycle); ``limit`` the bound."""

    def __init__(self, what: str, limit: int, mark: Any = None, name: str = ""):
        self.what, self.limit, self.problem_mark, self.name = what, limit, mark, name
        super().__init__(f"{what} over {limit:,}")


class _BoundedComposer(Composer):
    """PyYAML's composer, counting as it goes: every value, every alias as the values it names (their count is
    kept per anchor, so a file is counted in one pass over its events, however its aliases nest), the depth."""

    def __init__(self) -> None:
        super().__init__()
        self._values = self._aliases = self._depth = 0
        self._sizes: dict[str, int] = {}  # anchor -> values it holds, aliases expanded
        self._open: set[str] = set()  # anchors whose value is being composed

    def _count(self, n: int, mark: Any) -> None:
        self._values += n
        if self._values > MAX_YAML_VALUES:
            raise YamlLimit("values", MAX_YAML_VALUES, mark)

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            anchor = event.anchor
            if anchor in self._open:
                raise YamlLimit("recursive", 0, event.start_mark, anchor)
            self._aliases += 1
            if self._aliases > MAX_YAML_ALIASES:
                raise YamlLimit("aliases", MAX_YAML_ALIASES, event.start_mark)
            self._count(self._sizes.get(anchor, 1), event.start_mark)
            return super().compose_node(parent, index)  # an undefined alias: PyYAML's error
        before = self._values
        self._count(1, event.start_mark)
        anchor = event.anchor
        if anchor is not None:
            self._open.add(anchor)
        self._depth += 1
        if self._depth > MAX_YAML_DEPTH:
            raise YamlLimit("depth", MAX_YAML_DEPTH, event.start_mark)
        node = super().compose_node(parent, index)
        self._depth -= 1
        if anchor is not None:
            self._open.discard(anchor)
            self._sizes[anchor] = self._values - before
        return node


class _Loader(_BoundedComposer, *_PARSER, SafeConstructor, Resolver):  # type: ignore[misc]
    """The safe loader (yaml.CSafeLoader's parts) with the bounded composer in place of libyaml's."""

    def __init__(self, text: str):
        if _CParser is not None:
            _CParser.__init__(self, text)
        else:  # pragma: no cover
            Reader.__init__(self, text)
            Scanner.__init__(self)
            Parser.__init__(self)
        _BoundedComposer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)


def _check_unique_keys(root: yaml.Node) -> None:
    """Every mapping's scalar keys are unique (merge keys ``<<`` excepted). Each node is checked once, however many
    aliases name it (linear in the file), in document order; the path is where it is first reached."""
    stack: list[tuple[yaml.Node, str]] = [(root, "")]
    checked: set[int] = set()
    while stack:
        node, path = stack.pop()
        if id(node) in checked:
            continue
        checked.add(id(node))
        children: list[tuple[yaml.Node, str]] = []
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key_node, value_node in node.value:
                if isinstance(key_node, yaml.ScalarNode) and key_node.tag != _MERGE_TAG:
                    key = f"{path}.{key_node.value}" if path else str(key_node.value)
                    if key_node.value in seen:
                        raise DuplicateKey(excerpt(key), key_node.start_mark)
                    seen.add(key_node.value)
                    children.append((value_node, key))
                else:
                    children.append((value_node, path))
        elif isinstance(node, yaml.SequenceNode):
            children = [(item, f"{path}[{i}]") for i, item in enumerate(node.value)]
        stack.extend(reversed(children))


def load_yaml_text(text: str) -> Any:
    """Parse with the safe loader; a duplicate key anywhere raises DuplicateKey, text beyond a bound YamlLimit
    (both yaml.YAMLError)."""
    if len(text) > MAX_YAML_BYTES:  # characters: at most the bytes of the UTF-8 text
        raise YamlLimit("bytes", MAX_YAML_BYTES)
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_unique_keys(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def dump_yaml(data: Any) -> str:
    """Plain data as block YAML, keys in their order, non-ASCII text as it is (a job file people read)."""
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=110)
