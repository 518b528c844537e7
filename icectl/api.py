"""The public Python API: ``import icectl`` and work on tables from a PySpark job or a notebook.

::

    import icectl

    t = icectl.load_table("db.events", warehouse="/data/wh")     # or a location, or a metadata file
    plan = t.plan("day = '2024-01-02'")                          # the files a scan reads
    rows = t.scan("id > 5", columns=["id", "day"]).to_arrow()    # Arrow, deletes applied
    t.delete("id in (3, 7)", mode="merge-on-read")
    t.compact(engine="spark")                                    # runs in the active Spark session

Every method runs the same operation as the command of the same name and returns the result
object that command renders: ``result.to_json()`` is what ``icectl <command> --json`` prints.
Errors are :mod:`icectl.errors` kinds (``icectl.InvalidInput``, ``icectl.NotFound``, ...).
Filters are text in the filter grammar of ``icectl plan --help``; times are ``datetime`` objects,
epoch milliseconds or text (``2024-06-01T00:00:00Z``, ``7d``).

A table object keeps the table it loaded and follows its own commits; call :meth:`Table.refresh`
to see other writers' commits. Decoded manifests stay cached in the process, so planning the
same table again reads nothing it has already decoded.
"""

from __future__ import annotations

import datetime as _dt
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

from icectl import command_files
from icectl.errors import InvalidInput

if TYPE_CHECKING:
    from icectl.ops.write.append import AppendResult
    from icectl.ops.write.arrow_rows import ScanResult
    from icectl.ops.maintain.compact import CompactResult
    from icectl.ops.maintain.compact_deletes import CompactDeletesResult
    from icectl.ops.maintain.expire import ExpireResult
    from icectl.ops.maintain.maintain import MaintainResult
    from icectl.ops.read.plan import PlanReport
    from icectl.ops.delete.shared_plan import DeleteResult
    from icectl.ops.delete.upsert import UpsertResult
    from icectl.ops.write.rows import WriteResult
    from icectl.spec.metadata import TableMetadata
    from icectl.table.table import Table as _Table

__all__ = ["load_table", "Table"]


def load_table(location_or_identifier: Any, warehouse: Any = None,
               storage_options: Mapping[str, Any] | None = None, *, catalog: str | None = None,
               catalog_uri: str | None = None) -> "Table":
    """The table at a location (directory path or URL), a metadata file named directly (read
    only), ``namespace.table`` under ``warehouse`` (Spark's Hadoop catalog layout), or
    ``namespace.table`` of the SQL catalog ``catalog`` (a ``.pyiceberg.yaml`` entry; or the
    database ``catalog_uri``; default ``ICECTL_CATALOG``), resolved as the command line resolves
    its TABLE argument. ``storage_options`` go to fsspec for object stores (over
    ``ICECTL_STORAGE_OPTIONS``)."""
    from icectl.catalog.resolve import CatalogChoice
    from icectl.catalog.resolve import load_table as resolve_and_load
    from icectl.io.storage.files import FileIO

    import os

    ident = os.fspath(location_or_identifier) if hasattr(location_or_identifier, "__fspath__") \
        else location_or_identifier
    if not isinstance(ident, str) or not ident.strip():
        raise InvalidInput("give a table location, metadata file or namespace.table identifier",
                           argument="location_or_identifier")
    io = FileIO(dict(storage_options or {}))
    return Table(resolve_and_load(ident, None if warehouse is None else os.fspath(warehouse),
                                  CatalogChoice(catalog, catalog_uri), io=io))


def _parse_filter(text: Any) -> Any:
    """A filter given as text, parsed here once (None: every row; the parser refuses what is
    not text and empty text); an expression of :mod:`icectl.expr` is taken as it is."""
    from icectl.expr.expressions import Expression
    from icectl.expr.parser import parse_filter

    if text is None or isinstance(text, Expression):
        return text
    return parse_filter(text)


def time_ms(value: Any, what: str) -> int | None:
    """A point in time as epoch milliseconds: a ``datetime`` (naive means UTC), a ``date``,
    epoch milliseconds, or text as the command line's time options take it."""
    from icectl.spec.timetext import parse_time_ms

    if value is None:
        return None
    if isinstance(value, bool):
        raise InvalidInput(f"invalid {what} {value!r}", argument=what)
    if isinstance(value, int):
        return value
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        return int(value.timestamp() * 1000)
    if isinstance(value, _dt.date):
        return time_ms(_dt.datetime(value.year, value.month, value.day), what)
    if isinstance(value, _dt.timedelta):
        from icectl.spec.timetext import now_ms

        return now_ms() - int(value.total_seconds() * 1000)
    if isinstance(value, str):
        return parse_time_ms(value, what.replace("_", " "))
    raise InvalidInput(f"invalid {what} {value!r}: a datetime, epoch milliseconds or text",
                       argument=what)


@contextmanager
def _operation() -> Iterator[None]:
    """One operation that may write files, as the command line runs one: the files it wrote
    are removed when it fails (kept when its commit may have landed)."""
    command_files.begin()
    try:
        yield
    except BaseException as e:
        command_files.abort(e)
        raise


def _ref(ref: str | None, branch: str | None) -> str | None:
    if ref is not None and branch is not None and ref != branch:
        raise InvalidInput("give a ref or a branch, not both", argument="branch")
    return ref if ref is not None else branch


class Table:
    """An Iceberg table of a filesystem or object store (see :func:`load_table`)."""

    def __init__(self, table: _Table) -> None:
        self._table = table

    def __repr__(self) -> str:
        return f"icectl.Table({self._table.location!r}, version={self._table.version})"

    # -- state -----------------------------------------------------------------------------

    @property
    def location(self) -> str:
        return self._table.location

    @property
    def metadata(self) -> TableMetadata:
        """The table's current :class:`icectl.spec.metadata.TableMetadata`."""
        return self._table.metadata

    @property
    def metadata_location(self) -> str:
        return self._table.metadata_location

    @property
    def current_snapshot_id(self) -> int | None:
        return self._table.metadata.current_snapshot_id

    @property
    def table(self) -> _Table:
        """The underlying :class:`icectl.table.table.Table` (for the lower-level modules)."""
        return self._table

    def refresh(self) -> "Table":
        """Load the newest version (other writers' commits); returns this table."""
        self._table.refresh()
        return self

    # -- reading ---------------------------------------------------------------------------

    def plan(self, filter: Any = None, *, snapshot_id: int | None = None, ref: str | None = None,
             branch: str | None = None, as_of: Any = None, columns: Any = None,
             case_sensitive: bool = False, from_snapshot: int | None = None,
             to_snapshot: int | None = None, tasks: bool = False, explain: bool = False,
             split_size: int | None = None, open_file_cost: int | None = None,
             lookback: int | None = None, workers: int | None = None) -> PlanReport:
        """Plan a scan: the data files a filter reads, with their residuals and delete files, as
        ``icectl plan`` does. Returns an :class:`icectl.ops.read.plan.PlanReport`: ``to_json()`` is
        ``icectl plan --json`` (``tasks``/``explain`` as its options), ``files`` the planned
        files (built on first use); ``file_count``, ``record_count``, ``summary_json()`` and
        ``to_arrow()`` (a row per file) answer from the decoded columns."""
        from icectl.ops.read.plan import plan_table

        return plan_table(
            self._table, None, filter_expr=_parse_filter(filter), tasks=tasks, explain=explain,
            as_of_ms=time_ms(as_of, "as_of"), columns=columns, snapshot_id=snapshot_id,
            ref=_ref(ref, branch), case_sensitive=case_sensitive, from_snapshot=from_snapshot,
            to_snapshot=to_snapshot, split_size=split_size, open_file_cost=open_file_cost,
            lookback=lookback, workers=workers)

    def scan(self, filter: Any = None, *, columns: Any = None, snapshot_id: int | None = None,
             ref: str | None = None, branch: str | None = None, as_of: Any = None,
             from_snapshot: int | None = None, to_snapshot: int | None = None,
             case_sensitive: bool = False, with_metadata: bool = False,
             batch_rows: int | None = None) -> ScanResult:
        """Read rows as ``icectl scan`` does (deletes applied, columns found by field id); the
        scan is planned now and read when the result is consumed (a
        :class:`icectl.ops.write.arrow_rows.ScanResult`: ``to_arrow()``, ``to_batches()``, ``count()``)."""
        from icectl.ops.write.arrow_rows import ScanResult
        from icectl.scan.reader import DEFAULT_BATCH_ROWS, open_scan

        s = open_scan(self._table, None, filter_expr=_parse_filter(filter), columns=columns,
                      snapshot_id=snapshot_id, ref=_ref(ref, branch), as_of=time_ms(as_of, "as_of"),
                      case_sensitive=case_sensitive, with_metadata=with_metadata,
                      batch_rows=batch_rows or DEFAULT_BATCH_ROWS, from_snapshot=from_snapshot,
                      to_snapshot=to_snapshot)
        return ScanResult(s)

    # -- changing --------------------------------------------------------------------------

    def write(self, data: Any, *, branch: str = "main", file_format: str | None = None,
              summary: Mapping[str, str] | None = None, ignore_extra_columns: bool = False,
              rounding: str | None = None) -> WriteResult:
        """Append rows (an Arrow table, or a Parquet, CSV or JSON-lines file) as one snapshot,
        as ``icectl write``; returns its :class:`icectl.ops.write.rows.WriteResult`."""
        from icectl.ops.write.append import check_summary_properties
        from icectl.ops.write.arrow_rows import as_rows
        from icectl.ops.compute.fit import check_rounding
        from icectl.ops.write.rows import write_rows

        check_summary_properties(summary)
        check_rounding(rounding)
        with _operation():
            return write_rows(self._table, as_rows(data), file_format=file_format,
                              summary_properties=dict(summary or {}), branch=branch,
                              ignore_extra_columns=ignore_extra_columns, rounding=rounding)

    def append(self, files: Any, *, branch: str = "main", partition: Mapping[str, str] | None = None,
               file_format: str | None = None, summary: Mapping[str, str] | None = None,
               skip_existing: bool | str = False, workers: int | None = None,
               idempotency_key: str | None = None) -> AppendResult:
        """Register existing data files (paths) as one append snapshot, as ``icectl append``;
        returns its :class:`icectl.ops.write.append.AppendResult`."""
        from icectl.ops.write.append import append_files, check_summary_properties

        paths = [files] if isinstance(files, str) else [str(p) for p in files]
        check_summary_properties(summary)
        with _operation():
            return append_files(self._table, paths, partition_values=partition,
                                file_format=file_format, summary_properties=dict(summary or {}),
                                branch=branch, max_workers=workers, skip_existing=skip_existing,
                                idempotency_key=idempotency_key)

    def stage(self, wap_id: str | None) -> "Table":
        """Stage the data writes made through this object from now on (write, append, delete,
        upsert) under the write-audit-publish id ``wap_id``, as ``--wap-id`` does and as Spark's
        ``spark.wap.id`` does for a session (the table property ``write.wap.enabled`` must be
        true); None stops staging. Returns this object."""
        from icectl.ops.metadata.wap import stage_writes

        if wap_id is None:
            self._table.wap_id = None
            return self
        stage_writes(self._table, wap_id)
        return self

    def publish(self, wap_id: str) -> Any:
        """Publish the snapshot staged with ``wap_id`` onto main, as ``icectl snapshot publish``
        (Spark's ``publish_changes``); returns its :class:`icectl.ops.metadata.wap.PublishResult`."""
        from icectl.ops.metadata.wap import publish_changes

        with _operation():
            return publish_changes(self._table, wap_id)

    def delete(self, filter: str, *, mode: str | None = None, branch: str | None = None,
               dry_run: bool = False, case_sensitive: bool = False) -> DeleteResult:
        """Delete the rows matching ``filter`` as one snapshot, as ``icectl delete --filter``:
        ``mode`` copy-on-write or merge-on-read (default: ``write.delete.mode``). Returns its
        :class:`icectl.ops.delete.merge_on_read.DeleteResult`."""
        from icectl.ops.delete.merge_on_read import delete_rows

        with _operation():
            return delete_rows(self._table, filter, mode=mode, branch=branch,
                               dry_run=dry_run, case_sensitive=case_sensitive)

    def upsert(self, data: Any, on: Sequence[str] | str, *, branch: str | None = None,
               file_format: str | None = None, dry_run: bool = False,
               rounding: str | None = None) -> UpsertResult:
        """Replace the rows whose key columns ``on`` equal a row of ``data`` (an Arrow table or a
        file) and add the others, as ``icectl upsert --key``; returns its
        :class:`icectl.ops.delete.upsert.UpsertResult`."""
        from icectl.ops.write.arrow_rows import as_rows
        from icectl.ops.delete.upsert import upsert_rows

        with _operation():  # the key columns are checked before anything is written
            return upsert_rows(self._table, as_rows(data), on, file_format=file_format,
                               branch=branch, dry_run=dry_run, rounding=rounding)

    def compact(self, filter: str | None = None, *, engine: Any = "local", spark: Any = None,
                workers: int | None = None, strategy: str = "binpack", sort_order: str | None = None,
                target_file_size: int | None = None, min_input_files: int = 5,
                delete_file_threshold: int | None = None, partial_progress: int | None = None,
                branch: str | None = None, deletes: bool = False,
                dry_run: bool = False) -> CompactResult | CompactDeletesResult:
        """Rewrite small files (or, with ``deletes``, delete files) as ``icectl compact``, the work
        run by ``engine``: ``"local"`` (``workers`` processes), ``"spark"`` (the active Spark
        session, or ``spark``, a SparkSession) or an engine object. Returns its
        :class:`icectl.ops.maintain.compact.CompactResult` (``CompactDeletesResult`` with ``deletes``)."""
        from icectl.engines import open_engine

        if deletes:
            from icectl.ops.maintain.compact_deletes import refuse_options_not_for_deletes

            refuse_options_not_for_deletes(filter, sort_order, delete_file_threshold,
                                           partial_progress, strategy)
        with _operation(), open_engine(engine, workers=workers, session=spark) as eng:
            if deletes:
                from icectl.ops.maintain.compact_deletes import compact_deletes

                return compact_deletes(self._table, engine=eng, branch=branch,
                                       target_file_size=target_file_size,
                                       min_input_files=min_input_files, dry_run=dry_run)
            from icectl.ops.maintain.compact import DELETE_FILE_THRESHOLD_DEFAULT, CompactOptions, compact_table

            opts = CompactOptions(
                strategy=strategy.strip().lower(), sort_order=sort_order,
                target_file_size=target_file_size, min_input_files=min_input_files,
                delete_file_threshold=DELETE_FILE_THRESHOLD_DEFAULT if delete_file_threshold is None
                else delete_file_threshold, partial_progress=partial_progress)
            return compact_table(self._table, filter, opts, engine=eng, branch=branch, dry_run=dry_run)

    def expire(self, older_than: Any = None, *, retain_last: int | None = None,
               snapshot_ids: Sequence[int] = (), clean_expired_metadata: bool = False,
               dry_run: bool = False, delete_outside_location: bool = False,
               workers: int | None = None) -> ExpireResult:
        """Expire snapshots and delete the files only they reached, as ``icectl expire``;
        ``older_than`` a time (default: ``history.expire.max-snapshot-age-ms``). Returns its
        :class:`icectl.ops.maintain.expire.ExpireResult` (files that could not be deleted are in
        ``failed``, refused ones in ``refused``; the command line exits non-zero for those)."""
        from icectl.ops.maintain.expire import expire_snapshots

        with _operation():
            return expire_snapshots(
                self._table, older_than_ms=time_ms(older_than, "older_than"),
                retain_last=retain_last, snapshot_ids=tuple(snapshot_ids),
                clean_expired_metadata=clean_expired_metadata, dry_run=dry_run,
                delete_outside_location=delete_outside_location, max_workers=workers)

    def maintain(self, policy: Mapping[str, Any] | None = None, *, dry_run: bool = False,
                 engine: Any = "local", spark: Any = None, workers: int | None = None,
                 allow_recent: bool = False) -> MaintainResult:
        """Run the maintenance the table's health says is due, as ``icectl maintain``: ``policy``
        maps keys to values over the table's properties (what ``--policy FILE`` holds), every
        one checked before anything runs; compaction runs on ``engine`` as in :meth:`compact`.
        Returns its :class:`icectl.ops.maintain.maintain.MaintainResult` (a failed step is in
        ``failed_step``, with the exit code the command line ends with in ``exit_code``)."""
        from icectl.engines import open_engine
        from icectl.ops.maintain.maintain import maintain_table
        from icectl.ops.maintain.maintain_policy import policy_from_json, read_maintain_policy

        over = policy_from_json(dict(policy), "the policy") if policy is not None else None
        resolved = read_maintain_policy(self._table.metadata.properties, over)
        with _operation(), open_engine(engine, workers=workers, session=spark) as eng:
            return maintain_table(self._table, resolved, dry_run=dry_run, engine=eng, workers=workers,
                                  allow_recent=allow_recent)
