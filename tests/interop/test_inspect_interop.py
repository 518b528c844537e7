"""`icectl inspect` against the reference, on tables Spark SQL created and changed.

Three tables are built once per module by Spark 3.5 + Iceberg 1.10 Java:

* v1: partitioned, several appends and a delete dropping whole files;
* v2: merge-on-read DELETE and UPDATE (position delete files), ADD COLUMN, ADD PARTITION FIELD,
  a tag, and a branch that moves ahead of main;
* v3: merge-on-read deletes written as deletion vectors.

For each, every `icectl inspect ... --json` view must say what Spark's metadata tables (and,
where Spark shows nothing, Iceberg Java) say about the same table.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from typing import Any, Callable

import pytest

pytest.register_assert_rewrite("cli_support")

from cli_support import (  # noqa: E402
    check_files,
    check_files_java,
    check_history,
    check_manifests,
    check_metadata_log,
    check_partitions_table,
    check_refs,
    check_snapshots,
    icectl_json,
    java_json,
    json_value,
    rows_as_dicts,
    run_icectl,
    spark_files,
    spark_refs,
)
from spark_support import CATALOG, IceTable, java_table  # noqa: E402

pytestmark = pytest.mark.interop

DAY_MS = 24 * 3600 * 1000

_namespaces = itertools.count(1)


@dataclass(frozen=True)
class Built:
    label: str
    format_version: int
    table: IceTable

    @property
    def ident(self) -> str:
        return self.table.ident

    @property
    def location(self) -> str:
        return str(self.table.location)


def _build_v1(sql: Callable[[str], Any], t: IceTable) -> None:
    sql(
        f"CREATE TABLE {t.ident} (id bigint, ts timestamp, cat string, n int) USING iceberg "
        "PARTITIONED BY (days(ts), bucket(4, id), cat) TBLPROPERTIES ('format-version'='1')"
    )
    sql(f"INSERT INTO {t.ident} VALUES (1, TIMESTAMP '2024-03-01 01:00:00', 'a', 10), "
        "(2, TIMESTAMP '2024-03-01 02:00:00', 'b', 20), (3, TIMESTAMP '2024-03-02 00:00:00', 'c', 30)")
    sql(f"INSERT INTO {t.ident} VALUES (4, TIMESTAMP '1969-12-31 12:00:00', 'a', 40), "
        "(5, NULL, NULL, NULL)")
    sql(f"INSERT INTO {t.ident} VALUES (6, TIMESTAMP '2024-03-02 23:59:59', 'c', 60)")
    sql(f"DELETE FROM {t.ident} WHERE cat = 'c'")  # whole files: a metadata-only delete


def _build_v2(sql: Callable[[str], Any], t: IceTable) -> None:
    sql(
        f"CREATE TABLE {t.ident} (id bigint, ts timestamp, cat string, n int) USING iceberg "
        "PARTITIONED BY (bucket(4, id), days(ts)) TBLPROPERTIES ('format-version'='2', "
        "'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read')"
    )
    sql(f"INSERT INTO {t.ident} SELECT id, TIMESTAMP '2024-05-01 00:00:00' + make_interval(0, 0, 0, "
        "0, CAST(id AS INT), 0, 0), concat('c', CAST(id % 3 AS STRING)), CAST(id AS INT) "
        "FROM range(0, 40)")
    sql(f"INSERT INTO {t.ident} VALUES (100, TIMESTAMP '2024-05-03 00:00:00', 'x', 1)")
    # rows 3 and 30 live in different partitions, row 100 in a file of its own: after these,
    # three position delete files are live, one per data file
    sql(f"DELETE FROM {t.ident} WHERE id = 3 OR id = 30")
    sql(f"UPDATE {t.ident} SET n = n + 1000 WHERE id = 100")
    sql(f"ALTER TABLE {t.ident} CREATE TAG before_evolution RETAIN 10 DAYS")
    sql(f"ALTER TABLE {t.ident} ADD COLUMN note string")
    sql(f"ALTER TABLE {t.ident} ADD PARTITION FIELD truncate(2, cat)")
    sql(f"INSERT INTO {t.ident} VALUES (200, TIMESTAMP '2024-06-01 00:00:00', 'zz', 2, 'new spec')")
    sql(f"ALTER TABLE {t.ident} CREATE BRANCH audit RETAIN 7 DAYS "
        "WITH SNAPSHOT RETENTION 2 SNAPSHOTS 3 DAYS")
    sql(f"INSERT INTO {t.ident}.branch_audit VALUES (300, NULL, 'br', 3, 'on the branch')")
    sql(f"DELETE FROM {t.ident} WHERE id = 200")  # main moves on after the branch was cut


def _build_v3(sql: Callable[[str], Any], t: IceTable) -> None:
    sql(
        f"CREATE TABLE {t.ident} (id bigint, cat string, v double) USING iceberg "
        "PARTITIONED BY (cat) TBLPROPERTIES ('format-version'='3', "
        "'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read')"
    )
    sql(f"INSERT INTO {t.ident} SELECT id, IF(id % 2 = 0, 'even', 'odd'), id / 4.0 FROM range(0, 20)")
    sql(f"INSERT INTO {t.ident} VALUES (50, 'odd', double('NaN'))")
    sql(f"DELETE FROM {t.ident} WHERE id IN (2, 3)")
    sql(f"DELETE FROM {t.ident} WHERE id = 4")  # the DV of that data file is replaced
    sql(f"UPDATE {t.ident} SET v = -1 WHERE id = 7")


BUILDERS = {"v1": (1, _build_v1), "v2": (2, _build_v2), "v3": (3, _build_v3)}


@pytest.fixture(scope="module")
def namespace(spark: Any) -> str:
    name = f"inspect_interop_{next(_namespaces)}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{name}")
    return name


@pytest.fixture(scope="module")
def tables(sql: Any, warehouse: Any, namespace: str) -> dict[str, Built]:
    built = {}
    for label, (fv, build) in BUILDERS.items():
        t = IceTable(CATALOG, namespace, f"t_{label}", warehouse)
        build(sql, t)
        built[label] = Built(label, fv, t)
    return built


@pytest.fixture(params=list(BUILDERS))
def built(request: pytest.FixtureRequest, tables: dict[str, Built]) -> Built:
    return tables[request.param]


# -- every view, every table ----------------------------------------------------------------------


def test_table_view_matches_java(built: Built, spark: Any) -> None:
    jtable = java_table(spark, built.location)
    current = jtable.operations().current()
    view = icectl_json("inspect", "table", built.location)
    assert view["location"] == current.location()
    assert view["metadata-file"] == current.metadataFileLocation()
    assert view["table-uuid"] == current.uuid()
    assert view["format-version"] == current.formatVersion() == built.format_version
    assert view["last-updated-ms"] == current.lastUpdatedMillis()
    assert view["last-sequence-number"] == current.lastSequenceNumber()
    assert view["current-snapshot-id"] == jtable.currentSnapshot().snapshotId()
    assert view["snapshot-count"] == len(list(jtable.snapshots()))
    assert view["current-schema-id"] == jtable.schema().schemaId()
    assert view["default-spec-id"] == jtable.spec().specId()
    assert view["default-sort-order-id"] == jtable.sortOrder().orderId()
    assert view["properties"] == dict(jtable.properties())
    assert sorted(view["refs"]) == sorted(jtable.refs().keySet())
    summary = dict(jtable.currentSnapshot().summary())
    for key, value in view["totals"].items():
        assert value == (int(summary[key]) if key in summary else None), key
    if built.format_version >= 3:
        assert view["next-row-id"] == current.nextRowId()


def test_snapshots_history_refs(built: Built, spark: Any) -> None:
    jtable = java_table(spark, built.location)
    snapshots = check_snapshots(spark, built.ident, built.location, jtable)
    check_history(spark, built.ident, built.location)
    check_refs(spark, built.ident, built.location)
    ops = [s["operation"] for s in snapshots]
    expected = {
        "v1": ["append", "append", "append", "delete"],
        "v2": ["append", "append", "delete", "overwrite", "append", "append", "delete"],
        "v3": ["append", "append", "delete", "delete", "overwrite"],
    }[built.label]
    assert ops == expected


def test_schemas_match_java(built: Built, spark: Any, jvm: Any) -> None:
    jtable = java_table(spark, built.location)
    java_schemas = {int(k): v for k, v in dict(jtable.schemas()).items()}
    assert len(java_schemas) == (2 if built.label == "v2" else 1)
    for schema_id, jschema in java_schemas.items():
        view = icectl_json("inspect", "schema", built.location, "--schema-id", str(schema_id))
        expected = java_json(jvm, "SchemaParser", jschema)
        assert view["schema-id"] == schema_id
        assert view["current"] == (schema_id == jtable.schema().schemaId())
        assert view["json"]["fields"] == expected["fields"]
        assert view["json"].get("identifier-field-ids", []) == expected.get("identifier-field-ids", [])
        # the flattened column list: every field id with Java's full column name
        columns = {c["id"]: c for c in view["columns"]}
        java_ids = {int(i) for i in jvm.org.apache.iceberg.types.TypeUtil.indexById(
            jschema.asStruct()).keySet()}
        assert set(columns) == java_ids
        for field_id, column in columns.items():
            jfield = jschema.findField(field_id)
            assert column["name"] == jschema.findColumnName(field_id)
            assert column["required"] == jfield.isRequired()
    current = icectl_json("inspect", "schema", built.location)
    assert current["schema-id"] == jtable.schema().schemaId()


def test_specs_match_java(built: Built, spark: Any, jvm: Any) -> None:
    jtable = java_table(spark, built.location)
    view = icectl_json("inspect", "spec", built.location)
    assert view == icectl_json("inspect", "partitions", built.location, "--spec")
    java_specs = {int(k): java_json(jvm, "PartitionSpecParser", v)
                  for k, v in dict(jtable.specs()).items()}
    assert view["default-spec-id"] == jtable.spec().specId()
    assert view["last-partition-id"] == jtable.operations().current().lastAssignedPartitionId()
    assert {s["spec-id"] for s in view["specs"]} == set(java_specs)
    for spec in view["specs"]:
        assert [
            {"name": f["name"], "transform": f["transform"], "source-id": f["source-id"],
             "field-id": f["field-id"]}
            for f in spec["fields"]
        ] == java_specs[spec["spec-id"]]["fields"]
        assert spec["default"] == (spec["spec-id"] == jtable.spec().specId())


def test_manifests_files_partitions(built: Built, spark: Any, jvm: Any) -> None:
    jtable = java_table(spark, built.location)
    manifests = check_manifests(spark, built.ident, built.location, jtable, built.format_version)
    files = check_files(spark, built.ident, built.location)
    assert check_files_java(jvm, jtable, built.location, jtable.currentSnapshot().snapshotId()) == files
    check_partitions_table(spark, built.ident, files)
    kinds = sorted({f["content"] for f in files})
    assert kinds == (["data"] if built.label == "v1" else ["data", "position-deletes"])
    if built.label != "v1":
        assert any(m["content"] == "deletes" for m in manifests)
    # --content filters the same listing
    for content in ("data", "deletes", "position-deletes", "equality-deletes"):
        only = icectl_json("inspect", "files", built.location, "--content", content)
        keep = {"data": {"data"}, "deletes": {"position-deletes", "equality-deletes"}}.get(
            content, {content})
        assert [f["file-path"] for f in only] == [f["file-path"] for f in files if f["content"] in keep]


def test_metadata_log(built: Built, spark: Any) -> None:
    log = check_metadata_log(spark, built.ident, built.location)
    jtable = java_table(spark, built.location)
    assert log[-1]["metadata-file"] == jtable.operations().current().metadataFileLocation()
    assert len(log) == len(list(jtable.operations().current().previousFiles())) + 1


# -- what only some tables have --------------------------------------------------------------------


def test_v1_delete_of_whole_files(tables: dict[str, Built], spark: Any) -> None:
    t = tables["v1"]
    snapshots = icectl_json("inspect", "snapshots", t.location)
    delete = snapshots[-1]
    assert delete["summary"]["deleted-data-files"] == "2"
    assert delete["summary"]["deleted-records"] == "2"
    manifests = icectl_json("inspect", "manifests", t.location)
    assert sum(m["deleted-files-count"] for m in manifests) == 2
    # the files view lists only live files: no 'c' partition is left
    files = icectl_json("inspect", "files", t.location)
    assert sorted(f["partition"]["cat"] or "" for f in files) == ["", "a", "a", "b"]
    for f in files:
        assert set(f["partition"]) == {"ts_day", "id_bucket", "cat"}
        day = f["partition"]["ts_day"]
        assert day is None or isinstance(day, str) and len(day) == 10  # "YYYY-MM-DD"
    assert {f["partition"]["ts_day"] for f in files} == {"2024-03-01", "1969-12-31", None}
    # an earlier snapshot still has the deleted files
    before = snapshots[-2]["snapshot-id"]
    check_files(spark, t.ident, t.location, "--snapshot", str(before), version_as_of=before)


def test_v2_position_deletes(tables: dict[str, Built], spark: Any) -> None:
    t = tables["v2"]
    deletes = icectl_json("inspect", "files", t.location, "--content", "position-deletes")
    reference = {p: r for p, r in spark_files(spark, t.ident).items() if r["content"] == 1}
    assert sorted(f["file-path"] for f in deletes) == sorted(reference)
    assert len(deletes) == 3
    assert sum(f["record-count"] for f in deletes) == 3
    data_seq = {f["file-path"]: f["data-sequence-number"]
                for f in icectl_json("inspect", "files", t.location, "--content", "data")}
    for f in deletes:
        assert f["record-count"] >= 1
        # file-scoped position deletes point at a live data file that is not newer than they are
        referenced = f.get("referenced-data-file")
        if referenced is not None:
            assert referenced in data_seq
            assert data_seq[referenced] <= f["data-sequence-number"]
    ops = {s["operation"]: s for s in icectl_json("inspect", "snapshots", t.location)}
    assert int(ops["overwrite"]["summary"]["added-position-deletes"]) == 1


def test_v2_refs_branch_and_tag(tables: dict[str, Built], spark: Any, jvm: Any) -> None:
    t = tables["v2"]
    jtable = java_table(spark, t.location)
    refs = {r["name"]: r for r in icectl_json("inspect", "refs", t.location)}
    assert refs["audit"] == {
        "name": "audit", "type": "branch", "snapshot-id": refs["audit"]["snapshot-id"],
        "max-ref-age-ms": 7 * DAY_MS, "min-snapshots-to-keep": 2, "max-snapshot-age-ms": 3 * DAY_MS,
    }
    assert refs["before_evolution"]["type"] == "tag"
    assert refs["before_evolution"]["max-ref-age-ms"] == 10 * DAY_MS
    assert refs["main"]["snapshot-id"] != refs["audit"]["snapshot-id"]
    assert spark_refs(spark, t.ident)["audit"]["snapshot_id"] == refs["audit"]["snapshot-id"]

    # `inspect snapshot --ref` shows the branch head and its manifests, as Java sees them
    head = icectl_json("inspect", "snapshot", t.location, "--ref", "audit")
    jsnap = jtable.snapshot(refs["audit"]["snapshot-id"])
    assert head["snapshot-id"] == jsnap.snapshotId()
    assert head["parent-snapshot-id"] == jsnap.parentId()
    assert head["sequence-number"] == jsnap.sequenceNumber()
    assert head["operation"] == jsnap.operation() == "append"
    assert head["manifest-list"] == jsnap.manifestListLocation()
    assert "audit" in head["refs"]
    java_manifests = {m.path(): m for m in jsnap.allManifests(jtable.io())}
    assert sorted(m["path"] for m in head["manifests"]) == sorted(java_manifests)
    for m in head["manifests"]:
        jm = java_manifests[m["path"]]
        assert m["partition-spec-id"] == jm.partitionSpecId()
        assert m["sequence-number"] == jm.sequenceNumber()
        assert m["added-files-count"] == jm.addedFilesCount()
        assert m["existing-files-count"] == jm.existingFilesCount()
        assert m["deleted-files-count"] == jm.deletedFilesCount()
        assert m["content"] == ("data" if jm.content().id() == 0 else "deletes")
    # the same snapshot by id
    by_id = icectl_json("inspect", "snapshot", t.location, str(head["snapshot-id"]))
    assert by_id == head

    # files of a tag and of a branch, against Java's reading of their manifests (Spark's
    # `files VERSION AS OF` fails on this table: Iceberg 1.10 cannot time-travel metadata
    # tables across a partition spec change)
    tag_id = refs["before_evolution"]["snapshot-id"]
    tag_files = check_files_java(jvm, jtable, t.location, tag_id, "--ref", "before_evolution")
    assert {f["spec-id"] for f in tag_files} == {0}
    assert {f["content"] for f in tag_files} == {"data", "position-deletes"}
    assert check_files_java(jvm, jtable, t.location, tag_id, "--snapshot", str(tag_id)) == tag_files
    branch_files = check_files_java(jvm, jtable, t.location, refs["audit"]["snapshot-id"],
                                    "--ref", "audit")
    assert {f["spec-id"] for f in branch_files} == {0, 1}
    assert any("br" == f["partition"].get("cat_trunc_2") for f in branch_files)
    # manifests of a ref
    tag_manifests = icectl_json("inspect", "manifests", t.location, "--ref", "before_evolution")
    tag_snapshot = jtable.snapshot(refs["before_evolution"]["snapshot-id"])
    assert sorted(m["path"] for m in tag_manifests) == sorted(
        m.path() for m in tag_snapshot.allManifests(jtable.io()))

    # a missing ref is "not found" (exit 3), and says which refs exist
    missing = run_icectl("inspect", "snapshot", t.location, "--ref", "nope", "--json")
    assert missing.returncode == 3, missing.stderr
    assert "audit" in missing.stderr and missing.stdout == ""


def test_v2_spec_and_schema_evolution(tables: dict[str, Built]) -> None:
    t = tables["v2"]
    parts = icectl_json("inspect", "spec", t.location)
    assert [(s["spec-id"], [f["name"] for f in s["fields"]]) for s in parts["specs"]] == [
        (0, ["id_bucket", "ts_day"]), (1, ["id_bucket", "ts_day", "cat_trunc_2"]),
    ]
    assert parts["last-partition-id"] == 1002
    schema = icectl_json("inspect", "schema", t.location)
    assert [(c["id"], c["name"], c["type"]) for c in schema["columns"]][-1] == (5, "note", "string")


def test_v3_deletion_vectors(tables: dict[str, Built], spark: Any) -> None:
    t = tables["v3"]
    files = icectl_json("inspect", "files", t.location)
    reference = spark_files(spark, t.ident)
    dvs = [f for f in files if f["content"] == "position-deletes"]
    assert dvs, "Spark wrote no deletion vectors"
    data_paths = {f["file-path"] for f in files if f["content"] == "data"}
    for dv in dvs:
        r = reference[dv["file-path"]]
        assert dv["file-format"].upper() == r["file_format"].upper() == "PUFFIN"
        assert dv["referenced-data-file"] == r["referenced_data_file"]
        assert dv["referenced-data-file"] in data_paths
        assert dv["content-offset"] == r["content_offset"]
        assert dv["content-size-in-bytes"] == r["content_size_in_bytes"]
    # one live DV per data file (a second delete on a file replaces its DV)
    referenced = [dv["referenced-data-file"] for dv in dvs]
    assert len(referenced) == len(set(referenced))
    deleted_rows = sum(dv["record-count"] for dv in dvs)
    live_rows = rows_as_dicts(spark, f"SELECT count(*) AS n FROM {t.ident}")[0]["n"]
    assert sum(f["record-count"] for f in files if f["content"] == "data") - deleted_rows == live_rows
    # row lineage: every data file has a first row id, as Spark's files table says
    first_ids = {r["file_path"]: r["first_row_id"] for r in rows_as_dicts(
        spark, f"SELECT file_path, first_row_id FROM {t.ident}.files WHERE content = 0")}
    assert {f["file-path"]: f["first-row-id"] for f in files if f["content"] == "data"} == first_ids


# -- the metadata tables: partitions, entries, all_files, position_deletes ------------------------


def _spark_partition(r: dict[str, Any]) -> dict[str, Any]:
    return {k: json_value(v) for k, v in (r.get("partition") or {}).items()}


@pytest.mark.parametrize("label", ["v2", "v3"])
def test_partitions_table_matches_spark(tables: dict[str, Built], spark: Any, label: str) -> None:
    t = tables[label]
    ref = rows_as_dicts(spark, f"SELECT *, unix_millis(last_updated_at) AS updated_ms FROM {t.ident}.partitions")
    mine = icectl_json("inspect", "partitions", t.location)
    cols = ("spec_id", "record_count", "file_count", "total_data_file_size_in_bytes",
            "position_delete_record_count", "position_delete_file_count",
            "equality_delete_record_count", "equality_delete_file_count", "last_updated_snapshot_id")

    def key(p: dict[str, Any]) -> str:
        return json.dumps(p, sort_keys=True)

    expected = {key(_spark_partition(r)): tuple(r[c] for c in cols) + (r["updated_ms"],) for r in ref}
    got = {key(p["partition"]): tuple(p[c.replace("_", "-")] for c in cols) + (p["last-updated-at-ms"],)
           for p in mine}
    assert got == expected
    assert len(mine) == len(ref)
    if label == "v2":  # the evolved spec's field is part of every row, null for older files
        assert all(set(p["partition"]) == {"id_bucket", "ts_day", "cat_trunc_2"} for p in mine)
        assert any(p["position-delete-file-count"] for p in mine)


@pytest.mark.parametrize("label", ["v2", "v3"])
def test_entries_and_all_files_match_spark(tables: dict[str, Built], spark: Any, label: str) -> None:
    t = tables[label]
    ref = rows_as_dicts(spark, f"SELECT status, snapshot_id, sequence_number, file_sequence_number, "
                               f"data_file.content AS content, data_file.file_path AS file_path, "
                               f"data_file.record_count AS record_count, data_file.spec_id AS spec_id, "
                               f"data_file.file_size_in_bytes AS size, data_file.partition AS partition "
                               f"FROM {t.ident}.entries")
    mine = icectl_json("inspect", "entries", t.location)
    as_row = lambda e: (e["status"], e["snapshot-id"], e["sequence-number"], e["file-sequence-number"],  # noqa: E731
                        e["data-file"]["content"], e["data-file"]["file-path"], e["data-file"]["record-count"],
                        e["data-file"]["spec-id"], e["data-file"]["file-size-in-bytes"])
    assert sorted(map(as_row, mine)) == sorted(  # status 2: deleted entries are listed too
        (r["status"], r["snapshot_id"], r["sequence_number"], r["file_sequence_number"], r["content"],
         r["file_path"], r["record_count"], r["spec_id"], r["size"]) for r in ref)
    assert sorted(json.dumps(e["data-file"]["partition"], sort_keys=True) for e in mine) == sorted(
        json.dumps(_spark_partition(r), sort_keys=True) for r in ref)

    ref_all = rows_as_dicts(spark, f"SELECT content, file_path, record_count, spec_id FROM {t.ident}.all_files")
    all_files = icectl_json("inspect", "all-files", t.location)
    assert sorted((f["content"], f["file-path"], f["record-count"], f["spec-id"]) for f in all_files) == sorted(
        (r["content"], r["file_path"], r["record_count"], r["spec_id"]) for r in ref_all)


@pytest.mark.parametrize("label", ["v2", "v3"])
def test_position_deletes_match_spark(tables: dict[str, Built], spark: Any, label: str) -> None:
    t = tables[label]
    ref = rows_as_dicts(spark, f"SELECT file_path, pos, spec_id, delete_file_path, partition "
                               f"FROM {t.ident}.position_deletes")
    mine = icectl_json("inspect", "position-deletes", t.location)
    assert mine, "Spark wrote no position deletes"
    assert sorted((r["file-path"], r["pos"], r["spec-id"], r["delete-file-path"],
                   json.dumps(r["partition"], sort_keys=True)) for r in mine) == sorted(
        (r["file_path"], r["pos"], r["spec_id"], r["delete_file_path"],
         json.dumps(_spark_partition(r), sort_keys=True)) for r in ref)
