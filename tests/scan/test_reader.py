"""icectl.scan.reader: rows through position deletes, deletion vectors, equality deletes, the
residual filter and schema evolution (files built with pyarrow, committed through the producer)."""

from __future__ import annotations

import datetime
import struct
from decimal import Decimal
import zlib

import pyarrow as pa
import pytest

from icectl.errors import CorruptMetadata, NotFound
from icectl.io.manifest.columns import clear_cache
from icectl.io.formats.puffin import parse_deletion_vector, parse_roaring64
from icectl.ops.metadata.schema import evolve_schema
from icectl.scan.reader import open_scan
from icectl.table.table import Table

from support.tables import empty_table
from support.files import (
    commit,
    data_file,
    dv_blob,
    dv_file,
    eq_delete_file,
    field,
    pos_delete_file,
    roaring64,
    write_parquet,
)

ID = lambda: field("id", pa.int64(), 1)  # noqa: E731
NAME = lambda: field("name", pa.string(), 2)  # noqa: E731


def rows(t: Table, text: str | None = None, **kw):
    clear_cache()
    s = open_scan(Table.load(t.location), text, **kw)
    return [r for b in s.batches() for r in b.to_pylist()]


def base(tmp_path, fv=2, n=10, schema="id long, name string"):
    t = empty_table(tmp_path / "t", schema, format_version=fv)
    p = write_parquet(tmp_path / "t/data/a.parquet",
                      {"id": list(range(n)), "name": [f"n{i}" for i in range(n)]},
                      [ID(), NAME()], row_group_size=4)
    commit(t, [data_file(p, n)])
    return Table.load(t.location), p


def test_position_deletes_only_their_file_and_across_batches(tmp_path):
    t, p = base(tmp_path)
    q = write_parquet(tmp_path / "t/data/b.parquet", {"id": [100, 101], "name": ["x", "y"]},
                      [ID(), NAME()])
    commit(t, [data_file(q, 2)])
    t = Table.load(t.location)
    d = pos_delete_file(tmp_path / "t/data/del.parquet", [(p, 0), (p, 5), (p, 9), (q + "x", 1)])
    commit(t, deletes=[d], op="delete")
    got = rows(t, batch_rows=3)
    assert sorted(r["id"] for r in got) == [1, 2, 3, 4, 6, 7, 8, 100, 101]
    s = open_scan(Table.load(t.location))
    assert s.needs_reading_to_count and s.count() == 9


def test_count_from_metadata_without_deletes(tmp_path):
    t, _ = base(tmp_path)
    s = open_scan(t)
    assert not s.needs_reading_to_count and s.count() == 10
    assert open_scan(t, "id >= 7").count() == 3


@pytest.mark.parametrize("positions", [[0, 3, 9], list(range(0, 70000, 7)),
                                       [1, 2, 3, (1 << 32) + 5]])
def test_roaring_round_trip(positions):
    assert parse_roaring64(roaring64(positions)) == sorted(set(positions))


def test_roaring_runs_and_bitmap_containers():
    run = list(range(10, 5000))
    assert parse_roaring64(roaring64(run, runs=True)) == run
    dense = list(range(0, 65536, 2))  # 32768 values: a bitmap container
    assert parse_roaring64(roaring64(dense)) == dense
    many = [k << 16 | 1 for k in range(6)]  # >= 4 run containers carry offsets
    assert parse_roaring64(roaring64(many, runs=True)) == many


def test_deletion_vector_checks():
    good = dv_blob([1, 2, 3])
    assert parse_deletion_vector(good) == [1, 2, 3]
    bad_crc = good[:-1] + bytes([good[-1] ^ 1])
    with pytest.raises(CorruptMetadata, match="CRC"):
        parse_deletion_vector(bad_crc)
    bad_magic = good[:4] + b"\0" + good[5:]
    with pytest.raises(CorruptMetadata):
        parse_deletion_vector(bad_magic)
    with pytest.raises(CorruptMetadata, match="length"):
        parse_deletion_vector(struct.pack(">I", 99) + good[4:])
    body = b"\xd1\xd3\x39\x64" + roaring64([1])[:-1]
    truncated = struct.pack(">I", len(body)) + body + struct.pack(">I", zlib.crc32(body))
    with pytest.raises(CorruptMetadata):
        parse_deletion_vector(truncated)


def test_deletion_vector_v3_and_row_lineage(tmp_path):
    t, p = base(tmp_path, fv=3)
    d = dv_file(tmp_path / "t/data/dv.puffin", p, [2, 4, 6])
    commit(t, deletes=[d], op="delete")
    got = rows(t, with_metadata=True)
    assert [r["id"] for r in got] == [0, 1, 3, 5, 7, 8, 9]
    assert [r["_pos"] for r in got] == [0, 1, 3, 5, 7, 8, 9]
    t = Table.load(t.location)
    first = open_scan(t).files[0].first_row_id
    assert first is not None
    assert [r["_row_id"] for r in got] == [first + r["_pos"] for r in got]
    seq = open_scan(t).files[0].data_sequence_number
    assert {r["_last_updated_sequence_number"] for r in got} == {seq}


def test_corrupt_deletion_vector_is_corrupt_metadata(tmp_path):
    t, p = base(tmp_path, fv=3)
    d = dv_file(tmp_path / "t/data/dv.puffin", p, [2])
    raw = bytearray((tmp_path / "t/data/dv.puffin").read_bytes())
    raw[10] ^= 0xFF
    (tmp_path / "t/data/dv.puffin").write_bytes(bytes(raw))
    commit(t, deletes=[d], op="delete")
    with pytest.raises(CorruptMetadata):
        rows(t)


def test_equality_deletes_multi_column_nulls_and_sequence_numbers(tmp_path):
    t = empty_table(tmp_path / "t", "id long, region string", format_version=2)
    fields = [field("id", pa.int64(), 1), field("region", pa.string(), 2)]
    p = write_parquet(tmp_path / "t/data/a.parquet",
                      {"id": [1, 1, 2, 3, None], "region": ["eu", "us", None, "eu", "eu"]}, fields)
    commit(t, [data_file(p, 5)])
    t = Table.load(t.location)
    d = eq_delete_file(tmp_path / "t/data/eq.parquet", (1, 2),
                       {"id": [1, 2, None], "region": ["eu", None, "eu"]}, fields)
    q = write_parquet(tmp_path / "t/data/b.parquet", {"id": [1], "region": ["eu"]}, fields)
    commit(t, [data_file(q, 1)], [d], op="overwrite")
    got = sorted((r["id"] or -1, r["region"] or "") for r in rows(t))
    # (1, eu) of the older file, (2, null) and (null, eu) are deleted; the (1, eu) added in
    # the same snapshot as the delete survives (equality deletes apply to older sequence numbers)
    assert got == [(1, "eu"), (1, "us"), (3, "eu")]


def test_equality_delete_on_a_dropped_column(tmp_path):
    t = empty_table(tmp_path / "t", "id long, region string", format_version=2)
    fields = [field("id", pa.int64(), 1), field("region", pa.string(), 2)]
    p = write_parquet(tmp_path / "t/data/a.parquet",
                      {"id": [1, 2, 3], "region": ["eu", "us", "eu"]}, fields)
    commit(t, [data_file(p, 3)])
    t = Table.load(t.location)
    d = eq_delete_file(tmp_path / "t/data/eq.parquet", (2,), {"region": ["eu"]}, [fields[1]])
    commit(t, deletes=[d], op="delete")
    evolve_schema(Table.load(t.location), lambda u: u.drop_column("region"))
    got = rows(t)
    assert got == [{"id": 2}]


def test_schema_evolution_by_field_id(tmp_path):
    t = empty_table(tmp_path / "t", "id int, name string, score float", format_version=3)
    fields = [field("id", pa.int32(), 1), field("name", pa.string(), 2),
              field("score", pa.float32(), 3)]
    p = write_parquet(tmp_path / "t/data/a.parquet",
                      {"id": [1, 2], "name": ["a", "b"], "score": [0.5, 1.5]}, fields)
    commit(t, [data_file(p, 2)])

    from icectl.spec.types import LONG, DOUBLE
    evolve_schema(Table.load(t.location), lambda u: (u.rename_column("name", "label"),
                                                     u.update_column("id", LONG),
                                                     u.update_column("score", DOUBLE)))
    from icectl.ops.metadata.schema import add_column
    from icectl.spec.types import STRING
    evolve_schema(Table.load(t.location), lambda u: add_column(u, "note", STRING, default="n/a"))
    evolve_schema(Table.load(t.location), lambda u: add_column(u, "extra", LONG))
    got = rows(t)
    assert got == [{"id": 1, "label": "a", "score": 0.5, "note": "n/a", "extra": None},
                   {"id": 2, "label": "b", "score": 1.5, "note": "n/a", "extra": None}]
    s = open_scan(Table.load(t.location))
    assert s.arrow_schema().field("id").type == pa.int64()
    assert rows(t, "label = 'b'", columns=["label"]) == [{"label": "b"}]


def test_files_without_field_ids_use_the_name_mapping(tmp_path):
    t = empty_table(tmp_path / "t", "id long, name string", format_version=2)
    p = write_parquet(tmp_path / "t/data/a.parquet", {"id": [1, 2], "nm": ["a", "b"]})
    import json

    mapping = json.dumps([{"field-id": 1, "names": ["id"]}, {"field-id": 2, "names": ["name", "nm"]}])
    _set_property(t, "schema.name-mapping.default", mapping)
    commit(Table.load(t.location), [data_file(p, 2)])
    assert rows(t) == [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]


def _set_property(t, key, value):
    from icectl.ops.metadata.properties import set_properties

    set_properties(Table.load(t.location), {key: value})


def test_residual_filter_limit_and_bad_columns(tmp_path):
    t, _ = base(tmp_path)
    assert [r["id"] for r in rows(t, "id > 3 and name != 'n5'")] == [4, 6, 7, 8, 9]
    s = open_scan(t, "id >= 2")
    assert sum(b.num_rows for b in s.batches(limit=5)) == 5
    with pytest.raises(NotFound):  # unknown columns
        open_scan(t, columns=["nope"])
    with pytest.raises(NotFound):
        open_scan(t, "nope = 1")


def test_unreadable_data_file_is_a_one_line_error_naming_it(tmp_path):
    from icectl.errors import IcectlError

    t, p = base(tmp_path)
    with open(p, "r+b") as fh:
        fh.seek(8)
        fh.write(b"\0" * 64)
    with pytest.raises(IcectlError, match="a.parquet"):
        rows(t)


ONE_KEY_CASES = {
    # schema type, data file Arrow type, data values, delete-file Arrow type, delete keys
    "int-promoted": ("long", pa.int32(), [1, 2, None, 4], pa.int64(), [2, None]),
    "string": ("string", pa.string(), ["a", "é", None, ""], pa.string(), ["é", ""]),
    "decimal": ("decimal(9,2)", pa.decimal128(9, 2), [Decimal("1.25"), Decimal("-1.00"), None, Decimal("0.00")],
                pa.decimal128(9, 2), [Decimal("-1.00"), Decimal("0.00")]),
    "date": ("date", pa.date32(), [0, 19000, None, -5], pa.date32(), [19000, None]),
    "timestamp": ("timestamp", pa.timestamp("us"), [0, 5, None, -7], pa.timestamp("us"), [-7]),
    "boolean": ("boolean", pa.bool_(), [True, False, None, True], pa.bool_(), [True]),
    "double (row by row)": ("double", pa.float64(), [0.5, -0.0, None, 2.0], pa.float64(), [0.5, None]),
    "binary (row by row)": ("binary", pa.binary(), [b"a", b"\x00", None, b""], pa.binary(), [b"\x00"]),
}


@pytest.mark.parametrize("case", list(ONE_KEY_CASES), ids=list(ONE_KEY_CASES))
def test_one_column_equality_deletes_on_every_kind_of_key(tmp_path, case):
    """One-column keys are looked up by Arrow where it compares as Python does, row by row
    otherwise; either way a null key deletes null rows, and only the keys given."""
    schema, dtype, values, ktype, keys = ONE_KEY_CASES[case]
    if dtype == pa.date32():
        values = [None if v is None else datetime.date(1970, 1, 1) + datetime.timedelta(days=v) for v in values]
        keys = [None if v is None else datetime.date(1970, 1, 1) + datetime.timedelta(days=v) for v in keys]
    t = empty_table(tmp_path / "t", f"id long, k {schema}", format_version=2)
    p = write_parquet(tmp_path / "t/data/a.parquet", {"id": [0, 1, 2, 3], "k": values},
                      [field("id", pa.int64(), 1), field("k", dtype, 2)])
    commit(t, [data_file(p, 4)])
    d = eq_delete_file(tmp_path / "t/data/eq.parquet", (2,), {"k": keys}, [field("k", ktype, 2)])
    commit(Table.load(t.location), deletes=[d], op="delete")
    gone = {i for i, v in enumerate(values) if v in keys}
    assert sorted(r["id"] for r in rows(t)) == [i for i in range(4) if i not in gone]


def test_float_equality_keys_compare_as_the_reference(tmp_path):
    """Java compares equality-delete keys with Double.compare: a NaN key deletes NaN rows, and
    -0.0 and 0.0 are different keys."""
    t = empty_table(tmp_path / "t", "id long, k double", format_version=2)
    p = write_parquet(tmp_path / "t/data/a.parquet",
                      {"id": [0, 1, 2, 3, 4], "k": [float("nan"), -0.0, 0.0, 1.5, None]},
                      [field("id", pa.int64(), 1), field("k", pa.float64(), 2)])
    commit(t, [data_file(p, 5)])
    d = eq_delete_file(tmp_path / "t/data/eq.parquet", (2,), {"k": [float("nan"), -0.0]},
                       [field("k", pa.float64(), 2)])
    commit(Table.load(t.location), deletes=[d], op="delete")
    assert sorted(r["id"] for r in rows(t)) == [2, 3, 4]
