"""The probe package's shape: no import cycle among trainsizer.probe.* modules (lazy and TYPE_CHECKING imports
count too), no module over 400 lines, no function over 60 lines without a comment saying why (``# length: ...``)."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO

SRC = REPO / "src"
PACKAGE = SRC / "trainsizer" / "probe"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
REASON = "# length:"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def import_graph() -> dict[str, set[str]]:
    """module -> the trainsizer.probe modules it imports anywhere in its body (an import of ``pkg.name`` where
    name is a submodule points at the submodule; the implicit import of parent packages is not an edge)."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative import
                    anchor = name.split(".") if is_package else name.split(".")[:-1]
                    anchor = anchor[:len(anchor) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            graph[name] |= {t for t in targets if t in modules and t != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return None


def test_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle_among_probe_modules():
    graph = import_graph()
    assert "trainsizer.probe.comm_result" in graph["trainsizer.probe.link_profile"]  # the graph sees imports
    assert "trainsizer.probe.link_profile" in graph["trainsizer.probe.comm"]
    cycle = find_cycle(graph)
    assert cycle is None, " -> ".join(cycle or [])


def test_no_probe_module_over_400_lines():
    long = {name: n for name, path in _modules().items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not long, long


def test_no_long_function_without_a_stated_reason():
    unexplained = []
    for name, path in _modules().items():
        lines = path.read_text(encoding="utf-8").splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                body = lines[node.lineno - 1:node.end_lineno]
                if len(body) > MAX_FUNCTION_LINES and not any(REASON in line for line in body):
                    unexplained.append(f"{name}.{node.name} ({len(body)} lines)")
    assert not unexplained, unexplained
