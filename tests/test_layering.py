"""Imports point down only: cli -> catalog -> ops/scan -> table -> io -> spec/expr; only cli prints.

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
    "catalog": {"spec", "expr", "io", "table", "ops", "scan", "engines", "catalog"},
    "cli": {"spec", "expr", "io", "table", "ops", "scan", "engines", "catalog", "cli"},
}
# third-party packages and where they may be imported
THIRD_PARTY = {
    "mmh3": {"spec", "expr", "io", "table", "ops", "scan", "cli"},
    "pg8000": {"catalog"},  # the optional PostgreSQL driver of SQL catalogs (icectl[postgres])
    "fsspec": {"io"},
    "fastavro": {"io"},
    "pyarrow": {"io", "scan", "ops", "ops/compute"},
    "typer": {"cli"},
    "rich": {"cli"},
    "click": set(),  # typer vendors its own; never import click
    "pyspark": {"engines"},  # an optional extra: only an engine, only inside functions
}
LAZY_ONLY = {"pyspark", "pg8000"}


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
        ("scan", "from icectl.ops.metadata.refs import rollback_to_time\n"): True,
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


# -- private names stay in their module ---------------------------------------------------------

# (module, private name) reached from outside the name's module, each with its reason
PRIVATE_ALLOWED = {
    ("*", "_exit"): "os._exit: the standard library's way to end a process at once (no clean-up)",
    ("io/storage/fsspec_store.py", "_strip_protocol"): "fsspec's documented path normaliser of a filesystem class",
    ("io/storage/objectstore.py", "_strip_protocol"): "fsspec's documented path normaliser of a filesystem class",
    ("engines/__init__.py", "_processes"): "ProcessPoolExecutor has no public way to kill its workers "
                                           "when a map stops early",
    ("engines/spark.py", "_jsc"): "PySpark reaches the JVM's SparkContext only through _jsc",
    # typer internals (cli/typer_compat.py only: tests/test_typer_internals.py): pinned to one
    # typer minor in pyproject.toml and checked by
    # tests/cli/test_app.py::test_the_typer_internals_the_cli_relies_on_are_pinned
    ("cli/typer_compat.py", "_runtime_param"): "defers typer's pydantic coercion (start-up time); pinned typer",
    ("cli/typer_compat.py", "_usage_display_name"): "shows an argument by its name in --help; pinned typer",
    ("cli/typer_compat.py", "_rich_display_name"): "shows an argument by its name in --help; pinned typer",
    # the model helper's (r5-model) work: these imports go with delete_rows' reshaping
    ("ops/delete/keyed.py", "_data_files"): "being removed in r5-model",
    ("ops/delete/keyed.py", "_delete_entries"): "being removed in r5-model",
    ("ops/delete/keyed.py", "_ppath"): "being removed in r5-model",
    ("ops/delete/keyed.py", "_previous_dvs"): "being removed in r5-model",
    ("ops/delete/keyed.py", "_write_deletion_vectors"): "being removed in r5-model",
    ("ops/delete/keyed.py", "_write_position_deletes"): "being removed in r5-model",
    ("ops/delete/copy_on_write.py", "_matching_positions"): "being removed in r5-model",
    ("ops/delete/upsert.py", "_check_version"): "being removed in r5-model",
}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def defined_names(tree: ast.AST) -> set[str]:
    """Names a module defines itself: functions, classes, assigned names (module or class level,
    dataclass fields) and attributes it sets on self/cls."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and \
                isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            out.add(node.attr)
    return out


def private_reaches(rel: str, tree: ast.AST) -> list[str]:
    """Private names this module takes from others: ``from m import _x`` (another module),
    ``obj._x`` / ``getattr(obj, "_x")`` where obj is not self, cls or super() and the module does
    not define ``_x`` itself."""
    own = defined_names(tree)
    problems = []

    def allowed(name: str) -> bool:
        return (rel, name) in PRIVATE_ALLOWED or ("*", name) in PRIVATE_ALLOWED

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("icectl")):
            for a in node.names:
                if _private(a.name) and not allowed(a.name):
                    problems.append(f"{rel}:{node.lineno} imports {a.name} from {node.module}")
            continue
        target = None
        if isinstance(node, ast.Attribute) and _private(node.attr):
            target, name = node.value, node.attr
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in ("getattr", "setattr", "hasattr", "delattr") and len(node.args) >= 2 and \
                isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str) and \
                _private(node.args[1].value):
            target, name = node.args[0], node.args[1].value
        if target is None:
            continue
        if isinstance(target, ast.Name) and target.id in ("self", "cls"):
            continue
        if isinstance(target, ast.Call) and isinstance(target.func, ast.Name) and target.func.id == "super":
            continue
        if name in own or allowed(name):
            continue
        problems.append(f"{rel}:{node.lineno} reaches {ast.unparse(target)}.{name}")
    return problems


def test_no_private_reached_from_outside_its_module() -> None:
    problems = []
    for path, _layer, tree in modules():
        problems += private_reaches(str(path.relative_to(PKG)), tree)
    assert not problems, "\n".join(problems)


def test_the_private_check_catches_what_it_forbids() -> None:
    cases = {
        "from icectl.ops.delete.merge_on_read import _data_files\n": True,
        "from icectl.ops.delete.merge_on_read import delete_rows\n": False,
        "def f(table):\n    return table.io._options\n": True,
        "def f(table):\n    return getattr(table.io, '_options', None)\n": True,
        "def f(table):\n    return table.io.storage_options\n": False,
        "class A:\n    def f(self):\n        return self._x\n": False,
        "class A:\n    def __init__(self):\n        self._x = 1\n\ndef f(a):\n    return a._x\n": False,
        "class B(A):\n    def f(self):\n        return super()._update()\n": False,
        "def f(p):\n    p._usage_display_name = str\n": True,
        "import os\nos._exit(1)\n": False,
    }
    for src, bad in cases.items():
        assert bool(private_reaches("ops/x.py", ast.parse(src))) == bad, src


# -- no import circles ---------------------------------------------------------------------------

# The package root (icectl/__init__.py) is left out of the graph: Python imports it before any
# icectl.x anyway, it imports nothing at module level, and its __getattr__ loads the API only
# for the attribute asked for (``from icectl import __version__`` loads nothing).
ROOT = "icectl"


def module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.parts[-1] == "__init__" else rel.parts
    return ".".join(parts)


def module_imports(tree: ast.AST, known: set[str], functions: bool = False) -> set[str]:
    """The icectl modules imported at module level (not under TYPE_CHECKING), and with
    ``functions`` also those imported inside functions; ``from pkg import mod`` counts as
    importing ``pkg.mod``."""
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and not functions:
                continue
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if isinstance(child, ast.Import):
                out.update(a.name for a in child.names if a.name in known)
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module in known:
                for a in child.names:
                    sub = f"{child.module}.{a.name}"
                    out.add(sub if sub in known else child.module)
            else:
                visit(child)
    visit(tree)
    return out


def import_circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected groups of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                group = set()
                while True:
                    x = stack.pop()
                    on_stack.discard(x)
                    group.add(x)
                    if x == v:
                        break
                if len(group) > 1:
                    circles.append(frozenset(group))
    return circles


def import_graph(functions: bool) -> dict[str, set[str]]:
    trees = {module_name(path): tree for path, _layer, tree in modules()}
    known = set(trees) - {ROOT}
    return {name: module_imports(tree, known, functions) - {name}
            for name, tree in trees.items() if name != ROOT}


def test_no_import_circles() -> None:
    found = [sorted(c) for c in import_circles(import_graph(functions=False))]
    assert not found, f"modules importing each other at module level: {found}"


def test_no_import_circle_even_through_function_level_imports() -> None:
    """A lazy import inside a function hides a circle from Python but not from a reader: the
    two modules still need each other. None at all, whatever the level."""
    found = [sorted(c) for c in import_circles(import_graph(functions=True))]
    assert not found, f"modules importing each other (in functions too): {found}"


def test_the_circle_check_finds_circles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}, "f": set()}
    assert import_circles(graph) == [frozenset({"a", "b", "c"})]
    known = {"icectl.expr", "icectl.expr.visitor", "icectl.expr.expressions"}
    tree = ast.parse("from typing import TYPE_CHECKING\nfrom icectl.expr import visitor\n"
                     "if TYPE_CHECKING:\n    from icectl.expr.expressions import And\n"
                     "def f():\n    from icectl.expr.expressions import Or\n")
    assert module_imports(tree, known) == {"icectl.expr.visitor"}
    assert module_imports(tree, known, functions=True) == {"icectl.expr.visitor", "icectl.expr.expressions"}


# -- the layers' objects are typed --------------------------------------------------------------

# parameter (and field) names that always hold one of the model's objects: a table, its metadata,
# its file IO, a snapshot, a manifest, a spec, a sort order or a data file's metrics. Each must be
# annotated with its type, never left bare or ``Any`` (TYPE_CHECKING imports keep the layers).
TYPED_NAMES = frozenset({"table", "tbl", "md", "io", "file_io", "snapshot", "manifest", "spec",
                         "sort_order", "data_file"})
# (module, function or class, name) left loose, each with its reason
LOOSE_ALLOWED: dict[tuple[str, str, str], str] = {}


def loose_model_names(rel: str, tree: ast.AST) -> list[str]:
    """``name (where)`` of every parameter or class field in TYPED_NAMES that is unannotated or
    annotated ``Any``."""
    def loose(annotation: ast.expr | None) -> bool:
        return annotation is None or ast.unparse(annotation).strip("'\"") in ("Any", "typing.Any")

    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):  # (a lambda's cannot be)
            where = node.name
            a = node.args
            for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs]:
                if arg.arg in TYPED_NAMES and loose(arg.annotation) and \
                        (rel, where, arg.arg) not in LOOSE_ALLOWED:
                    found.append(f"{rel}:{node.lineno} {where}({arg.arg})")
        elif isinstance(node, ast.ClassDef):
            for stmt in node.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and \
                        stmt.target.id in TYPED_NAMES and loose(stmt.annotation) and \
                        (rel, node.name, stmt.target.id) not in LOOSE_ALLOWED:
                    found.append(f"{rel}:{stmt.lineno} {node.name}.{stmt.target.id}")
    return found


def test_model_objects_are_typed() -> None:
    problems = []
    for path, _layer, tree in modules():
        problems += loose_model_names(path.relative_to(PKG).as_posix(), tree)
    assert not problems, "loose (Any or unannotated) model parameters: " + ", ".join(problems)


def test_the_typing_check_catches_a_loose_table() -> None:
    cases = {
        "from typing import Any\ndef f(table: Any) -> None: ...\n": True,
        "def f(table, x: int) -> None: ...\n": True,
        "def f(*, md: 'Any') -> None: ...\n": True,
        "class S:\n    table: Any\n": True,
        "class A:\n    def m(self, io: Any) -> None: ...\n": True,
        "def f(table: Table, md: TableMetadata, io: FileIO | None = None) -> None: ...\n": False,
        "def f(value: Any, rows) -> None: ...\n": False,
        "f = lambda table: table.io\n": False,
    }
    for src, bad in cases.items():
        assert bool(loose_model_names("ops/x.py", ast.parse(src))) == bad, src


def test_the_loose_list_names_real_loose_parameters() -> None:
    """An entry whose parameter got typed (or renamed) is removed, so the list stays honest."""
    trees = {path.relative_to(PKG).as_posix(): tree for path, _layer, tree in modules()}
    for rel, where, name in LOOSE_ALLOWED:
        found = False
        for node in ast.walk(trees[rel]):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == where:
                a = node.args
                found |= any(arg.arg == name and (arg.annotation is None or ast.unparse(arg.annotation) == "Any")
                             for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs])
        assert found, f"{rel}: {where}({name}) is typed now: drop it from LOOSE_ALLOWED"


# -- ops/read/inspect.py serves `icectl inspect` only ------------------------------------------------

# the modules of the inspect command; every other module takes the views it shows from
# spec/views.py (schemas, specs, sort orders, the table summary, partitions) and a snapshot's
# manifests from table/commit/snapshot_manifests.py
INSPECT_COMMAND = {"cli/inspect_cmds.py", "ops/read/inspect_tables.py"}


def inspect_imports(tree: ast.AST) -> list[int]:
    """Lines that import icectl.ops.read.inspect (module level or in a function)."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name == "icectl.ops.read.inspect" for a in node.names):
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (
                node.module == "icectl.ops.read.inspect" or
                (node.module == "icectl.ops" and any(a.name == "inspect" for a in node.names))):
            lines.append(node.lineno)
    return lines


def test_only_the_inspect_command_uses_its_views() -> None:
    problems = []
    for path, _layer, tree in modules():
        rel = path.relative_to(PKG).as_posix()
        if rel not in INSPECT_COMMAND:
            problems += [f"{rel}:{n}" for n in inspect_imports(tree)]
    assert not problems, "import icectl.ops.read.inspect outside the inspect command: " + ", ".join(problems)


def test_the_inspect_check_sees_every_form() -> None:
    cases = {
        "from icectl.ops.read.inspect import partition_json\n": True,
        "def f():\n    from icectl.ops.read.inspect import schema_view\n": True,
        "from icectl.ops import inspect as views\n": True,
        "import icectl.ops.read.inspect\n": True,
        "from icectl.ops import inspect_tables\n": False,
        "from icectl.spec.views import partition_json\nimport inspect\n": False,
    }
    for src, bad in cases.items():
        assert bool(inspect_imports(ast.parse(src))) == bad, src


# -- test modules import no test modules --------------------------------------------------------

# helpers shared by tests live in support modules (tests/ops/ops_support.py,
# tests/interop/spark_support.py, ...); a test module imported by another runs its module code and
# offers its tests twice, and its helpers change with its tests
TESTS = Path(__file__).resolve().parent


def imported_test_modules(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, name) of every import of a ``test_*`` module, at any level (in functions too),
    absolute or relative: ``import tests.ops.test_x``, ``from test_x import f``,
    ``from tests.ops import test_x``, ``from .test_x import f``."""
    def names_a_test(dotted: str) -> bool:
        return any(part.startswith("test_") for part in dotted.split("."))

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if names_a_test(a.name)]
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            if names_a_test(module):
                found.append((node.lineno, module))
            else:
                found += [(node.lineno, f"{module}.{a.name}") for a in node.names
                          if a.name.startswith("test_")]
    return found


def test_no_test_module_imports_another() -> None:
    problems = []
    for path in sorted(TESTS.rglob("test_*.py")):
        rel = path.relative_to(TESTS).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"), rel)
        problems += [f"{rel}:{line} imports {name}" for line, name in imported_test_modules(tree)]
    assert not problems, "test modules importing test modules (use a support module): " + \
        ", ".join(problems)


def test_the_test_import_check_sees_every_form() -> None:
    cases = {
        "from test_scan_interop import icectl_rows\n": True,
        "def f():\n    from test_scan_interop import write_equality_delete\n": True,
        "import tests.ops.test_compact\n": True,
        "import test_expire_interop as expire\n": True,
        "from tests.ops.test_delete_rows import MOR\n": True,
        "from tests.ops import test_compact\n": True,
        "from .test_plan_cli import make\n": True,
        "from . import test_plan_cli\n": True,
        "class A:\n    def m(self):\n        import test_x\n": True,
        "from tests.ops.ops_support import make_table\nfrom spark_support import java_table\n": False,
        "import pytest\nfrom cli_support import run_icectl\nfrom . import support\n": False,
        "from icectl.ops import latest_test\n": False,
    }
    for src, bad in cases.items():
        assert bool(imported_test_modules(ast.parse(src))) == bad, src


# rooms of one layer that must not reach into each other (README, Architecture): room -> (the rooms it
# may not import, modules of those rooms it may import all the same)
ROOM_RULES = {
    "ops/read": (("ops/write", "ops/delete", "ops/maintain", "ops/metadata"), ()),
    "ops/write": (("ops/delete", "ops/metadata", "ops/read", "ops/maintain"),
                  ("icectl.ops.maintain.file_removal",)),  # refusing to move another table's files
    "io/storage": (("io/formats", "io/manifest"), ()),
    "io/formats": (("io/manifest",), ()),
}


def _room_of_module(name: str) -> str | None:
    parts = name.split(".")
    return "/".join(parts[1:3]) if len(parts) >= 3 else None


@pytest.mark.parametrize("room", sorted(ROOM_RULES))
def test_rooms_keep_to_themselves(room: str) -> None:
    forbidden, allowed = ROOM_RULES[room]
    assert (PKG / room).is_dir(), f"{room} is no room of the package any more"
    problems = []
    for path, _layer, tree in modules():
        rel = path.relative_to(PKG).as_posix()
        if not rel.startswith(room + "/"):
            continue
        for lineno, name, _in_function in imported_names(tree):
            if name.startswith("icectl.") and _room_of_module(name) in forbidden and name not in allowed:
                problems.append(f"{rel}:{lineno} imports {name}")
    assert not problems, f"{room} reaches into a sibling room: " + "; ".join(problems)


def test_room_rules_catch_a_reach() -> None:
    tree = ast.parse("def f():\n    from icectl.ops.write.rows import write_rows\n")
    names = [n for _l, n, _f in imported_names(tree)]
    assert [_room_of_module(n) for n in names] == ["ops/write"]
    assert _room_of_module("icectl.ops.write.rows") in ROOM_RULES["ops/read"][0]


# the storage room's front door (README, Architecture): outside io/storage only these of its modules
# are imported; a store's own module (local, fsspec_store, a new one) is reached through the registry
STORAGE_PUBLIC = {"files", "base", "registry", "objectstore", "cache_dir"}


def storage_reaches(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, module) of every import of an io/storage module outside :data:`STORAGE_PUBLIC`."""
    out = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + ([f"{node.module}.{a.name}" for a in node.names]
                                     if node.module == "icectl.io.storage" else [])
        for name in names:
            parts = name.split(".")
            if parts[:3] == ["icectl", "io", "storage"] and len(parts) > 3 and parts[3] not in STORAGE_PUBLIC:
                out.append((node.lineno, name))
    return out


def test_only_the_storage_front_door_is_imported_from_outside_it() -> None:
    problems = []
    for path, _layer, tree in modules():
        rel = path.relative_to(PKG).as_posix()
        if not rel.startswith("io/storage/"):
            problems += [f"{rel}:{line} imports {name}" for line, name in storage_reaches(tree)]
    assert not problems, "; ".join(problems)


def test_the_storage_door_check_sees_every_form() -> None:
    cases = {
        "from icectl.io.storage.local import LocalStorage\n": True,
        "def f():\n    from icectl.io.storage import fsspec_store\n": True,
        "import icectl.io.storage.local\n": True,
        "from icectl.io.storage.files import FileIO\n": False,
        "from icectl.io.storage import objectstore, registry\n": False,
    }
    for src, bad in cases.items():
        assert bool(storage_reaches(ast.parse(src))) == bad, src
