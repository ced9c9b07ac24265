"""The code base's import rules: the contracts in .importlinter, no import cycle, no import hidden in a function."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]


def test_the_import_contracts_hold():
    linter = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(linter), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


def cycles(graph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in graph.modules:
                    continue
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
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
                        found.append(sorted(component))
    return found


def test_no_module_of_forge_or_the_engine_is_part_of_an_import_cycle():
    graph = grimp.build_graph("forge", "engine", cache_dir=None)
    assert cycles(graph) == []


def test_the_cycle_check_sees_an_import_inside_a_function():
    graph = grimp.ImportGraph()
    for name in ("pkg", "pkg.a", "pkg.b"):
        graph.add_module(name)
    graph.add_import(importer="pkg.a", imported="pkg.b")
    assert cycles(graph) == []
    graph.add_import(importer="pkg.b", imported="pkg.a")
    assert cycles(graph) == [["pkg.a", "pkg.b"]]


def _imports_in_functions(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in ast.walk(node):
                if isinstance(inner, ast.ImportFrom) and inner.module and inner.module.startswith("forge"):
                    found.append((inner.lineno, inner.module))
                elif isinstance(inner, ast.Import):
                    found += [(inner.lineno, a.name) for a in inner.names if a.name.startswith("forge")]
    return found


def test_forge_imports_its_own_modules_at_the_top_of_a_file():
    # Django's app registry is the one reason to import in a function: checks register, and signal receivers
    # that name Django's own models connect, in AppConfig.ready.
    allowed = {("forge/runs/apps.py", "forge.runs"), ("forge/governance/apps.py", "forge.governance"),
               ("forge/accounts/apps.py", "forge.accounts")}
    hidden = [f"{path.relative_to(ROOT)}:{line} imports {module}"
              for path in sorted((ROOT / "forge").rglob("*.py")) if "migrations" not in path.parts
              for line, module in _imports_in_functions(path)
              if (str(path.relative_to(ROOT)), module) not in allowed]
    assert hidden == []
