"""typer's internals are reached from one module: ``icectl/cli/typer_compat.py``.

Every other module of ``icectl/`` uses typer's public API only: it imports ``typer`` itself (never
``typer.main``, ``typer.core``, ``typer._coercion``, the vendored ``typer._click`` or any other
submodule, at module level or in a function) and names no such submodule through the package
(``typer.main.get_group``). The private attributes of typer's objects (``param._runtime_param``)
are allowed in typer_compat.py only by ``tests/test_layering.py``'s list of private reaches. A
typer upgrade then changes typer_compat.py and nothing else.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "icectl"
COMPAT = PKG / "cli" / "typer_compat.py"
# typer's submodules (its public API is what the package itself exports)
SUBMODULES = {"main", "core", "models", "params", "completion", "rich_utils", "utils", "colors",
              "testing", "cli"}


def reaches_internals(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) of every reach into typer's internals in a module's syntax tree."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, f"import {a.name}") for a in node.names
                      if a.name.startswith("typer.") or a.name.split(".")[0] == "click"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.startswith("typer.") or node.module.split(".")[0] == "click":
                found.append((node.lineno, f"from {node.module} import ..."))
        elif isinstance(node, ast.Attribute):
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id == "typer":
                if node.attr in SUBMODULES or node.attr.startswith("_"):
                    found.append((node.lineno, f"typer.{node.attr}"))
    return found


def modules() -> list[Path]:
    return [p for p in sorted(PKG.rglob("*.py")) if p != COMPAT]


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PKG)))
def test_only_typer_compat_reaches_typer_internals(path: Path) -> None:
    found = reaches_internals(ast.parse(path.read_text(encoding="utf-8"), str(path)))
    assert not found, f"{path.relative_to(PKG)} reaches typer internals: {found} (go through cli/typer_compat.py)"


@pytest.mark.parametrize("source, what", [
    ("import typer.main", "import typer.main"),
    ("from typer._click.globals import get_current_context", "from typer._click.globals import ..."),
    ("import typer\ntyper.main.get_group(app)", "typer.main"),
    ("import typer\ntyper._click.echo('x')", "typer._click"),
    ("import click", "import click"),
])
def test_the_rule_sees_each_kind_of_reach(source: str, what: str) -> None:
    assert [w for _, w in reaches_internals(ast.parse(source))] == [what]


def test_the_rule_allows_the_public_api() -> None:
    source = "import typer\napp = typer.Typer()\nx = typer.Option(None)\nraise typer.Exit(2)\n"
    assert reaches_internals(ast.parse(source)) == []


def test_typer_compat_is_where_they_are() -> None:
    assert reaches_internals(ast.parse(COMPAT.read_text(encoding="utf-8")))
