"""Z-order against the reference: icectl's byte forms and interleaving equal Iceberg Java's
``ZOrderByteUtils`` (called through the Spark session's JVM) on the same values, the row order
of Spark's z-order rewrite is icectl's z-order, and Spark reads icectl's z-ordered tables.
"""

from __future__ import annotations

import datetime as dt
import random
import struct
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cli_support import run_icectl
from spark_support import IceTable, sql_rows

from icectl.ops.compute.zorder import zorder_bytes
from icectl.spec import zorder as Z
from icectl.table.table import Table

LONGS = [0, 1, -1, 5, -5, 2**31 - 1, -2**31, 2**63 - 1, -2**63, 1 << 40, -(1 << 40) - 3]
DOUBLES = [0.0, -0.0, 1.0, -1.0, 1.5, -2.75, float("nan"), float("inf"), float("-inf"), 5e-324,
           -5e-324, 1e300, -1e300, 2.2250738585072014e-308, 123456.789]
STRINGS = ["", "a", "abcdefgh", "abcdefghijk", "abcdefg\u00e9", "abcdef\u20ac", "abcde\U0001F600",
           "\u00e9\u00e9\u00e9\u00e9\u00e9", "zz", "\U0001F600\U0001F600\U0001F600"]
BINARIES = [b"", b"\x00", b"\xff" * 3, b"0123456789abcdef", b"\x80\x01"]


def _java(jvm: Any) -> Any:
    return jvm.org.apache.iceberg.util.ZOrderByteUtils


def _buf(jvm: Any, n: int) -> Any:
    return jvm.java.nio.ByteBuffer.allocate(n)


def test_primitive_forms_equal_java(jvm: Any) -> None:
    J = _java(jvm)
    for v in LONGS:
        assert Z.ordered_bytes("long", v) == bytes(J.longToOrderedBytes(v, _buf(jvm, 8)).array()), v
        if -2**31 <= v < 2**31:
            assert Z.ordered_bytes("long", v) == bytes(J.intToOrderedBytes(v, _buf(jvm, 8)).array()), v
    for v in DOUBLES:
        assert Z.ordered_bytes("float", v) == bytes(J.doubleToOrderedBytes(v, _buf(jvm, 8)).array()), v
    for text in ["0", "-0", "1.1", "-3.4028235E38", "1.4E-45", "NaN", "-Infinity", "7.25"]:
        f32 = struct.unpack("f", struct.pack("f", float(text)))[0]  # exact as a Java float
        assert Z.ordered_bytes("float", f32) == bytes(J.floatToOrderedBytes(f32, _buf(jvm, 8)).array()), text


@pytest.mark.parametrize("length", [1, 2, 3, 4, 7, 8, 9, 16])
def test_string_and_binary_forms_equal_java(jvm: Any, length: int) -> None:
    J = _java(jvm)
    enc = jvm.java.nio.charset.StandardCharsets.UTF_8.newEncoder()
    for s in STRINGS + [None]:
        java = bytes(J.stringToOrderedBytes(s, length, _buf(jvm, length), enc).array())
        assert Z.ordered_bytes("string", s, length) == java, (s, length)
    for b in BINARIES:
        java = bytes(J.byteTruncateOrFill(bytearray(b), length, _buf(jvm, length)).array())
        assert Z.ordered_bytes("binary", b, length) == java, (b, length)
    assert bytes(J.byteTruncateOrFill(None, length, _buf(jvm, length)).array()) == \
        Z.ordered_bytes("binary", None, length)


def test_interleaving_equals_java(jvm: Any, spark: Any) -> None:
    J = _java(jvm)
    gateway = spark.sparkContext._gateway
    rnd = random.Random(31)
    for _ in range(200):
        n = rnd.randint(1, 5)
        forms = [bytes(rnd.getrandbits(8) for _ in range(rnd.choice([1, 3, 8, 8, 12])))
                 for _ in range(n)]
        size = rnd.randint(1, sum(len(f) for f in forms))
        arr = gateway.new_array(jvm.byte, n, 0)
        for i, f in enumerate(forms):
            arr[i] = bytearray(f)
        java = bytes(J.interleaveBits(arr, size, _buf(jvm, size)))
        assert Z.interleave(forms, size) == java, (forms, size)


def test_columnar_values_equal_java_composition(jvm: Any, spark: Any) -> None:
    """The vectorised values of a table (nulls, NaN, -0.0, pre-1970 instants) equal Java's
    forms of the same values interleaved by Java."""
    J = _java(jvm)
    gateway = spark.sparkContext._gateway
    enc = jvm.java.nio.charset.StandardCharsets.UTF_8.newEncoder()
    rnd = random.Random(7)
    n = 60
    longs = [rnd.choice(LONGS + [None]) for _ in range(n)]
    doubles = [rnd.choice(DOUBLES + [None]) for _ in range(n)]
    strings = [rnd.choice(STRINGS + [None]) for _ in range(n)]
    micros = [rnd.choice([None, 0, -1, -1_500_000, -86_400_000_000 * 400, 1_700_000_000_123_456])
              for _ in range(n)]
    from icectl.spec.schema import Schema

    schema = Schema.from_json({"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "l", "type": "long", "required": False},
        {"id": 2, "name": "d", "type": "double", "required": False},
        {"id": 3, "name": "s", "type": "string", "required": False},
        {"id": 4, "name": "t", "type": "timestamptz", "required": False}]})
    data = pa.table({"l": pa.array(longs, pa.int64()), "d": pa.array(doubles, pa.float64()),
                     "s": pa.array(strings, pa.string()),
                     "t": pa.array(micros, pa.timestamp("us", tz="UTC"))})
    for var_length, max_out in [(8, Z.MAX_OUTPUT_SIZE_DEFAULT), (3, Z.MAX_OUTPUT_SIZE_DEFAULT), (12, 13)]:
        order = Z.ZOrder.of([1, 2, 3, 4], var_length, max_out)
        mine = zorder_bytes(data, order, schema)
        size = Z.output_size([8, 8, var_length, 8], max_out)
        for i in range(n):
            def prim(b: Any) -> bytes:
                return bytes(8) if b is None else bytes(b.array())
            forms = [prim(None if longs[i] is None else J.longToOrderedBytes(longs[i], _buf(jvm, 8))),
                     prim(None if doubles[i] is None else J.doubleToOrderedBytes(doubles[i], _buf(jvm, 8))),
                     bytes(J.stringToOrderedBytes(strings[i], var_length, _buf(jvm, var_length), enc).array()),
                     prim(None if micros[i] is None else J.longToOrderedBytes(micros[i] // 1_000_000, _buf(jvm, 8)))]
            arr = gateway.new_array(jvm.byte, 4, 0)
            for k, f in enumerate(forms):
                arr[k] = bytearray(f)
            assert mine[i] == bytes(J.interleaveBits(arr, size, _buf(jvm, size))), i


_COLUMNS = "i int, l bigint, x double, f float, s string, bi binary, ts timestamp, b boolean"


def _fill(spark: Any, t: IceTable, partitioned: bool = False) -> None:
    part = " PARTITIONED BY (p)" if partitioned else ""
    spark.sql(f"CREATE TABLE {t.ident} ({_COLUMNS}, p string) USING iceberg{part}")
    for k in range(6):  # six small files; values at the edges of every type
        spark.sql(f"""INSERT INTO {t.ident} SELECT
            CAST((id * 7919) % 2001 - 1000 AS int),
            CASE WHEN id % 11 = 0 THEN NULL ELSE (id * 104729) % 100003 - 50000 END,
            CASE WHEN id % 13 = 0 THEN double('NaN') WHEN id % 17 = 0 THEN -0.0
                 WHEN id % 19 = 0 THEN NULL ELSE ((id * 31) % 997) / 7.0 - 70 END,
            CAST(((id * 17) % 503) / 3.0 - 80 AS float),
            CASE WHEN id % 23 = 0 THEN NULL WHEN id % 5 = 0 THEN concat('é', CAST(id AS string))
                 ELSE concat(CAST((id * 37) % 101 AS string), 'abcdefghij') END,
            unhex(hex(id * 2654435761)),
            timestamp_seconds(((id * 7777) % 100000) - 50000 + 0.25),
            id % 3 = 0,
            CASE WHEN id % 2 = 0 THEN 'a' ELSE 'b' END
            FROM range({k * 150}, {k * 150 + 150})""")


def _order_of(location: Path, columns: list[str]) -> list[bytes]:
    """icectl's z-order values of the rows of the table's single data file, in file order."""
    t = Table.load(str(location))
    files = [p for p in (location / "data").rglob("*.parquet")]
    live = {f.file_path.removeprefix("file:") for f in _live_files(t)}
    (path,) = [p for p in files if str(p) in live]
    ids = [t.metadata.schema.find_field(c).field_id for c in columns]
    return zorder_bytes(pq.read_table(path), Z.ZOrder.of(ids), t.metadata.schema)


def _rows(spark: Any, query: str) -> list[tuple]:
    """Rows with NaN as text (NaN equals nothing, itself included)."""
    return [tuple("NaN" if isinstance(v, float) and v != v else v for v in r)
            for r in sql_rows(spark, query)]


def _live_files(t: Table) -> list[Any]:
    from icectl.scan.planner import plan_scan

    return [f.data_file() for f in plan_scan(t).files]


@pytest.mark.parametrize("columns", [["i", "s"], ["x", "ts"], ["f", "bi", "l"], ["s", "b"]])
def test_spark_zorder_rewrite_sorts_by_icectl_values(spark: Any, new_table: Any, columns: list[str]) -> None:
    """Spark's ``rewrite_data_files(strategy => 'sort', sort_order => 'zorder(...)')`` into one
    file writes rows in the order of icectl's z-order values, and icectl's compaction of a twin
    table writes the same rows in the same order."""
    theirs, mine = new_table("theirs"), new_table("mine")
    _fill(spark, theirs)
    _fill(spark, mine)
    ns = theirs.ident.split(".", 1)[1]
    cols = ", ".join(columns)
    spark.sql(f"CALL {theirs.catalog}.system.rewrite_data_files(table => '{ns}', strategy => 'sort', "
              f"sort_order => 'zorder({cols})')")
    p = run_icectl("compact", mine.location, "--strategy", "sort", "--sort-order", f"zorder({cols})",
                   "--json", timeout=600)
    assert p.returncode == 0, p.stderr
    spark_values = _order_of(theirs.location, columns)
    assert spark_values == sorted(spark_values)
    mine_values = _order_of(mine.location, columns)
    assert mine_values == spark_values
    spark.sql(f"REFRESH TABLE {mine.ident}")
    query = "SELECT i, l, x, f, s, bi, ts, b, p FROM {} ORDER BY l, i, s, bi"
    assert _rows(spark, query.format(mine.ident)) == _rows(spark, query.format(theirs.ident))


def test_partitioned_zorder_ignores_identity_columns_as_spark(spark: Any, new_table: Any) -> None:
    theirs, mine = new_table("theirs"), new_table("mine")
    _fill(spark, theirs, partitioned=True)
    _fill(spark, mine, partitioned=True)
    ns = theirs.ident.split(".", 1)[1]
    spark.sql(f"CALL {theirs.catalog}.system.rewrite_data_files(table => '{ns}', strategy => 'sort', "
              f"sort_order => 'zorder(p, l, x)')")
    p = run_icectl("compact", mine.location, "--strategy", "zorder", "--columns", "p,l,x",
                   timeout=600)
    assert p.returncode == 0, p.stderr
    assert "ignores column 'p'" in p.stderr
    spark.sql(f"REFRESH TABLE {mine.ident}")
    files = "SELECT partition.p, record_count FROM {}.data_files ORDER BY 1"
    assert sql_rows(spark, files.format(mine.ident)) == sql_rows(spark, files.format(theirs.ident))
    query = "SELECT * FROM {} ORDER BY l, i, s, bi"
    assert _rows(spark, query.format(mine.ident)) == _rows(spark, query.format(theirs.ident))
    op = sql_rows(spark, f"SELECT operation FROM {mine.ident}.snapshots ORDER BY committed_at DESC LIMIT 1")
    assert op == [("replace",)]
    # the table's sort order is left alone, as Spark leaves it
    assert Table.load(str(mine.location)).metadata.sort_order.is_unsorted()


def test_dates_order_by_day_where_spark_gives_every_date_the_same_bytes(spark: Any) -> None:
    """Spark's rewrite casts a date to a bigint, which Spark evaluates to null (so every date
    contributes zeros); icectl orders dates by their day, as the long form of the day number."""
    assert sql_rows(spark, "SELECT CAST(DATE '2020-01-02' AS BIGINT)") == [(None,)]
    J = _java(spark._jvm)
    for d in [dt.date(1969, 12, 31), dt.date(1970, 1, 1), dt.date(2024, 2, 29), dt.date(1, 1, 1)]:
        days = (d - dt.date(1970, 1, 1)).days
        assert Z.ordered_bytes("days", d) == bytes(J.longToOrderedBytes(days, _buf(spark._jvm, 8)).array())
