"""The body of `icectl plan`, free of typer: the typer command (plan_cmd) and the direct path
(:mod:`icectl.cli.entry`, which parses a plain plan command line without importing typer) both
run it."""

from __future__ import annotations

import sys
from typing import Any, Optional

from icectl.cli.output import emit_json, emit_pairs, emit_table, emit_text, fields_selected, json_default
from icectl.errors import InvalidInput


def run_plan(table: str, filter_text: Optional[str] = None, snapshot: Optional[int] = None,
             ref: Optional[str] = None, as_of: Optional[str] = None,
             columns: Optional[str] = None, tasks: bool = False, explain: bool = False,
             case_sensitive: bool = False, from_snapshot: Optional[int] = None,
             to_snapshot: Optional[int] = None, split_size: Optional[int] = None,
             open_file_cost: Optional[int] = None, lookback: Optional[int] = None,
             warehouse: Optional[str] = None, workers: Optional[int] = None,
             out_format: Optional[str] = None, summary: bool = False, no_cache: bool = False,
             json_out: bool = False) -> None:
    """`icectl plan` with its options' values (parameter names as the typer command's)."""
    from icectl.cli.runner import apply_no_cache, load_table, parse_time_option
    from icectl.ops.read.plan import plan_table

    as_of_ms = parse_time_option(as_of, "--as-of") if as_of is not None else None
    fmt = _output_format(out_format, json_out, summary, tasks, explain)
    apply_no_cache(no_cache)
    t = load_table(table, warehouse)
    streamed = None
    if fmt == "jsonl":
        from icectl.ops.read.plan import PlanReport

        lines = PlanReport(t.metadata, None)
        streamed = lambda run: _write_chunks(lines.jsonl_chunks([run], json_default))  # noqa: E731
    report = plan_table(
        t, filter_text, tasks=tasks, explain=explain, as_of_ms=as_of_ms, columns=columns,
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
        # the document json.dumps(report.to_json(), indent=2) gives, rendered column-wise, the
        # files of a large plan on every core (--workers)
        from icectl.cli.parallel_out import write_document
        from icectl.scan.parallel import check_workers

        head, pieces, tail = report.json_parts(json_default)
        write_document(sys.stdout, head, pieces, tail + "\n", check_workers(workers))
        sys.stdout.flush()
        return
    if tasks or explain:
        _print_text(report.to_json(), tasks, explain)
        return
    emit_table(["path", "partition", "records", "bytes", "residual", "delete-files"],
               report.file_rows(), text_cells=True)
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


def _write_chunks(chunks: Any) -> None:
    write = sys.stdout.write
    for chunk in chunks:
        write(chunk)
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
