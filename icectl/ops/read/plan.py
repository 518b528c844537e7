"""Plan a scan and give the plan its JSON view (`icectl plan`).

The planning itself is :func:`icectl.scan.plan_scan`; this module wraps its result with the
table metadata needed to render partitions, and builds the stable ``--json`` view documented
in the README (files or combined tasks, and with ``explain`` the reason for every manifest and
file).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

from icectl.spec.metadata import TableMetadata

if TYPE_CHECKING:
    from icectl.table.table import Table
    from icectl.scan.plan_result import PlannedFile, PlanResult, ScanTask

__all__ = ["PlanReport", "plan_table"]


@dataclass
class PlanReport:
    """A scan plan (``result``, a :class:`icectl.scan.planner.PlanResult`) and how to show it."""

    metadata: TableMetadata
    result: Any
    with_tasks: bool = False
    with_explain: bool = False
    _partitions: dict[tuple, tuple] = field(default_factory=dict, repr=False)

    @property
    def files(self) -> list[PlannedFile]:
        """The planned data files (``PlannedFile``: path, partition, record count, residual,
        delete files), built on first use."""
        return self.result.files

    @property
    def file_count(self) -> int:
        return self.result.file_count

    @property
    def record_count(self) -> int:
        return self.result.total_records

    def to_arrow(self) -> Any:
        """The planned files as a ``pyarrow.Table`` (path, file-format, spec-id,
        partition-path, record-count, file-size-in-bytes, residual, delete-files: their
        number), read from the decoded columns: no per-file object is built for files that
        share a residual and have no delete files."""
        import pyarrow as pa

        cols: dict[str, list] = {k: [] for k in (
            "path", "file-format", "spec-id", "partition-path", "record-count",
            "file-size-in-bytes", "residual", "delete-files")}
        for r in self.result.file_runs:
            c, n = r.cols, len(r)
            pick = (lambda col: list(col)) if r.whole else (lambda col: [col[i] for i in r.idx])
            cols["path"] += pick(c.file_path)
            cols["file-format"] += pick(c.file_format)
            cols["spec-id"] += [r.spec_id] * n
            paths = self._partition_paths(r.spec_id, [pick(p) for p in c.partitions], n)
            cols["partition-path"] += list(paths)
            cols["record-count"] += pick(c.record_count)
            cols["file-size-in-bytes"] += pick(c.file_size_in_bytes)
            if r.uniform:
                cols["residual"] += [str(r.residual)] * n
                cols["delete-files"] += [0] * n
            else:
                cols["residual"] += [str(f.residual) for f in r.files]
                cols["delete-files"] += [len(f.deletes) for f in r.files]
        types = {"spec-id": pa.int32(), "record-count": pa.int64(),
                 "file-size-in-bytes": pa.int64(), "delete-files": pa.int32()}
        return pa.table({k: pa.array(v, types.get(k, pa.string())) for k, v in cols.items()})

    def to_json(self) -> dict[str, Any]:
        r = self.result
        view = _header(r)
        if self.with_tasks:
            tasks = r.tasks()
            view["summary"]["tasks"] = len(tasks)
            view["tasks"] = [_task_view(t) for t in tasks]
        else:
            view["files"] = [_file_view(f, self._partition) for f in r.files]
        if self.with_explain:
            view["explain"] = _explain_view(r)
        return view

    def json_chunks(self, default: Callable[[Any], Any] | None = None) -> Iterator[str]:
        """The text of ``json.dumps(self.to_json(), indent=2, ensure_ascii=False)`` in chunks,
        rendered from the decoded columns (:mod:`icectl.ops.read.plan_render`)."""
        from icectl.ops.read.plan_render import part_chunks

        return part_chunks(*self.json_parts(default))

    def json_parts(self, default: Callable[[Any], Any] | None = None,
                   ) -> tuple[str, list[tuple[int, Callable[[], str]]], str]:
        """The text of :meth:`json_chunks` as a head, pieces (``(files, render)``, one per
        manifest's planned files, rendered in any process, written in order) and a tail."""
        from icectl.ops.read.plan_render import document_parts

        if self.with_tasks:
            return json.dumps(self.to_json(), indent=2, ensure_ascii=False, default=default), [], ""
        view = _header(self.result)
        if self.with_explain:
            view["explain"] = _explain_view(self.result)
        return document_parts(view, self.result.file_runs, self._partition, _delete_view,
                              default)

    def jsonl_chunks(self, file_runs: Iterable[Any] | None = None,
                     default: Callable[[Any], Any] | None = None) -> Iterator[str]:
        """Each planned file (of ``file_runs``, FileRun s, default the plan's) as one JSON line:
        the objects of the document's ``files`` list."""
        from icectl.ops.read.plan_render import file_lines

        return file_lines(self.result.file_runs if file_runs is None else file_runs,
                          self._partition, _delete_view, default)

    def header_json(self) -> dict[str, Any]:
        """The document without ``files``, ``tasks`` and ``explain``."""
        return _header(self.result)

    def file_rows(self) -> list[tuple[str, ...]]:
        """(path, partition path, records, bytes, residual, delete file paths) of each planned
        file as the text cells the table prints, built run by run from the decoded columns."""
        from itertools import repeat

        out: list[tuple[str, ...]] = []
        residuals: dict[int, str] = {}

        def residual_text(expr: Any) -> str:
            got = residuals.get(id(expr))
            if got is None:
                got = residuals[id(expr)] = str(expr)
            return got

        for r in self.result.file_runs:
            cols, idx, n = r.cols, r.idx, len(r)
            pick = (lambda c: c) if r.whole else (lambda c: [c[i] for i in idx])
            if r.uniform:
                res: Any = repeat(residual_text(r.residual), n)
                dels: Any = repeat("", n)
            else:
                res = [residual_text(f.residual) for f in r.files]
                dels = [" ".join(d.path for d in f.deletes) for f in r.files]
            out.extend(zip(pick(cols.file_path), self._partition_paths(r.spec_id, [
                pick(c) for c in cols.partitions], n), _texts(pick(cols.record_count)),
                _texts(pick(cols.file_size_in_bytes)), res, dels))
        return out

    def _partition_paths(self, spec_id: int, columns: list, n: int) -> Any:
        """The partition path of each of ``n`` files from its partition columns."""
        from itertools import repeat

        from icectl.ops.read.plan_render import per_partition

        got = per_partition(columns, n, lambda _key, values: self._partition(spec_id, values)[1])
        return repeat(got, n) if isinstance(got, str) else got

    def summary_json(self) -> dict[str, Any]:
        """The document without per-file output: the header, its summary and the task count."""
        view = _header(self.result)
        view["summary"]["tasks"] = self.result.task_count()
        return view

    def _partition(self, spec_id: int, values: tuple) -> tuple[dict[str, Any], str]:
        from icectl.spec.partition_identity import partition_key
        from icectl.spec.views import partition_json

        key = (spec_id, partition_key(values))  # -0.0 and 0.0 are different partitions
        got = self._partitions.get(key)
        if got is None:
            try:
                got = partition_json(self.metadata, spec_id, values)
            except Exception:  # noqa: BLE001 - a spec whose source column was dropped
                got = ({str(i): repr(v) for i, v in enumerate(values)}, "")
            self._partitions[key] = got
        return got


def plan_table(table: Table, filter_text: str | None = None, *, tasks: bool = False,
               explain: bool = False, as_of_ms: int | None = None,
               columns: str | Sequence[str] | None = None, **options: Any) -> PlanReport:
    """Plan a scan of ``table``; ``options`` are those of :func:`icectl.scan.plan_scan`
    (``workers``, ``on_files`` among them)."""
    from icectl.scan import plan_scan

    options.setdefault("filter_deletes", True)  # the reference's planFiles
    result = plan_scan(table, filter_text, as_of=as_of_ms, columns=columns, explain=explain, **options)
    return PlanReport(table.metadata, result, with_tasks=tasks, with_explain=explain)


def _summary(r: PlanResult) -> dict[str, Any]:
    deletes = r.delete_files
    return {
        "manifests-total": len(r.manifests),
        "manifests-scanned": r.manifests_scanned,
        "manifests-skipped": r.manifests_skipped,
        "data-files-total": r.data_files_total,
        "data-files-matched": r.file_count,
        "records": r.total_records,
        "bytes": r.total_bytes,
        "delete-files-total": r.delete_files_total,
        "delete-files-matched": len(deletes),
        "delete-bytes": sum(d.scan_size for d in deletes),
    }


def _header(r: PlanResult) -> dict[str, Any]:
    return {
        "table": r.location,
        "snapshot-id": r.snapshot_id,
        "schema-id": r.schema.schema_id,
        "filter": str(r.filter),
        "case-sensitive": r.case_sensitive,
        "columns": list(r.columns) if r.columns is not None else None,
        "incremental": None if r.incremental is None else {
            "from-snapshot-id": r.incremental[0], "to-snapshot-id": r.incremental[1]},
        "split-size": r.split_size,
        "open-file-cost": r.open_file_cost,
        "lookback": r.lookback,
        "summary": _summary(r),
    }


def _delete_view(d: Any) -> dict[str, Any]:
    return {
        "path": d.path,
        "content": d.content_name,
        "file-format": d.file_format,
        "record-count": d.record_count,
        "file-size-in-bytes": d.file_size_in_bytes,
        "data-sequence-number": d.data_sequence_number,
        "referenced-data-file": d.referenced_data_file,
        "content-offset": d.content_offset,
        "content-size-in-bytes": d.content_size_in_bytes,
        "equality-ids": list(d.equality_ids) if d.equality_ids is not None else None,
    }


def _file_view(f: PlannedFile, partition: Callable[[int, tuple], tuple[dict[str, Any], str]]) -> dict[str, Any]:
    pj, ppath = partition(f.spec_id, f.partition)
    return {
        "path": f.path,
        "file-format": f.file_format,
        "spec-id": f.spec_id,
        "partition": pj,
        "partition-path": ppath,
        "record-count": f.record_count,
        "file-size-in-bytes": f.file_size_in_bytes,
        "data-sequence-number": f.data_sequence_number,
        "residual": str(f.residual),
        "delete-files": [_delete_view(d) for d in f.deletes],
    }


def _task_view(t: ScanTask) -> dict[str, Any]:
    return {
        "length": t.length,
        "files": len(t.files),
        "delete-files": len({d.path for f in t.files for d in f.deletes}),
        "splits": [{"path": f.path, "start": start, "length": length,
                    "residual": str(f.residual), "delete-files": [d.path for d in f.deletes]}
                   for f, start, length in t.splits],
    }


def _explain_view(r: PlanResult) -> dict[str, Any]:
    return {
        "manifests": [{"path": m.path, "content": m.content, "spec-id": m.spec_id,
                       "added-snapshot-id": m.added_snapshot_id, "kept": m.kept,
                       "reason": m.reason, "live-files": m.files, "matched-files": m.matched}
                      for m in r.manifests],
        "files": [{"path": d.path, "manifest": d.manifest_path, "kept": d.kept,
                   "reason": d.reason} for d in r.file_decisions],
    }


def _texts(values: Any) -> list[str]:
    """Numbers as table cells (an absent value: empty)."""
    if None in values:
        return ["" if v is None else str(v) for v in values]
    return list(map(str, values))
