"""Imports point down only: cli -> ops/scan -> table -> io -> spec/expr; only cli prints."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "icectl"

# what each layer may import from icectl (besides itself and icectl.errors)
ALLOWED = {
    "spec": {"spec"},
    "expr": {"spec", "expr"},
    "io": {"spec", "expr", "io"},
    "table": {"spec", "expr", "io", "table"},
    "ops": {"spec", "expr", "io", "table", "ops", "scan"},
    "scan": {"spec", "expr", "io", "table", "scan"},
    "cli": {"spec", "expr", "io", "table", "ops", "scan", "cli"},
}
# third-party packages and where they may be imported
THIRD_PARTY = {
    "mmh3": {"spec", "expr", "io", "table", "ops", "scan", "cli"},
    "fsspec": {"io"},
    "fastavro": {"io"},
    "pyarrow": {"io", "scan", "ops"},
    "typer": {"cli"},
    "rich": {"cli"},
    "click": set(),  # typer vendors its own; never import click
}


def modules():
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG)
        layer = rel.parts[0] if len(rel.parts) > 1 else None
        yield path, layer, ast.parse(path.read_text(encoding="utf-8"), str(path))


def imported_names(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module


@pytest.mark.parametrize("path, layer, tree", list(modules()), ids=lambda v: str(v) if isinstance(v, Path) else "")
def test_imports_point_down(path: Path, layer: str | None, tree: ast.AST) -> None:
    problems = []
    for lineno, name in imported_names(tree):
        top = name.split(".")[0]
        if top == "icectl":
            parts = name.split(".")
            if len(parts) < 2 or parts[1] in ("errors",) or layer is None:
                continue
            if parts[1] not in ALLOWED[layer]:
                problems.append(f"{path.name}:{lineno} ({layer}) imports {name}")
        elif top in THIRD_PARTY:
            if layer is None or layer not in THIRD_PARTY[top]:
                problems.append(f"{path.name}:{lineno} ({layer}) imports {top}")
        elif top not in sys.stdlib_module_names and top != "__future__":
            problems.append(f"{path.name}:{lineno} imports unexpected package {top}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path, layer, tree", list(modules()), ids=lambda v: str(v) if isinstance(v, Path) else "")
def test_only_cli_prints(path: Path, layer: str | None, tree: ast.AST) -> None:
    if layer == "cli":
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
            pytest.fail(f"{path}:{node.lineno} prints outside icectl/cli")
        if isinstance(node, ast.Attribute) and node.attr in ("stdout", "stderr") and \
                isinstance(node.value, ast.Name) and node.value.id == "sys":
            pytest.fail(f"{path}:{node.lineno} writes to sys.{node.attr} outside icectl/cli")
