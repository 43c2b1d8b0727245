"""The code keeps its shape (docs/ARCHITECTURE.md): one-way layers with no import cycle (import-linter
contracts in pyproject.toml), small modules, and one pipeline behind the CLI, the report and the web."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import warnings

import pytest
from conftest import REPO
from typer.testing import CliRunner

from trainsizer.cli import app

SRC = REPO / "src" / "trainsizer"
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 60
LONG_OK = "# long:"  # a function over the limit says why on the line above its def


@pytest.mark.skipif(shutil.which("lint-imports") is None, reason="import-linter not installed (test extra)")
def test_import_contracts_hold():
    proc = subprocess.run(["lint-imports", "--no-cache"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]


def test_no_module_is_over_the_size_limit():
    big = {str(p.relative_to(SRC)): n for p in SRC.rglob("*.py")
           if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not big, f"modules over {MAX_MODULE_LINES} lines: {big}"


def test_long_functions_state_why():
    unexplained = []
    for path in SRC.rglob("*.py"):
        lines = path.read_text(encoding="utf-8").splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1  # 0-based
                comment = []  # the comment block right above the def (or its decorators)
                while first > 0 and lines[first - 1].lstrip().startswith("#"):
                    first -= 1
                    comment.append(lines[first])
                if node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES and not any(LONG_OK in c for c in comment):
                    unexplained.append(f"{path.relative_to(SRC)}:{node.lineno} {node.name}")
    assert not unexplained, f"functions over {MAX_FUNCTION_LINES} lines without a '{LONG_OK} reason' comment: " \
                            f"{unexplained}"


def import_graph(root=SRC, package: str = "trainsizer") -> dict[str, set[str]]:
    """Every module of the package and the package modules it imports: module level, inside functions and under
    TYPE_CHECKING alike (a lazy or type-only import still ties two modules together). ``from a import b`` counts as
    an import of ``a.b`` when that is a module, else of ``a``; a parent package is not counted as imported."""
    files = {".".join((package, *p.relative_to(root).with_suffix("").parts)).removesuffix(".__init__"): p
             for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        is_pkg = path.name == "__init__.py"
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the module's package, one level up per extra dot
                    parts = name.split(".")[: len(name.split(".")) - node.level + (1 if is_pkg else 0)]
                    base = ".".join(parts + ([base] if base else []))
                for alias in node.names:
                    targets.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in files else base)
        graph[name] = {t for t in targets if t in files and t != name}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative): each holds a
    circular import."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def test_the_cycle_finder_finds_cycles_of_any_length():
    assert import_cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_no_two_modules_import_each_other():
    """No circular import anywhere in the package, not only between siblings (the import-linter contract): any two
    modules that reach each other through imports, lazy and TYPE_CHECKING ones included, fail."""
    graph = import_graph()
    assert "trainsizer.hardware.catalog" in graph["trainsizer.hardware.market"]  # the graph sees real imports
    assert not import_cycles(graph), f"circular imports: {import_cycles(graph)}"


JOB = {"model": {"preset": "qwen2.5-1.5b"},
       "training": {"method": "lora", "precision": "bf16-true", "micro_batch_size": 1, "seq_len": 2048,
                    "global_batch_size": 16, "activation_checkpointing": "full", "tokens": 1.0e8,
                    "lora": {"rank": 16, "targets": "all-linear"}}}
CONSTRAINTS = {"gpus": ["rtx-4090-24gb", "a800-sxm4-80gb"], "max_gpus": 16, "deadline_days": 2,
               "currency": "CNY", "site": "chengdu-legacy-colo"}


def _same_answer(a: dict, b: dict) -> None:
    ia, ib = a["rankings"]["recommended"], b["rankings"]["recommended"]
    assert len(ia) == len(ib) == 1
    pa, pb = a["options"][ia[0]], b["options"][ib[0]]
    for key in ("hardware", "parallel", "training", "memory", "performance", "cost", "system", "verdict"):
        assert pa[key] == pb[key], key
    assert a["rankings"] == b["rankings"] and a["currency"] == b["currency"] and a["site"] == b["site"]


def test_cli_report_and_web_give_the_same_recommendation(tmp_path):
    """One job through the three faces: `plan --json`, the report's JSON and the web API's plan."""
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    import yaml

    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump(JOB), encoding="utf-8")
    flags = ["--gpu", "rtx-4090-24gb", "--gpu", "a800-sxm4-80gb", "--max-gpus", "16", "--deadline", "2d",
             "--currency", "CNY", "--site", "chengdu-legacy-colo"]
    runner = CliRunner()
    cli = runner.invoke(app, ["plan", str(job), *flags, "--top", "10", "--json"])
    assert cli.exit_code == 0, cli.output
    cli_plan = json.loads(cli.output)

    report_path = tmp_path / "plan.json"
    rep = runner.invoke(app, ["report", str(job), *flags, "--out", str(report_path)])
    assert rep.exit_code == 0, rep.output
    report_plan = json.loads(report_path.read_text(encoding="utf-8"))["plan"]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from fastapi.testclient import TestClient

        from trainsizer.web.app import create_app

        with TestClient(create_app(workers=1)) as client:  # the plan computed in a worker process
            resp = client.post("/api/plan", json={"job": JOB, "constraints": {**CONSTRAINTS, "top": 10}})
    assert resp.status_code == 200, resp.text
    web_plan = resp.json()

    _same_answer(cli_plan, web_plan)
    report_top = {k: v[:5] for k, v in cli_plan["rankings"].items()}  # the report shows five per ranking
    assert report_plan["rankings"]["recommended"] == report_top["recommended"]
    ia = cli_plan["rankings"]["recommended"][0]
    assert report_plan["options"][ia]["cost"] == cli_plan["options"][ia]["cost"]
