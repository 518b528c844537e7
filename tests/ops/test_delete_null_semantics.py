"""Deletes and scans select exactly the rows for which the filter is TRUE: rows whose value is
null (or NaN, for comparisons) are never deleted by a comparison, ``in``, ``not in``,
``starts with`` or their negations - on every kind of partition (identity, bucket, truncate,
year, month, day, hour; the null partition and values before 1970) and on plain nullable
columns, in merge-on-read and copy-on-write mode.

The expected rows come from a separate three-valued evaluator (:mod:`tests.ops.null_semantics`).
"""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icectl.ops.delete.merge_on_read import delete_rows
from icectl.ops.write.rows import write_rows
from icectl.scan.planner import plan_scan
from icectl.scan.reader import open_scan
from icectl.table.table import Table

from tests.ops.null_semantics import render, truth
from support.tables import empty_table, with_files

MODES = ("merge-on-read", "copy-on-write")
SCHEMA = "id long, grp int, s string, v double, d date, ts timestamp"
NAN = math.nan
E = dt.date(1970, 1, 1)
TS = dt.datetime(1970, 1, 1)

ROWS: list[dict[str, Any]] = [
    dict(id=1, grp=1, s="ab", v=1.5, d=dt.date(2024, 3, 1), ts=dt.datetime(2024, 3, 1, 1)),
    dict(id=2, grp=2, s="abc", v=-1.0, d=dt.date(1969, 12, 31), ts=dt.datetime(1969, 12, 31, 23)),
    dict(id=3, grp=None, s=None, v=None, d=None, ts=None),
    dict(id=4, grp=-3, s="b", v=NAN, d=dt.date(1960, 6, 15), ts=dt.datetime(1960, 6, 15, 5)),
    dict(id=5, grp=0, s="", v=-0.0, d=E, ts=TS),
    dict(id=6, grp=7, s="zz", v=0.0, d=dt.date(1969, 1, 1), ts=dt.datetime(1969, 12, 31, 0, 30)),
]


def _arrow(rows: list[dict]) -> pa.Table:
    return pa.table({
        "id": pa.array([r["id"] for r in rows], pa.int64()),
        "grp": pa.array([r["grp"] for r in rows], pa.int32()),
        "s": pa.array([r["s"] for r in rows], pa.string()),
        "v": pa.array([r["v"] for r in rows], pa.float64()),
        "d": pa.array([r["d"] for r in rows], pa.date32()),
        "ts": pa.array([r["ts"] for r in rows], pa.timestamp("us")),
    })


# (delete mode, column metrics): without metrics only partitions can prove anything, so the
# residual alone decides (an all-null column's metrics would otherwise prune `x < 5`)
COMBOS = [("merge-on-read", "truncate(16)"), ("copy-on-write", "truncate(16)"),
          ("merge-on-read", "none"), ("copy-on-write", "none")]


def _table(tmp_path: Path, partition: str | None, mode: str, rows: list[dict],
           one_file_per_row: bool | None = None, metrics: str = "truncate(16)") -> Table:
    """A table of ``rows``. Unpartitioned, by default one file per row (so column metrics
    prove the most); partitioned, one write (a file per partition, one manifest, whose
    partition summaries then cannot prune the null partition away before the residual)."""
    t = empty_table(tmp_path / "t", SCHEMA, partition=partition,
                    properties={"write.delete.mode": mode, "write.metadata.metrics.default": metrics})
    if one_file_per_row is None:
        one_file_per_row = partition is None
    if one_file_per_row:
        return with_files(t, len(rows), lambda i: _arrow([rows[i]]))
    return with_files(t, 1, lambda _: _arrow(rows))


def _ids(table: Table, filt: str | None = None) -> list[int]:
    scan = open_scan(Table.load(table.location), filt)
    out: list[int] = []
    for b in scan.batches():
        out += b.column("id").to_pylist()
    return sorted(out)


def _check(table: Table, rows: list[dict], e: tuple) -> None:
    text = render(e)
    selected = sorted(r["id"] for r in rows if truth(e, r) is True)
    assert _ids(table, text) == selected, f"scan {text!r}"
    delete_rows(Table.load(table.location), text)
    left = sorted(r["id"] for r in rows if truth(e, r) is not True)
    assert _ids(table) == left, f"delete {text!r}"


# -- the measured repros --------------------------------------------------------------------------

REPRO = [
    ("cmp", "grp", "!=", 2), ("in", "grp", (2,), True), ("in", "grp", (2, 7), True),
    ("not", ("cmp", "grp", "=", 2)), ("cmp", "grp", "<", 5), ("cmp", "grp", "<=", 0),
    ("not", ("cmp", "grp", ">", 0)),
]
PARTITIONS = ["grp", "bucket(4, grp)", "truncate(2, grp)", None]


@pytest.mark.parametrize("mode, metrics", COMBOS)
@pytest.mark.parametrize("partition", PARTITIONS)
@pytest.mark.parametrize("e", REPRO, ids=render)
def test_delete_keeps_null_rows_on_int_partitions(tmp_path: Path, mode: str, metrics: str,
                                                  partition: str | None, e: tuple) -> None:
    _check(_table(tmp_path, partition, mode, ROWS, metrics=metrics), ROWS, e)


def test_issue_repro_string_identity_null_partition(tmp_path: Path) -> None:
    t = empty_table(tmp_path / "t", "id long, cat string", partition="cat",
                    properties={"write.delete.mode": "merge-on-read"})
    write_rows(t, pa.table({"id": pa.array([1, 2, 3, 4], pa.int64()), "cat": ["a", "b", None, "c"]}))
    plan = plan_scan(Table.load(t.location), "cat != 'a'")
    by_cat = {f.partition[0]: str(f.residual) for f in plan.files}
    assert by_cat == {"b": "true", "c": "true", None: "false"}  # Java says true for null
    r = delete_rows(Table.load(t.location), "cat != 'a'")
    assert len(r.removed_data_files) == 2 and not r.files_with_row_deletes
    assert _ids(t) == [1, 3]


STRING_FILTERS = [
    ("cmp", "s", "!=", "ab"), ("in", "s", ("ab", "b"), True), ("like", "s", "ab", True),
    ("not", ("like", "s", "ab", False)), ("cmp", "s", "<", "b"), ("not", ("cmp", "s", "=", "b")),
    ("or", ("cmp", "s", "<", "a"), ("null", "s", False)),
]


@pytest.mark.parametrize("mode, metrics", COMBOS[1:3])
@pytest.mark.parametrize("partition", ["s", "truncate(1, s)", "bucket(3, s)", None])
@pytest.mark.parametrize("e", STRING_FILTERS, ids=render)
def test_delete_keeps_null_rows_on_string_partitions(tmp_path: Path, mode: str, metrics: str,
                                                     partition: str | None, e: tuple) -> None:
    _check(_table(tmp_path, partition, mode, ROWS, metrics=metrics), ROWS, e)


TIME_FILTERS = [
    ("cmp", "d", "<", E), ("cmp", "d", "!=", dt.date(1969, 12, 31)),
    ("in", "d", (E, dt.date(1960, 6, 15)), True), ("cmp", "d", "<=", dt.date(1969, 1, 1)),
    ("cmp", "ts", "<", TS), ("cmp", "ts", "!=", dt.datetime(1969, 12, 31, 23)),
    ("not", ("cmp", "ts", ">=", dt.datetime(1969, 12, 31, 0, 30))),
    ("cmp", "ts", ">", dt.datetime(1960, 6, 15, 5)),
]


@pytest.mark.parametrize("mode, metrics", COMBOS[1:])
@pytest.mark.parametrize("partition", ["year(d), hour(ts)", "month(d), day(ts)", "day(d), year(ts)"])
@pytest.mark.parametrize("e", TIME_FILTERS, ids=render)
def test_delete_keeps_null_rows_on_time_partitions(tmp_path: Path, mode: str, metrics: str,
                                                   partition: str, e: tuple) -> None:
    _check(_table(tmp_path, partition, mode, ROWS, metrics=metrics), ROWS, e)


FLOAT_FILTERS = [
    ("cmp", "v", "<", 5.0), ("cmp", "v", ">", -5.0), ("cmp", "v", "!=", 1.5),
    ("in", "v", (1.5, 7.0), True), ("or", ("cmp", "v", "<", 5.0), ("in", "v", (7.0, 8.0), True)),
    ("cmp", "v", "=", 0.0), ("cmp", "v", "=", -0.0), ("cmp", "v", "<", 0.0),
    ("cmp", "v", "!=", 0.0), ("in", "v", (0.0, 1.5), False), ("not", ("cmp", "v", "<", 0.0)),
    ("nan", "v", False), ("nan", "v", True), ("not", ("nan", "v", False)),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("layout", ["identity(v)", "file per row", "one file"])
@pytest.mark.parametrize("e", FLOAT_FILTERS, ids=render)
def test_delete_nan_and_signed_zero(tmp_path: Path, mode: str, layout: str, e: tuple) -> None:
    partition = "v" if layout == "identity(v)" else None
    _check(_table(tmp_path, partition, mode, ROWS, one_file_per_row=layout != "one file"), ROWS, e)


# -- random tables and filters --------------------------------------------------------------------

_vals = {
    "grp": st.one_of(st.none(), st.integers(-3, 3)),
    "s": st.one_of(st.none(), st.sampled_from(["", "a", "ab", "b", "ba"])),
    "v": st.one_of(st.none(), st.sampled_from([NAN, -0.0, 0.0, -1.5, 1.5, 2.0])),
}
_lits = {"grp": st.integers(-3, 3), "s": st.sampled_from(["", "a", "ab", "b"]),
         "v": st.sampled_from([-0.0, 0.0, -1.5, 1.5, 2.0])}


@st.composite
def _atom(draw: st.DrawFn) -> tuple:
    col = draw(st.sampled_from(sorted(_vals)))
    kinds = ["cmp", "in", "null"] + (["nan"] if col == "v" else []) + \
        (["like"] if col == "s" else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "cmp":
        return ("cmp", col, draw(st.sampled_from(["<", "<=", ">", ">=", "=", "!="])),
                draw(_lits[col]))
    if kind == "in":
        return ("in", col, tuple(draw(st.lists(_lits[col], min_size=1, max_size=3))),
                draw(st.booleans()))
    if kind == "like":
        return ("like", col, draw(st.sampled_from(["a", "ab", "b"])), draw(st.booleans()))
    return (kind, col, draw(st.booleans()))


_filters = st.recursive(_atom(), lambda sub: st.one_of(
    st.tuples(st.just("not"), sub), st.tuples(st.sampled_from(["and", "or"]), sub, sub)),
    max_leaves=4)


@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.fixed_dictionaries(_vals), min_size=1, max_size=6), e=_filters,
       partition=st.sampled_from(["grp", "s", "v", "bucket(2, grp)", "truncate(1, s)", None]),
       combo=st.sampled_from(COMBOS), one_file=st.booleans())
def test_deleted_rows_are_exactly_those_where_the_filter_is_true(
        tmp_path_factory: Any, rows: list[dict], e: tuple, partition: str | None,
        combo: tuple, one_file: bool) -> None:
    full = [dict(id=i, d=None, ts=None, **r) for i, r in enumerate(rows)]
    tmp = tmp_path_factory.mktemp("prop")
    mode, metrics = combo
    _check(_table(tmp, partition, mode, full, one_file_per_row=one_file, metrics=metrics), full, e)


# -- equality delete files pruned by the row filter (the reference's planFiles) --------------------


def test_plan_leaves_out_equality_deletes_the_filter_cannot_match(tmp_path: Path) -> None:
    from icectl.ops.delete.copy_on_write import delete_copy_on_write
    from icectl.ops.delete.equality import delete_equality
    from icectl.ops.read.plan import plan_table

    t = empty_table(tmp_path / "t", "id long, k string",
                    properties={"write.delete.mode": "merge-on-read"})
    write_rows(t, pa.table({"id": pa.array([1, 2, 3, 4], pa.int64()), "k": ["x", "y", "z", None]}))
    delete_equality(Table.load(t.location), ["k"], pa.table({"k": pa.array(["y", "z"])}))
    t = Table.load(t.location)

    def attached(text: str, **kw: Any) -> int:
        return sum(len(f.deletes) for f in plan_scan(t, text, **kw).files)

    # keys in ['y', 'z']: `k = 'x'` cannot meet them; the others might
    assert attached("k = 'x'", filter_deletes=True) == 0
    assert attached("k is null", filter_deletes=True) == 0  # the delete file has no nulls
    for text in ("k = 'y'", "k > 'w'", "id = 1", "k = 'x' or id = 2", "k != 'x'"):
        assert attached(text, filter_deletes=True) == 1, text
    # what `icectl plan` reports is the reference's plan; whole-file readers see every delete
    assert sum(len(f.deletes) for f in plan_table(t, "k = 'x'").result.files) == 0
    assert attached("k = 'x'") == 1
    assert _ids(t, "k = 'x'") == [1] and _ids(t, "k < 'z'") == [1] and _ids(t) == [1, 4]
    # a copy-on-write delete reads the file whole: the rows the equality delete removed must
    # not come back
    delete_copy_on_write(t, "k = 'x'")
    assert _ids(t) == [4]


def test_equality_keys_conflict_filter_asks_for_null_and_nan_keys() -> None:
    """The serializable conflict filter of an equality delete must match every row its keys
    remove: `in` never selects null or NaN, so those keys become `is null` / `is nan`."""
    from icectl.expr.evaluators import evaluate_row
    from icectl.ops.delete.equality import keys_filter
    from icectl.spec.schema import Schema
    from icectl.spec.types import DOUBLE, NestedField

    keys = Schema((NestedField(1, "v", DOUBLE, False),))
    f = keys_filter(pa.table({"v": pa.array([1.5, NAN, None, -0.0], pa.float64())}), keys)
    for v in (1.5, NAN, None, -0.0):
        assert evaluate_row(f, {1: v}), (str(f), v)
    assert not evaluate_row(f, {1: 0.0}) and not evaluate_row(f, {1: 2.0})
    assert "is nan" in str(f) and "is null" in str(f)
    # a file holding only NaN in the key column may be hit by the NaN key
    from icectl.expr.evaluators import MetricsEvaluator
    from icectl.spec.manifests import DataFile

    only_nan = DataFile(0, "f.parquet", "parquet", (), 2, 100, value_counts={1: 2},
                        null_value_counts={1: 0}, nan_value_counts={1: 2})
    assert MetricsEvaluator(f).eval(only_nan)[0]


def test_equality_delete_with_a_nan_key_removes_nan_rows(tmp_path: Path) -> None:
    """NaN is in no column bounds; a delete file with keys {NaN, 5.0} (bounds [5.0, 5.0]) must
    still apply to a data file with values {NaN, 1.0} (bounds [1.0, 1.0])."""
    from icectl.ops.delete.equality import delete_equality

    t = empty_table(tmp_path / "t", "id long, v double",
                    properties={"write.delete.mode": "merge-on-read"})
    write_rows(t, pa.table({"id": pa.array([1, 2, 3], pa.int64()),
                            "v": pa.array([NAN, 1.0, -0.0], pa.float64())}))
    delete_equality(Table.load(t.location), ["v"], pa.table({"v": pa.array([NAN, 5.0], pa.float64())}))
    assert _ids(t) == [2, 3]
    assert _ids(t, "v is nan") == [] and _ids(t, "v != 5.0e0") == [2, 3]
