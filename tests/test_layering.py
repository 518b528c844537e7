"""Imports point down only: cli -> ops/scan -> table -> io -> spec/expr; only cli prints.

``engines`` sits beside the layers: operations (ops) and the CLI may choose an engine; an
engine imports nothing of icectl but errors and command_files (it runs plain task functions over
plain data), and it is the only code that may import pyspark, and only lazily, inside functions. ``ops/compute``
(Arrow compute) is a part of ops with the same rules.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "icectl"

# what each layer may import from icectl (besides itself, icectl.errors and icectl.command_files,
# the running command's files, signals and workers: both import nothing of icectl)
ALLOWED = {
    "spec": {"spec"},
    "expr": {"spec", "expr"},
    "io": {"spec", "expr", "io"},
    "table": {"spec", "expr", "io", "table"},
    "ops": {"spec", "expr", "io", "table", "ops", "scan", "engines"},
    "ops/compute": {"spec", "expr", "io", "table", "ops", "scan", "engines"},
    "scan": {"spec", "expr", "io", "table", "scan"},
    "engines": {"engines"},
    "cli": {"spec", "expr", "io", "table", "ops", "scan", "engines", "cli"},
}
# third-party packages and where they may be imported
THIRD_PARTY = {
    "mmh3": {"spec", "expr", "io", "table", "ops", "scan", "cli"},
    "fsspec": {"io"},
    "fastavro": {"io"},
    "pyarrow": {"io", "scan", "ops", "ops/compute"},
    "typer": {"cli"},
    "rich": {"cli"},
    "click": set(),  # typer vendors its own; never import click
    "pyspark": {"engines"},  # an optional extra: only an engine, only inside functions
}
LAZY_ONLY = {"pyspark"}


def layer_of(rel: Path) -> str | None:
    if len(rel.parts) < 2:
        return None
    if rel.parts[0] == "ops" and len(rel.parts) > 2 and rel.parts[1] == "compute":
        return "ops/compute"
    return rel.parts[0]


def modules():
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG)
        yield path, layer_of(rel), ast.parse(path.read_text(encoding="utf-8"), str(path))


def imported_names(tree: ast.AST, in_function: bool = False):
    """(line, module name, imported inside a function?) of every absolute import."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name, in_function
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module, in_function
        else:
            nested = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            yield from imported_names(node, nested)


@pytest.mark.parametrize("path, layer, tree", list(modules()), ids=lambda v: str(v) if isinstance(v, Path) else "")
def test_imports_point_down(path: Path, layer: str | None, tree: ast.AST) -> None:
    problems = []
    for lineno, name, in_function in imported_names(tree):
        top = name.split(".")[0]
        if top in LAZY_ONLY and not in_function:
            problems.append(f"{path.name}:{lineno} ({layer}) imports {top} at module level (only lazily)")
        if top == "icectl":
            parts = name.split(".")
            if len(parts) < 2 or parts[1] in ("errors", "command_files") or layer is None:
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


def test_the_rules_catch_what_they_forbid() -> None:
    """The checker itself: a module-level pyspark import, pyspark outside engines and an engine
    importing a layer are all reported; a lazy pyspark import in an engine is not."""
    cases = {
        ("engines", "import pyspark\n"): True,
        ("engines", "def run():\n    import pyspark.sql\n"): False,
        ("engines", "def run():\n    from pyspark.sql import SparkSession\n"): False,
        ("ops", "def run():\n    import pyspark\n"): True,
        ("cli", "from pyspark.sql import SparkSession\n"): True,
        ("engines", "from icectl.table.table import Table\n"): True,
        ("ops", "from icectl.engines import get_engine\n"): False,
        ("ops/compute", "import pyarrow.compute as pc\n"): False,
        ("scan", "from icectl.ops.timeargs import parse_time_ms\n"): True,
        ("scan", "from icectl.spec.timetext import parse_time_ms\n"): False,
    }
    for (layer, src), bad in cases.items():
        tree = ast.parse(src)
        try:
            test_imports_point_down(Path(f"{layer}/x.py"), layer, tree)
            reported = False
        except AssertionError:
            reported = True
        assert reported == bad, (layer, src)
