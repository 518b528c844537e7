"""`icectl relocate` against Spark's rewrite_table_path (Iceberg 1.10.2).

* A table Spark wrote (v2 with position deletes and an equality delete, v3 with deletion
  vectors) and one icectl wrote are relocated; Spark, pyiceberg and icectl read the relocated
  table with the source's rows, and the source's files are unchanged, byte for byte.
* The copy plan icectl writes lists the same files as the file list Spark's procedure writes for
  the same table (as paths relative to each run's target prefix), in full and incrementally
  from a start version.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from cli_support import run_icectl
from spark_support import IceTable, sql_rows, write_equality_delete

MOR = ("'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
       "'write.merge.mode'='merge-on-read'")


def _spark_table(spark: Any, t: IceTable, fv: int, partitioned: bool = True) -> None:
    spark.sql(f"""CREATE TABLE {t.ident} (id bigint, cat string, v double, d date) USING iceberg
                  {'PARTITIONED BY (cat)' if partitioned else ''}
                  TBLPROPERTIES ('format-version'='{fv}', {MOR})""")
    spark.sql(f"""INSERT INTO {t.ident} SELECT id, CASE WHEN id % 3 = 0 THEN 'a' WHEN id % 3 = 1 THEN 'b'
                  ELSE NULL END, CASE WHEN id % 7 = 0 THEN double('NaN') ELSE id / 4.0 END,
                  date_add(DATE'1969-12-25', int(id)) FROM range(0, 60)""")
    spark.sql(f"INSERT INTO {t.ident} VALUES (100, 'a', -0.0, DATE'1900-01-01'), (101, NULL, NULL, NULL)")
    spark.sql(f"DELETE FROM {t.ident} WHERE id IN (3, 4, 10, 17, 42, 59, 100)")
    spark.sql(f"UPDATE {t.ident} SET v = 9.5 WHERE id = 5")


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _key(row: tuple) -> tuple:  # (NaN equals NaN, -0.0 differs from 0.0)
    return tuple((v is None, repr(v)) for v in row)


def _rows(spark: Any, location: Path | str) -> list[tuple]:
    return sorted((_key(tuple(r)) for r in spark.read.format("iceberg").load(str(location)).collect()))


def _pyiceberg_rows(location: Path) -> list[tuple]:
    from pyiceberg.table import StaticTable

    hint = (location / "metadata" / "version-hint.text").read_text().strip()
    t = StaticTable.from_metadata(str(location / "metadata" / f"v{hint}.metadata.json"))
    return sorted(_key(tuple(r.values())) for r in t.scan().to_arrow().to_pylist())


def _icectl_rows(location: Path) -> list[tuple]:
    r = run_icectl("scan", str(location), "--format", "jsonl")
    assert r.returncode == 0, r.stderr
    return sorted(_key(tuple(json.loads(x).values())) for x in r.stdout.splitlines())


def _relocate(source: Path | str, *args: Any) -> dict[str, Any]:
    r = run_icectl("relocate", str(source), *map(str, args), "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _check_relocated(spark: Any, source: Path, moved: Path, pyiceberg: bool = True) -> None:
    expected = _rows(spark, source)
    assert len(expected) > 20
    assert _rows(spark, moved) == expected
    if pyiceberg:  # (pyiceberg 0.x refuses tables with equality deletes)
        assert _pyiceberg_rows(moved) == _pyiceberg_rows(source) == expected
    assert _icectl_rows(moved) == _icectl_rows(source)
    r = run_icectl("check", str(moved), "--deep", "--json")
    problems = json.loads(r.stdout)["problems"]
    assert [p for p in problems if p["severity"] == "error"] == [], problems
    # nothing of the new table points back at the source
    for p in moved.rglob("*"):
        if p.is_file() and p.suffix in (".json", ".avro"):
            assert str(source).encode() not in p.read_bytes(), p


@pytest.mark.parametrize("fv, partitioned", [(2, True), (2, False), (3, True)])
def test_spark_written_table_relocated_reads_the_same(spark: Any, new_table: Any, tmp_path: Path,
                                                      fv: int, partitioned: bool) -> None:
    t = new_table("src")
    _spark_table(spark, t, fv, partitioned)
    if not partitioned:  # (Java's equality delete writer of the tests writes unpartitioned files)
        write_equality_delete(spark, t.location, ["cat"], [("b",)], "eq-deletes")
        spark.sql(f"REFRESH TABLE {t.ident}")
    kinds = {r[0] for r in sql_rows(spark, f"SELECT content FROM {t.ident}.delete_files")}
    assert kinds == ({1} if partitioned else {1, 2})
    before = _tree(t.location)
    moved = tmp_path / "moved" / "t"
    out = _relocate(t.location, "--to", moved)
    assert out["copied"] and out["rewritten-delete-files"] >= 1
    assert _tree(t.location) == before  # the source is never written to
    _check_relocated(spark, t.location, moved, pyiceberg=partitioned)
    # a second relocation onto the new table is refused; it is left as it was
    after = _tree(moved)
    r = run_icectl("relocate", str(t.location), "--to", str(moved))
    assert r.returncode == 4 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert _tree(moved) == after


@pytest.mark.parametrize("fv", [2, 3])
def test_icectl_written_table_relocated_reads_the_same(spark: Any, tmp_path: Path, fv: int) -> None:
    src = tmp_path / "wh" / "db" / "src"
    csv = tmp_path / "rows.csv"
    csv.write_text("id,cat,v\n" + "".join(f"{i},{'ab'[i % 2] if i % 5 else ''},{i / 2}\n" for i in range(50)))
    for args in (["create", src, "--schema", "id long not null, cat string, v double", "--partition", "cat",
                  "--format-version", fv],
                 ["write", src, csv], ["write", src, csv],
                 ["delete", src, "--filter", "id in (1, 2, 3, 20)", "--mode", "merge-on-read"],
                 ["delete", src, "--filter", "id = 30", "--mode", "merge-on-read"]):
        r = run_icectl(*map(str, args))
        assert r.returncode == 0, r.stderr
    before = _tree(src)
    moved = tmp_path / "elsewhere" / "events"
    _relocate(src, "--to", moved)
    assert _tree(src) == before
    _check_relocated(spark, src, moved)


def _spark_file_list(spark: Any, t: IceTable, target: Path, staging: Path, start: str | None = None
                     ) -> set[str]:
    extra = f", start_version => '{start}'" if start else ""
    rows = sql_rows(spark, f"""CALL {t.catalog}.system.rewrite_table_path(table => '{t.namespace}.{t.name}',
        source_prefix => '{t.location}', target_prefix => '{target}',
        staging_location => '{staging}'{extra})""")
    latest, file_list = rows[0]
    lines = Path(file_list.removeprefix("file:")).read_text().splitlines()
    return {line.split(",")[1].removeprefix("file:").removeprefix(str(target) + "/") for line in lines}


def _icectl_plan(source: Path, target: Path, plan: Path, *extra: str) -> set[str]:
    out = _relocate(source, "--to", target, "--copy-plan", plan, *extra)
    assert not out["copied"] and not target.exists()
    lines = plan.read_text().splitlines()
    assert len(lines) == out["files-to-copy"]
    for line in lines:  # every source of the plan exists: staged rewrites, or the table's own files
        assert Path(line.split(",")[0]).is_file(), line
    return {line.split(",")[1].removeprefix(str(target) + "/") for line in lines}


def test_copy_plan_lists_what_sparks_file_list_lists(spark: Any, new_table: Any, tmp_path: Path) -> None:
    # (each delete touches one partition: Spark 1.10.2's procedure fails on a delete manifest of
    # several position delete files, Iceberg's issue 15155)
    t = new_table("src")
    spark.sql(f"""CREATE TABLE {t.ident} (id bigint, cat string, v double, d date) USING iceberg
                  PARTITIONED BY (cat) TBLPROPERTIES ('format-version'='2', {MOR})""")
    spark.sql(f"INSERT INTO {t.ident} SELECT id, IF(id % 2 = 0, 'a', 'b'), id / 4.0, DATE'1970-01-01' FROM range(0, 40)")
    spark.sql(f"DELETE FROM {t.ident} WHERE id = 3")
    spark.sql(f"INSERT INTO {t.ident} VALUES (100, 'c', -0.0, DATE'1900-01-01'), (101, NULL, NULL, NULL)")
    spark.sql(f"DELETE FROM {t.ident} WHERE id = 4")
    before = _tree(t.location)
    theirs = _spark_file_list(spark, t, tmp_path / "spark-target", tmp_path / "spark-staging")
    mine = _icectl_plan(t.location, tmp_path / "ice-target", tmp_path / "plan" / "copies.csv")
    assert mine == theirs
    assert any(p.startswith("data/") and "deletes" not in p for p in mine)
    assert _tree(t.location) == before

    # incrementally, after two more commits: only what is new since the version relocated
    start = sorted((t.metadata_dir).glob("v*.metadata.json"), key=lambda p: int(p.name[1:].split(".")[0]))[-1].name
    spark.sql(f"INSERT INTO {t.ident} VALUES (200, 'b', 1.0, DATE'2024-02-29')")
    spark.sql(f"DELETE FROM {t.ident} WHERE id = 6")
    theirs = _spark_file_list(spark, t, tmp_path / "spark-target2", tmp_path / "spark-staging2", start)
    mine = _icectl_plan(t.location, tmp_path / "ice-target2", tmp_path / "plan2" / "copies.csv",
                        "--start-version", start)
    assert mine == theirs
    assert sum(p.endswith(".metadata.json") for p in mine) == 2
