"""`icectl inspect all-manifests`, `all-entries` and `ancestors` against Spark's ``all_manifests``
and ``all_entries`` metadata tables and its ``ancestors_of`` procedure, row for row, on tables
Spark wrote with several snapshots, merge-on-read deletes (position delete files on v2,
deletion vectors on v3), an evolved partition spec, a tag and a branch that moves on its own.

The views are Spark's columns in Spark's order, each named with ``-`` for ``_``: the test maps
Spark's rows mechanically and compares every value.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
from typing import Any

import pytest

from cli_support import icectl_json, json_value, run_icectl
from spark_support import CATALOG, IceTable

pytestmark = pytest.mark.interop

_namespaces = itertools.count(1)


def _build(sql: Any, t: IceTable, fv: int) -> None:
    sql(f"CREATE TABLE {t.ident} (id bigint, ts timestamp, cat string, v double, st struct<k: int, d: date>) "
        f"USING iceberg PARTITIONED BY (bucket(4, id)) TBLPROPERTIES ('format-version'='{fv}', "
        "'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read')")
    sql(f"INSERT INTO {t.ident} SELECT id, TIMESTAMP '1969-12-31 23:00:00' + make_interval(0, 0, 0, 0, "
        "CAST(id AS INT), 0, 0), concat('c', CAST(id % 3 AS STRING)), IF(id = 5, double('NaN'), id * -0.5), "
        "named_struct('k', CAST(id % 2 AS INT), 'd', DATE '1960-01-01' + CAST(id AS INT)) FROM range(0, 30)")
    sql(f"INSERT INTO {t.ident} VALUES (100, NULL, NULL, -0.0, NULL)")
    sql(f"DELETE FROM {t.ident} WHERE id IN (3, 17)")
    sql(f"ALTER TABLE {t.ident} CREATE TAG first_deletes")
    sql(f"ALTER TABLE {t.ident} ADD PARTITION FIELD days(ts)")
    sql(f"ALTER TABLE {t.ident} ADD PARTITION FIELD truncate(2, cat)")
    sql(f"INSERT INTO {t.ident} VALUES (200, TIMESTAMP '2024-06-01 10:00:00', 'zz', 2.5, "
        "named_struct('k', 7, 'd', DATE '2024-06-01'))")
    sql(f"ALTER TABLE {t.ident} CREATE BRANCH audit")
    sql(f"INSERT INTO {t.ident}.branch_audit VALUES (300, NULL, 'br', 3.0, NULL)")
    sql(f"DELETE FROM {t.ident}.branch_audit WHERE id = 1")
    sql(f"UPDATE {t.ident} SET v = v + 1 WHERE id = 200")  # main moves on after the branch
    sql(f"DELETE FROM {t.ident} WHERE id = 4")


@pytest.fixture(scope="module")
def tables(spark: Any, sql: Any, warehouse: Any) -> dict[int, IceTable]:
    ns = f"inspect_all_{next(_namespaces)}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{ns}")
    out = {}
    for fv in (2, 3):
        t = IceTable(CATALOG, ns, f"t_v{fv}", warehouse)
        _build(sql, t, fv)
        out[fv] = t
    return out


def _kebab(v: Any, names: bool = False) -> Any:
    """A Spark value (Rows, maps, lists) as icectl's JSON: column keys with - for _ (the
    fields of a partition and the columns of the readable metrics keep their names), values
    as JSON."""
    if hasattr(v, "asDict"):
        out = {}
        for k, x in v.asDict(recursive=False).items():
            key = k if names else k.replace("_", "-")
            if key == "partition" and not names:
                out[key] = _kebab(x, names=True)
            elif key == "readable-metrics" and not names:
                out[key] = None if x is None else {c: _kebab(m) for c, m in x.asDict(recursive=False).items()}
            else:
                out[key] = _kebab(x)
        return out
    if isinstance(v, dict):
        return {str(k): _kebab(x) for k, x in sorted(v.items())}
    if isinstance(v, list):
        return [_kebab(x) for x in v]
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).hex()
    if isinstance(v, dt.datetime):  # Spark hands a timestamptz out naive, in the session's UTC
        return v.replace(tzinfo=dt.timezone.utc).isoformat(timespec="microseconds")
    return json_value(v)


def _spark(spark: Any, query: str) -> tuple[list[str], list[dict[str, Any]]]:
    df = spark.sql(query)
    return [c.replace("_", "-") for c in df.columns], [_kebab(r) for r in df.collect()]


def _key(row: dict[str, Any]) -> str:
    return json.dumps(row, sort_keys=True, default=str)


@pytest.mark.parametrize("fv", [2, 3])
def test_all_manifests_match_spark(tables: dict[int, IceTable], spark: Any, fv: int) -> None:
    t = tables[fv]
    columns, ref = _spark(spark, f"SELECT * FROM {t.ident}.all_manifests")
    mine = icectl_json("inspect", "all-manifests", str(t.location))
    assert all(list(r) == columns for r in mine)  # Spark's columns, in Spark's order
    assert sorted(map(_key, mine)) == sorted(map(_key, ref))
    # every snapshot of every ref is covered, the branch's own included
    refs = {r["name"]: r["snapshot-id"] for r in icectl_json("inspect", "refs", str(t.location))}
    assert refs["audit"] != refs["main"]
    assert {refs["audit"], refs["main"], refs["first_deletes"]} <= {r["reference-snapshot-id"] for r in mine}
    assert {r["content"] for r in mine} == {0, 1}
    assert {r["partition-spec-id"] for r in mine} == {0, 2}  # spec 1 never written


def _timestamps_as_text(rows: list[dict[str, Any]]) -> None:
    """icectl's JSON timestamp bounds (Appendix D: as many fraction digits as needed) written
    with six, as the Spark side's datetimes are."""
    for r in rows:
        for m in r["readable-metrics"].values():
            for k in ("lower-bound", "upper-bound"):
                if isinstance(m[k], str) and len(m[k]) >= 19 and m[k][10] == "T" and m[k][4] == "-":
                    m[k] = dt.datetime.fromisoformat(m[k]).isoformat(timespec="microseconds")


@pytest.mark.parametrize("fv", [2, 3])
def test_all_entries_match_spark(tables: dict[int, IceTable], spark: Any, fv: int) -> None:
    t = tables[fv]
    columns, ref = _spark(spark, f"SELECT * FROM {t.ident}.all_entries")
    mine = icectl_json("inspect", "all-entries", str(t.location))
    assert all(list(r) == columns for r in mine)
    spark_file_columns = list(ref[0]["data-file"])
    assert all(list(r["data-file"]) == spark_file_columns for r in mine)
    assert all(list(r["readable-metrics"]) == list(ref[0]["readable-metrics"]) for r in mine)
    _timestamps_as_text(mine)
    assert sorted(map(_key, mine)) == sorted(map(_key, ref))
    assert {r["status"] for r in mine} >= {1}
    assert {r["data-file"]["content"] for r in mine} == {0, 1}


@pytest.mark.parametrize("fv", [2, 3])
def test_ancestors_match_spark(tables: dict[int, IceTable], spark: Any, fv: int) -> None:
    t = tables[fv]
    ns, name = t.ident.split(".")[1:]
    refs = {r["name"]: r["snapshot-id"] for r in icectl_json("inspect", "refs", str(t.location))}
    snapshots = [s["snapshot-id"] for s in icectl_json("inspect", "snapshots", str(t.location))]
    proc = f"{CATALOG}.system.ancestors_of"

    def spark_ancestors(sid: int | None) -> list[dict[str, Any]]:
        arg = f"'{ns}.{name}'" + (f", {sid}" if sid is not None else "")
        return [{"snapshot-id": r[0], "timestamp": r[1]} for r in spark.sql(f"CALL {proc}({arg})").collect()]

    assert icectl_json("inspect", "ancestors", str(t.location)) == spark_ancestors(None)
    for sid in snapshots:
        assert icectl_json("inspect", "ancestors", str(t.location), str(sid)) == spark_ancestors(sid)
    branch = icectl_json("inspect", "ancestors", str(t.location), "--ref", "audit")
    assert branch == spark_ancestors(refs["audit"])
    assert branch[0]["snapshot-id"] == refs["audit"]
    # an unknown snapshot is "not found", nothing on stdout
    missing = run_icectl("inspect", "ancestors", str(t.location), "1234", "--json")
    assert missing.returncode == 3 and missing.stdout == "", missing.stderr
