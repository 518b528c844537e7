"""Change reads: the rows a table's snapshots inserted and deleted (``icectl changes``), as
Spark's ``create_changelog_view`` procedure shows them (the snapshot range is
:func:`icectl.scan.plan_setup.snapshot_range`, the one an incremental scan reads).

**Which snapshots.** The ancestors of ``to_snapshot`` (default: the current snapshot) after
``from_snapshot`` (exclusive; None: from the first snapshot), oldest first, without ``replace``
snapshots (compaction changes files, not rows), as the reference's changelog scan takes them.
``_change_ordinal`` numbers them from 0; ``_commit_snapshot_id`` is the snapshot's id.

**Which rows.** For each snapshot S with parent P, the files live in P and S are planned (each
with the delete files that apply to it) and compared:

* a data file added by S: its rows, minus the deletes S itself added for it, are ``INSERT``;
* a data file S removed: its rows still live in P (P's deletes applied) are ``DELETE``;
* a data file live in both whose deletes changed (position deletes, deletion vectors, equality
  deletes S added): the rows live in P but not in S are ``DELETE`` (and any row live in S but
  not in P, ``INSERT``).

Only the files whose membership or deletes changed are read. Rows are read with the table's
current schema (by field id, as ``icectl scan`` reads them).

**Then, as the procedure does:** rows deleted and inserted unchanged by the same snapshot
(copy-on-write carry-overs) are dropped. With ``keys`` a ``DELETE`` and an ``INSERT`` of the
same key in one snapshot become ``UPDATE_BEFORE`` and ``UPDATE_AFTER`` (a key deleted twice in
one snapshot is refused: the key is not unique). With ``net`` the changes of the whole range are
netted per row: a row inserted and deleted again in the range disappears, and each remaining
row carries the ordinal and snapshot id of its first change (``net`` and ``keys`` cannot be
combined, as in the procedure). Every changed row is held in memory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Iterator, Sequence

import pyarrow as pa

from icectl.errors import InvalidInput, NotFound
from icectl.expr.ordering import value_key
from icectl.scan.plan_setup import snapshot_range
from icectl.spec.schema import Schema
from icectl.spec.snapshots import Snapshot
from icectl.spec.types import INT, LONG, STRING

if TYPE_CHECKING:
    from icectl.spec.metadata import TableMetadata
    from icectl.table.table import Table
    from icectl.scan.reader import Scan, ScanFile

__all__ = ["ChangeSet", "read_changes", "changelog_snapshots",
           "INSERT", "DELETE", "UPDATE_BEFORE", "UPDATE_AFTER", "CHANGE_COLUMNS"]

INSERT, DELETE = "INSERT", "DELETE"
UPDATE_BEFORE, UPDATE_AFTER = "UPDATE_BEFORE", "UPDATE_AFTER"
CHANGE_COLUMNS = ("_change_type", "_change_ordinal", "_commit_snapshot_id")
_RANK = {DELETE: 0, UPDATE_BEFORE: 1, UPDATE_AFTER: 1, INSERT: 2}


def changelog_snapshots(md: TableMetadata, from_id: int | None, to_id: int | None = None) -> list[Snapshot]:
    """The snapshots whose changes a change read shows (see the module docs)."""
    return [s for s in snapshot_range(md, from_id, to_id) if s.operation != "replace"]


@dataclass
class ChangeSet:
    """The changed rows: the table's columns then ``_change_type``, ``_change_ordinal`` and
    ``_commit_snapshot_id``. Offers what ``icectl scan``'s output code reads."""

    location: str
    from_snapshot: int | None
    to_snapshot: int | None
    snapshots: list[Snapshot]
    schema: Schema
    rows: pa.Table
    net: bool = False
    keys: tuple[str, ...] = ()
    files_read: int = 0

    def arrow_schema(self) -> pa.Schema:
        return self.rows.schema

    def iceberg_types(self) -> list[Any]:
        return [f.type for f in self.schema.fields] + [STRING, INT, LONG]

    def batches(self, limit: int | None = None) -> Iterator[pa.RecordBatch]:
        rows = self.rows if limit is None else self.rows.slice(0, limit)
        yield from rows.to_batches()

    def count(self) -> int:
        return self.rows.num_rows

    def write_parquet(self, path: str, batches: Iterator[pa.RecordBatch]) -> int:
        from icectl.scan.reader import write_parquet_batches

        return write_parquet_batches(path, self.arrow_schema(), batches)


# -- reading ---------------------------------------------------------------------------------


class _Reader:
    """Plans snapshots (each once) and reads files of them with the current schema."""

    def __init__(self, table: Table):
        self.table = table
        self.schema = table.metadata.schema
        self._plans: dict[int, tuple[Any, dict[str, Any]]] = {}
        self.files_read = 0

    def plan(self, snapshot_id: int | None) -> tuple[Any, dict[str, Any]]:
        from icectl.scan.reader import open_scan

        if snapshot_id is None:
            return None, {}
        got = self._plans.get(snapshot_id)
        if got is None:
            scan = open_scan(self.table, snapshot_id=snapshot_id, with_metadata=True)
            scan = replace(scan, schema=self.schema, projected=list(self.schema.fields))
            got = self._plans[snapshot_id] = (scan, {f.path: f for f in scan.files})
        return got

    def read(self, scan: Scan, f: ScanFile) -> pa.Table:
        self.files_read += 1
        one = replace(scan, files=[f], _pos_cache={}, _eq_cache={})
        batches = list(one.batches())
        if not batches:
            return one.arrow_schema().empty_table()
        return pa.Table.from_batches(batches, one.arrow_schema())


def _delete_ids(f: ScanFile) -> frozenset:
    return frozenset((d.path, getattr(d, "content_offset", None)) for d in f.deletes)


def _snapshot_changes(reader: _Reader, snap: Snapshot) -> Iterator[tuple[str, pa.Table]]:
    """(change type, rows with ``_pos``) of one snapshot against its parent."""
    scan_s, now = reader.plan(snap.snapshot_id)
    scan_p, before = reader.plan(snap.parent_snapshot_id)
    for path, f in now.items():
        old = before.get(path)
        if old is None:
            yield INSERT, reader.read(scan_s, f)
        elif _delete_ids(old) != _delete_ids(f):
            was, is_ = reader.read(scan_p, old), reader.read(scan_s, f)
            was_pos = set(was.column("_pos").to_pylist())
            is_pos = set(is_.column("_pos").to_pylist())
            gone = [i for i, p in enumerate(was.column("_pos").to_pylist()) if p not in is_pos]
            back = [i for i, p in enumerate(is_.column("_pos").to_pylist()) if p not in was_pos]
            if gone:
                yield DELETE, was.take(gone)
            if back:
                yield INSERT, is_.take(back)
    for path, old in before.items():
        if path not in now:
            yield DELETE, reader.read(scan_p, old)


# -- the procedure's post-processing -----------------------------------------------------------


def _freeze(v: Any) -> Any:
    if isinstance(v, float):
        return value_key(v) if not math.isnan(v) else ("NaN",)
    if isinstance(v, dict):
        return tuple((k, _freeze(x)) for k, x in v.items())
    if isinstance(v, (list, tuple)):
        return tuple(_freeze(x) for x in v)
    return v


def _row_keys(data: pa.Table, schema: Schema, names: Sequence[str]) -> list[tuple]:
    from icectl.scan.arrow_values import to_internal

    cols = []
    for n in names:
        f = schema.find_field(n, True)
        arr = data.column(n).combine_chunks()
        cols.append([_freeze(v) for v in to_internal(arr, f.type)])
    return list(zip(*cols)) if cols else [()] * data.num_rows


def _remove_carryovers(rows: list[list]) -> list[list]:
    """Per snapshot and row value, a DELETE and an INSERT cancel out."""
    groups: dict[tuple, tuple[list, list]] = {}
    for r in rows:
        dels, ins = groups.setdefault((r[1], r[4]), ([], []))
        (dels if r[0] == DELETE else ins).append(r)
    out = []
    for dels, ins in groups.values():
        n = min(len(dels), len(ins))
        out += dels[n:] + ins[n:]
    return out


def _compute_updates(rows: list[list], key_names: Sequence[str]) -> list[list]:
    groups: dict[tuple, tuple[list, list]] = {}
    for r in rows:
        dels, ins = groups.setdefault((r[1], r[5]), ([], []))
        (dels if r[0] == DELETE else ins).append(r)
    out = []
    for (_, key), (dels, ins) in groups.items():
        if len(dels) > 1:
            shown = ", ".join(f"{n}={v!r}" for n, v in zip(key_names, key))
            raise InvalidInput(f"cannot pair deletes and inserts as updates: snapshot "
                               f"{dels[0][2]} deletes {len(dels)} rows with the same key "
                               f"({shown}); the key columns must identify a row")
        if dels and ins:
            out += [[UPDATE_BEFORE] + dels[0][1:], [UPDATE_AFTER] + ins[0][1:]] + ins[1:]
        else:
            out += dels + ins
    return out


def _net_changes(rows: list[list]) -> list[list]:
    """Net each row value's changes over the range (the procedure's net carry-over removal)."""
    groups: dict[tuple, list] = {}
    for r in rows:
        groups.setdefault(r[4], []).append(r)
    out = []
    for g in groups.values():
        g.sort(key=lambda r: (r[1], _RANK[r[0]]))
        i, n = 0, len(g)
        while i < n:
            first, count, j = g[i], 1, i + 1
            while j < n:
                count += -1 if g[j][0] != first[0] else 1
                j += 1
                if count <= 0:
                    break
            out += [first] * max(count, 0)
            i = j
    return out


def read_changes(table: Table, from_snapshot: int | None, to_snapshot: int | None = None, *,
                 net: bool = False, keys: str | Sequence[str] | None = None) -> ChangeSet:
    """The rows changed after ``from_snapshot`` up to ``to_snapshot`` (see the module docs)."""
    md = table.metadata
    schema = md.schema
    key_names: list[str] = []
    if keys:
        given = [keys] if isinstance(keys, str) else list(keys)
        for k in (k.strip() for g in given for k in g.split(",")):
            f = schema.find_field_or_none(k, False) if k else None
            if f is None or schema.parent_id(f.field_id) is not None:
                raise NotFound(f"key column {k!r} is not a top-level column of the table")
            if f.name in key_names:
                raise InvalidInput(f"key column {f.name!r} is given twice")
            key_names.append(f.name)
    if net and key_names:
        raise InvalidInput("net changes cannot be combined with update rows (key columns), as "
                           "in Spark's create_changelog_view")
    snaps = changelog_snapshots(md, from_snapshot, to_snapshot)
    reader = _Reader(table)
    names = [f.name for f in schema.fields]
    pieces: list[pa.Table] = []
    rows: list[list] = []  # [type, ordinal, snapshot id, index, row key, key-column key]
    offset = 0
    for ordinal, snap in enumerate(snaps):
        for change, data in _snapshot_changes(reader, snap):
            data = data.select(names)
            row_keys = _row_keys(data, schema, names)
            id_keys = _row_keys(data, schema, key_names) if key_names else [()] * data.num_rows
            for i in range(data.num_rows):
                rows.append([change, ordinal, snap.snapshot_id, offset + i, row_keys[i], id_keys[i]])
            offset += data.num_rows
            pieces.append(data)
    if net:
        rows = _net_changes(rows)
    else:
        rows = _remove_carryovers(rows)
        if key_names:
            rows = _compute_updates(rows, key_names)
    rows.sort(key=lambda r: (r[1], _RANK[r[0]], r[3]))
    empty = _empty_data(reader, schema)
    data = pa.concat_tables(pieces) if pieces else empty
    data = data.take(pa.array([r[3] for r in rows], pa.int64())) if rows else empty
    out = data.append_column("_change_type", pa.array([r[0] for r in rows], pa.string())) \
        .append_column("_change_ordinal", pa.array([r[1] for r in rows], pa.int32())) \
        .append_column("_commit_snapshot_id", pa.array([r[2] for r in rows], pa.int64()))
    return ChangeSet(location=table.location, from_snapshot=from_snapshot,
                     to_snapshot=snaps[-1].snapshot_id if snaps else to_snapshot or
                     md.current_snapshot_id, snapshots=snaps, schema=schema, rows=out, net=net,
                     keys=tuple(key_names), files_read=reader.files_read)


def _empty_data(reader: _Reader, schema: Schema) -> pa.Table:
    from icectl.io.formats.parquet_write import arrow_field

    return pa.schema([arrow_field(f) for f in schema.fields]).empty_table()
