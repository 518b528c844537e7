"""uuid ordering on tables Spark wrote (the differential fuzzer's "uuid ordering comparison").

Spark (Iceberg 1.10.2) summarises a uuid partition field in the manifest with Java's signed
order (``java.util.UUID.compareTo``), so for partitions on both sides of ``80000000-...`` the
summary's lower bound sorts after its upper bound in the unsigned order icectl compares rows by.
icectl read that pair as an unsigned range and skipped the manifest: ``scan`` missed rows at or
above ``8000...`` and ``delete`` left rows it should delete. icectl compares uuids as unsigned
bytes everywhere (the order of their text, which is what Spark compares on the string it reads);
where Java's plan depends on its signed order icectl keeps every file that may hold a matching
row (ordering.py), and for ``=``/``in`` its plan equals Java's ``planFiles``.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from cli_support import run_icectl
from spark_support import java_iter, java_table
from support.tables import empty_table

U = uuid.UUID
VALUES = {1: U(int=0), 2: U("00000000-0000-0000-8000-000000000000"),
          3: U("00000000-0000-0001-0000-000000000000"), 4: U("12345678-9abc-4def-8123-456789abcdef"),
          5: U("7fffffff-ffff-ffff-ffff-ffffffffffff"), 6: U("80000000-0000-0000-0000-000000000000"),
          7: U("f79c3e09-677c-4bbd-a479-3f349cb785e7"), 8: U(int=2**128 - 1), 9: None}
LOW, MID_BELOW, MID = VALUES[2], VALUES[5], VALUES[6]


def _lit(u: U) -> str:
    return f"uuid '{u}'"


FILTERS = {  # filter -> rows it selects (unsigned byte order; nulls never)
    f"u not between {_lit(LOW)} and {_lit(MID_BELOW)}":
        lambda v: v < LOW or v > MID_BELOW,
    f"u between {_lit(LOW)} and {_lit(MID_BELOW)}": lambda v: LOW <= v <= MID_BELOW,
    f"u >= {_lit(MID)}": lambda v: v >= MID,
    f"u < {_lit(LOW)}": lambda v: v < LOW,
    f"u > {_lit(VALUES[1])}": lambda v: v > VALUES[1],
    f"u <= {_lit(VALUES[3])}": lambda v: v <= VALUES[3],
    f"u = {_lit(MID)}": lambda v: v == MID,
    f"u in ({_lit(LOW)}, {_lit(VALUES[8])})": lambda v: v in (LOW, VALUES[8]),
}


def _build(sql: Any, t: Any, partition: str | None) -> str:
    loc = str(t.location)
    empty_table(loc, "id long, u uuid", partition=partition)
    rows = ", ".join(f"({i}, {'NULL' if v is None else repr(str(v))})" for i, v in VALUES.items())
    sql(f"INSERT INTO {t.ident} VALUES {rows}")
    return loc


def _scan(loc: str, flt: str | None = None) -> set[int]:
    r = run_icectl("scan", loc, "--format", "jsonl", *(["--filter", flt] if flt else []))
    assert r.returncode == 0, (flt, r.stderr)
    return {json.loads(line)["id"] for line in r.stdout.splitlines() if line.strip()}


def _planned(loc: str, flt: str) -> set[str]:
    r = run_icectl("plan", loc, "--filter", flt, "--json")
    assert r.returncode == 0, (flt, r.stderr)
    return {f["path"] for f in json.loads(r.stdout)["files"]}


def _strip(p: str) -> str:
    return p[5:] if p.startswith("file:") else p


def _ids_by_file(spark: Any, t: Any) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {}
    for row in spark.sql(f"SELECT id, _file FROM {t.ident}").collect():
        out.setdefault(_strip(row["_file"]), set()).add(row["id"])
    return out


def _java_plan(spark: Any, jvm: Any, loc: str, java_expr: Any) -> set[str]:
    scan = java_table(spark, loc).newScan().filter(java_expr)
    return {_strip(task.file().location()) for task in java_iter(scan.planFiles())}


def test_signed_summaries_of_spark_are_read_soundly(spark: Any, sql: Any, jvm: Any,
                                                    new_table: Any) -> None:
    t = new_table("p")
    loc = _build(sql, t, "u")
    # the cause: Java's manifest summary of the partition is in the signed order
    jt = java_table(spark, loc)
    summary = jt.currentSnapshot().dataManifests(jt.io()).get(0).partitions().get(0)
    conv, ut = jvm.org.apache.iceberg.types.Conversions, jvm.org.apache.iceberg.types.Types
    lower = U(str(conv.fromByteBuffer(ut.UUIDType.get(), summary.lowerBound())))
    upper = U(str(conv.fromByteBuffer(ut.UUIDType.get(), summary.upperBound())))
    assert (lower, upper) == (MID, MID_BELOW)  # 8000... first: unsigned, lower > upper

    present = {i: v for i, v in VALUES.items() if v is not None}
    files = _ids_by_file(spark, t)
    ex = jvm.org.apache.iceberg.expressions.Expressions
    for flt, pred in FILTERS.items():
        want = {i for i, v in present.items() if pred(v)}
        assert _scan(loc, flt) == want, flt
        planned = _planned(loc, flt)
        assert {p for p, ids in files.items() if ids & want} <= planned, flt
    # = and in do not depend on the order: the same files as Java's planFiles
    assert _planned(loc, f"u = {_lit(MID)}") == _java_plan(
        spark, jvm, loc, ex.equal("u", jvm.java.util.UUID.fromString(str(MID))))
    lst = jvm.java.util.ArrayList()
    for v in (LOW, VALUES[8]):
        lst.add(jvm.java.util.UUID.fromString(str(v)))
    assert _planned(loc, f"u in ({_lit(LOW)}, {_lit(VALUES[8])})") == _java_plan(
        spark, jvm, loc, getattr(ex, "in")("u", lst))

    # copy-on-write delete with `between` (the fuzzer's case); Spark reads what is left
    flt = f"u between {_lit(LOW)} and {_lit(MID_BELOW)}"
    r = run_icectl("delete", loc, "--filter", flt, "--mode", "copy-on-write")
    assert r.returncode == 0, r.stderr
    left = set(VALUES) - {i for i, v in present.items() if LOW <= v <= MID_BELOW}
    assert _scan(loc) == left
    spark.sql(f"REFRESH TABLE {t.ident}")  # the catalog caches tables; icectl committed behind it
    assert {row["id"] for row in spark.sql(f"SELECT id FROM {t.ident}").collect()} == left


def test_unpartitioned_file_bounds(spark: Any, sql: Any, new_table: Any) -> None:
    """One file holding values on both sides of 8000...: every ordering filter finds its rows
    (and `delete` by merge-on-read removes exactly them)."""
    t = new_table("f")
    loc = _build(sql, t, None)
    present = {i: v for i, v in VALUES.items() if v is not None}
    for flt, pred in FILTERS.items():
        assert _scan(loc, flt) == {i for i, v in present.items() if pred(v)}, flt
    flt = f"u not between {_lit(LOW)} and {_lit(MID_BELOW)}"
    r = run_icectl("delete", loc, "--filter", flt, "--mode", "merge-on-read")
    assert r.returncode == 0, r.stderr
    left = set(VALUES) - {i for i, v in present.items() if v < LOW or v > MID_BELOW}
    assert _scan(loc) == left
    spark.sql(f"REFRESH TABLE {t.ident}")  # the catalog caches tables; icectl committed behind it
    assert {row["id"] for row in spark.sql(f"SELECT id FROM {t.ident}").collect()} == left
