"""Scan planning against the reference: Iceberg Java's ``newScan().filter(...).planFiles()``.

Spark builds tables partitioned by every transform, with schema and partition evolution,
merge-on-read position deletes (v2) and deletion vectors (v3), and a v1 table with spec
evolution. For fixed and hypothesis-generated filters, icectl's planned data files, the delete
files attached to each, and the residuals (checked with Java's ``isEquivalentTo``) must equal
Java's. pyiceberg's plan must agree on the tables it supports. Time travel, incremental append
scans, splits and the bin packing are compared too.
"""

from __future__ import annotations

import datetime as dt
import itertools
import random
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icectl.expr.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BoundPredicate,
    Expression,
    Not,
    Operation,
    Or,
)
from icectl.io.manifest.columns import clear_cache
from icectl.scan import plan_scan
from icectl.scan.tasks import pack
from icectl.spec.types import (
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIMESTAMP,
    TIMESTAMPTZ,
    DecimalType,
)
from icectl.table.table import Table
from spark_support import CATALOG, IceTable, java_iter, java_table


def jlist(java_iterable: Any) -> list:
    """A plain Java collection (no close()) as a list."""
    out = []
    it = java_iterable.iterator()
    while it.hasNext():
        out.append(it.next())
    return out

pytestmark = pytest.mark.interop
Op = Operation
_ns = itertools.count(1)


# -- tables -----------------------------------------------------------------------------------------


def _build_all(sql: Callable[[str], Any], t: IceTable) -> None:
    sql(f"CREATE TABLE {t.ident} (id bigint, name string, ts timestamp, d date, "
        "amt decimal(10,2), v double, n int, cat string) USING iceberg "
        "PARTITIONED BY (bucket(4, id), truncate(3, name), days(ts), months(d), cat) "
        "TBLPROPERTIES ('format-version'='2')")
    sql(f"INSERT INTO {t.ident} VALUES "
        "(1, 'apple', TIMESTAMP '2024-03-01 01:00:00', DATE '2024-03-01', 1.50, 0.5, 10, 'a'),"
        "(2, 'apricot', TIMESTAMP '2024-03-01 13:00:00', DATE '2024-01-15', 2.25, -1.0, 20, 'b'),"
        "(3, 'banana', TIMESTAMP '2024-03-02 00:00:00', DATE '2023-12-31', 10.00, double('NaN'), 30, 'a'),"
        "(4, NULL, NULL, NULL, NULL, NULL, NULL, NULL)")
    sql(f"INSERT INTO {t.ident} VALUES "
        "(10, 'cherry', TIMESTAMP '1969-12-31 23:00:00', DATE '1969-12-31', -3.00, 7.25, -5, 'c'),"
        "(11, 'apple pie', TIMESTAMP '2024-03-01 02:00:00', DATE '2024-03-03', 99.99, 8.5, 45, 'a'),"
        "(12, 'blueberry', TIMESTAMP '2024-04-10 10:00:00', DATE '2024-04-10', 0.01, 0.0, 0, 'b')")
    sql(f"INSERT INTO {t.ident} SELECT id, concat('name', CAST(id AS STRING)), "
        "TIMESTAMP '2024-03-05 00:00:00' + make_interval(0, 0, 0, 0, CAST(id AS INT), 0, 0), "
        "DATE '2024-03-05', CAST(id AS DECIMAL(10,2)), id / 3.0, CAST(id AS INT), 'z' "
        "FROM range(100, 130)")


def _build_time(sql: Callable[[str], Any], t: IceTable) -> None:
    sql(f"CREATE TABLE {t.ident} (id bigint, ts timestamp, d date, n int, v float) USING iceberg "
        "PARTITIONED BY (hours(ts), years(d), truncate(10, n)) TBLPROPERTIES ('format-version'='2')")
    sql(f"INSERT INTO {t.ident} VALUES (1, TIMESTAMP '2024-03-01 01:30:00', DATE '2024-03-01', 5, 1.5),"
        "(2, TIMESTAMP '2024-03-01 02:10:00', DATE '2020-01-01', 15, -2.5),"
        "(3, TIMESTAMP '1969-12-31 23:59:00', DATE '1969-06-01', -3, float('NaN')),"
        "(4, NULL, NULL, NULL, NULL)")
    sql(f"INSERT INTO {t.ident} VALUES (5, TIMESTAMP '2024-03-01 01:59:59', DATE '2024-12-31', 25, 0.0),"
        "(6, TIMESTAMP '2025-01-01 00:00:00', DATE '2025-01-01', 99, 100.0)")


def _build_mor(sql: Callable[[str], Any], t: IceTable) -> None:
    sql(f"CREATE TABLE {t.ident} (id bigint, ts timestamp, cat string, n int) USING iceberg "
        "PARTITIONED BY (bucket(4, id), days(ts)) TBLPROPERTIES ('format-version'='2', "
        "'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read')")
    sql(f"INSERT INTO {t.ident} SELECT id, TIMESTAMP '2024-05-01 00:00:00' + make_interval(0, 0, 0, "
        "0, CAST(id AS INT), 0, 0), concat('c', CAST(id % 3 AS STRING)), CAST(id AS INT) "
        "FROM range(0, 40)")
    sql(f"INSERT INTO {t.ident} VALUES (100, TIMESTAMP '2024-05-03 00:00:00', 'x', 1)")
    sql(f"DELETE FROM {t.ident} WHERE id = 3 OR id = 30")
    sql(f"UPDATE {t.ident} SET n = n + 1000 WHERE id = 100")
    sql(f"ALTER TABLE {t.ident} CREATE TAG before_evolution")
    sql(f"ALTER TABLE {t.ident} ADD COLUMN note string")
    sql(f"ALTER TABLE {t.ident} ADD PARTITION FIELD truncate(2, cat)")
    sql(f"INSERT INTO {t.ident} VALUES (200, TIMESTAMP '2024-06-01 00:00:00', 'zz', 2, 'new spec'),"
        "(201, TIMESTAMP '2024-05-02 00:00:00', 'c1', 7, NULL)")
    sql(f"DELETE FROM {t.ident} WHERE id IN (5, 201)")


def _build_v1(sql: Callable[[str], Any], t: IceTable) -> None:
    sql(f"CREATE TABLE {t.ident} (id bigint, ts timestamp, cat string, n int) USING iceberg "
        "PARTITIONED BY (days(ts), cat) TBLPROPERTIES ('format-version'='1')")
    sql(f"INSERT INTO {t.ident} VALUES (1, TIMESTAMP '2024-03-01 01:00:00', 'a', 10),"
        "(2, TIMESTAMP '2024-03-02 01:00:00', 'b', 20), (3, NULL, NULL, NULL)")
    sql(f"ALTER TABLE {t.ident} DROP PARTITION FIELD cat")
    sql(f"ALTER TABLE {t.ident} ADD PARTITION FIELD bucket(8, id)")
    sql(f"ALTER TABLE {t.ident} ADD COLUMN extra string")
    sql(f"ALTER TABLE {t.ident} RENAME COLUMN n TO amount")
    sql(f"INSERT INTO {t.ident} VALUES (4, TIMESTAMP '2024-03-01 05:00:00', 'a', 40, 'x'),"
        "(5, TIMESTAMP '2024-03-09 05:00:00', 'c', 50, NULL)")


def _build_v3(sql: Callable[[str], Any], t: IceTable) -> None:
    sql(f"CREATE TABLE {t.ident} (id bigint, cat string, v double) USING iceberg "
        "PARTITIONED BY (cat) TBLPROPERTIES ('format-version'='3', "
        "'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read')")
    sql(f"INSERT INTO {t.ident} SELECT id, IF(id % 2 = 0, 'even', 'odd'), id / 4.0 FROM range(0, 20)")
    sql(f"INSERT INTO {t.ident} VALUES (50, 'odd', double('NaN')), (51, NULL, 1.0)")
    sql(f"DELETE FROM {t.ident} WHERE id IN (2, 3)")
    sql(f"DELETE FROM {t.ident} WHERE id = 4")
    sql(f"UPDATE {t.ident} SET v = -1 WHERE id = 7")


def _build_types(sql: Callable[[str], Any], t: IceTable) -> None:
    """Identity / truncate partitions of the types whose manifest values need a logical-type
    conversion or are easy to get wrong: two partition fields share decimal(9,2), so the
    partition record refers to that Avro type by name the second time (as Java writes it),
    here for the truncated one."""
    sql(f"CREATE TABLE {t.ident} (id bigint, c decimal(9,2), c2 decimal(9,2), "
        "big decimal(38,2), s string, b binary, flag boolean, d date, ts timestamp_ntz, "
        "v double, f float) USING iceberg "
        "PARTITIONED BY (c2, truncate(10, c), big, s, b, flag, d, ts, v, f) "
        "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read')")
    sql(f"INSERT INTO {t.ident} VALUES "
        "(1, -1.25, 3.50, 123456789012345678901234567890123456.78, 'a\U0001f600', X'01FF', "
        "true, DATE '2024-01-01', TIMESTAMP_NTZ '2024-01-01 10:00:00', 1.5, float(2.5)),"
        "(2, 3.50, -0.01, -99999999999999999999999999999999999.99, '\u4e2d', X'', false, "
        "DATE '1969-12-31', TIMESTAMP_NTZ '1969-12-31 23:59:59.999999', double('NaN'), "
        "float('NaN')),"
        "(3, 0.00, 0.00, 0.00, '', NULL, NULL, NULL, NULL, -0.0, float(-1)),"
        "(4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)")
    sql(f"INSERT INTO {t.ident} VALUES "
        "(5, -0.01, -5.00, 1.00, '\U0001d11e', X'00', true, DATE '2000-02-29', "
        "TIMESTAMP_NTZ '2000-02-29 12:00:00', double('-Infinity'), float(0)),"
        "(6, 99.99, -5.00, 123456789012345678901234567890123456.77, 'a', X'01', false, "
        "DATE '2000-03-01', TIMESTAMP_NTZ '2000-03-01 00:00:00', 7.25, float(3))")
    sql(f"DELETE FROM {t.ident} WHERE id = 5")


BUILDERS = {"all": _build_all, "time": _build_time, "mor": _build_mor, "v1": _build_v1,
            "v3": _build_v3, "types": _build_types}

# columns and literal pools for random filters, per table (Python values as icectl binds them)
D = dt.date
POOLS: dict[str, dict[str, list]] = {
    "all": {
        "id": [0, 1, 2, 3, 4, 10, 12, 100, 115, 129, 200],
        "name": ["apple", "apr", "ap", "b", "banana", "cherry", "name1", "name115", "zzz", ""],
        "ts": ["2024-03-01T00:00:00", "2024-03-01T01:00:00", "2024-03-02T00:00:00",
               "1969-12-31T23:00:00", "1970-01-01T00:00:00", "2024-03-05T00:01:40"],
        "d": [D(2024, 3, 1), D(2023, 12, 31), D(1969, 12, 31), D(2024, 3, 5), D(2024, 4, 10)],
        "amt": [Decimal("1.50"), Decimal("10.00"), Decimal("-3.00"), Decimal("100.00")],
        "v": [0.5, -1.0, 0.0, 8.5, 40.0],
        "n": [0, 10, 45, -5, 110],
        "cat": ["a", "b", "c", "z", "q"],
    },
    "time": {
        "id": [1, 3, 6],
        "ts": ["2024-03-01T01:00:00", "2024-03-01T01:59:59", "2024-03-01T02:00:00",
               "1969-12-31T23:59:00", "1970-01-01T00:00:00", "2025-01-01T00:00:00"],
        "d": [D(2024, 3, 1), D(2020, 1, 1), D(1969, 6, 1), D(1970, 1, 1), D(2025, 1, 1)],
        "n": [5, 9, 10, 15, -3, -10, 99],
        "v": [1.5, 0.0, -2.5, 100.0],
    },
    "mor": {
        "id": [0, 3, 5, 20, 30, 39, 100, 200, 201],
        "ts": ["2024-05-01T00:00:00", "2024-05-02T00:00:00", "2024-05-03T00:00:00",
               "2024-06-01T00:00:00"],
        "cat": ["c0", "c1", "c2", "x", "zz", "c"],
        "n": [1, 2, 1001, 20],
        "note": ["new spec", "a"],
    },
    "v1": {
        "id": [1, 2, 3, 4, 5],
        "ts": ["2024-03-01T00:00:00", "2024-03-02T01:00:00", "2024-03-09T05:00:00"],
        "cat": ["a", "b", "c"],
        "amount": [10, 40, 50],
        "extra": ["x"],
    },
    "types": {
        "id": [1, 3, 5, 6],
        "c": [Decimal("-1.25"), Decimal("0.00"), Decimal("-0.01"), Decimal("3.50"),
              Decimal("90.00")],
        "c2": [Decimal("-0.01"), Decimal("0.00"), Decimal("-5.00"), Decimal("3.50")],
        "big": [Decimal("123456789012345678901234567890123456.78"),
                Decimal("123456789012345678901234567890123456.77"),
                Decimal("-99999999999999999999999999999999999.99"), Decimal("0.00")],
        "s": ["a\U0001f600", "\u4e2d", "", "a", "\U0001d11e", "b"],
        "flag": [True, False],
        "d": [D(2024, 1, 1), D(1969, 12, 31), D(2000, 2, 29), D(1970, 1, 1)],
        "ts": ["2024-01-01T10:00:00", "1969-12-31T23:59:59.999999", "2000-03-01T00:00:00"],
        "v": [1.5, -0.0, 0.0, 7.25, -1e300],
        "f": [2.5, -1.0, 0.0, 3.0],
    },
    "v3": {
        "id": [0, 2, 4, 7, 19, 50, 51],
        "cat": ["even", "odd", "e", "o"],
        "v": [0.0, -1.0, 1.0, 4.75],
    },
}


@dataclass(frozen=True)
class Built:
    label: str
    table: IceTable

    @property
    def location(self) -> str:
        return str(self.table.location)


@pytest.fixture(scope="module")
def tables(sql: Any, spark: Any, warehouse: Any) -> dict[str, Built]:
    namespace = f"plan_interop_{next(_ns)}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{namespace}")
    out = {}
    for label, build in BUILDERS.items():
        t = IceTable(CATALOG, namespace, f"t_{label}", warehouse)
        build(sql, t)
        out[label] = Built(label, t)
    return out


# -- filters: text for icectl, the bound result converted for Java ---------------------------------


def _text_value(v: Any, column: str, label: str) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float, Decimal)):
        return repr(v) if isinstance(v, float) else str(v)
    if isinstance(v, dt.date):
        return f"date '{v.isoformat()}'"
    if column == "ts":
        return f"'{v}'"
    return "'" + str(v).replace("'", "''") + "'"


def _pred_text(op: str, col: str, vals: list, label: str) -> str:
    q = lambda v: _text_value(v, col, label)  # noqa: E731
    if op in ("is null", "is not null", "is nan", "is not nan"):
        return f"{col} {op}"
    if op in ("in", "not in"):
        return f"{col} {op} ({', '.join(q(v) for v in vals)})"
    if op == "like":
        return f"{col} like '{vals[0]}%'"
    if op == "not like":
        return f"{col} not like '{vals[0]}%'"
    if op == "between":
        return f"{col} between {q(vals[0])} and {q(vals[1])}"
    return f"{col} {op} {q(vals[0])}"


def predicate_strategy(label: str) -> st.SearchStrategy[str]:
    pool = POOLS[label]

    @st.composite
    def pred(draw: Any) -> str:
        col = draw(st.sampled_from(sorted(pool)))
        values = pool[col]
        ops = ["=", "!=", "<", "<=", ">", ">=", "in", "not in", "is null", "is not null",
               "between"]
        if isinstance(values[0], str) and col != "ts":
            ops += ["like", "not like"]
        if isinstance(values[0], float):
            ops += ["is nan", "is not nan"]
        op = draw(st.sampled_from(ops))
        k = 2 if op in ("in", "not in", "between") else 1
        vals = [draw(st.sampled_from(values)) for _ in range(k + (1 if op in ("in", "not in") else 0))]
        if op == "between":
            vals = sorted(vals[:2], key=lambda v: (str(type(v)), v))
        if op in ("like", "not like"):
            vals = [vals[0][:2] or "a"]
        return _pred_text(op, col, vals, label)

    return pred()


def filter_strategy(label: str) -> st.SearchStrategy[str]:
    leaf = predicate_strategy(label)
    return st.recursive(
        leaf,
        lambda sub: st.one_of(
            st.tuples(sub, sub).map(lambda ab: f"({ab[0]}) and ({ab[1]})"),
            st.tuples(sub, sub).map(lambda ab: f"({ab[0]}) or ({ab[1]})"),
            sub.map(lambda a: f"not ({a})"),
        ),
        max_leaves=3,
    )


JAVA_METHOD = {
    Op.LT: "lessThan", Op.LT_EQ: "lessThanOrEqual", Op.GT: "greaterThan",
    Op.GT_EQ: "greaterThanOrEqual", Op.EQ: "equal", Op.NOT_EQ: "notEqual", Op.IN: "in",
    Op.NOT_IN: "notIn", Op.STARTS_WITH: "startsWith", Op.NOT_STARTS_WITH: "notStartsWith",
    Op.IS_NULL: "isNull", Op.NOT_NULL: "notNull", Op.IS_NAN: "isNaN", Op.NOT_NAN: "notNaN",
}


def _java_value(jvm: Any, t: Any, v: Any) -> Any:
    if t == LONG:
        return jvm.java.lang.Long.valueOf(str(v))
    if t == INT:
        return jvm.java.lang.Integer.valueOf(str(v))
    if t == DATE:
        return (dt.date(1970, 1, 1) + dt.timedelta(days=v)).isoformat()
    if t in (TIMESTAMPTZ, TIMESTAMP):
        s = (dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=v)).isoformat()
        return s + "+00:00" if t == TIMESTAMPTZ else s
    if isinstance(t, DecimalType):
        return jvm.java.math.BigDecimal(str(v))
    if t in (DOUBLE, FLOAT):
        return jvm.java.lang.Double.valueOf(repr(float(v)))
    if t in (STRING, BOOLEAN):
        return v
    raise AssertionError(f"no Java literal for {t}")


def to_java(jvm: Any, e: Expression) -> Any:
    ex = jvm.org.apache.iceberg.expressions.Expressions
    if isinstance(e, AlwaysTrue):
        return ex.alwaysTrue()
    if isinstance(e, AlwaysFalse):
        return ex.alwaysFalse()
    if isinstance(e, And):
        return getattr(ex, "and")(to_java(jvm, e.left), to_java(jvm, e.right))
    if isinstance(e, Or):
        return getattr(ex, "or")(to_java(jvm, e.left), to_java(jvm, e.right))
    if isinstance(e, Not):
        return getattr(ex, "not")(to_java(jvm, e.child))
    assert isinstance(e, BoundPredicate)
    method = getattr(ex, JAVA_METHOD[e.op])
    if e.op in (Op.IS_NULL, Op.NOT_NULL, Op.IS_NAN, Op.NOT_NAN):
        return method(e.name)
    if e.op in (Op.IN, Op.NOT_IN):
        lst = jvm.java.util.ArrayList()
        for v in e.literals:
            lst.add(_java_value(jvm, e.type, v))
        return method(e.name, lst)
    return method(e.name, _java_value(jvm, e.type, e.literal))


# -- both sides -----------------------------------------------------------------------------------


def icectl_plan(location: str, text: str | None, **kw: Any):
    clear_cache()
    kw.setdefault("filter_deletes", True)  # the plan `icectl plan` shows: Java's planFiles
    return plan_scan(Table.load(location), text, **kw)


def icectl_files(result: Any) -> dict[str, frozenset]:
    return {f.path: frozenset(d.path for d in f.deletes) for f in result.files}


def _strip(p: str) -> str:
    return p[5:] if p.startswith("file:") else p


def java_files(tasks: list) -> dict[str, frozenset]:
    return {_strip(t.file().location()): frozenset(_strip(d.location()) for d in t.deletes())
            for t in tasks}


def compare(jvm: Any, spark: Any, built: Built, text: str | None, *, java_scan: Any = None,
            **kw: Any) -> None:
    result = icectl_plan(built.location, text, **kw)
    jt = java_table(spark, built.location)
    scan = java_scan(jt) if java_scan is not None else jt.newScan()
    if text is not None and not isinstance(result.filter, AlwaysTrue):
        scan = scan.filter(to_java(jvm, result.filter))
    tasks = java_iter(scan.planFiles())
    ours = icectl_files(result)
    theirs = java_files(tasks)
    assert ours == theirs, f"filter {text!r} on {built.label}"
    # residuals: equivalent to Java's, per file
    struct = jt.schema().asStruct()
    binder = jvm.org.apache.iceberg.expressions.Binder
    ex = jvm.org.apache.iceberg.expressions.Expressions
    by_path = {f.path: f for f in result.files}
    for t in tasks:
        mine = by_path[_strip(t.file().location())].residual
        try:
            java_res = ex.rewriteNot(t.residual())
        except Exception as err:  # noqa: BLE001
            # Iceberg 1.10.2's ResidualEvaluator throws a NullPointerException for
            # "not starts with" on a null partition value; nothing to compare with then
            assert "NullPointerException" in str(err) and "startsWith" in str(err)
            continue
        if not binder.isBound(java_res):
            java_res = binder.bind(struct, java_res, False)
        bound_mine = binder.bind(struct, to_java(jvm, mine), False)
        same = java_res.isEquivalentTo(bound_mine) or \
            java_res.toString() == ex.rewriteNot(bound_mine).toString()
        if not same and _null_or_nan(by_path[_strip(t.file().location())].partition):
            # on purpose: Java's ResidualEvaluator sorts a null partition value first (and NaN
            # last), so it says `true` for `x < 5`, `x != 5`, `not in` ... on a null partition
            # although no row there matches; icectl's residual is sound (README, "Filters");
            # test_null_semantics_interop.py checks the rows icectl reads against Spark's
            continue
        assert same, \
            f"residual of {t.file().location()} for {text!r}: icectl {mine}, Java {t.residual()}"


def _null_or_nan(partition: Any) -> bool:
    return any(v is None or (isinstance(v, float) and v != v) for v in partition)


# -- tests ---------------------------------------------------------------------------------------


FIXED = {
    "all": [None, "id = 1", "name like 'app%'", "ts >= '2024-03-01T00:00:00' and ts < '2024-03-02T00:00:00'",
            "d < date '1970-01-01'", "amt between 1.00 and 2.50", "v is nan", "v > 1.0",
            "cat in ('a', 'c')", "cat is null", "n not in (10, 20)", "not (name like 'b%')",
            "ts < '1970-01-01T00:00:00'", "id > 110 or cat = 'b'", "name >= 'banana'"],
    "time": [None, "ts >= '2024-03-01T01:00:00' and ts < '2024-03-01T02:00:00'",
             "d >= date '2024-01-01'", "n < 10", "n between 10 and 19", "ts < '1970-01-01T00:00:00'",
             "v is not nan", "v < 0"],
    "mor": [None, "id = 30", "id < 10", "cat = 'zz'", "note is null", "ts >= '2024-05-02T00:00:00'"],
    "v1": [None, "cat = 'a'", "id = 4", "amount > 20", "extra is not null"],
    "v3": [None, "cat = 'odd'", "id in (2, 3, 4)", "v is nan", "v > 1.0", "cat is null"],
    "types": [None, "c < 0.00", "c >= 0.00", "c = -1.25", "c2 = -0.01", "c2 < 0",
              "big = 123456789012345678901234567890123456.78",
              "big > 123456789012345678901234567890123456.77", "big < 0",
              "s = 'a\U0001f600'", "s > '\u4e2d'", "s like 'a%'", "flag = true",
              "flag is null", "d < date '1970-01-01'", "ts >= '2000-01-01T00:00:00'",
              "ts < '1970-01-01T00:00:00'", "v is nan", "v < 0", "f is nan", "f > 0"],
}


@pytest.mark.parametrize("label,text", [(lbl, txt) for lbl, txts in FIXED.items() for txt in txts])
def test_fixed_filters_match_java(tables: dict[str, Built], jvm: Any, spark: Any,
                                  label: str, text: str | None) -> None:
    compare(jvm, spark, tables[label], text)


@pytest.mark.parametrize("label", list(BUILDERS))
def test_random_filters_match_java(tables: dict[str, Built], jvm: Any, spark: Any,
                                   label: str) -> None:
    @settings(max_examples=20, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(filter_strategy(label))
    def check(text: str) -> None:
        compare(jvm, spark, tables[label], text)

    check()


def test_deletes_are_attached(tables: dict[str, Built]) -> None:
    """The MoR tables really have deletes to match (so the comparisons above test them)."""
    mor = icectl_plan(tables["mor"].location, None)
    assert any(f.deletes for f in mor.files)
    assert all(d.content_name == "position_deletes" for f in mor.files for d in f.deletes)
    v3 = icectl_plan(tables["v3"].location, None)
    dvs = [d for f in v3.files for d in f.deletes]
    assert dvs and all(d.is_dv for d in dvs)
    assert all(len([d for d in f.deletes if d.is_dv]) <= 1 for f in v3.files)


def test_equality_deletes_pruned_by_the_filter_like_java(jvm: Any, spark: Any, new_table: Any
                                                          ) -> None:
    """Java reads delete manifests with ``filterRows(dataFilter)``: an equality delete file
    whose key-column metrics cannot hold a matching row is attached to no task. icectl writes
    the equality deletes (Spark SQL writes none); the plans must be the same."""
    import pyarrow as pa

    from icectl.ops.delete.equality import delete_equality

    t = new_table("eq")
    spark.sql(f"CREATE TABLE {t.ident} (id bigint, k string, cat string) USING iceberg "
              "PARTITIONED BY (cat) TBLPROPERTIES ('format-version'='2', "
              "'write.delete.mode'='merge-on-read')")
    spark.sql(f"INSERT INTO {t.ident} VALUES (1, 'x', 'a'), (2, 'y', 'a'), (3, 'z', 'b'), "
              "(4, NULL, 'b'), (5, 'm', NULL)")
    delete_equality(Table.load(str(t.location)), ["k", "cat"],
                    pa.table({"k": ["y", "z"], "cat": ["a", "b"]}))
    b = Built("eqdel", t)
    attached = 0
    for text in (None, "k = 'x'", "k in ('y', 'q')", "k > 'w'", "k < 'n'", "id = 1",
                 "cat = 'a' and k = 'x'", "k is null", "k is not null", "k = 'x' or id = 2",
                 "k != 'x'", "k like 'y%'", "not (k = 'y')"):
        compare(jvm, spark, b, text)
        attached += sum(len(f.deletes) for f in icectl_plan(b.location, text).files)
    assert attached  # some plans do carry the equality deletes
    # a table read whole still sees every delete: the rows Spark reads equal icectl's
    spark.sql(f"REFRESH TABLE {t.ident}")
    theirs = sorted(r[0] for r in spark.sql(f"SELECT id FROM {t.ident} WHERE k = 'x' OR k IS NULL "
                                            "OR k > 'w'").collect())
    from icectl.scan.reader import open_scan

    mine = sorted(i for bt in open_scan(Table.load(str(t.location)),
                                        "k = 'x' or k is null or k > 'w'").batches()
                  for i in bt.column("id").to_pylist())
    assert mine == theirs == [1, 4]


def test_time_travel_matches_java(tables: dict[str, Built], jvm: Any, spark: Any) -> None:
    b = tables["mor"]
    jt = java_table(spark, b.location)
    snaps = [s for s in jlist(jt.snapshots())]
    for s in snaps:
        sid = s.snapshotId()
        compare(jvm, spark, b, "id < 40", snapshot_id=sid,
                java_scan=lambda t, sid=sid: t.newScan().useSnapshot(sid))
        compare(jvm, spark, b, None, as_of=s.timestampMillis(),
                java_scan=lambda t, ts=s.timestampMillis(): t.newScan().asOfTime(ts))
    compare(jvm, spark, b, "cat = 'c1'", ref="before_evolution",
            java_scan=lambda t: t.newScan().useRef("before_evolution"))


def test_incremental_append_matches_java(tables: dict[str, Built], jvm: Any, spark: Any) -> None:
    for label in ("all", "mor"):
        b = tables[label]
        jt = java_table(spark, b.location)
        ids = [s.snapshotId() for s in jlist(jt.snapshots())]
        current = jt.currentSnapshot().snapshotId()
        for start in ids[:-1]:
            if not jvm.org.apache.iceberg.util.SnapshotUtil.isAncestorOf(jt, current, start):
                continue
            result = icectl_plan(b.location, None, from_snapshot=start, to_snapshot=current)
            scan = jt.newIncrementalAppendScan().fromSnapshotExclusive(start).toSnapshot(current)
            assert icectl_files(result) == java_files(java_iter(scan.planFiles())), (label, start)


def test_splits_match_java(tables: dict[str, Built], jvm: Any, spark: Any) -> None:
    """Files split at their split offsets or every N bytes, like Java's planTasks."""
    for label in ("all", "mor", "v3"):
        b = tables[label]
        for size in (None, 64):
            jt = java_table(spark, b.location)
            scan = jt.newScan()
            kw: dict[str, Any] = {}
            if size is not None:
                scan = scan.option("read.split.target-size", str(size))
                kw["split_size"] = size
            java_splits = sorted((_strip(t.file().location()), t.start(), t.length())
                                 for c in java_iter(scan.planTasks()) for t in c.tasks())
            result = icectl_plan(b.location, None, **kw)
            ours = sorted((s[0].path, s[1], s[2]) for task in result.tasks() for s in task.splits)
            assert ours == java_splits, (label, size)


def test_single_manifest_tasks_match_java(tables: dict[str, Built], jvm: Any, spark: Any) -> None:
    """With one data manifest the file order is fixed, so whole tasks can be compared."""
    b = tables["time"]
    jt = java_table(spark, b.location)
    snap = [s for s in jlist(jt.snapshots())][0]  # the first append: one manifest
    for size, cost in ((64, 16), (5000, 100), (128 * 1024 * 1024, 4 * 1024 * 1024)):
        scan = jt.newScan().useSnapshot(snap.snapshotId()) \
            .option("read.split.target-size", str(size)).option("read.split.open-file-cost", str(cost))
        java_tasks = [[(_strip(t.file().location()), t.start(), t.length()) for t in c.tasks()]
                      for c in java_iter(scan.planTasks())]
        result = icectl_plan(b.location, None, snapshot_id=snap.snapshotId(), split_size=size,
                             open_file_cost=cost)
        ours = [[(f.path, s, n) for f, s, n in task.splits] for task in result.tasks()]
        assert ours == java_tasks, (size, cost)


def test_bin_packing_matches_java(jvm: Any, spark: Any) -> None:
    """The packing itself against Java's BinPacking with weights as the items."""
    rng = random.Random(7)
    packer_cls = jvm.org.apache.iceberg.util.BinPacking.ListPacker
    identity = jvm.java.util.function.Function.identity()
    for case in range(60):
        n = rng.randint(0, 40)
        weights = [rng.randint(1, 120) for _ in range(n)]
        target = rng.choice([50, 100, 150, 400])
        lookback = rng.randint(1, 6)
        largest = rng.random() < 0.8
        arr = spark.sparkContext._gateway.new_array(jvm.long, n)
        for i, w in enumerate(weights):
            arr[i] = w
        items = jvm.org.apache.iceberg.relocated.com.google.common.primitives.Longs.asList(arr)
        java_bins = [[int(x) for x in b] for b in packer_cls(target, lookback, largest).pack(items, identity)]
        ours = list(pack(weights, lambda w: w, target, lookback, largest))
        assert ours == java_bins, (case, weights, target, lookback, largest)


@pytest.mark.parametrize("label", ["all", "time", "mor", "v1"])
def test_pyiceberg_agrees(tables: dict[str, Built], label: str) -> None:
    from pyiceberg.expressions import parser as py_parser  # noqa: F401 - import check
    from pyiceberg.table import StaticTable

    b = tables[label]
    ice = Table.load(b.location)
    py_table = StaticTable.from_metadata(ice.metadata_location)
    for text in FIXED[label]:
        if text is not None and ("nan" in text or "like" in text or "not (" in text):
            continue  # keep to filters pyiceberg's string parser reads the same way
        result = icectl_plan(b.location, text)
        row_filter = text.replace("T", " ") if text else "True"
        got = {_strip(t.file.file_path): frozenset(_strip(d.file_path) for d in t.delete_files)
               for t in py_table.scan(row_filter=_py_filter(result.filter)).plan_files()}
        assert icectl_files(result) == got, (label, text, row_filter)


def _py_filter(e: Expression) -> Any:
    from pyiceberg import expressions as pe

    if isinstance(e, AlwaysTrue):
        return pe.AlwaysTrue()
    if isinstance(e, AlwaysFalse):
        return pe.AlwaysFalse()
    if isinstance(e, And):
        return pe.And(_py_filter(e.left), _py_filter(e.right))
    if isinstance(e, Or):
        return pe.Or(_py_filter(e.left), _py_filter(e.right))
    assert isinstance(e, BoundPredicate)

    def val(v: Any) -> Any:
        if e.type == DATE:
            return (dt.date(1970, 1, 1) + dt.timedelta(days=v)).isoformat()
        if e.type in (TIMESTAMPTZ, TIMESTAMP):
            s = (dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=v)).isoformat()
            return s + "+00:00" if e.type == TIMESTAMPTZ else s
        return v

    unary = {Op.IS_NULL: pe.IsNull, Op.NOT_NULL: pe.NotNull, Op.IS_NAN: pe.IsNaN,
             Op.NOT_NAN: pe.NotNaN}
    if e.op in unary:
        return unary[e.op](e.name)
    if e.op in (Op.IN, Op.NOT_IN):
        cls = pe.In if e.op == Op.IN else pe.NotIn
        return cls(e.name, {val(v) for v in e.literals})
    cls = {Op.LT: pe.LessThan, Op.LT_EQ: pe.LessThanOrEqual, Op.GT: pe.GreaterThan,
           Op.GT_EQ: pe.GreaterThanOrEqual, Op.EQ: pe.EqualTo, Op.NOT_EQ: pe.NotEqualTo,
           Op.STARTS_WITH: pe.StartsWith, Op.NOT_STARTS_WITH: pe.NotStartsWith}[e.op]
    return cls(e.name, val(e.literal))


def test_cached_plans_equal_uncached_plans(tables: dict[str, Built], tmp_path: Any,
                                           monkeypatch: Any) -> None:
    """The persistent manifest cache changes no plan: every fixed filter on every table, planned
    without the cache, with it cold and with it warm (decoding nothing), gives the same files,
    deletes, residuals, tasks and explanations."""
    import json

    from icectl.ops.read.plan import PlanReport
    from icectl.io.manifest import cache as manifest_cache
    from icectl.io.manifest import columns as manifest_columns

    monkeypatch.setenv("ICECTL_CACHE_DIR", str(tmp_path / "cache"))
    decoded = []
    real = manifest_columns.decode_manifest
    monkeypatch.setattr(manifest_columns, "decode_manifest",
                        lambda data, **kw: decoded.append(1) or real(data, **kw))

    def view(location: str, text: str | None) -> str:
        t = Table.load(location)
        r = icectl_plan(location, text, explain=True)
        return json.dumps(PlanReport(t.metadata, r, with_tasks=True, with_explain=True).to_json(),
                          sort_keys=True, default=str)

    for label, texts in FIXED.items():
        loc = tables[label].location
        for text in texts:
            manifest_cache.set_enabled(False)
            try:
                plain = view(loc, text)
            finally:
                manifest_cache.set_enabled(True)
            cold = view(loc, text)
            decoded.clear()
            warm = view(loc, text)
            assert not decoded, (label, text)
            assert plain == cold == warm, (label, text)


_PARALLEL_SCRIPT = r"""
import json, sys
from icectl.cli.output import json_default
from icectl.io.manifest import cache as manifest_cache
from icectl.io.manifest.columns import clear_cache
from icectl.ops.read.plan import plan_table
from icectl.scan import parallel
from icectl.table.table import Table

manifest_cache.set_enabled(False)
parallel.PARALLEL_MIN_MISSES = 1  # these tables have few manifests: use the pool for any miss
pooled = []
real = parallel._parallel
parallel._parallel = lambda *a: pooled.append(1) or real(*a)
out = []
for location, texts in json.loads(sys.argv[1]):
    for text in texts:
        docs = []
        for workers in (1, 2):
            clear_cache()
            for tasks in (False, True):
                r = plan_table(Table.load(location), text, tasks=tasks, explain=True,
                               workers=workers)
                fast = "".join(r.json_chunks(json_default))
                plain = json.dumps(r.to_json(), indent=2, ensure_ascii=False,
                                   default=json_default)
                docs.append((fast == plain, plain))
        out.append([location, text, docs])
print(json.dumps({"pooled": len(pooled), "plans": out}))
"""


def test_parallel_plans_equal_serial_plans(tables: dict[str, Built], tmp_path: Any) -> None:
    """Manifests decoded in worker processes give the same plan as decoded in the planning
    process, on every table and fixed filter; and the column-wise --json rendering is byte for
    byte json.dumps of the plan document. Run in a fresh process: the pool forks, which is
    only done from a process without threads (this one runs a JVM gateway)."""
    import json
    import subprocess
    import sys

    work = [(tables[label].location, texts) for label, texts in FIXED.items()]
    r = subprocess.run([sys.executable, "-c", _PARALLEL_SCRIPT, json.dumps(work)],
                       capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout)
    assert got["pooled"] >= len([t for _, ts in work for t in ts])
    for location, text, docs in got["plans"]:
        assert all(same for same, _ in docs), (location, text)
        serial_files, serial_tasks, par_files, par_tasks = (d for _, d in docs)
        assert par_files == serial_files and par_tasks == serial_tasks, (location, text)
