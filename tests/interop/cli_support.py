"""Helpers for interop tests that drive the ``icectl`` command line as a user does.

The CLI runs through tests/clirun.py (in this process unless a child process is asked for);
``--json`` output is parsed. Spark's
metadata tables are read into plain dicts with timestamps as epoch milliseconds (computed inside
Spark, so no Python-side time zone can shift them) and partition values in the JSON single-value
form icectl uses (dates as ``YYYY-MM-DD``).
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import subprocess
from typing import Any

from clirun import icectl, icectl_process
from clirun import icectl_json as clirun_json

_ENV = {"ICECTL_WAREHOUSE": None, "NO_COLOR": "1"}  # no warehouse of the developer's shell


def run_icectl(*args: Any, timeout: float = 120, process: bool = False
               ) -> subprocess.CompletedProcess[str]:
    """Run ``icectl ARGS...`` (tests/clirun.py: in this process, or with ``process`` a child
    process, needed where runs happen at once in threads); never raises on a non-zero exit."""
    run = icectl_process if process else icectl
    return run(*args, timeout=timeout, env=_ENV)


def icectl_json(*args: Any, process: bool = False) -> Any:
    """Run ``icectl ARGS... --json``; assert it succeeded and return the parsed output."""
    return clirun_json(*args, process=process, env=_ENV)


def json_value(value: Any) -> Any:
    """A value read from Spark in the JSON single-value form (Iceberg spec, Appendix D)."""
    if isinstance(value, dt.datetime):
        raise TypeError("timestamps must be converted inside Spark (unix_micros) to stay exact")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex().upper()
    return value


def rows_as_dicts(spark: Any, query: str) -> list[dict[str, Any]]:
    """Rows of a Spark query as dicts (nested rows become dicts too)."""
    return [row.asDict(recursive=True) for row in spark.sql(query).collect()]


def icectl_rows(location: Any, filter_text: str | None, *extra: str) -> list[tuple]:
    """Rows of ``icectl scan --format jsonl`` (ARGS ``extra``), each a sorted tuple of
    (column, JSON value) pairs, sorted."""
    args = ["scan", str(location), "--format", "jsonl", *extra]
    if filter_text is not None:
        args += ["--filter", filter_text]
    r = run_icectl(*args)
    assert r.returncode == 0, r.stderr
    return sorted((tuple(sorted(json.loads(line).items())) for line in r.stdout.splitlines()),
                  key=repr)


def spark_rows(spark: Any, ident: str, filter_text: str | None, cols: str = "*") -> list[tuple]:
    """Rows of Spark's SELECT in the form of :func:`icectl_rows`."""
    where = f" WHERE {filter_text}" if filter_text else ""
    out = []
    for row in spark.sql(f"SELECT {cols} FROM {ident}{where}").collect():
        out.append(tuple(sorted((k, json_value(v)) for k, v in row.asDict().items())))
    return sorted(out, key=repr)


def spark_snapshots(spark: Any, ident: str) -> dict[int, dict[str, Any]]:
    rows = rows_as_dicts(
        spark,
        "SELECT unix_millis(committed_at) AS committed_ms, snapshot_id, parent_id, operation, "
        f"manifest_list, summary FROM {ident}.snapshots",
    )
    return {r["snapshot_id"]: r for r in rows}


def spark_history(spark: Any, ident: str) -> list[dict[str, Any]]:
    return rows_as_dicts(
        spark,
        "SELECT unix_millis(made_current_at) AS made_current_ms, snapshot_id, parent_id, "
        f"is_current_ancestor FROM {ident}.history",
    )


def spark_refs(spark: Any, ident: str) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in rows_as_dicts(spark, f"SELECT * FROM {ident}.refs")}


def spark_files(spark: Any, ident: str, *, version_as_of: str | int | None = None) -> dict[str, dict]:
    """``<table>.files`` keyed by file path (partition values in JSON form)."""
    suffix = ""
    if version_as_of is not None:
        suffix = (
            f" VERSION AS OF {version_as_of}"
            if isinstance(version_as_of, int)
            else f" VERSION AS OF '{version_as_of}'"
        )
    rows = rows_as_dicts(
        spark,
        "SELECT content, file_path, file_format, spec_id, partition, record_count, "
        "file_size_in_bytes, referenced_data_file, content_offset, content_size_in_bytes "
        f"FROM {ident}.files{suffix}",
    )
    out = {}
    for r in rows:
        r["partition"] = {k: json_value(v) for k, v in (r["partition"] or {}).items()}
        out[r["file_path"]] = r
    return out


def spark_manifests(spark: Any, ident: str) -> dict[str, dict[str, Any]]:
    return {r["path"]: r for r in rows_as_dicts(spark, f"SELECT * FROM {ident}.manifests")}


def spark_metadata_log(spark: Any, ident: str) -> list[dict[str, Any]]:
    return rows_as_dicts(
        spark,
        "SELECT unix_millis(timestamp) AS ts_ms, file, latest_snapshot_id, latest_schema_id, "
        f"latest_sequence_number FROM {ident}.metadata_log_entries ORDER BY timestamp, file",
    )


ICEBERG_CONTENT = {0: "data", 1: "position-deletes", 2: "equality-deletes"}


def icectl_content_code(name: str) -> int:
    return {v: k for k, v in ICEBERG_CONTENT.items()}[name]


# -- comparisons of `icectl inspect` views with the reference --------------------------------------
#
# Each check reads one view through the CLI and the same facts through Spark's metadata table
# (and Iceberg Java where Spark shows nothing), and asserts they agree. They return icectl's
# parsed view so that a test can assert more on it.


def check_snapshots(spark: Any, ident: str, location: str, jtable: Any) -> list[dict[str, Any]]:
    mine = icectl_json("inspect", "snapshots", location)
    ref = spark_snapshots(spark, ident)
    assert sorted(s["snapshot-id"] for s in mine) == sorted(ref)
    for s in mine:
        r = ref[s["snapshot-id"]]
        assert s["parent-snapshot-id"] == r["parent_id"]
        assert s["timestamp-ms"] == r["committed_ms"]
        assert s["operation"] == r["operation"]
        assert s["manifest-list"] == r["manifest_list"]
        summary = dict(s["summary"])
        assert "operation" not in summary  # a field of its own, as in Spark's snapshots table
        assert summary == r["summary"]
        java = jtable.snapshot(s["snapshot-id"])
        assert s["sequence-number"] == java.sequenceNumber()
        assert s["schema-id"] == _java_int(java.schemaId())
        if "first-row-id" in s:
            assert s["first-row-id"] == _java_int(java.firstRowId())
            assert s["added-rows"] == _java_int(java.addedRows())
    # oldest first
    assert [s["timestamp-ms"] for s in mine] == sorted(s["timestamp-ms"] for s in mine)
    return mine


def check_history(spark: Any, ident: str, location: str) -> list[dict[str, Any]]:
    mine = icectl_json("inspect", "history", location)
    ref = spark_history(spark, ident)
    assert [
        (h["made-current-at-ms"], h["snapshot-id"], h["parent-id"], h["is-current-ancestor"])
        for h in mine
    ] == [
        (r["made_current_ms"], r["snapshot_id"], r["parent_id"], r["is_current_ancestor"])
        for r in ref
    ]
    return mine


def check_refs(spark: Any, ident: str, location: str) -> list[dict[str, Any]]:
    mine = icectl_json("inspect", "refs", location)
    ref = spark_refs(spark, ident)
    assert sorted(r["name"] for r in mine) == sorted(ref)
    for r in mine:
        s = ref[r["name"]]
        assert r["type"].upper() == s["type"]
        assert r["snapshot-id"] == s["snapshot_id"]
        assert r["max-ref-age-ms"] == s["max_reference_age_in_ms"]
        assert r["min-snapshots-to-keep"] == s["min_snapshots_to_keep"]
        assert r["max-snapshot-age-ms"] == s["max_snapshot_age_in_ms"]
    return mine


def check_manifests(
    spark: Any, ident: str, location: str, jtable: Any, format_version: int
) -> list[dict[str, Any]]:
    mine = icectl_json("inspect", "manifests", location)
    ref = spark_manifests(spark, ident)
    assert sorted(m["path"] for m in mine) == sorted(ref)
    java = {}
    current = jtable.currentSnapshot()
    if current is not None:
        for jm in current.allManifests(jtable.io()):
            java[jm.path()] = jm
    for m in mine:
        r = ref[m["path"]]
        kind = "data" if r["content"] == 0 else "deletes"
        assert m["content"] == kind
        assert m["length"] == r["length"]
        assert m["partition-spec-id"] == r["partition_spec_id"]
        assert m["added-snapshot-id"] == r["added_snapshot_id"]
        prefix = "" if kind == "data" else "delete_"
        counts = (
            r[f"added_{prefix or 'data_'}files_count"],
            r[f"existing_{prefix or 'data_'}files_count"],
            r[f"deleted_{prefix or 'data_'}files_count"],
        )
        assert (m["added-files-count"], m["existing-files-count"], m["deleted-files-count"]) == counts
        summaries = [
            {
                "contains_null": p["contains-null"],
                "contains_nan": p["contains-nan"],
                "lower_bound": p["lower-bound"],
                "upper_bound": p["upper-bound"],
            }
            for p in m["partition-summaries"]
        ]
        assert summaries == r["partition_summaries"]
        jm = java[m["path"]]
        assert m["sequence-number"] == jm.sequenceNumber()
        assert m["min-sequence-number"] == jm.minSequenceNumber()
        assert m["added-rows-count"] == _java_int(jm.addedRowsCount())
        assert m["existing-rows-count"] == _java_int(jm.existingRowsCount())
        assert m["deleted-rows-count"] == _java_int(jm.deletedRowsCount())
        if format_version >= 3:
            assert m["first-row-id"] == _java_int(jm.firstRowId())
    return mine


def check_files(
    spark: Any,
    ident: str,
    location: str,
    *extra: str,
    version_as_of: str | int | None = None,
) -> list[dict[str, Any]]:
    """`inspect files` (optionally with --snapshot/--ref in ``extra``) against ``<t>.files``
    and ``<t>.entries`` (sequence numbers, status)."""
    mine = icectl_json("inspect", "files", location, *extra)
    ref = spark_files(spark, ident, version_as_of=version_as_of)
    assert sorted(f["file-path"] for f in mine) == sorted(ref)
    for f in mine:
        r = ref[f["file-path"]]
        assert f["content"] == ICEBERG_CONTENT[r["content"]]
        assert f["file-format"].upper() == r["file_format"].upper()
        assert f["spec-id"] == r["spec_id"]
        assert f["record-count"] == r["record_count"]
        assert f["file-size-in-bytes"] == r["file_size_in_bytes"]
        # Spark's partition struct is the union of all specs' fields; others are null.
        assert set(f["partition"]) <= set(r["partition"]), (f["partition"], r["partition"])
        assert {k: f["partition"].get(k) for k in r["partition"]} == r["partition"]
        assert f.get("referenced-data-file") == r["referenced_data_file"]
        assert f.get("content-offset") == r["content_offset"]
        assert f.get("content-size-in-bytes") == r["content_size_in_bytes"]
    if version_as_of is None:
        entries = {
            e["file_path"]: e
            for e in rows_as_dicts(
                spark,
                "SELECT status, snapshot_id, sequence_number, file_sequence_number, "
                f"data_file.file_path AS file_path FROM {ident}.entries WHERE status < 2",
            )
        }
        assert sorted(entries) == sorted(f["file-path"] for f in mine)
        for f in mine:
            e = entries[f["file-path"]]
            assert f["status"] == {0: "existing", 1: "added"}[e["status"]]
            assert f["snapshot-id"] == e["snapshot_id"]
            assert f["data-sequence-number"] == e["sequence_number"]
            assert f["file-sequence-number"] == e["file_sequence_number"]
    return mine


def check_partitions_table(spark: Any, ident: str, files: list[dict[str, Any]]) -> None:
    """Spark's ``<t>.partitions`` (data files only) equals icectl's files grouped by partition."""
    rows = rows_as_dicts(spark, f"SELECT partition, record_count, file_count FROM {ident}.partitions")
    ref = {}
    for r in rows:
        part = {k: json_value(v) for k, v in r["partition"].items()}
        ref[json.dumps(part, sort_keys=True)] = (r["record_count"], r["file_count"])
    names = next(iter(rows))["partition"].keys() if rows else []
    mine: dict[str, list[int]] = {}
    for f in files:
        if f["content"] != "data":
            continue
        key = json.dumps({k: f["partition"].get(k) for k in names}, sort_keys=True)
        acc = mine.setdefault(key, [0, 0])
        acc[0] += f["record-count"]
        acc[1] += 1
    assert {k: tuple(v) for k, v in mine.items()} == ref


def check_metadata_log(spark: Any, ident: str, location: str) -> list[dict[str, Any]]:
    mine = icectl_json("inspect", "metadata-log", location)
    ref = spark_metadata_log(spark, ident)
    assert [(e["timestamp-ms"], e["metadata-file"]) for e in mine] == [
        (r["ts_ms"], r["file"]) for r in ref
    ]
    assert [e["current"] for e in mine] == [False] * (len(mine) - 1) + [True]
    return mine


def java_live_files(jvm: Any, jtable: Any, snapshot_id: int) -> dict[str, dict[str, Any]]:
    """Live data and delete files of a snapshot as Iceberg Java reads them from its manifests."""
    manifest_files = jvm.org.apache.iceberg.ManifestFiles
    io, specs = jtable.io(), jtable.specs()
    out: dict[str, dict[str, Any]] = {}
    for manifest in jtable.snapshot(snapshot_id).allManifests(io):
        if manifest.content().id() == 0:
            reader = manifest_files.read(manifest, io, specs)
        else:
            reader = manifest_files.readDeleteManifest(manifest, io, specs)
        iterator = reader.iterator()  # live entries only
        try:
            while iterator.hasNext():
                f = iterator.next()
                out[f.location()] = {
                    "content": int(f.content().id()),
                    "file-format": str(f.format().toString()),
                    "spec-id": int(f.specId()),
                    "partition-path": str(specs.get(f.specId()).partitionToPath(f.partition())),
                    "record-count": int(f.recordCount()),
                    "file-size-in-bytes": int(f.fileSizeInBytes()),
                    "data-sequence-number": _java_int(f.dataSequenceNumber()),
                    "file-sequence-number": _java_int(f.fileSequenceNumber()),
                    "referenced-data-file": f.referencedDataFile(),
                    "content-offset": _java_int(f.contentOffset()),
                    "content-size-in-bytes": _java_int(f.contentSizeInBytes()),
                    "manifest": manifest.path(),
                }
        finally:
            reader.close()
    return out


def check_files_java(
    jvm: Any, jtable: Any, location: str, snapshot_id: int, *extra: str
) -> list[dict[str, Any]]:
    """`inspect files ARGS` against Java's reading of snapshot ``snapshot_id``'s manifests."""
    mine = icectl_json("inspect", "files", location, *extra)
    ref = java_live_files(jvm, jtable, snapshot_id)
    assert sorted(f["file-path"] for f in mine) == sorted(ref)
    for f in mine:
        r = ref[f["file-path"]]
        assert f["content"] == ICEBERG_CONTENT[r["content"]]
        assert f["file-format"].upper() == r["file-format"].upper()
        assert f["manifest"] == r["manifest"]
        for key in ("spec-id", "partition-path", "record-count", "file-size-in-bytes",
                    "data-sequence-number", "file-sequence-number"):
            assert f[key] == r[key], key
        for key in ("referenced-data-file", "content-offset", "content-size-in-bytes"):
            assert f.get(key) == r[key], key
    return mine


def java_json(jvm: Any, parser: str, value: Any) -> Any:
    """``org.apache.iceberg.<parser>.toJson(value)`` parsed (SchemaParser, PartitionSpecParser...)."""
    return json.loads(getattr(jvm.org.apache.iceberg, parser).toJson(value))


def _java_int(value: Any) -> Any:
    """A boxed Java Long/Integer as a Python int (None stays None)."""
    return None if value is None else int(value)
