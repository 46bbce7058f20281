"""Imports run one way: no cycle among longdoc's modules, imports inside
functions included, and the shipped package imports nothing of the
evaluation code, the benchmarks or the tests."""

from __future__ import annotations

import ast
from pathlib import Path

import longdoc

ROOT = Path(longdoc.__file__).parent


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in ROOT.rglob("*.py") if "migrations" not in p.parts}


def imported(path: Path, name: str, known: set[str]) -> tuple[set[str], set[str]]:
    """(longdoc modules, other top-level names) that the module ``name`` at
    ``path`` imports anywhere in its body; ``from pkg import mod`` names
    the module ``pkg.mod`` when it is one."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    ours: set[str] = set()
    others: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            subs = [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in known]
            targets = subs if len(subs) == len(node.names) else [base, *subs]
        for target in targets:
            if target.split(".")[0] == "longdoc":
                while target not in known and "." in target:
                    target = target.rpartition(".")[0]
                if target != name:
                    ours.add(target)
            else:
                others.add(target.split(".")[0])
    return ours, others


def graph() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    found = modules()
    known = set(found)
    edges, foreign = {}, {}
    for name, path in found.items():
        edges[name], foreign[name] = imported(path, name, known)
    return edges, foreign


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_the_graph_sees_function_level_imports():
    edges, _ = graph()
    assert len(edges) > 100
    # the registry loads each engine's module inside a function (lazily): those count
    assert "longdoc.engines.fallback" in edges["longdoc.engines.registry"]


def test_the_cycle_finder_finds_a_cycle_through_a_lazy_import():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_among_longdocs_modules():
    edges, _ = graph()
    assert cycles(edges) == []


def test_the_package_imports_no_evaluation_bench_or_test_code():
    _, foreign = graph()
    offending = {name: sorted(names & {"evaluation", "bench", "tests"}) for name, names in foreign.items()}
    assert {name: names for name, names in offending.items() if names} == {}
