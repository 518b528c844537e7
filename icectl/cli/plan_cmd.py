"""`icectl plan`: which files a filtered scan reads, and why."""

from __future__ import annotations

import sys
from typing import Annotated, Any, Optional

import typer

from icectl.cli.cache_cmd import NoCacheOpt, apply_no_cache
from icectl.cli.common import JsonOpt, TableArg, WarehouseOpt, handle_errors, load_table, parse_time_option
from icectl.cli.output import emit_json, emit_pairs, emit_table, emit_text, fields_selected, json_default
from icectl.errors import InvalidInput
from icectl.expr.parser import FILTER_HELP

PLAN_HELP = """Plan a scan of TABLE: the data files a filter reads, with residual filters and
the delete files that apply, as Iceberg's scan planning (Java newScan().filter(...).planFiles())
computes them.

Manifests are pruned by their partition summaries, files by their partition values and column
metrics (inclusive projection of the filter through every partition transform); the residual
is what remains to check on the rows of each file. --tasks prints the combined read tasks
instead (files split at their split offsets or every --split-size bytes, then bin-packed as
Iceberg does). --explain says, for every manifest and every file, why it was kept or skipped.

Examples:

\b
  icectl plan ./wh/db/events --filter "ts >= '2024-01-02' and ts < '2024-01-03'"
  icectl plan db.events -w ./wh --filter "id in (1, 2, 3)" --explain
  icectl plan ./wh/db/events --as-of 2024-05-01T12:00:00 --tasks --split-size 67108864
  icectl plan ./wh/db/events --from-snapshot 123 --to-snapshot 456 --json

\b
""" + FILTER_HELP


def register(app: typer.Typer) -> None:
    app.command("plan", help=PLAN_HELP, no_args_is_help=True)(plan)


@handle_errors
def plan(
    table: TableArg,
    filter_text: Annotated[Optional[str], typer.Option("--filter", "-f", help="Row filter, e.g. \"id > 5 and day = '2024-01-02'\" (grammar below).")] = None,
    snapshot: Annotated[Optional[int], typer.Option("--snapshot", help="Plan the snapshot with this id (time travel).")] = None,
    ref: Annotated[Optional[str], typer.Option("--ref", help="Plan the snapshot a branch or tag points at.")] = None,
    as_of: Annotated[Optional[str], typer.Option("--as-of", help="Plan the snapshot current at this time: an ISO timestamp (UTC unless it has a zone), epoch milliseconds or a duration ago (36h).")] = None,
    columns: Annotated[Optional[str], typer.Option("--columns", help="Columns the scan reads, comma-separated (checked against the schema; shown in the output).")] = None,
    tasks: Annotated[bool, typer.Option("--tasks", help="Print the combined read tasks instead of the files.")] = False,
    explain: Annotated[bool, typer.Option("--explain", help="Say for every manifest and file why it was kept or skipped.")] = False,
    case_sensitive: Annotated[bool, typer.Option("--case-sensitive", help="Match column names case-sensitively (default: case-insensitive).")] = False,
    from_snapshot: Annotated[Optional[int], typer.Option("--from-snapshot", help="Incremental: plan only files appended after this snapshot (exclusive)...")] = None,
    to_snapshot: Annotated[Optional[int], typer.Option("--to-snapshot", help="...up to this snapshot (inclusive; default: the current one).")] = None,
    split_size: Annotated[Optional[int], typer.Option("--split-size", help="Target split size in bytes (default: read.split.target-size, 128 MiB).")] = None,
    open_file_cost: Annotated[Optional[int], typer.Option("--open-file-cost", help="Weight of opening a file in bytes (default: read.split.open-file-cost, 4 MiB).")] = None,
    lookback: Annotated[Optional[int], typer.Option("--lookback", help="Open bins considered when packing (default: read.split.planning-lookback, 10).")] = None,
    warehouse: WarehouseOpt = None,
    workers: Annotated[Optional[int], typer.Option("--workers", help="Processes decoding manifests the cache does not hold (default: the machine's cores).")] = None,
    out_format: Annotated[Optional[str], typer.Option("--format", help="Output: text, json (as --json) or jsonl (one planned file per line, written as planned).")] = None,
    summary: Annotated[bool, typer.Option("--summary", help="Print counts only (files, records, bytes, delete files, tasks), no per-file output.")] = False,
    no_cache: NoCacheOpt = False,
    json_out: JsonOpt = False,
) -> None:
    from icectl.ops.plan import plan_table

    if filter_text is not None and not filter_text.strip():
        raise InvalidInput("--filter is empty: give a row filter, or leave --filter out to plan every file")
    incremental = from_snapshot is not None or to_snapshot is not None
    if to_snapshot is not None and from_snapshot is None:
        raise InvalidInput("--to-snapshot needs --from-snapshot")
    if incremental and any(x is not None for x in (snapshot, ref, as_of)):
        raise InvalidInput("--from-snapshot/--to-snapshot cannot be combined with --snapshot, --ref or --as-of")
    as_of_ms = parse_time_option(as_of, "--as-of") if as_of is not None else None
    fmt = _output_format(out_format, json_out, summary, tasks, explain)
    if workers is not None and workers < 1:
        raise InvalidInput(f"--workers must be at least 1 (got {workers})")
    apply_no_cache(no_cache)
    t = load_table(table, warehouse)
    cols = None if columns is None else [c for c in columns.split(",")]
    streamed = None
    if fmt == "jsonl":
        from icectl.ops.plan import PlanReport

        lines = PlanReport(t.metadata, None)
        streamed = lambda files: _write_chunks(lines.jsonl_chunks(files, json_default))  # noqa: E731
    report = plan_table(
        t, filter_text, tasks=tasks, explain=explain, as_of_ms=as_of_ms, columns=cols,
        snapshot_id=snapshot, ref=ref, case_sensitive=case_sensitive, from_snapshot=from_snapshot,
        to_snapshot=to_snapshot, split_size=split_size, open_file_cost=open_file_cost,
        lookback=lookback, workers=workers, on_files=streamed)
    if fmt == "jsonl":
        return
    if summary:
        view = report.summary_json()
        if fmt == "json":
            emit_json(view)
        else:
            _print_summary(view)
        return
    if fmt == "json":
        if fields_selected():  # the shared --field selection works on the JSON view
            emit_json(report.to_json())
            return
        # the document json.dumps(report.to_json(), indent=2) gives, rendered column-wise
        _write_chunks(report.json_chunks(json_default), end="\n")
        return
    if tasks or explain:
        _print_text(report.to_json(), tasks, explain)
        return
    emit_table(["path", "partition", "records", "bytes", "residual", "delete-files"],
               report.file_rows())
    _print_summary(report.header_json())


def _output_format(out_format: str | None, json_out: bool, summary: bool, tasks: bool,
                   explain: bool) -> str:
    fmt = "json" if json_out else "text"
    if out_format is not None:
        fmt = out_format.strip().lower()
        if fmt not in ("text", "json", "jsonl"):
            raise InvalidInput(f"--format must be text, json or jsonl (got {out_format!r})")
        if json_out and fmt != "json":
            raise InvalidInput(f"--json cannot be combined with --format {fmt}")
    if fmt == "jsonl" and (summary or tasks or explain):
        other = "--summary" if summary else "--tasks" if tasks else "--explain"
        raise InvalidInput(f"--format jsonl lists planned files: it cannot be combined with {other}")
    if summary and explain:
        raise InvalidInput("--summary prints counts only: it cannot be combined with --explain")
    return fmt


def _write_chunks(chunks: Any, end: str = "") -> None:
    write = sys.stdout.write
    for chunk in chunks:
        write(chunk)
    if end:
        write(end)
    sys.stdout.flush()


def _human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{n} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def _print_text(view: dict[str, Any], tasks: bool, explain: bool) -> None:
    """The text of --explain and --tasks (the file table is printed from the columns)."""
    if explain:
        lines = ["manifests:"]
        for m in view["explain"]["manifests"]:
            verdict = "kept   " if m["kept"] else "skipped"
            extra = f" ({m['matched-files']} of {m['live-files']} files match)" if m["kept"] and m["live-files"] is not None else ""
            lines.append(f"  {verdict} {m['content']:7s} {m['path']}: {m['reason']}{extra}")
        lines.append("files:")
        for d in view["explain"]["files"]:
            verdict = "kept   " if d["kept"] else "skipped"
            lines.append(f"  {verdict} {d['path']}: {d['reason']}")
        emit_text("\n".join(lines))
    if tasks:
        rows = []
        for i, t in enumerate(view["tasks"]):
            splits = ", ".join(f"{s['path']}@{s['start']}+{s['length']}" for s in t["splits"])
            rows.append([i, len(t["splits"]), t["length"], t["delete-files"], splits])
        emit_table(["task", "splits", "bytes", "delete-files", "ranges"], rows)
    _print_summary(view)


def _print_summary(view: dict[str, Any]) -> None:
    s = view["summary"]
    pairs = [
        ("snapshot", view["snapshot-id"]),
        ("filter", view["filter"]),
        ("manifests", f"{s['manifests-total']} total, {s['manifests-scanned']} scanned, "
                      f"{s['manifests-skipped']} skipped"),
        ("data files", f"{s['data-files-matched']} of {s['data-files-total']} "
                       f"({s['records']} records, {_human_bytes(s['bytes'])})"),
        ("delete files", f"{s['delete-files-matched']} of {s['delete-files-total']}"),
    ]
    if "tasks" in s:
        pairs.append(("tasks", s["tasks"]))
    if view["columns"] is not None:
        pairs.append(("columns", ", ".join(view["columns"])))
    emit_pairs(pairs)
