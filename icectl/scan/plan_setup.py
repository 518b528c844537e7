"""Choosing what a scan reads: the snapshot (current, by id, ref, time, or the appends between
two snapshots), the schema it reads with, the bound filter, projected columns and the split
options."""

from __future__ import annotations

from typing import Sequence

from icectl.errors import InvalidInput, NotFound, UnsupportedFeature, ValidationError
from icectl.expr.binding import bind
from icectl.expr.expressions import (
    TRUE,
    AlwaysFalse,
    AlwaysTrue,
    Expression,
    referenced_field_ids,
    rewrite_not,
)
from icectl.expr.parser import parse_filter
from icectl.io.storage.files import FileIO
from icectl.io.manifest.manifest_list import load_manifest_list
from icectl.scan.tasks import DEFAULT_LOOKBACK, DEFAULT_OPEN_FILE_COST, DEFAULT_SPLIT_SIZE
from icectl.spec.manifests import MANIFEST_DELETES, ManifestFile
from icectl.spec.metadata import TableMetadata
from icectl.spec.schema import Schema
from icectl.spec.properties import SPLIT_LOOKBACK as LOOKBACK
from icectl.spec.properties import SPLIT_OPEN_FILE_COST as OPEN_FILE_COST
from icectl.spec.properties import SPLIT_SIZE
from icectl.spec.snapshots import Snapshot, ancestors_of
from icectl.spec.timetext import parse_time_ms




def parse_as_of(text: str) -> int:
    """A scan's as-of time as epoch milliseconds, in every form the other time arguments take
    (:func:`icectl.spec.timetext.parse_time_ms`: a timestamp, epoch milliseconds, a duration ago)."""
    return parse_time_ms(text, "as-of time")


def scan_schema(md: TableMetadata, snapshot: Snapshot | None, time_travel: bool) -> Schema:
    """Time travel by id or tag reads with the snapshot's schema, as the reference does."""
    if time_travel and snapshot is not None and snapshot.schema_id is not None:
        try:
            return md.schema_by_id(snapshot.schema_id)
        except Exception:  # noqa: BLE001 - unknown schema id: fall back to the current one
            return md.schema
    return md.schema


# -- planning -----------------------------------------------------------------------------------


def bind_filter(filter_text: str | None, filter_expr: Expression | None, schema: Schema,
                 case_sensitive: bool) -> Expression:
    if filter_text is not None and filter_expr is not None:
        raise InvalidInput("give a filter as text or as an expression, not both")
    expr: Expression = TRUE
    if filter_text is not None:
        expr = parse_filter(filter_text)  # empty text is an error, not a full scan
    elif filter_expr is not None:
        expr = filter_expr
    if not isinstance(expr, (AlwaysTrue, AlwaysFalse)):
        expr = bind(expr, schema, case_sensitive)
    return rewrite_not(expr)


def resolve_columns(columns: str | Sequence[str] | None, schema: Schema,
                     case_sensitive: bool) -> tuple[str, ...] | None:
    """The columns to read by their schema names: ``columns`` a sequence of names or one text of
    comma-separated names (as the command line and the API take them); None reads all."""
    if columns is None:
        return None
    if isinstance(columns, str):
        columns = columns.split(",")
    out = []
    for c in columns:
        c = str(c).strip()
        if not c:
            continue
        f = schema.find_field_or_none(c, case_sensitive)
        if f is None:
            raise NotFound(f"no column {c!r} in the schema{schema.suggest(c)}", argument="columns")
        out.append(schema.column_name(f.field_id))
    return tuple(out)


def split_options(md: TableMetadata, split_size: int | None, open_file_cost: int | None,
                   lookback: int | None) -> tuple[int, int, int]:
    size = split_size if split_size is not None else md.property_as_int(SPLIT_SIZE, DEFAULT_SPLIT_SIZE)
    cost = open_file_cost if open_file_cost is not None else \
        md.property_as_int(OPEN_FILE_COST, DEFAULT_OPEN_FILE_COST)
    look = lookback if lookback is not None else md.property_as_int(LOOKBACK, DEFAULT_LOOKBACK)
    if size <= 0:
        raise InvalidInput(f"split size must be positive, not {size}")
    if cost < 0:
        raise InvalidInput(f"open file cost must not be negative, not {cost}")
    if look < 1:
        raise InvalidInput(f"planning lookback must be at least 1, not {look}")
    return size, cost, look


def snapshot_range(md: TableMetadata, from_id: int | None, to_id: int | None) -> list[Snapshot]:
    """The ancestors of ``to_id`` (None: the current snapshot) after ``from_id`` (exclusive;
    None: from the first snapshot), oldest first."""
    if to_id is None:
        to_id = md.current_snapshot_id
        if to_id is None:
            raise NotFound("the table has no snapshots")
    if md.snapshot_by_id(to_id) is None:
        raise NotFound(f"snapshot {to_id} does not exist in table {md.location}")
    if from_id is not None and md.snapshot_by_id(from_id) is None:
        raise NotFound(f"snapshot {from_id} does not exist in table {md.location}")
    out: list[Snapshot] = []
    reached = from_id is None
    for s in ancestors_of(to_id, md.snapshot_by_id):
        if s.snapshot_id == from_id:
            reached = True
            break
        out.append(s)
    if not reached:
        raise ValidationError(f"snapshot {from_id} is not an ancestor of snapshot {to_id}")
    return out[::-1]


def appended_snapshots(md: TableMetadata, from_id: int | None, to_id: int) -> set[int]:
    """Snapshots after ``from_id`` (exclusive) up to ``to_id`` whose operation is append."""
    return {s.snapshot_id for s in snapshot_range(md, from_id, to_id) if s.operation == "append"}


def is_incremental(from_snapshot: int | None, to_snapshot: int | None, snapshot_id: int | None = None,
                   ref: str | None = None, as_of: str | int | None = None) -> bool:
    """Whether a plan or scan reads incrementally (the rows appended after ``from_snapshot`` up
    to ``to_snapshot``), refusing an end without a start and an incremental read that also
    travels in time: the one statement of these rules for the command line and the API."""
    if to_snapshot is not None and from_snapshot is None:
        raise InvalidInput("an incremental read needs the snapshot to start after",
                           argument="from_snapshot")
    if from_snapshot is not None and any(x is not None for x in (snapshot_id, ref, as_of)):
        raise InvalidInput("an incremental read (from one snapshot to another) cannot be combined "
                           "with a snapshot id, a ref or a time to travel to", argument="from_snapshot")
    return from_snapshot is not None


def check_append_range(md: TableMetadata, from_id: int, to_id: int | None = None) -> None:
    """Refuse reading the rows of an incremental range over a snapshot that is not an append
    (or a ``replace``, which changes no rows): its deleted rows would silently still be read."""
    for s in snapshot_range(md, from_id, to_id):
        if s.operation not in ("append", "replace"):
            raise UnsupportedFeature(
                f"snapshot {s.snapshot_id} in the range is an {s.operation!r} snapshot: an "
                "incremental read covers appended rows only; read the range's inserted and "
                "deleted rows as changes instead")


def appended_manifests(io: FileIO, md: TableMetadata, append_ids: set[int]) -> list[ManifestFile]:
    out: list[ManifestFile] = []
    seen: set[str] = set()
    for sid in sorted(append_ids, key=lambda i: -md.snapshot_by_id(i).sequence_number):
        snap = md.snapshot_by_id(sid)
        if snap.manifest_list is None:
            continue
        for m in load_manifest_list(io, snap.manifest_list, md.format_version):
            if m.content != MANIFEST_DELETES and m.added_snapshot_id in append_ids \
                    and m.manifest_path not in seen:
                seen.add(m.manifest_path)
                out.append(m)
    return out


def manifest_stat_ids(expr: Expression) -> set[int]:
    if isinstance(expr, (AlwaysTrue, AlwaysFalse)):
        return set()
    return referenced_field_ids(expr)
