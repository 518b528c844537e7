"""Findings of the differential fuzzer (tests/differential), against the reference: Spark
(Iceberg 1.10.2) reads what icectl writes after a merge-on-read delete on a table with uuid
columns; identity(fixed) partitions are read both ways (Java stores fixed[N] partition values
in manifests length-prefixed); a negated NaN test on a struct field keeps the rows whose
struct is null."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from cli_support import run_icectl
from spark_support import java_iter, java_table, sql_rows

pytestmark = pytest.mark.interop


def _ok(*args: str) -> None:
    done = run_icectl(*args)
    assert done.returncode == 0, f"icectl {' '.join(map(str, args))}: {done.stderr}"


@pytest.mark.parametrize("partition", [None, "void(c2_uuid)", "c2_uuid"])
def test_spark_reads_uuid_table_after_icectl_merge_on_read_delete(spark: Any, new_table: Any,
                                                                  tmp_path: Any, partition: Any) -> None:
    t = new_table("t")
    args = ["create", str(t.location), "--schema", "_rid long, c2_uuid uuid, s struct<v: uuid>",
            "--property", "write.delete.mode=merge-on-read"]
    _ok(*args, *(["--partition", partition] if partition else []))
    us = [uuid.UUID(int=(i + 1) * 0x0123456789ABCDEF0123456789ABCDEF % 2**128) for i in range(5)]
    lines = "".join(
        f'{{"_rid": {i}, "c2_uuid": {"null" if i == 2 else chr(34) + str(u) + chr(34)}, '
        f'"s": {"null" if i == 3 else "{" + chr(34) + "v" + chr(34) + ": " + chr(34) + str(u) + chr(34) + "}"}}}\n'
        for i, u in enumerate(us))
    path = tmp_path / "rows.jsonl"
    path.write_text(lines)
    _ok("write", str(t.location), str(path))
    _ok("delete", str(t.location), "--filter", "_rid in (0, 3)", "--mode", "merge-on-read")
    spark.sql(f"REFRESH TABLE {t.ident}")
    got = sorted(sql_rows(spark, f"SELECT _rid, CAST(c2_uuid AS string), CAST(s.v AS string) FROM {t.ident}"))
    want = [(i, None if i == 2 else str(us[i]), str(us[i])) for i in (1, 2, 4)]
    assert got == want
    # the rows went by position deletes (Spark's files table lists them), not by a rewrite
    kinds = {r[0] for r in sql_rows(spark, f"SELECT content FROM {t.ident}.files")}
    assert kinds == {0, 1}


def _manifest_bodies(location: Any) -> list[bytes]:
    """The decompressed entry blocks of every manifest of a table (not manifest lists)."""
    from icectl.io.formats.avro_container import decoded_blocks, split_header

    out = []
    for path in sorted(Path(location, "metadata").glob("*-m*.avro")):
        data = path.read_bytes()
        meta, sync, start = split_header(data)
        codec = meta.get("avro.codec", b"null").decode() or "null"
        out.append(b"".join(block for _, block in decoded_blocks(data, start, sync, codec)))
    return out


def test_spark_reads_identity_fixed_table_with_an_added_void_field_on_the_same_column(
        spark: Any, new_table: Any, tmp_path: Any) -> None:
    """icectl writes a fixed[N] partition value in a manifest as Iceberg Java 1.10.2 does
    (length-prefixed, though the Avro schema says fixed: the only form Java reads)."""
    t = new_table("t")
    loc = str(t.location)
    _ok("create", loc, "--schema", "_rid long, c2_fixed4 fixed[4]", "--partition", "c2_fixed4")
    _ok("schema", "add", loc, "c3", "string")
    _ok("partition", "add", loc, "void(c2_fixed4)")
    path = tmp_path / "rows.jsonl"
    path.write_text('{"_rid": 1, "c2_fixed4": "61626364", "c3": "x"}\n{"_rid": 2, "c2_fixed4": null, "c3": "y"}\n')
    _ok("write", loc, str(path))
    assert any(b"\x02\x08abcd" in body for body in _manifest_bodies(loc))  # union 1, length 4
    spark.sql(f"REFRESH TABLE {t.ident}")
    got = sorted(sql_rows(spark, f"SELECT _rid, CAST(c2_fixed4 AS string), c3 FROM {t.ident}"))
    assert got == [(1, "abcd", "x"), (2, None, "y")]
    parts = sorted((r[0] or "", r[1]) for r in sql_rows(
        spark, f"SELECT CAST(partition.c2_fixed4 AS string), record_count FROM {t.ident}.files"))
    assert parts == [("", 1), ("abcd", 1)]  # ("": the null partition)
    # Spark filters on the partition (Java's manifest evaluator reads the values too)
    assert sql_rows(spark, f"SELECT _rid FROM {t.ident} WHERE c2_fixed4 = X'61626364'") == [(1,)]


def test_icectl_reads_identity_fixed_partitions_spark_wrote(spark: Any, new_table: Any,
                                                           tmp_path: Any) -> None:
    """Java writes fixed[N] partition values length-prefixed (seen in the manifest's bytes);
    icectl plans, filters and reads them, and appends next to them so Spark reads both."""
    t = new_table("t")
    loc = str(t.location)
    _ok("create", loc, "--schema", "_rid long, f fixed[4]", "--partition", "f")
    spark.sql(f"REFRESH TABLE {t.ident}")
    spark.sql(f"INSERT INTO {t.ident} VALUES (1, X'61626364'), (2, NULL), (3, X'08FF0000')")
    bodies = _manifest_bodies(loc)
    assert any(b"\x02\x08abcd" in b for b in bodies)  # Java's form: union 1, length 4, bytes
    assert any(b"\x02\x08\x08\xff\x00\x00" in b for b in bodies)
    done = run_icectl("plan", loc, "--filter", "f = X'61626364'", "--json")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count(".parquet") >= 1 and "abcd" not in done.stderr
    for flt, want in [("f = X'61626364'", [1]), ("f = X'08FF0000'", [3]), ("f is null", [2]),
                      ("f != X'61626364'", [3])]:
        done = run_icectl("scan", loc, "--filter", flt, "--columns", "_rid", "--format", "csv")
        assert done.returncode == 0, done.stderr
        assert sorted(int(x) for x in done.stdout.split()[1:]) == want, flt
    path = tmp_path / "rows.jsonl"
    path.write_text('{"_rid": 4, "f": "7778797a"}\n')  # fixed text is hex (wxyz)
    _ok("write", loc, str(path))
    spark.sql(f"REFRESH TABLE {t.ident}")
    got = sorted(sql_rows(spark, f"SELECT _rid, hex(f) FROM {t.ident}"))
    assert got == [(1, "61626364"), (2, None), (3, "08FF0000"), (4, "7778797A")]
    done = run_icectl("scan", loc, "--columns", "_rid", "--format", "csv")
    assert sorted(int(x) for x in done.stdout.split()[1:]) == [1, 2, 3, 4]


# -- bug b (fuzzer seed 7, table s7r4): `not (st.b is nan)` and rows whose struct is null ----------

_S7R4_ROWS_1 = [  # (_rid, c0_uuid, c3_decimal380, st) -- Spark-written, spec 0
    (1, "67e6edba-a8b4-af88-12f5-bd700311ad03", "-877", ("7cb85b85-f990-6093-a309-b634baf7cc03", "-3.4028235E38")),
    (2, "b1682655-f035-043c-1d56-b76794d93747", "5", (None, "Infinity")),
    (3, "7fffffff-ffff-ffff-ffff-ffffffffffff", None, (None, None)),
    (4, None, None, ("cca865b7-c3c3-21d9-16b3-3f6281c691c1", "30.0")),
    (7, "7fffffff-ffff-ffff-ffff-ffffffffffff", "41337676846912602046112838190705872327",
     ("5087081f-238a-c50f-be6d-32027fb84517", "NaN")),
    (8, "f79c3e09-677c-4bbd-a479-3f349cb785e7", None, (None, None)),
    (9, "f79c3e09-677c-4bbd-a479-3f349cb785e7", "1", None),
    (10, "f79c3e09-677c-4bbd-a479-3f349cb785e7", None, ("f79c3e09-677c-4bbd-a479-3f349cb785e7", "97.2")),
]
_S7R4_ROWS_2 = [  # after identity(c3_decimal380) was added: spec 1
    (11, "04f079ba-ee08-5879-fcc1-e95e8af2a2a8", "-877", (None, "20.0")),
    (15, "f79c3e09-677c-4bbd-a479-3f349cb785e7", "-555", ("fa7e1829-30f2-665e-4ec0-17e60145aa34", "24.0")),
    (18, "97401080-bf6d-f1d1-41db-3afecb45ff1b", "5", None),
    (20, None, "-72318857635519211496394492921854704660", ("02235019-8812-229b-378d-c02b4c989d50", "1.5")),
]


def _s7r4_values(rows: list) -> str:
    def lit(v: Any, sql_type: str) -> str:
        return "NULL" if v is None else f"CAST('{v}' AS {sql_type})"

    def st(v: Any) -> str:
        if v is None:
            return "CAST(NULL AS STRUCT<a: STRING, b: FLOAT>)"
        return f"named_struct('a', {lit(v[0], 'STRING')}, 'b', {lit(v[1], 'FLOAT')})"
    return ", ".join(f"({rid}, {lit(u, 'STRING')}, {lit(d, 'DECIMAL(38,0)')}, {st(s)})"
                     for rid, u, d, s in rows)


def test_not_is_nan_on_a_struct_field_keeps_rows_whose_struct_is_null(spark: Any,
                                                                      new_table: Any) -> None:
    """Fuzzer seed 7 (s7r4): on a Spark-written, partition-evolved merge-on-read table, the
    filter ``not (st.b is nan)`` is true where ``st`` is null (a null is not NaN)."""
    t = new_table("t")
    loc = str(t.location)
    _ok("create", loc, "--schema",
        "_rid long, c0_uuid uuid, c3_decimal380 decimal(38,0), st struct<a: uuid, b: float>",
        "--partition", "truncate(1, c3_decimal380)", "--partition", "c0_uuid",
        "--property", "write.delete.mode=merge-on-read")
    spark.sql(f"REFRESH TABLE {t.ident}")
    spark.sql(f"INSERT INTO {t.ident} VALUES {_s7r4_values(_S7R4_ROWS_1)}")
    spark.sql(f"ALTER TABLE {t.ident} ADD PARTITION FIELD c3_decimal380")
    spark.sql(f"INSERT INTO {t.ident} VALUES {_s7r4_values(_S7R4_ROWS_2)}")
    rows = _S7R4_ROWS_1 + _S7R4_ROWS_2
    want = sorted(rid for rid, _, _, s in rows if s is None or s[1] != "NaN")
    spark_got = sorted(r[0] for r in sql_rows(
        spark, f"SELECT _rid FROM {t.ident} WHERE NOT coalesce(isnan(st.b), false)"))
    assert spark_got == want
    for flt in ("not (st.b is nan)", "st.b is not nan"):
        done = run_icectl("scan", loc, "--filter", flt, "--columns", "_rid", "--format", "csv")
        assert done.returncode == 0, done.stderr
        got = sorted(int(x) for x in done.stdout.split()[1:])
        assert got == want, flt
    # Java's counts of st.b leave the null-struct rows out (value count 0 for row 18's file), and
    # its planFiles() trusts them: it skips the file holding row 18. icectl plans that file too.
    counts = [r[1:] for r in sql_rows(
        spark, f"SELECT file_path, value_counts[6], null_value_counts[6], record_count "
               f"FROM {t.ident}.files") if "97401080" in r[0]]  # (6: st.b's field id)
    assert counts == [(0, 0, 1)]
    jvm = spark._jvm
    tasks = java_iter(java_table(spark, loc).newScan().filter(
        jvm.org.apache.iceberg.expressions.Expressions.notNaN("st.b")).planFiles())
    theirs = {str(x.file().location()).replace("file:", "") for x in tasks}
    done = run_icectl("plan", loc, "--filter", "st.b is not nan", "--json")
    ours = {f["path"].replace("file:", "") for f in json.loads(done.stdout)["files"]}
    assert ours > theirs and [p for p in ours - theirs if "97401080" in p] == list(ours - theirs)
    # a delete of the rows where st.b is not null keeps the null-struct rows (strict metrics
    # must not call the whole file matching), in both modes; Spark reads what is left
    keep = sorted(rid for rid, _, _, s in rows if s is None or s[1] is None)
    for mode in ("copy-on-write", "merge-on-read"):
        br = f"b_{mode[0]}"
        _ok("branch", "create", loc, br)
        _ok("delete", loc, "--filter", "st.b is not null", "--branch", br, "--mode", mode)
        spark.sql(f"REFRESH TABLE {t.ident}")
        assert sorted(r[0] for r in sql_rows(spark, f"SELECT _rid FROM {t.ident}.branch_{br}")) == keep
