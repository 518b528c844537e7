"""Partition identity: the reference's (``StructLikeWrapper``: ``Double.compare`` and
``Double.hashCode``) in one home, :mod:`icectl.spec.partition_identity`, and no partition map
of icectl keyed by raw partition tuples (Python's tuples merge -0.0 with 0.0 and tell NaNs
apart)."""

from __future__ import annotations

import ast
import math
import struct
from decimal import Decimal
from pathlib import Path

import pytest

from icectl.spec.partition_identity import partition_key, same_partition

PKG = Path(__file__).resolve().parents[2] / "icectl"
NAN = float("nan")


def _bits(n: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", n))[0]


NANS = [NAN, -NAN, _bits(0x7FF8000000000001), _bits(0xFFF0000000000001), _bits(0x7FF0000000000F00)]


def test_every_nan_is_one_partition() -> None:
    assert all(math.isnan(v) for v in NANS)
    keys = {partition_key((v, 3)) for v in NANS}
    assert len(keys) == 1
    assert all(same_partition((a,), (b,)) for a in NANS for b in NANS)
    assert {(NAN,): 1}.get((float("nan"),)) is None  # what a raw tuple key does
    assert {partition_key((NAN,)): 1}.get(partition_key((float("nan"),))) == 1


def test_signed_zeros_are_two_partitions() -> None:
    assert (-0.0,) == (0.0,)  # what a raw tuple key does
    assert not same_partition((-0.0,), (0.0,))
    assert len({partition_key((-0.0, "a")), partition_key((0.0, "a"))}) == 2
    assert same_partition((-0.0,), (-0.0,)) and same_partition((0.0,), (0.0,))
    assert not same_partition((NAN,), (0.0,)) and not same_partition((NAN,), (math.inf,))


@pytest.mark.parametrize("part", [(), (None,), (1, "a", b"\x00", Decimal("1.50")), (True, None, 7)])
def test_tuples_without_floats_are_their_own_key(part: tuple) -> None:
    assert partition_key(part) == part
    assert partition_key(list(part)) == part
    assert same_partition(part, part)


def test_ints_and_floats_of_other_fields_keep_apart() -> None:
    assert not same_partition((1, 2.0), (1, -2.0))
    assert same_partition((1, 2.0, None), [1, 2.0, None])
    assert not same_partition((None,), (NAN,))


# -- no partition map bypasses the home ------------------------------------------------------------

# names and attributes that hold a partition tuple by icectl's conventions
_PARTITION_NAMES = {"partition", "part"}
_PARTITION_ATTRS = {"partition"}
# calls whose result is still the partition tuple (any other call's result is something else:
# a key, a text, a count)
_CONVERSIONS = {"tuple", "list"}
_EXEMPT = "# partition identity:"  # a line that says why a raw key is right there


def _mentions(node: ast.AST, names: set[str]) -> bool:
    if isinstance(node, ast.Call):
        if not (isinstance(node.func, ast.Name) and node.func.id in _CONVERSIONS):
            return False
    if isinstance(node, ast.Attribute) and node.attr in _PARTITION_ATTRS:
        return True
    if isinstance(node, ast.Name) and node.id in names:
        return True
    return any(_mentions(c, names) for c in ast.iter_child_nodes(node))


def _keys(node: ast.AST) -> list[ast.AST]:
    """The expressions ``node`` uses as a dict or set key."""
    if isinstance(node, ast.Subscript):
        return [node.slice]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
        if node.func.attr in ("get", "setdefault", "pop") and len(node.args) <= 2:
            return [node.args[0]]
        if node.func.attr in ("add", "discard", "remove") and len(node.args) == 1:
            return [node.args[0]]
    if isinstance(node, ast.Compare) and any(isinstance(o, (ast.In, ast.NotIn)) for o in node.ops):
        return [node.left]
    if isinstance(node, ast.DictComp):
        return [node.key]
    if isinstance(node, ast.SetComp):
        return [node.elt]
    if isinstance(node, ast.Dict):
        return [k for k in node.keys if k is not None]
    return []


def _scopes(tree: ast.AST):
    yield tree
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield node


def raw_partition_keys(source: str, filename: str = "<src>") -> list[str]:
    """``file:line: key`` of every dict/set key built from a partition tuple without
    :func:`partition_key` (a name assigned from such an expression counts too)."""
    tree = ast.parse(source, filename)
    lines = source.splitlines()
    found: dict[tuple[int, str], None] = {}
    for scope in _scopes(tree):
        names = set(_PARTITION_NAMES)
        body = list(ast.walk(scope))
        changed = True
        while changed:  # names assigned from partition tuples (key = (spec_id, f.partition))
            changed = False
            for n in body:
                if isinstance(n, ast.Assign) and _mentions(n.value, names):
                    for t in n.targets:
                        if isinstance(t, ast.Name) and t.id not in names:
                            names.add(t.id)
                            changed = True
        for n in body:
            for k in _keys(n):
                if _mentions(k, names) and _EXEMPT not in lines[n.lineno - 1]:
                    found[(n.lineno, ast.unparse(k))] = None
    return [f"{filename}:{line}: {k}" for line, k in sorted(found)]


def test_the_detector_finds_raw_partition_keys() -> None:
    bad = '''
def f(d, files):
    key = (d.spec_id, d.partition)
    by = {}
    by.setdefault(key, []).append(d)
    seen = {(f.spec_id, tuple(f.partition)) for f in files}
    for part, rows in groups:
        x = by.get(part)
'''
    good = '''
def f(d, files):
    key = (d.spec_id, partition_key(d.partition))
    by = {}
    by.setdefault(key, []).append(d)
    seen = {(f.spec_id, partition_key(f.partition)) for f in files}
    for part, rows in groups:
        x = by.get(partition_key(part))
        y = by.get(part)  # partition identity: the test says why
'''
    assert len(raw_partition_keys(bad)) == 3
    assert raw_partition_keys(good) == []


def test_no_partition_map_is_keyed_by_raw_partition_tuples() -> None:
    problems = []
    for path in sorted(PKG.rglob("*.py")):
        problems += raw_partition_keys(path.read_text(encoding="utf-8"), str(path.relative_to(PKG.parent)))
    assert problems == [], ("key partition maps by icectl.spec.partition_identity.partition_key "
                            "(or say why not with '# partition identity: ...'):\n" + "\n".join(problems))
