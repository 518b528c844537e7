"""Row-group skipping (icectl/scan/row_groups.py): a row group is skipped only when no row of it
matches the residual (the row evaluator on the values written decides), and a scan reading with
skipping returns exactly the rows (with ``_pos``) of a scan reading every row group."""

from __future__ import annotations

import datetime
import json
import math
import uuid
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icectl.expr.eval_rows import evaluate_rows
from icectl.expr.expressions import (
    And,
    Not,
    Operation,
    Or,
    make_bound,
    rewrite_not,
)
from icectl.io.manifest.columns import clear_cache
from icectl.io.formats.parquet_write import arrow_field
from icectl.scan.arrow_values import internal_to_arrow
from icectl.scan.reader import open_scan
from icectl.scan.row_groups import row_group_starts, row_groups_to_read
from icectl.spec.schema import Schema
from icectl.spec.types import (
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMP_NS,
    TIMESTAMPTZ,
    UUID,
    DecimalType,
    FixedType,
    NestedField,
)
from icectl.table.table import Table
from support.tables import empty_table
from support.files import (
    commit,
    data_file,
    field,
    pos_delete_file,
    write_parquet,
)

Op = Operation
I32, I64 = (-(2**31), 2**31 - 1), (-(2**63), 2**63 - 1)


def _floats(width: int):
    edges = st.sampled_from([0.0, -0.0, math.nan, math.inf, -math.inf, 1.5, -1.5])
    return st.one_of(edges, st.floats(width=width, allow_nan=True, allow_infinity=True))


def _decimal(precision: int, scale: int):
    top = 10 ** precision - 1
    return st.integers(-top, top).map(lambda u: Decimal(u).scaleb(-scale))


# type, values (internal form), whether ``starts_with`` applies
TYPES = {
    "boolean": (BOOLEAN, st.booleans()),
    "int": (INT, st.one_of(st.sampled_from([*I32, 0, -1]), st.integers(*I32))),
    "long": (LONG, st.one_of(st.sampled_from([*I64, 0, -1]), st.integers(*I64))),
    "float": (FLOAT, _floats(32)),
    "double": (DOUBLE, _floats(64)),
    "dec9": (DecimalType(9, 2), _decimal(9, 2)),
    "dec25": (DecimalType(25, 4), _decimal(25, 4)),
    "date": (DATE, st.integers(-(2**31), 2**31 - 1)),
    "time": (TIME, st.integers(0, 86_400_000_000 - 1)),
    "ts": (TIMESTAMP, st.integers(-(2**60), 2**60)),
    "tstz": (TIMESTAMPTZ, st.integers(-(2**60), 2**60)),
    "tsns": (TIMESTAMP_NS, st.integers(*I64)),
    "string": (STRING, st.text(st.characters(blacklist_categories=("Cs",)), max_size=6)),
    "binary": (BINARY, st.binary(max_size=6)),
    "uuid": (UUID, st.one_of(st.uuids(), st.sampled_from([uuid.UUID(int=0),
                                                          uuid.UUID(int=2**128 - 1),
                                                          uuid.UUID(int=2**127)]))),
    "fixed": (FixedType(3), st.binary(min_size=3, max_size=3)),
}
NAMES = sorted(TYPES)
SCHEMA = Schema(tuple(NestedField(i + 1, name, TYPES[name][0]) for i, name in enumerate(NAMES)))
FIELDS = {f.name: f for f in SCHEMA.fields}


@st.composite
def columns(draw, n):
    """Per column: values with nulls, sometimes sorted (clustered, so row groups differ)."""
    out = {}
    for name in NAMES:
        values = draw(st.lists(st.one_of(st.none(), TYPES[name][1]), min_size=n, max_size=n))
        if draw(st.booleans()):
            present = sorted((v for v in values if v is not None and v == v),
                             key=lambda v: (str(type(v)), v))
            nones = [v for v in values if v is None or v != v]
            values = present + nones if draw(st.booleans()) else nones + present
        out[name] = values
    return out


@st.composite
def predicate(draw, data):
    name = draw(st.sampled_from(NAMES))
    f = FIELDS[name]
    t = f.type
    ops = [Op.IS_NULL, Op.NOT_NULL, Op.LT, Op.LT_EQ, Op.GT, Op.GT_EQ, Op.EQ, Op.NOT_EQ,
           Op.IN, Op.NOT_IN]
    if t in (FLOAT, DOUBLE):
        ops += [Op.IS_NAN, Op.NOT_NAN]
    if t == STRING:
        ops += [Op.STARTS_WITH, Op.NOT_STARTS_WITH]
    op = draw(st.sampled_from(ops))
    if op.is_unary:
        return make_bound(op, f.field_id, name, t)
    present = [v for v in data[name] if v is not None and v == v]
    one = st.one_of(st.sampled_from(present), TYPES[name][1]) if present else TYPES[name][1]
    one = one.filter(lambda v: v == v)  # NaN is no literal
    if op in (Op.STARTS_WITH, Op.NOT_STARTS_WITH):
        v = draw(one)
        return make_bound(op, f.field_id, name, t, [v[:draw(st.integers(0, len(v)))]])
    if op in (Op.IN, Op.NOT_IN):
        return make_bound(op, f.field_id, name, t, draw(st.lists(one, min_size=1, max_size=4)))
    return make_bound(op, f.field_id, name, t, [draw(one)])


@st.composite
def expression(draw, data, depth=2):
    if depth == 0 or draw(st.booleans()):
        return draw(predicate(data))
    kind = draw(st.sampled_from(["and", "or", "not"]))
    left = draw(expression(data, depth - 1))
    if kind == "not":
        return Not(left)
    right = draw(expression(data, depth - 1))
    return And(left, right) if kind == "and" else Or(left, right)


def _write(path: Path, data: dict, row_group_size: int) -> pq.FileMetaData:
    arrays = [internal_to_arrow(data[name], FIELDS[name].type) for name in NAMES]
    table = pa.Table.from_arrays(arrays, schema=pa.schema([arrow_field(f) for f in SCHEMA.fields]))
    pq.write_table(table, str(path), row_group_size=row_group_size)
    return pq.ParquetFile(str(path)).metadata


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                 HealthCheck.data_too_large])
@given(st.data())
def test_a_skipped_row_group_holds_no_matching_row(tmp_path, data):
    n = data.draw(st.integers(1, 24), label="rows")
    values = data.draw(columns(n), label="values")
    expr = rewrite_not(data.draw(expression(values), label="filter"))
    size = data.draw(st.integers(1, 8), label="row group size")
    footer = _write(tmp_path / "f.parquet", values, size)
    chosen = set(row_groups_to_read(footer, expr, SCHEMA))
    starts = row_group_starts(footer) + [n]
    for g in range(footer.num_row_groups):
        if g in chosen:
            continue
        lo, hi = starts[g], starts[g + 1]
        group = {FIELDS[name].field_id: values[name][lo:hi] for name in NAMES}
        assert not any(evaluate_rows(expr, group, hi - lo)), (g, str(expr))


def test_row_groups_are_skipped_and_positions_stay_right(tmp_path):
    """Clustered values: only the row groups whose range holds the literal are read; ``_pos``
    and a position delete still address rows of the whole file."""
    t = empty_table(tmp_path / "t", "id long, name string", format_version=2)
    n = 100
    p = write_parquet(tmp_path / "t/data/a.parquet",
                      {"id": list(range(n)), "name": [f"n{i:03}" for i in range(n)]},
                      [field("id", pa.int64(), 1), field("name", pa.string(), 2)],
                      row_group_size=10)
    commit(t, [data_file(p, n)])
    d = pos_delete_file(tmp_path / "t/data/del.parquet", [(p, 55), (p, 3)])
    commit(Table.load(t.location), deletes=[d], op="delete")
    clear_cache()
    s = open_scan(Table.load(t.location), "id >= 52 and id < 58", with_metadata=True)
    footer = pq.ParquetFile(p).metadata
    assert row_groups_to_read(footer, s.files[0].residual, s.schema) == [5]
    got = [(r["id"], r["_pos"]) for b in s.batches() for r in b.to_pylist()]
    assert got == [(52, 52), (53, 53), (54, 54), (56, 56), (57, 57)]
    s = open_scan(Table.load(t.location), "name starts with 'n09'", columns=["id"])
    assert s.count() == 10
    s = open_scan(Table.load(t.location), "id > 1000")
    assert s.count() == 0 and not row_groups_to_read(footer, s.files[0].residual, s.schema)


def _ms_and_mapping_table(tmp_path):
    """A file written before evolution: id as int (now long), ts in milliseconds, no field ids
    (the name mapping gives them), a renamed column."""
    t = empty_table(tmp_path / "t", "id int, ts timestamp, nm string", format_version=2)
    base = datetime.datetime(1969, 12, 31, 23, 59)
    arrays = {"id": pa.array(list(range(40)), pa.int32()),
              "ts": pa.array([base + datetime.timedelta(milliseconds=7 * i) for i in range(40)],
                             pa.timestamp("ms")),
              "nm": [f"v{i:02}" for i in range(40)]}
    p = write_parquet(tmp_path / "t/data/a.parquet", arrays, row_group_size=8)
    from icectl.ops.metadata.schema import evolve_schema
    from icectl.ops.metadata.properties import set_properties

    mapping = json.dumps([{"field-id": 1, "names": ["id"]}, {"field-id": 2, "names": ["ts"]},
                          {"field-id": 3, "names": ["nm"]}])
    set_properties(t, {"schema.name-mapping.default": mapping})
    commit(Table.load(t.location), [data_file(p, 40)])
    evolve_schema(Table.load(t.location), lambda u: (u.update_column("id", LONG),
                                                     u.rename_column("nm", "label")))
    return Table.load(t.location), p


def test_evolved_name_mapped_millisecond_file_skips_soundly(tmp_path):
    t, p = _ms_and_mapping_table(tmp_path)
    filters = ["id >= 17 and id <= 18", "label = 'v33'", "label starts with 'v1'",
               "ts < timestamp '1969-12-31T23:59:00.070'", "ts >= timestamp '1969-12-31T23:59:00.266'",
               "id in (3, 39)", "not (id < 38)", "label is null", "id is not null"]
    for text in filters:
        clear_cache()
        s = open_scan(Table.load(t.location), text, with_metadata=True)
        assert s.skip_row_groups
        on = sorted((r["id"], r["_pos"]) for b in s.batches() for r in b.to_pylist())
        s.skip_row_groups = False
        off = sorted((r["id"], r["_pos"]) for b in s.batches() for r in b.to_pylist())
        assert on == off and all(i == pos for i, pos in on), text
    footer = pq.ParquetFile(p).metadata
    s = open_scan(t, "id >= 17 and id <= 18")
    assert row_groups_to_read(footer, s.files[0].residual, s.schema,
                              _mapping(t)) == [2]
    s = open_scan(t, "ts < timestamp '1969-12-31T23:59:00.070'")
    assert row_groups_to_read(footer, s.files[0].residual, s.schema, _mapping(t)) == [0, 1]


def _mapping(t):
    from icectl.spec.name_mapping import table_name_mapping

    return table_name_mapping(t.metadata.properties, t.metadata.schema)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                 HealthCheck.data_too_large])
@given(st.data())
def test_scan_with_and_without_skipping_agree(tmp_path_factory, data):
    """Both reading paths through ``open_scan``, every type, with position deletes: the same
    rows at the same positions."""
    tmp = tmp_path_factory.mktemp("agree")
    cols = ", ".join(f"{f.name} {f.type}" for f in SCHEMA.fields)
    t = empty_table(tmp / "t", cols, format_version=3)
    n = data.draw(st.integers(1, 30), label="rows")
    values = data.draw(columns(n), label="values")
    size = data.draw(st.integers(1, 7), label="row group size")
    path = tmp / "t/data/a.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    _write(path, values, size)
    commit(t, [data_file(str(path), n)])
    deleted = data.draw(st.lists(st.integers(0, n - 1), max_size=5), label="deleted")
    if deleted:
        d = pos_delete_file(tmp / "t/data/del.parquet", [(str(path), i) for i in deleted])
        commit(Table.load(t.location), deletes=[d], op="delete")
    expr = data.draw(expression(values), label="filter")
    clear_cache()
    s = open_scan(Table.load(t.location), filter_expr=expr, with_metadata=True,
                  batch_rows=data.draw(st.integers(1, 9), label="batch rows"))
    on = _rows(s)
    s.skip_row_groups = False
    assert on == _rows(s)
    assert not {pos for pos, _ in on} & set(deleted)


def _plain(col):
    """Temporal columns as their integers (Python's datetime cannot hold every value)."""
    if isinstance(col.type, pa.ExtensionType):
        col = col.storage
    if pa.types.is_temporal(col.type):
        width = pa.int32() if pa.types.is_date32(col.type) or pa.types.is_time32(col.type) else pa.int64()
        return col.cast(width)
    return col


def _rows(s):
    out = []
    for b in s.batches():
        cols = {name: _plain(b.column(name)).to_pylist() for name in b.schema.names}
        for i in range(b.num_rows):
            row = {k: v[i] for k, v in cols.items()}
            out.append((row["_pos"], json.dumps(row, default=repr, sort_keys=True)))
    return out


def test_a_struct_field_filter_skips_by_the_leaf_statistics(tmp_path):
    t = empty_table(tmp_path / "t", "id long, info struct<a: long, b: string>", format_version=2)
    info = pa.struct([field("a", pa.int64(), 3), field("b", pa.string(), 4)])
    rows_ = [None if i % 7 == 0 else {"a": i, "b": f"b{i:02}"} for i in range(30)]
    p = write_parquet(tmp_path / "t/data/a.parquet",
                      {"id": pa.array(range(30), pa.int64()), "info": pa.array(rows_, info)},
                      [field("id", pa.int64(), 1), field("info", info, 2)], row_group_size=5)
    commit(t, [data_file(p, 30)])
    footer = pq.ParquetFile(p).metadata
    for text, groups in [("info.a >= 11 and info.a <= 12", [2]), ("info.b = 'b27'", [5]),
                         ("info.a is null", [0, 1, 2, 4, 5])]:
        clear_cache()
        s = open_scan(Table.load(t.location), text, with_metadata=True)
        assert row_groups_to_read(footer, s.files[0].residual, s.schema) == groups, text
        on = [(r["id"], r["_pos"]) for b in s.batches() for r in b.to_pylist()]
        s.skip_row_groups = False
        assert on == [(r["id"], r["_pos"]) for b in s.batches() for r in b.to_pylist()], text
