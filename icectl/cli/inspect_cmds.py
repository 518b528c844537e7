"""`icectl inspect VIEW TABLE`: read-only views of a table's metadata."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from icectl.cli.common import values, JsonOpt, RefOpt, SnapshotIdOpt, TableArg, WarehouseOpt, handle_errors, load_table
from icectl.cli.output import emit_json, emit_pairs, emit_table, emit_text, fields_selected
from icectl.ops.read import inspect as views

app = typer.Typer(
    help="""Show a table's metadata: table, schema, partitions, spec, snapshots, snapshot,
history, refs, manifests, files, entries, all-files, all-manifests, all-entries, ancestors,
position-deletes, partition-statistics, metadata-log, statistics. Every view takes --json.

Examples:

  icectl inspect table ./wh/db/events
  icectl inspect snapshot ./wh/db/events --ref main --json
  icectl inspect files db.events -w ./wh --content deletes
""",
    no_args_is_help=True,
    rich_markup_mode=None,
)



def _short(v: Any) -> Any:
    return "" if v is None else v


def _show(v: Any, json_out: bool, columns: list[str], rows: list[list[Any]], title: Optional[str] = None) -> None:
    """A view as its --json object, or as a table of ``rows``. ``--field`` takes the keys of the
    JSON view and the table's column names too (``--field records`` prints the records column)."""
    if fields_selected():
        emit_json(_with_columns(v, columns, rows))
    elif json_out:
        emit_json(v)
    else:
        emit_table(columns, rows, title=title)


def _with_columns(v: Any, columns: list[str], rows: list[list[Any]]) -> Any:
    """The view with the text table's columns added under their names where it has no such key:
    to each element of a list view whose rows are its elements, else as lists of the column's
    values (one line per row)."""
    if isinstance(v, list) and len(v) == len(rows) and all(isinstance(e, dict) for e in v):
        return [{**{c: cell for c, cell in zip(columns, row)}, **e} for e, row in zip(v, rows)]
    if isinstance(v, dict):
        added = {c: [row[i] for row in rows] for i, c in enumerate(columns) if c not in v}
        return {**v, **added}
    return v


@app.command("table", help="Summary of a table: location, format, current snapshot, schema, spec, sort order, properties, totals.\n\nExample: icectl inspect table ./wh/db/events")
@handle_errors
def inspect_table(table: TableArg, warehouse: WarehouseOpt = None, json_out: JsonOpt = False) -> None:
    t = load_table(table, warehouse)
    v = views.metadata_summary(t.metadata, t.metadata_location)
    if json_out:
        emit_json(v)
        return
    cur = v["current-snapshot"]
    pairs: list[tuple[str, Any]] = [
        ("location", v["location"]),
        ("metadata-file", v["metadata-file"]),
        ("table-uuid", v["table-uuid"]),
        ("format-version", v["format-version"]),
        ("last-updated", v["last-updated"]),
        ("current-snapshot", f"{cur['snapshot-id']} ({cur['operation']}, {cur['timestamp']})" if cur else "none"),
        ("snapshots", v["snapshot-count"]),
        ("refs", ", ".join(v["refs"]) or "none"),
        ("schema", f"(id {v['current-schema-id']}) {v['schema-string']}"),
        ("partition-spec", f"(id {v['default-spec-id']}) {v['partition-spec-string']}"),
        ("sort-order", f"(id {v['default-sort-order-id']}) {v['sort-order-string']}"),
    ]
    if v["identifier-fields"]:
        pairs.append(("identifier-fields", ", ".join(v["identifier-fields"])))
    for k, n in v["totals"].items():
        pairs.append((k, _short(n)))
    for k, val in v["properties"].items():
        pairs.append((f"property {k}", val))
    emit_pairs(pairs)


@app.command("schema", help="Columns of the current schema (or --schema-id) with ids, types and required flags.\n\nExample: icectl inspect schema ./wh/db/events --json")
@handle_errors
def inspect_schema(
    table: TableArg,
    schema_id: Annotated[Optional[int], typer.Option("--schema-id", help="Show this schema instead of the current one.")] = None,
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    t = load_table(table, warehouse)
    v = views.schema_view(t.metadata, schema_id)
    title = f"schema {v['schema-id']}{' (current)' if v['current'] else ''}"
    if v["identifier-fields"]:
        title += f", identifier fields: {', '.join(v['identifier-fields'])}"
    _show(v, json_out, ["id", "name", "type", "required", "doc"],
          [[c["id"], c["name"], c["type"], c["required"], c["doc"]] for c in v["columns"]], title=title)


def _partitions(table: str, warehouse: Optional[str], json_out: bool) -> None:
    t = load_table(table, warehouse)
    v = views.partitions_view(t.metadata)
    rows = []
    for s in v["specs"]:
        if not s["fields"]:
            rows.append([s["spec-id"], s["default"], "", "", "", ""])
        for f in s["fields"]:
            rows.append([s["spec-id"], s["default"], f["field-id"], f["name"], f["transform"], f["source-column"]])
    _show(v, json_out, ["spec-id", "default", "field-id", "name", "transform", "source"], rows)


@app.command("partitions", help="Per partition value of the current snapshot (or --snapshot/--ref): records, data files, size, position and equality delete counts, last update - like the reference's `partitions` table. --spec shows the partition specs instead (as `inspect spec`).\n\nExamples:\n\n  icectl inspect partitions ./wh/db/events\n\n  icectl inspect partitions ./wh/db/events --spec --json")
@handle_errors
def inspect_partitions(
    table: TableArg, snapshot: SnapshotIdOpt = None, ref: RefOpt = None,
    spec: Annotated[bool, typer.Option("--spec", help="Show the partition specs (the `inspect spec` view).")] = False,
    warehouse: WarehouseOpt = None, json_out: JsonOpt = False,
) -> None:
    if spec:
        _partitions(table, warehouse, json_out)
        return
    from icectl.ops.read import inspect_tables

    t = load_table(table, warehouse)
    s = views.select_snapshot(t.metadata, snapshot, ref)
    v = inspect_tables.partitions_table(t.io, t.metadata, s)
    _show(v, json_out, ["partition", "spec", "records", "files", "size", "pos-del-recs", "pos-del-files",
                        "eq-del-recs", "eq-del-files", "last-updated-at", "last-snapshot"],
                       [[_partition_text(r.get("partition")), _short(r["spec-id"]), r["record-count"], r["file-count"],
                         r["total-data-file-size-in-bytes"], r["position-delete-record-count"],
                         r["position-delete-file-count"], r["equality-delete-record-count"],
                         r["equality-delete-file-count"], _short(r["last-updated-at"]),
                         _short(r["last-updated-snapshot-id"])] for r in v])


def _partition_text(p: Optional[dict[str, Any]]) -> str:
    if not p:
        return ""
    return "/".join(f"{k}={'null' if v is None else v}" for k, v in p.items())


@app.command("spec", help="All partition specs of the table; the default one is marked (also `inspect partitions --spec`).\n\nExample: icectl inspect spec ./wh/db/events --json")
@handle_errors
def inspect_spec(table: TableArg, warehouse: WarehouseOpt = None, json_out: JsonOpt = False) -> None:
    _partitions(table, warehouse, json_out)


@app.command("entries", help="Every entry of the current snapshot's manifests (or --snapshot/--ref), deleted ones included: status (0 existing, 1 added, 2 deleted), snapshot, sequence numbers and the data file - like the reference's `entries` table.\n\nExample: icectl inspect entries ./wh/db/events --json")
@handle_errors
def inspect_entries(
    table: TableArg, snapshot: SnapshotIdOpt = None, ref: RefOpt = None,
    warehouse: WarehouseOpt = None, json_out: JsonOpt = False,
) -> None:
    from icectl.ops.read import inspect_tables

    t = load_table(table, warehouse)
    s = views.select_snapshot(t.metadata, snapshot, ref)
    v = inspect_tables.entries_table(t.io, t.metadata, s)
    _show(v, json_out, ["status", "snapshot-id", "seq", "file-seq", "content", "records", "path"],
                       [[e["status-name"], _short(e["snapshot-id"]), _short(e["sequence-number"]),
                         _short(e["file-sequence-number"]), views.FILE_CONTENT_NAMES.get(e["data-file"]["content"]),
                         e["data-file"]["record-count"], e["data-file"]["file-path"]] for e in v])


@app.command("all-files", help="Live data and delete files of every manifest reachable from any snapshot, each manifest read once - like the reference's `all_files` table.\n\nExample: icectl inspect all-files ./wh/db/events --json")
@handle_errors
def inspect_all_files(table: TableArg, warehouse: WarehouseOpt = None, json_out: JsonOpt = False) -> None:
    from icectl.ops.read import inspect_tables

    t = load_table(table, warehouse)
    v = inspect_tables.all_files_table(t.io, t.metadata)
    _show(v, json_out, ["content", "spec", "records", "size", "path"],
                       [[views.FILE_CONTENT_NAMES.get(f["content"]), f["spec-id"], f["record-count"],
                         f["file-size-in-bytes"], f["file-path"]] for f in v])


@app.command("all-manifests", help="The manifests of every snapshot of every branch and tag, once per snapshot that lists them (reference-snapshot-id), with data and delete file counts and partition summaries - like the reference's `all_manifests` table (its columns, named with - for _).\n\nExample: icectl inspect all-manifests ./wh/db/events --json")
@handle_errors
def inspect_all_manifests(table: TableArg, warehouse: WarehouseOpt = None, json_out: JsonOpt = False) -> None:
    from icectl.ops.read import inspect_all

    t = load_table(table, warehouse)
    v = inspect_all.all_manifests_table(t.io, t.metadata)
    _show(v, json_out, ["snapshot", "content", "spec", "added-snapshot", "data-files", "delete-files", "path"],
          [[m["reference-snapshot-id"], "deletes" if m["content"] else "data", m["partition-spec-id"],
            _short(m["added-snapshot-id"]),
            f"+{m['added-data-files-count']} ={m['existing-data-files-count']} -{m['deleted-data-files-count']}",
            f"+{m['added-delete-files-count']} ={m['existing-delete-files-count']} -{m['deleted-delete-files-count']}",
            m["path"]] for m in v])


@app.command("all-entries", help="Every entry (deleted ones too) of every manifest reachable from any snapshot of any branch or tag, each manifest read once: status (0 existing, 1 added, 2 deleted), snapshot, sequence numbers, the data file and its readable metrics - like the reference's `all_entries` table (its columns, named with - for _).\n\nExample: icectl inspect all-entries ./wh/db/events --json")
@handle_errors
def inspect_all_entries(table: TableArg, warehouse: WarehouseOpt = None, json_out: JsonOpt = False) -> None:
    from icectl.ops.read import inspect_all

    t = load_table(table, warehouse)
    v = inspect_all.all_entries_table(t.io, t.metadata)
    status = {0: "existing", 1: "added", 2: "deleted"}
    _show(v, json_out, ["status", "snapshot-id", "seq", "file-seq", "content", "records", "path"],
          [[status.get(e["status"], e["status"]), _short(e["snapshot-id"]), _short(e["sequence-number"]),
            _short(e["file-sequence-number"]), views.FILE_CONTENT_NAMES.get(e["data-file"]["content"]),
            e["data-file"]["record-count"], e["data-file"]["file-path"]] for e in v])


@app.command("ancestors", help="A snapshot (the current one by default, or ID, or the head of --ref) and its ancestors, newest first, with their timestamps in milliseconds - like the reference's `ancestors_of` procedure.\n\nExamples:\n\n  icectl inspect ancestors ./wh/db/events\n  icectl inspect ancestors ./wh/db/events 4348573049 --json\n  icectl inspect ancestors ./wh/db/events --ref audit")
@handle_errors
def inspect_ancestors(
    table: TableArg,
    snapshot_id: Annotated[Optional[int], typer.Argument(metavar="ID", help="Snapshot id (default: current).", show_default=False)] = None,
    ref: Annotated[Optional[str], typer.Option("--ref", help="Start from the snapshot this branch or tag points at (instead of ID).")] = None,
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    from icectl.ops.read import inspect_all

    t = load_table(table, warehouse)
    s = views.select_snapshot(t.metadata, snapshot_id, ref)
    v = inspect_all.ancestors_table(t.metadata, s)
    _show(v, json_out, ["snapshot-id", "timestamp", "time"],
          [[a["snapshot-id"], a["timestamp"], views.iso_ms(a["timestamp"])] for a in v])


@app.command("position-deletes", help="Rows of the position delete files and deletion vectors of the current snapshot (or --snapshot/--ref): data file, position, partition, spec, delete file - like the reference's `position_deletes` table (without `row`).\n\nExample: icectl inspect position-deletes ./wh/db/events --json")
@handle_errors
def inspect_position_deletes(
    table: TableArg, snapshot: SnapshotIdOpt = None, ref: RefOpt = None,
    warehouse: WarehouseOpt = None, json_out: JsonOpt = False,
) -> None:
    from icectl.ops.read import inspect_tables

    t = load_table(table, warehouse)
    s = views.select_snapshot(t.metadata, snapshot, ref)
    v = inspect_tables.position_deletes_table(t.io, t.metadata, s)
    _show(v, json_out, ["file-path", "pos", "spec", "delete-file-path"],
                       [[r["file-path"], r["pos"], r["spec-id"], r["delete-file-path"]] for r in v])


def _summary_brief(summary: dict[str, str]) -> str:
    keys = ("added-data-files", "added-records", "deleted-data-files", "deleted-records",
            "added-delete-files", "removed-delete-files", "total-records", "total-data-files")
    return ", ".join(f"{k}={summary[k]}" for k in keys if k in summary)


@app.command("partition-statistics", help="The registered partition statistics files (of --snapshot only, if given) and their rows: per partition and spec, data files, records, size, position and equality delete counts, deletion vectors, last update - as `icectl stats partitions` and Spark's compute_partition_stats write them.\n\nExample: icectl inspect partition-statistics ./wh/db/events --json")
@handle_errors
def inspect_partition_statistics(table: TableArg, snapshot: SnapshotIdOpt = None, warehouse: WarehouseOpt = None,
                                 json_out: JsonOpt = False) -> None:
    from icectl.ops.stats.partition_stats import read_partition_stats

    t = load_table(table, warehouse)
    v = [f.to_json() for f in read_partition_stats(t.io, t.metadata, snapshot)]
    _show(v, json_out, ["snapshot", "partition", "spec", "records", "files", "size", "pos-del-recs",
                        "pos-del-files", "dvs", "eq-del-recs", "eq-del-files", "last-updated-at", "last-snapshot"],
          [[f["snapshot-id"], _partition_text(r["partition"]), r["spec-id"], r["data-record-count"],
            r["data-file-count"], r["total-data-file-size-in-bytes"], r["position-delete-record-count"],
            r["position-delete-file-count"], r["dv-count"], r["equality-delete-record-count"],
            r["equality-delete-file-count"], _short(r["last-updated-at"]), _short(r["last-updated-snapshot-id"])]
           for f in v for r in f["rows"]])


@app.command("snapshots", help="Every snapshot, oldest first, with its operation, refs, WAP id (marked staged while main has not reached it) and summary.\n\nExample: icectl inspect snapshots ./wh/db/events")
@handle_errors
def inspect_snapshots(table: TableArg, warehouse: WarehouseOpt = None, json_out: JsonOpt = False) -> None:
    t = load_table(table, warehouse)
    v = views.snapshots_view(t.metadata)
    _show(v, json_out, ["snapshot-id", "parent-id", "seq", "timestamp", "operation", "refs", "wap-id", "summary"],
                       [[s["snapshot-id"], s["parent-snapshot-id"], s["sequence-number"], s["timestamp"], s["operation"],
                         ",".join(s["refs"]), _wap_cell(s), _summary_brief(s["summary"])] for s in v])


def _wap_cell(s: dict[str, Any]) -> str:
    """A snapshot's WAP id, marked while it is staged (main has not reached it)."""
    if not s["wap-id"]:
        return ""
    return f"{s['wap-id']} (staged)" if s["staged"] else s["wap-id"]


def _manifest_rows(ms: list[dict[str, Any]]) -> list[list[Any]]:
    return [[m["content"], m["partition-spec-id"], m["sequence-number"], m["added-snapshot-id"],
             m["added-files-count"], m["existing-files-count"], m["deleted-files-count"], m["path"]] for m in ms]


MANIFEST_COLUMNS = ["content", "spec", "seq", "added-snapshot", "added", "existing", "deleted", "path"]


@app.command("snapshot", help="One snapshot (the current one by default, or ID, or the head of --ref): summary, manifest list and its manifests with counts.\n\nExamples:\n\n  icectl inspect snapshot ./wh/db/events 4348573049\n  icectl inspect snapshot ./wh/db/events --ref audit\n  icectl inspect snapshot ./wh/db/events --field snapshot-id")
@handle_errors
def inspect_snapshot(
    table: TableArg,
    snapshot_id: Annotated[Optional[int], typer.Argument(metavar="ID", help="Snapshot id (default: current).", show_default=False)] = None,
    ref: Annotated[Optional[str], typer.Option("--ref", help="Show the snapshot this branch or tag points at (instead of ID).")] = None,
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    t = load_table(table, warehouse)
    s = views.select_snapshot(t.metadata, snapshot_id, ref)
    if s is None:
        if json_out:
            emit_json(None)
        else:
            emit_text("the table has no snapshots")
        return
    v = views.snapshot_view(t.io, t.metadata, s)
    if json_out:
        emit_json(v)
        return
    pairs: list[tuple[str, Any]] = [(k, _short(v[k])) for k in (
        "snapshot-id", "parent-snapshot-id", "sequence-number", "timestamp", "operation", "schema-id", "manifest-list")]
    pairs.append(("refs", ", ".join(v["refs"]) or ""))
    if "first-row-id" in v:
        pairs += [("first-row-id", _short(v["first-row-id"])), ("added-rows", _short(v["added-rows"]))]
    pairs += [(f"summary {k}", val) for k, val in v["summary"].items()]
    emit_pairs(pairs)
    emit_text("")
    emit_table(MANIFEST_COLUMNS, _manifest_rows(v["manifests"]), title=f"manifests ({len(v['manifests'])})")


@app.command("history", help="When each snapshot became current, and whether it is an ancestor of the current one.\n\nExample: icectl inspect history ./wh/db/events")
@handle_errors
def inspect_history(table: TableArg, warehouse: WarehouseOpt = None, json_out: JsonOpt = False) -> None:
    t = load_table(table, warehouse)
    v = views.history_view(t.metadata)
    _show(v, json_out, ["made-current-at", "snapshot-id", "parent-id", "is-current-ancestor"],
                       [[h["made-current-at"], h["snapshot-id"], h["parent-id"], h["is-current-ancestor"]] for h in v])


@app.command("refs", help="Branches and tags with their snapshots and retention settings.\n\nExample: icectl inspect refs ./wh/db/events --json")
@handle_errors
def inspect_refs(table: TableArg, warehouse: WarehouseOpt = None, json_out: JsonOpt = False) -> None:
    t = load_table(table, warehouse)
    v = views.refs_view(t.metadata)
    _show(v, json_out, ["name", "type", "snapshot-id", "max-ref-age-ms", "min-snapshots-to-keep", "max-snapshot-age-ms"],
                       [[r["name"], r["type"], r["snapshot-id"], r["max-ref-age-ms"], r["min-snapshots-to-keep"],
                         r["max-snapshot-age-ms"]] for r in v])


@app.command("manifests", help="Manifests of the current snapshot (or --snapshot/--ref) with file and row counts and partition summaries.\n\nExample: icectl inspect manifests ./wh/db/events")
@handle_errors
def inspect_manifests(
    table: TableArg, snapshot: SnapshotIdOpt = None, ref: RefOpt = None,
    warehouse: WarehouseOpt = None, json_out: JsonOpt = False,
) -> None:
    t = load_table(table, warehouse)
    s = views.select_snapshot(t.metadata, snapshot, ref)
    v = views.manifests_view(t.io, t.metadata, s)
    _show(v, json_out, MANIFEST_COLUMNS, _manifest_rows(v))


@app.command("files", help="Live data and delete files of the current snapshot (or --snapshot/--ref): partition, records, size, sequence numbers.\n\nExample: icectl inspect files ./wh/db/events --content deletes --json")
@handle_errors
def inspect_files(
    table: TableArg, snapshot: SnapshotIdOpt = None, ref: RefOpt = None,
    content: Annotated[Optional[str], typer.Option("--content", metavar="data|deletes|position-deletes|equality-deletes", autocompletion=values("data", "deletes", "position-deletes", "equality-deletes"), help="Only: data, deletes, position-deletes or equality-deletes.")] = None,
    warehouse: WarehouseOpt = None, json_out: JsonOpt = False,
) -> None:
    from icectl.errors import InvalidInput

    if content is not None and content not in ("data", "deletes", "position-deletes", "equality-deletes"):
        raise InvalidInput(f"--content must be data, deletes, position-deletes or equality-deletes (got {content!r})")
    t = load_table(table, warehouse)
    s = views.select_snapshot(t.metadata, snapshot, ref)
    v = views.files_view(t.io, t.metadata, s, content)
    _show(v, json_out, ["content", "partition", "records", "size", "data-seq", "file-seq", "path"],
                       [[f["content"], f["partition-path"], f["record-count"], f["file-size-in-bytes"],
                         f["data-sequence-number"], f["file-sequence-number"], f["file-path"]] for f in v])


@app.command("metadata-log", help="Previous metadata files and the current one, oldest first.\n\nExample: icectl inspect metadata-log ./wh/db/events")
@handle_errors
def inspect_metadata_log(table: TableArg, warehouse: WarehouseOpt = None, json_out: JsonOpt = False) -> None:
    t = load_table(table, warehouse)
    v = views.metadata_log_view(t.metadata, t.metadata_location)
    _show(v, json_out, ["timestamp", "current", "metadata-file"], [[e["timestamp"], e["current"], e["metadata-file"]] for e in v])


@app.command("statistics", help="The table's statistics files (Puffin, as Spark's compute_table_stats and `icectl stats compute` write them) and their blobs: type, columns, ndv, and each theta sketch decoded (estimate, exact).\n\nExample: icectl inspect statistics ./wh/db/events --json")
@handle_errors
def inspect_statistics(table: TableArg, warehouse: WarehouseOpt = None, json_out: JsonOpt = False) -> None:
    from icectl.ops.stats.view import statistics_view

    t = load_table(table, warehouse)
    v = statistics_view(t.io, t.metadata)
    rows = [[f["snapshot-id"], f["statistics-path"], b["type"], ",".join(str(c) for c in b["columns"]),
             _short(b["ndv"]), _short(b["sketch-exact"]), _short(f["error"])]
            for f in v["statistics"] for b in f["blobs"] or [{"type": "", "columns": [], "ndv": None, "sketch-exact": None}]]
    _show(v, json_out, ["snapshot-id", "statistics-path", "type", "columns", "ndv", "exact", "error"], rows)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="inspect")
