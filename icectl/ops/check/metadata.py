"""Finding the metadata to check, and the checks on the table metadata itself.

The newest version is read the way readers find it (version hint, else listing, then newer
versions probed). A newest version that cannot be read (cut short by a crash, not JSON, or
JSON the spec forbids) is reported, and the newest older version that reads is checked in its
place so the rest of the table is still examined.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from typing import Any, Callable, Iterable, Mapping

from icectl.errors import CorruptMetadata, NotFound, UnsupportedFeature
from icectl.io.storage.files import FileIO
from icectl.ops.check.model import Problems
from icectl.spec.metadata import TableMetadata
from icectl.spec.metadata_json import metadata_from_bytes
from icectl.spec.properties import validate_properties
from icectl.spec.schema import walk_fields
from icectl.table import catalog_files, store

__all__ = ["load_metadata", "check_metadata", "PropertyValidator", "table_layer_property_problems",
           "LOG_TOLERANCE_MS"]

# Log entries may step back this much (clock skew between writers), as the reference allows.
LOG_TOLERANCE_MS = 60_000

PropertyValidator = Callable[[Mapping[str, str]], Iterable[tuple[str, str]]]
"""Takes a table's properties; yields ``(key, reason)`` for every invalid one."""


# ------------------------------------------------------------------------------------------------
# Loading


def load_metadata(io: FileIO, location: str, problems: Problems) -> tuple[TableMetadata | None, str | None]:
    """The metadata to check and its file; NotFound when there is no table at ``location``.

    ``(None, None)`` when no version can be read at all (the reasons are in ``problems``).
    """
    if catalog_files.is_metadata_file(location):  # a metadata file named directly: check that one
        catalog_files.locate_metadata_file(io, location)
        md = _read_version(io, location, problems)
        return (md, location) if md is not None else (None, None)
    try:
        found = store.find_current_version(io, location)
    except CorruptMetadata as e:
        problems.error("version-hint-broken", store.version_hint_path(location), str(e))
        found = store.newest_listed(io, location)
    if found is None:
        found = catalog_files.find_catalog_version(io, location)  # a catalog's table: its newest file
    if found is None:
        raise NotFound(f"no Iceberg table at {location} (no metadata/v<N>.metadata.json)")
    version, path = found
    md = _read_version(io, path, problems)
    if md is not None:
        return md, path
    # Report, then check the newest older version that reads (the table layer refuses to load
    # past an incomplete newest version; `store.find_incomplete_versions` names the repair).
    for older in range(version - 1, 0, -1):
        p = store.find_metadata_file(io, location, older)
        if p is None:
            continue
        md = _read_version(io, p, problems)
        if md is not None:
            problems.warning("older-version-checked", p,
                             f"the newest version cannot be read; version {older} was checked instead")
            return md, p
    return None, None


def _read_version(io: FileIO, path: str, problems: Problems) -> TableMetadata | None:
    try:
        data = io.read(path)
    except NotFound:
        problems.error("metadata-missing", path, "the metadata file disappeared while it was read")
        return None
    try:
        return metadata_from_bytes(data, path)
    except UnsupportedFeature:
        raise
    except CorruptMetadata as e:
        raw = _decode(data)
        if raw is None:
            problems.error("metadata-unreadable", path,
                           f"cannot be parsed (cut short, or not JSON): {_strip_where(str(e), path)}")
        else:
            _check_raw(raw, path, problems)
            problems.error("metadata-invalid", path, _strip_where(str(e), path))
        return None


def _strip_where(msg: str, path: str) -> str:
    prefix = f"metadata file {path}: "
    return msg[len(prefix):] if msg.startswith(prefix) else msg


def _decode(data: bytes) -> Any:
    try:
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        return json.loads(data.decode("utf-8"))
    except (OSError, EOFError, UnicodeDecodeError, ValueError):
        return None


def _ids(items: Any, key: str) -> set[Any]:
    return {i.get(key) for i in items if isinstance(i, dict)} if isinstance(items, list) else set()


def _check_raw(raw: Any, path: str, problems: Problems) -> None:
    """Name the spec rules a metadata file the parser refused breaks (those it can tell)."""
    if not isinstance(raw, dict):
        return
    if isinstance(raw.get("schemas"), list) and raw.get("current-schema-id") not in _ids(raw["schemas"], "schema-id"):
        problems.error("current-schema-missing", path,
                       f"current-schema-id {raw.get('current-schema-id')} names no schema")
    if isinstance(raw.get("partition-specs"), list) and \
            raw.get("default-spec-id") not in _ids(raw["partition-specs"], "spec-id"):
        problems.error("default-spec-missing", path,
                       f"default-spec-id {raw.get('default-spec-id')} names no partition spec")
    refs = raw.get("refs")
    main = refs.get("main") if isinstance(refs, dict) else None
    current = raw.get("current-snapshot-id")
    if isinstance(main, dict) and isinstance(current, int) and current >= 0 and main.get("snapshot-id") != current:
        problems.error("main-branch-mismatch", path,
                       f"current-snapshot-id {current} differs from the main branch ({main.get('snapshot-id')})")


# ------------------------------------------------------------------------------------------------
# Checks on the parsed metadata


def check_metadata(md: TableMetadata, path: str, problems: Problems,
                   property_validator: PropertyValidator | None) -> None:
    _check_schemas(md, path, problems)
    _check_specs_and_orders(md, path, problems)
    _check_snapshots(md, problems)
    _check_refs(md, path, problems)
    _check_logs(md, path, problems)
    validator = property_validator or table_layer_property_problems
    for key, reason in validator(md.properties):
        if key.startswith(_IGNORED_WHEN_INVALID):  # Java warns and uses the default mode
            problems.warning("invalid-property", f"property {key}",
                             f"{reason} (Iceberg ignores it and uses the default)")
        else:
            problems.error("invalid-property", f"property {key}", reason)


def _check_schemas(md: TableMetadata, path: str, problems: Problems) -> None:
    for sid, n in Counter(s.schema_id for s in md.schemas).items():
        if n > 1:
            problems.error("duplicate-schema-id", path, f"{n} schemas have id {sid}")
    highest = 0
    for schema in md.schemas:
        ids = Counter(f.field_id for _, f, _ in walk_fields(schema.struct))
        for fid, n in sorted(ids.items()):
            if n > 1:
                problems.error("duplicate-field-id", f"schema {schema.schema_id}",
                               f"field id {fid} is used by {n} fields")
        highest = max(highest, max(ids, default=0))
    if md.last_column_id < highest:
        problems.error("last-column-id-too-low", path,
                       f"last-column-id {md.last_column_id} is below field id {highest}")
    if not any(s.schema_id == md.current_schema_id for s in md.schemas):
        problems.error("current-schema-missing", path, f"current-schema-id {md.current_schema_id} names no schema")


def _check_specs_and_orders(md: TableMetadata, path: str, problems: Problems) -> None:
    if md.format_version >= 2:
        highest = max((s.last_assigned_field_id() for s in md.specs), default=0)
        if md.last_partition_id < highest:
            problems.error("last-partition-id-too-low", path,
                           f"last-partition-id {md.last_partition_id} is below partition field id {highest}")
    if not any(s.spec_id == md.default_spec_id for s in md.specs):
        problems.error("default-spec-missing", path, f"default-spec-id {md.default_spec_id} names no partition spec")
    if not any(o.order_id == md.default_sort_order_id for o in md.sort_orders):
        problems.error("default-sort-order-missing", path,
                       f"default-sort-order-id {md.default_sort_order_id} names no sort order")


def _check_snapshots(md: TableMetadata, problems: Problems) -> None:
    v2 = md.format_version >= 2
    schema_ids = {s.schema_id for s in md.schemas}
    for s in md.snapshots:
        where = f"snapshot {s.snapshot_id}"
        if v2 and s.sequence_number > md.last_sequence_number:
            problems.error("last-sequence-number-too-low", where,
                           f"sequence number {s.sequence_number} is above the table's last-sequence-number "
                           f"{md.last_sequence_number}")
        if s.schema_id is not None and s.schema_id not in schema_ids:
            problems.warning("snapshot-schema-missing", where, f"schema-id {s.schema_id} names no schema")
        if md.format_version >= 3 and s.first_row_id is not None and s.added_rows is not None \
                and md.next_row_id is not None and s.first_row_id + s.added_rows > md.next_row_id:
            problems.error("next-row-id-too-low", where,
                           f"rows {s.first_row_id}..{s.first_row_id + s.added_rows - 1} reach past the table's "
                           f"next-row-id {md.next_row_id}")
        parent_id = s.parent_snapshot_id
        if parent_id is None:
            continue
        parent = md.snapshot_by_id(parent_id)
        if parent is None:
            # The reference keeps parent ids of expired snapshots: routine after every expiry.
            continue
        if v2 and s.sequence_number > 0 and s.sequence_number <= parent.sequence_number:
            problems.error("sequence-number-not-increasing", where,
                           f"sequence number {s.sequence_number} is not above its parent {parent_id}'s "
                           f"({parent.sequence_number})")
    _check_cycles(md, problems)


def _check_cycles(md: TableMetadata, problems: Problems) -> None:
    done: set[int] = set()
    for s in md.snapshots:
        path: list[int] = []
        on_path: set[int] = set()
        current = s
        while current is not None and current.snapshot_id not in done:
            if current.snapshot_id in on_path:
                cycle = path[path.index(current.snapshot_id):]
                problems.error("parent-cycle", f"snapshot {current.snapshot_id}",
                               "parent chain loops: " + " -> ".join(map(str, cycle + [current.snapshot_id])))
                break
            path.append(current.snapshot_id)
            on_path.add(current.snapshot_id)
            pid = current.parent_snapshot_id
            current = None if pid is None else md.snapshot_by_id(pid)
        done.update(path)


def _check_refs(md: TableMetadata, path: str, problems: Problems) -> None:
    if md.current_snapshot_id is not None and md.snapshot_by_id(md.current_snapshot_id) is None:
        problems.error("current-snapshot-missing", path,
                       f"current-snapshot-id {md.current_snapshot_id} names no snapshot")
    for name, ref in md.refs.items():
        if md.snapshot_by_id(ref.snapshot_id) is None:
            problems.error("ref-snapshot-missing", f"ref {name}",
                           f"{ref.type} {name} points at snapshot {ref.snapshot_id}, which is not in the table")


def _check_logs(md: TableMetadata, path: str, problems: Problems) -> None:
    for name, entries in (("snapshot-log", md.snapshot_log), ("metadata-log", md.metadata_log)):
        for i in range(1, len(entries)):
            before, after = entries[i - 1].timestamp_ms, entries[i].timestamp_ms
            if after - before < -LOG_TOLERANCE_MS:
                problems.error(f"{name}-unordered", path,
                               f"{name} entry {i} ({after}) is more than a minute before entry {i - 1} ({before})")
    for e in md.snapshot_log:
        if md.snapshot_by_id(e.snapshot_id) is None:
            problems.warning("snapshot-log-snapshot-missing", path,
                             f"snapshot-log names snapshot {e.snapshot_id}, which is not in the table")


# ------------------------------------------------------------------------------------------------
# Properties: judged by the one catalogue of known table properties (spec/properties.py), the
# same rules `properties set` and `create --property` apply.


# Properties Iceberg's readers ignore (with a logged warning) when their value is invalid:
# metrics modes (MetricsConfig falls back to the default mode).
_IGNORED_WHEN_INVALID = ("write.metadata.metrics.",)


def table_layer_property_problems(properties: Mapping[str, str]) -> list[tuple[str, str]]:
    """(key, reason) for every stored property the catalogue refuses."""
    return [(p.key, str(p)) for p in validate_properties(properties, stored=True)]
