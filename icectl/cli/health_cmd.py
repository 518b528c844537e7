"""`icectl health`."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from icectl.cli.common import JsonOpt, Progress, WarehouseOpt, complete_table, handle_errors, load_table
from icectl.cli.output import emit_json, emit_table, emit_text, err
from icectl.errors import EXIT_MAINTENANCE_DUE, InvalidInput

HEALTH_HELP = """Judge TABLE's health from its metadata: data file sizes, row-level deletes,
manifests, snapshots and metadata, partitions, layout (and orphan files with --list-files).
Nothing is written and no data file is read.

Each dimension shows its figures, the threshold it is judged by (a table property where Iceberg
has one: write.target-file-size-bytes, commit.manifest.target-size-bytes, history.expire.*;
else an icectl.health.* property or its documented default) and its verdicts. A verdict names
the command that fixes it and the expected effect (before -> after).

With --warehouse and no TABLE: one row per table of the warehouse, the worst first (--sort).

Exit code 0 when nothing is due, 14 when maintenance is due (a verdict of severity due; for a
warehouse: in any table).

Examples:

\b
  icectl health ./wh/db/events
  icectl health db.events -w ./wh --json
  icectl health ./wh/db/events --columns id,ts
  icectl health -w ./wh --sort data-files
"""

SORTS = ("worst", "name", "data-files", "data-bytes", "small-file-share", "delete-files",
         "manifests", "snapshots")


def register(app: typer.Typer) -> None:
    app.command("health", help=HEALTH_HELP, no_args_is_help=True)(health)


@handle_errors
def health(
    table: Annotated[Optional[str], typer.Argument(
        metavar="TABLE", show_default=False, autocompletion=complete_table,
        help="Table location (directory path or URL), or DB.TABLE with --warehouse; "
             "left out with --warehouse: every table of the warehouse.")] = None,
    columns: Annotated[Optional[str], typer.Option(
        "--columns", metavar="COLS",
        help="Judge the layout on these columns (comma-separated; default: the sort order's).")] = None,
    list_files: Annotated[bool, typer.Option(
        "--list-files", help="Also list the table's location for orphan files (can be slow).")] = False,
    sort: Annotated[str, typer.Option(
        "--sort", metavar="KEY", help=f"Order of the warehouse rows: {', '.join(SORTS)} (default: worst).")] = "worst",
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    from icectl.ops.health import table_health

    if sort not in SORTS:
        raise InvalidInput(f"unknown sort key {sort!r} (use one of {', '.join(SORTS)})", argument="sort")
    cols = [c.strip() for c in columns.split(",") if c.strip()] if columns else None
    if table is None:
        if warehouse is None:
            raise InvalidInput("give TABLE, or a warehouse to judge every table of", argument="table")
        _warehouse(warehouse, sort, cols, list_files, json_out)
        return
    tbl = load_table(table, warehouse)
    with Progress() as progress:
        progress = progress if not json_out else None
        report = table_health(tbl, columns=cols, list_files=list_files, progress=progress,
                              identifier=table if warehouse else None)
    if json_out:
        emit_json(report.to_json())
    else:
        _render(report)
    if report.due:
        raise typer.Exit(EXIT_MAINTENANCE_DUE)


def _warehouse(warehouse: str, sort: str, cols: Any, list_files: bool, json_out: bool) -> None:
    from icectl.ops.health.warehouse import warehouse_health

    with Progress() as progress:
        result = warehouse_health(warehouse, sort=sort, columns=cols, list_files=list_files,
                                  progress=progress if not json_out else None)
    if json_out:
        emit_json(result.to_json())
    else:
        rows = [(r["identifier"], r["status"], r["due"], r["warn"], r["data-files"],
                 _share(r["small-file-share"]), r["delete-files"], r["data-manifests"],
                 r["snapshots"], r["worst"] or "") for r in result.rows()]
        emit_table(["table", "status", "due", "warn", "data-files", "small", "delete-files", "manifests",
                    "snapshots", "worst verdict"], rows)
    if result.due:
        raise typer.Exit(EXIT_MAINTENANCE_DUE)


def _share(v: Any) -> str:
    return "" if v is None else f"{v:.0%}"


# the figures the one-screen view shows per dimension (--json has them all)
HEADLINES = {
    "data-files": ("data-files", "data-bytes", "small-file-share", "median-file-bytes"),
    "deletes": ("delete-files", "delete-files-per-data-file", "deleted-row-share", "read-amplification",
                "dangling-delete-files"),
    "manifests": ("manifests", "delete-manifests", "manifest-bytes", "manifests-per-partition-average"),
    "snapshots": ("snapshots", "refs", "expirable-snapshots", "bytes-held-by-expirable-snapshots",
                  "metadata-file-bytes"),
    "partitions": ("partitions", "skew", "gini", "tiny-partitions", "empty-partitions"),
    "orphans": ("orphan-files", "orphan-bytes"),
}


def _figure(name: str, v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if name.endswith("share"):
        return f"{v:.0%}"
    if name.endswith("bytes") and isinstance(v, (int, float)):
        return _size(v)
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v)


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _headline(d: Any) -> str:
    if d.skipped is not None:
        return d.skipped
    if d.name == "layout":
        return ", ".join(f"{c['column']}: depth {_figure('', c['overlap-depth-average'])} avg, "
                         f"{_figure('', c['overlap-depth-max'])} max" for c in d.figures["columns"])
    return ", ".join(f"{k} {_figure(k, d.figures.get(k))}" for k in HEADLINES.get(d.name, ()))


def _render(report: Any) -> None:
    """The one-screen text view: a line per dimension, then the verdicts with their commands."""
    from icectl.ops.health.model import command_text

    counts = ", ".join(f"{n} {s}" for s, n in report.counts().items())
    emit_text(f"{report.table}: {report.status} ({counts})")
    emit_table(["dimension", "status", "figures"], [(d.name, d.status, _headline(d)) for d in report.dimensions])
    for v in report.verdicts:
        text = f"[{v.severity}] {v.dimension}: {v.problem}"
        if v.command is not None:
            text += f"\n    fix: {command_text(v.command)}"
        if v.effects:
            text += "\n    expected: " + "; ".join(
                f"{e.measure} {_figure(e.unit, e.before)} -> {_figure(e.unit, e.after)}"
                + ("" if e.unit in ("bytes", "share") else f" {e.unit}") for e in v.effects)
        emit_text(text)
    for p in report.policy.problems:
        err(f"icectl: warning: {p}")
