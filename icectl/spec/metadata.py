"""Table metadata for format versions 1, 2 and 3 (spec "Table Metadata", Appendix C).

``TableMetadata`` is a frozen value parsed from and written to the JSON the reference writer
produces, key for key and in its order: v1 files also carry the single ``schema`` and
``partition-spec`` forms; v3 files write ``next-row-id`` and a null ``current-snapshot-id`` for
an empty table. Top-level keys a newer writer added are kept in ``extra`` and written back.

Changes are pure functions returning a new TableMetadata (``with_properties``,
``add_snapshot``, ``set_ref``, ``add_schema`` ...). They mirror the reference's metadata builder:
small steps that later operations compose. Nothing here touches a file. Parsing and the byte
forms (JSON text, gzip) are in :mod:`icectl.spec.metadata_json`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping

from icectl.errors import InvalidInput, NotFound, UnsupportedFeature, ValidationError
from icectl.spec.properties import METADATA_PREVIOUS_VERSIONS_MAX as PREVIOUS_VERSIONS_MAX
from icectl.spec.properties import METADATA_PREVIOUS_VERSIONS_MAX_DEFAULT as PREVIOUS_VERSIONS_MAX_DEFAULT
from icectl.spec.properties import (
    PARQUET_COMPRESSION,
    PARQUET_COMPRESSION_NEW_TABLE,
    RESERVED_PROPERTIES,
    property_int,
    validate_properties,
)
from icectl.spec.partitioning import PARTITION_DATA_ID_START, PartitionSpec, UNPARTITIONED_SPEC
from icectl.spec.schema import Schema, assign_fresh_ids
from icectl.spec.snapshots import (
    BRANCH,
    MAIN_BRANCH,
    MetadataLogEntry,
    Snapshot,
    SnapshotLogEntry,
    SnapshotRef,
    statistics_snapshot_id,
)
from icectl.spec.sorting import UNSORTED_ORDER, SortField, SortOrder
from icectl.spec.timetext import format_ms, now_ms

__all__ = [
    "TableMetadata", "SUPPORTED_FORMAT_VERSIONS", "DEFAULT_FORMAT_VERSION", "RESERVED_PROPERTIES",
    "new_table_metadata", "with_properties", "upgrade_format_version", "add_snapshot",
    "set_ref", "remove_ref", "remove_snapshots", "with_previous_metadata", "add_schema",
    "add_spec", "add_sort_order", "next_sequence_number", "check_properties", "now_ms",
]

SUPPORTED_FORMAT_VERSIONS = (1, 2, 3)
DEFAULT_FORMAT_VERSION = 2
INITIAL_SEQUENCE_NUMBER = 0

# Defaults the reference persists into a new table's properties when the caller sets none.
_PERSISTED_DEFAULTS = {PARQUET_COMPRESSION: PARQUET_COMPRESSION_NEW_TABLE}

KNOWN_KEYS = (
    "format-version", "table-uuid", "location", "last-sequence-number", "last-updated-ms",
    "last-column-id", "schema", "current-schema-id", "schemas", "partition-spec",
    "default-spec-id", "partition-specs", "last-partition-id", "default-sort-order-id",
    "sort-orders", "properties", "current-snapshot-id", "next-row-id", "encryption-keys",
    "refs", "snapshots", "statistics", "partition-statistics", "snapshot-log", "metadata-log",
)


@dataclass(frozen=True)
class TableMetadata:
    format_version: int
    table_uuid: str | None
    location: str
    last_updated_ms: int
    last_column_id: int
    schemas: tuple[Schema, ...]
    current_schema_id: int
    specs: tuple[PartitionSpec, ...]
    default_spec_id: int
    last_partition_id: int
    sort_orders: tuple[SortOrder, ...] = (UNSORTED_ORDER,)
    default_sort_order_id: int = 0
    properties: dict[str, str] = field(default_factory=dict, hash=False)
    current_snapshot_id: int | None = None
    snapshots: tuple[Snapshot, ...] = ()
    refs: dict[str, SnapshotRef] = field(default_factory=dict, hash=False)
    snapshot_log: tuple[SnapshotLogEntry, ...] = ()
    metadata_log: tuple[MetadataLogEntry, ...] = ()
    last_sequence_number: int = 0
    next_row_id: int | None = None  # v3
    encryption_keys: tuple[dict[str, Any], ...] = field(default=(), hash=False)
    statistics: tuple[dict[str, Any], ...] = field(default=(), hash=False)
    partition_statistics: tuple[dict[str, Any], ...] = field(default=(), hash=False)
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    # -- accessors -------------------------------------------------------------------------

    @property
    def schema(self) -> Schema:
        return self.schema_by_id(self.current_schema_id)

    def schema_by_id(self, schema_id: int) -> Schema:
        for s in self.schemas:
            if s.schema_id == schema_id:
                return s
        raise NotFound(f"table has no schema with id {schema_id}")

    def schemas_by_id(self) -> dict[int, Schema]:
        return {s.schema_id: s for s in self.schemas}

    @property
    def spec(self) -> PartitionSpec:
        return self.spec_by_id(self.default_spec_id)

    def spec_by_id(self, spec_id: int) -> PartitionSpec:
        for s in self.specs:
            if s.spec_id == spec_id:
                return s
        raise NotFound(f"table has no partition spec with id {spec_id}")

    def specs_by_id(self) -> dict[int, PartitionSpec]:
        return {s.spec_id: s for s in self.specs}

    @property
    def sort_order(self) -> SortOrder:
        return self.sort_order_by_id(self.default_sort_order_id)

    def sort_order_by_id(self, order_id: int) -> SortOrder:
        for o in self.sort_orders:
            if o.order_id == order_id:
                return o
        raise NotFound(f"table has no sort order with id {order_id}")

    def snapshot_by_id(self, snapshot_id: int) -> Snapshot | None:
        return self._snapshot_index.get(snapshot_id)

    @property
    def _snapshot_index(self) -> dict[int, Snapshot]:
        idx = self.__dict__.get("_snap_idx")
        if idx is None:
            idx = {s.snapshot_id: s for s in self.snapshots}
            object.__setattr__(self, "_snap_idx", idx)
        return idx

    def current_snapshot(self) -> Snapshot | None:
        if self.current_snapshot_id is None:
            return None
        return self.snapshot_by_id(self.current_snapshot_id)

    def snapshot_for_ref(self, name: str) -> Snapshot | None:
        ref = self.refs.get(name)
        return None if ref is None else self.snapshot_by_id(ref.snapshot_id)

    def property(self, key: str, default: str | None = None) -> str | None:
        return self.properties.get(key, default)

    def property_as_int(self, key: str, default: int) -> int:
        value = self.properties.get(key)
        if value is None:
            return default
        try:
            return int(value.strip())
        except ValueError:
            raise ValidationError(f"table property {key}={value!r} is not an integer") from None

    def property_as_bool(self, key: str, default: bool) -> bool:
        value = self.properties.get(key)
        if value is None:
            return default
        return value.strip().lower() == "true"

    def last_assigned_field_id(self) -> int:
        return self.last_column_id

    # -- JSON ------------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        v = self.format_version
        out: dict[str, Any] = {"format-version": v, "table-uuid": self.table_uuid, "location": self.location}
        if v > 1:
            out["last-sequence-number"] = self.last_sequence_number
        out["last-updated-ms"] = self.last_updated_ms
        out["last-column-id"] = self.last_column_id
        if v == 1:
            out["schema"] = self.schema.to_json()
        out["current-schema-id"] = self.current_schema_id
        out["schemas"] = [s.to_json() for s in self.schemas]
        if v == 1:
            out["partition-spec"] = self.spec.fields_json()
        out["default-spec-id"] = self.default_spec_id
        out["partition-specs"] = [s.to_json() for s in self.specs]
        out["last-partition-id"] = self.last_partition_id
        out["default-sort-order-id"] = self.default_sort_order_id
        out["sort-orders"] = [o.to_json() for o in self.sort_orders]
        out["properties"] = dict(self.properties)
        current = self.current_snapshot()
        if current is not None:
            out["current-snapshot-id"] = current.snapshot_id
        else:
            out["current-snapshot-id"] = None if v >= 3 else -1
        if v >= 3:
            out["next-row-id"] = self.next_row_id or 0
        if self.encryption_keys:
            out["encryption-keys"] = [dict(k) for k in self.encryption_keys]
        out["refs"] = {name: ref.to_json() for name, ref in self.refs.items()}
        out["snapshots"] = [s.to_json() for s in self.snapshots]
        out["statistics"] = [dict(s) for s in self.statistics]
        out["partition-statistics"] = [dict(s) for s in self.partition_statistics]
        out["snapshot-log"] = [e.to_json() for e in self.snapshot_log]
        out["metadata-log"] = [e.to_json() for e in self.metadata_log]
        for k, val in self.extra.items():
            out.setdefault(k, val)
        return out


# ------------------------------------------------------------------------------------------------
# Updates: pure functions returning new metadata


def _check_version(version: int) -> None:
    if version not in SUPPORTED_FORMAT_VERSIONS:
        if isinstance(version, int) and version > max(SUPPORTED_FORMAT_VERSIONS):
            raise UnsupportedFeature(f"format version {version} is not supported (icectl writes 1-3)")
        raise ValidationError(f"invalid format version {version!r} (expected 1, 2 or 3)")


def new_table_metadata(
    schema: Schema,
    spec: PartitionSpec = UNPARTITIONED_SPEC,
    sort_order: SortOrder = UNSORTED_ORDER,
    location: str = "",
    properties: Mapping[str, str] | None = None,
    format_version: int | None = None,
    *,
    table_uuid: str | None = None,
    timestamp_ms: int | None = None,
    case_sensitive_names: bool = False,
) -> TableMetadata:
    """Metadata for a new table, as the reference's ``TableMetadata.newTableMetadata`` builds it.

    Column names that differ only in case are refused unless ``case_sensitive_names``.

    Field ids are reassigned from 1; the spec and sort order are rebound to the new ids by
    column name; partition field ids restart at 1000; a sorted order gets id 1. A
    ``format-version`` property selects the format version (unless ``format_version`` is given)
    and, like the other reserved properties, is not stored.
    """
    props = dict(properties or {})
    if format_version is None:
        raw = props.get("format-version")
        try:
            format_version = int(raw) if raw is not None else DEFAULT_FORMAT_VERSION
        except ValueError:
            raise ValidationError(f"invalid format-version property {raw!r}") from None
    _check_version(format_version)
    check_properties({k: v for k, v in props.items() if k not in RESERVED_PROPERTIES})
    if not case_sensitive_names:
        _check_case_clashes(schema.struct)
    # The reference puts its persisted defaults first, then the caller's properties in order.
    stored = {k: v for k, v in _PERSISTED_DEFAULTS.items() if k not in props}
    stored.update((k, v) for k, v in props.items() if k not in RESERVED_PROPERTIES)

    fresh = assign_fresh_ids(schema).with_schema_id(0)
    last_column_id = fresh.highest_field_id()

    def rebind(source_id: int, what: str) -> int:
        try:
            name = schema.column_name(source_id)
        except NotFound:
            raise ValidationError(f"{what} refers to field id {source_id}, which is not in the schema") from None
        return fresh.find_field(name).field_id

    new_fields = []
    for i, f in enumerate(spec.fields):
        sources = tuple(rebind(s, "partition field " + f.name) for s in f.source_ids)
        new_fields.append(replace(f, source_id=rebind(f.source_id, "partition field " + f.name),
                                  field_id=PARTITION_DATA_ID_START + i, source_ids=sources))
    new_spec = PartitionSpec(0, tuple(new_fields))
    last_partition_id = new_spec.last_assigned_field_id()

    if sort_order.is_unsorted():
        new_order = UNSORTED_ORDER
    else:
        sort_fields: list[SortField] = []
        for sf in sort_order.fields:
            sources = tuple(rebind(s, "sort field") for s in sf.source_ids)
            sort_fields.append(replace(sf, source_id=rebind(sf.source_id, "sort field"), source_ids=sources))
        new_order = SortOrder(1, tuple(sort_fields))

    return TableMetadata(
        format_version=format_version,
        table_uuid=table_uuid or _new_uuid(),
        location=location.rstrip("/") if location not in ("/",) else location,
        last_updated_ms=timestamp_ms if timestamp_ms is not None else now_ms(),
        last_column_id=last_column_id,
        schemas=(fresh,),
        current_schema_id=0,
        specs=(new_spec,),
        default_spec_id=0,
        last_partition_id=last_partition_id,
        sort_orders=(new_order,),
        default_sort_order_id=new_order.order_id,
        properties=stored,
        last_sequence_number=INITIAL_SEQUENCE_NUMBER,
        next_row_id=0 if format_version >= 3 else None,
    )


def _touch(md: TableMetadata, timestamp_ms: int | None, **changes: Any) -> TableMetadata:
    changes["last_updated_ms"] = timestamp_ms if timestamp_ms is not None else now_ms()
    return replace(md, **changes)


def upgrade_format_version(md: TableMetadata, version: int, *, timestamp_ms: int | None = None) -> TableMetadata:
    """Raise the format version (never lower it), as ``format-version`` property updates do."""
    _check_version(version)
    if version < md.format_version:
        raise ValidationError(f"cannot downgrade format version from v{md.format_version} to v{version}")
    if version == md.format_version:
        return md
    changes: dict[str, Any] = {"format_version": version}
    if version >= 3 and md.next_row_id is None:
        changes["next_row_id"] = 0
    return _touch(md, timestamp_ms, **changes)


def with_properties(
    md: TableMetadata,
    updates: Mapping[str, str] | None = None,
    removals: Iterable[str] = (),
    *,
    timestamp_ms: int | None = None,
) -> TableMetadata:
    """Set and remove table properties. ``format-version`` upgrades the format; other reserved
    names are refused."""
    updates = dict(updates or {})
    removals = list(removals)
    overlap = set(updates) & set(removals)
    if overlap:
        raise ValidationError(f"cannot set and remove the same properties: {', '.join(sorted(overlap))}")
    check_properties(updates)
    version = md.format_version
    if "format-version" in updates:
        raw = updates.pop("format-version")
        try:
            version = int(raw)
        except ValueError:
            raise ValidationError(f"invalid format-version {raw!r}") from None
    bad = [k for k in list(updates) + removals if k in RESERVED_PROPERTIES]
    if bad:
        raise ValidationError(f"reserved table properties cannot be changed: {', '.join(sorted(set(bad)))}")
    for k, v in updates.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise ValidationError(f"table property keys and values must be strings: {k!r}={v!r}")
    props = dict(md.properties)
    props.update(updates)
    for k in removals:
        props.pop(k, None)
    out = md
    if version != md.format_version:
        out = upgrade_format_version(out, version, timestamp_ms=timestamp_ms)
    if props == md.properties and list(props) == list(md.properties):
        return out
    return _touch(out, timestamp_ms, properties=props)


def check_properties(props: Mapping[str, str]) -> None:
    """InvalidInput naming the first known property whose value the reference would not accept."""
    problems = validate_properties(props)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise InvalidInput(f"invalid {problems[0]}{more}")


def next_sequence_number(md: TableMetadata) -> int:
    """The sequence number a new snapshot gets: 0 in v1, last + 1 afterwards."""
    return INITIAL_SEQUENCE_NUMBER if md.format_version == 1 else md.last_sequence_number + 1


def add_snapshot(md: TableMetadata, snapshot: Snapshot, branch: str | None = MAIN_BRANCH) -> TableMetadata:
    """Add a snapshot and (unless ``branch`` is None) point a branch at it.

    Checks what the reference checks: unique id, a sequence number above the table's (v2+),
    v3 row lineage (first-row-id at or above next-row-id, next-row-id advanced by added-rows).
    The table's last-updated-ms becomes the snapshot's timestamp, and moving ``main`` appends to
    the snapshot log.
    """
    if md.snapshot_by_id(snapshot.snapshot_id) is not None:
        raise ValidationError(f"snapshot id {snapshot.snapshot_id} already exists")
    if md.format_version > 1 and snapshot.sequence_number <= md.last_sequence_number \
            and snapshot.parent_snapshot_id is not None:
        raise ValidationError(
            f"cannot add snapshot with sequence number {snapshot.sequence_number} older than "
            f"the last sequence number {md.last_sequence_number}")
    changes: dict[str, Any] = {
        "snapshots": md.snapshots + (snapshot,),
        "last_updated_ms": snapshot.timestamp_ms,
        "last_sequence_number": max(md.last_sequence_number, snapshot.sequence_number),
    }
    if md.format_version >= 3:
        if snapshot.first_row_id is None or snapshot.added_rows is None:
            raise ValidationError("a v3 snapshot needs first-row-id and added-rows")
        current_next = md.next_row_id or 0
        if snapshot.first_row_id < current_next:
            raise ValidationError(
                f"cannot add a snapshot whose first-row-id ({snapshot.first_row_id}) is behind "
                f"the table's next-row-id ({current_next})")
        if snapshot.added_rows < 0:
            raise ValidationError(f"invalid added-rows {snapshot.added_rows}")
        changes["next_row_id"] = current_next + snapshot.added_rows
    out = replace(md, **changes)
    if branch is not None:
        existing = md.refs.get(branch)
        ref = existing.with_snapshot(snapshot.snapshot_id) if existing is not None \
            else SnapshotRef(snapshot.snapshot_id, BRANCH)
        out = set_ref(out, branch, ref, timestamp_ms=snapshot.timestamp_ms)
    return out


def set_ref(md: TableMetadata, name: str, ref: SnapshotRef, *, timestamp_ms: int | None = None) -> TableMetadata:
    """Create or move a branch or tag. Moving ``main`` changes the current snapshot and logs it."""
    snap = md.snapshot_by_id(ref.snapshot_id)
    if snap is None:
        raise ValidationError(f"cannot set {name} to unknown snapshot {ref.snapshot_id}")
    existing = md.refs.get(name)
    if existing is not None and existing.type != ref.type:
        raise ValidationError(f"{name} is a {existing.type}, not a {ref.type}")
    if name == MAIN_BRANCH and not ref.is_branch:
        raise ValidationError("main must be a branch")
    if existing == ref:
        return md
    refs = dict(md.refs)
    refs[name] = ref
    ts = timestamp_ms if timestamp_ms is not None else now_ms()
    changes: dict[str, Any] = {"refs": refs, "last_updated_ms": ts}
    if name == MAIN_BRANCH:
        changes["current_snapshot_id"] = ref.snapshot_id
        changes["snapshot_log"] = md.snapshot_log + (SnapshotLogEntry(ts, ref.snapshot_id),)
    return replace(md, **changes)


def remove_ref(md: TableMetadata, name: str, *, timestamp_ms: int | None = None) -> TableMetadata:
    if name not in md.refs:
        raise NotFound(f"table has no branch or tag named {name!r}")
    refs = {k: v for k, v in md.refs.items() if k != name}
    changes: dict[str, Any] = {"refs": refs}
    if name == MAIN_BRANCH:
        changes["current_snapshot_id"] = None
    return _touch(md, timestamp_ms, **changes)


def remove_snapshots(md: TableMetadata, snapshot_ids: Iterable[int], *, timestamp_ms: int | None = None) -> TableMetadata:
    """Drop snapshots, the refs that point at them, their statistics and their snapshot-log entries.

    The snapshot log keeps only the entries after the last removed one it contained, as the
    reference does, so history stays a suffix of valid snapshots.
    """
    ids = set(snapshot_ids)
    if not ids:
        return md
    snapshots = tuple(s for s in md.snapshots if s.snapshot_id not in ids)
    refs = {k: v for k, v in md.refs.items() if v.snapshot_id not in ids}
    current = md.current_snapshot_id if md.current_snapshot_id not in ids else None
    log: list[SnapshotLogEntry] = []
    for entry in md.snapshot_log:
        if entry.snapshot_id in ids:
            log.clear()
        else:
            log.append(entry)
    return _touch(
        md, timestamp_ms, snapshots=snapshots, refs=refs, current_snapshot_id=current,
        snapshot_log=tuple(log),
        statistics=tuple(s for s in md.statistics if statistics_snapshot_id(s) not in ids),
        partition_statistics=tuple(s for s in md.partition_statistics if statistics_snapshot_id(s) not in ids),
    )


def with_previous_metadata(md: TableMetadata, previous_file: str | None, timestamp_ms: int) -> TableMetadata:
    """Append ``{timestamp-ms, metadata-file}`` to the metadata log, keeping at most
    ``write.metadata.previous-versions-max`` entries (at least 1) by dropping the oldest."""
    if previous_file is None:
        return md
    max_size = max(1, property_int(md.properties, PREVIOUS_VERSIONS_MAX, PREVIOUS_VERSIONS_MAX_DEFAULT))
    log = list(md.metadata_log)
    if len(log) >= max_size:
        log = log[len(log) - max_size + 1:]
    log.append(MetadataLogEntry(timestamp_ms, previous_file))
    return replace(md, metadata_log=tuple(log))


def add_schema(md: TableMetadata, schema: Schema, set_current: bool = True,
               *, timestamp_ms: int | None = None) -> TableMetadata:
    """Add a schema (reusing the id of an identical existing one) and optionally make it current."""
    for existing in md.schemas:
        if existing.same_structure(schema):
            schema_id, schemas = existing.schema_id, md.schemas
            break
    else:
        schema_id = max((s.schema_id for s in md.schemas), default=-1) + 1
        schemas = md.schemas + (schema.with_schema_id(schema_id),)
    current = schema_id if set_current else md.current_schema_id
    if schemas is md.schemas and current == md.current_schema_id:
        return md
    last_col = max(md.last_column_id, schema.highest_field_id())
    return _touch(md, timestamp_ms, schemas=schemas, current_schema_id=current, last_column_id=last_col)


def add_spec(md: TableMetadata, spec: PartitionSpec, set_default: bool = True,
             *, timestamp_ms: int | None = None) -> TableMetadata:
    """Add a partition spec (reusing an identical one's id) and optionally make it the default."""
    for existing in md.specs:
        if existing.same_fields(spec):
            spec_id, specs = existing.spec_id, md.specs
            break
    else:
        spec_id = max((s.spec_id for s in md.specs), default=-1) + 1
        specs = md.specs + (spec.with_spec_id(spec_id),)
    default = spec_id if set_default else md.default_spec_id
    if specs is md.specs and default == md.default_spec_id:
        return md
    last_pid = max(md.last_partition_id, spec.last_assigned_field_id())
    return _touch(md, timestamp_ms, specs=specs, default_spec_id=default, last_partition_id=last_pid)


def add_sort_order(md: TableMetadata, order: SortOrder, set_default: bool = True,
                   *, timestamp_ms: int | None = None) -> TableMetadata:
    """Add a sort order (unsorted is always id 0; identical orders are reused)."""
    if order.is_unsorted():
        order_id, orders = 0, md.sort_orders
        if not any(o.order_id == 0 for o in md.sort_orders):
            orders = md.sort_orders + (UNSORTED_ORDER,)
    else:
        for existing in md.sort_orders:
            if existing.same_order(order):
                order_id, orders = existing.order_id, md.sort_orders
                break
        else:
            order_id = max((o.order_id for o in md.sort_orders), default=0) + 1
            orders = md.sort_orders + (order.with_order_id(order_id),)
    default = order_id if set_default else md.default_sort_order_id
    if orders is md.sort_orders and default == md.default_sort_order_id:
        return md
    return _touch(md, timestamp_ms, sort_orders=orders, default_sort_order_id=default)


def select_snapshot(md: TableMetadata, snapshot_id: int | None = None, ref: str | None = None,
                    as_of_ms: int | None = None) -> Snapshot | None:
    """The snapshot an id, a ref or a time (the last one made current at or before it) names;
    the current one when none is given (None for a table without snapshots)."""
    given = sum(x is not None for x in (snapshot_id, ref, as_of_ms))
    if given > 1:
        raise InvalidInput("give only one of a snapshot id, a ref and a time to travel to")
    if snapshot_id is not None:
        s = md.snapshot_by_id(snapshot_id)
        if s is None:
            raise NotFound(f"snapshot {snapshot_id} does not exist in table {md.location}")
        return s
    if ref is not None:
        if ref not in md.refs:
            known = ", ".join(sorted(md.refs)) or "none"
            raise NotFound(f"ref {ref!r} does not exist in table {md.location} (refs: {known})")
        s = md.snapshot_for_ref(ref)
        if s is None:
            raise NotFound(f"ref {ref!r} points at snapshot {md.refs[ref].snapshot_id}, which does not exist")
        return s
    if as_of_ms is not None:
        found = None
        for entry in md.snapshot_log:
            if entry.timestamp_ms <= as_of_ms:
                found = entry.snapshot_id
        if found is None:
            raise NotFound(f"no snapshot is older than {format_ms(as_of_ms)} (table {md.location})")
        s = md.snapshot_by_id(found)
        if s is None:
            raise NotFound(f"snapshot {found} named by the snapshot log does not exist")
        return s
    return md.current_snapshot()


def _new_uuid() -> str:
    import uuid  # (here: only new tables need one; uuid costs start-up time)

    return str(uuid.uuid4())


def _check_case_clashes(struct: Any) -> None:
    from icectl.spec.schema_update import check_case_clashes  # (here: reading needs no check)

    check_case_clashes(struct)
