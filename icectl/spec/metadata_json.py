"""Table metadata files: parsing the JSON the reference writes, and the byte forms.

``metadata_from_json`` checks what the spec requires per format version (v1 files may carry the
single ``schema`` / ``partition-spec`` forms instead of the lists) and reports any problem as
CorruptMetadata naming the file. ``metadata_to_bytes`` writes compact JSON text byte for byte
as the reference does, gzip-compressed on request; ``metadata_from_bytes`` recognises gzip by
its magic bytes, whatever the file name says.
"""

from __future__ import annotations

import gzip
import json
from typing import Any, Mapping

from icectl.errors import CorruptMetadata, IcectlError, UnsupportedFeature
from icectl.spec.metadata import (
    KNOWN_KEYS,
    INITIAL_SEQUENCE_NUMBER,
    SUPPORTED_FORMAT_VERSIONS,
    TableMetadata,
)
from icectl.spec.partitioning import PARTITION_DATA_ID_START, PartitionSpec
from icectl.spec.schema import Schema
from icectl.spec.snapshots import BRANCH, MAIN_BRANCH, MetadataLogEntry, Snapshot, SnapshotLogEntry, SnapshotRef
from icectl.spec.sorting import UNSORTED_ORDER, SortOrder

__all__ = [
    "metadata_from_json", "metadata_from_bytes", "metadata_to_bytes", "metadata_to_json_text",
]


# ------------------------------------------------------------------------------------------------
# Parsing


class _Reader:
    def __init__(self, obj: Mapping[str, Any], source: str | None):
        self.obj = obj
        self.where = f"metadata file {source}" if source else "table metadata"

    def fail(self, msg: str) -> CorruptMetadata:
        return CorruptMetadata(f"{self.where}: {msg}")

    def has(self, key: str) -> bool:
        return key in self.obj and self.obj[key] is not None

    def int(self, key: str, default: int | None = None, required: bool = True) -> int | None:
        value = self.obj.get(key)
        if value is None:
            if required and default is None:
                raise self.fail(f"missing required key {key!r}")
            return default
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.fail(f"{key!r} must be an integer, not {value!r}")
        return value

    def str(self, key: str, required: bool = True) -> str | None:
        value = self.obj.get(key)
        if value is None:
            if required:
                raise self.fail(f"missing required key {key!r}")
            return None
        if not isinstance(value, str):
            raise self.fail(f"{key!r} must be a string, not {value!r}")
        return value

    def list(self, key: str) -> list[Any] | None:
        value = self.obj.get(key)
        if value is None:
            return None
        if not isinstance(value, list):
            raise self.fail(f"{key!r} must be a list")
        return value

    def required_in(self, key: str, version: int) -> None:
        if version > 1:
            raise self.fail(f"{key!r} must exist in format v{version}")


def metadata_from_json(obj: Any, source: str | None = None) -> TableMetadata:
    """Parse a decoded metadata JSON document. ``source`` names the file in error messages."""
    if not isinstance(obj, dict):
        where = f"metadata file {source}" if source else "table metadata"
        raise CorruptMetadata(f"{where}: not a JSON object")
    r = _Reader(obj, source)
    version = r.int("format-version")
    assert version is not None
    if version > max(SUPPORTED_FORMAT_VERSIONS):
        raise UnsupportedFeature(
            f"format version {version} is not supported (icectl reads 1-3)"
            + (f": {source}" if source else ""))
    if version < 1:
        raise r.fail(f"invalid format-version {version}")
    try:
        return _parse(r, obj, version)
    except CorruptMetadata as e:
        msg = str(e)
        if msg.startswith(r.where):
            raise
        raise r.fail(msg) from None
    except IcectlError:
        raise
    except (TypeError, ValueError, AttributeError, KeyError) as e:
        raise r.fail(f"malformed content ({type(e).__name__}: {e})") from None


def _parse(r: _Reader, obj: dict[str, Any], version: int) -> TableMetadata:
    table_uuid = r.str("table-uuid", required=version > 1)
    location = r.str("location")
    last_seq = r.int("last-sequence-number") if version > 1 else INITIAL_SEQUENCE_NUMBER
    last_column_id = r.int("last-column-id")
    schemas, current_schema_id = _parse_schemas(r, obj, version)
    specs, default_spec_id, last_partition_id = _parse_specs(r, obj, version)
    orders, default_order_id = _parse_orders(r, version)
    properties = _parse_properties(r, obj)
    current_id = r.int("current-snapshot-id", required=False)
    if current_id is not None and current_id < 0:
        current_id = None
    next_row_id = r.int("next-row-id") if version >= 3 else None
    last_updated = r.int("last-updated-ms")
    keys = r.list("encryption-keys") or []
    refs = _parse_refs(r, obj, current_id)

    return TableMetadata(
        format_version=version,
        table_uuid=table_uuid,
        location=location or "",
        last_updated_ms=last_updated or 0,
        last_column_id=last_column_id or 0,
        schemas=schemas,
        current_schema_id=current_schema_id or 0,
        specs=specs,
        default_spec_id=default_spec_id or 0,
        last_partition_id=last_partition_id,
        sort_orders=orders,
        default_sort_order_id=default_order_id or 0,
        properties=properties,
        current_snapshot_id=current_id,
        snapshots=tuple(Snapshot.from_json(s) for s in (r.list("snapshots") or [])),
        refs=refs,
        snapshot_log=tuple(SnapshotLogEntry.from_json(e) for e in (r.list("snapshot-log") or [])),
        metadata_log=tuple(MetadataLogEntry.from_json(e) for e in (r.list("metadata-log") or [])),
        last_sequence_number=last_seq or 0,
        next_row_id=next_row_id,
        encryption_keys=tuple(_objects(r, keys, "encryption-keys")),
        statistics=tuple(_object_list(r, "statistics")),
        partition_statistics=tuple(_object_list(r, "partition-statistics")),
        extra={k: v for k, v in obj.items() if k not in KNOWN_KEYS},
    )


def _parse_schemas(r: _Reader, obj: dict[str, Any], version: int) -> tuple[tuple[Schema, ...], int | None]:
    schema_list = r.list("schemas")
    if schema_list is not None:
        current_schema_id = r.int("current-schema-id")
        schemas = tuple(Schema.from_json(s) for s in schema_list)
        if not any(s.schema_id == current_schema_id for s in schemas):
            raise r.fail(f"cannot find schema with current-schema-id={current_schema_id} in 'schemas'")
        return schemas, current_schema_id
    r.required_in("schemas", version)
    if not r.has("schema"):
        raise r.fail("missing required key 'schema'")
    schema = Schema.from_json(obj["schema"])
    return (schema,), schema.schema_id


def _parse_specs(r: _Reader, obj: dict[str, Any], version: int) -> tuple[tuple[PartitionSpec, ...], int | None, int]:
    spec_list = r.list("partition-specs")
    if spec_list is not None:
        default_spec_id = r.int("default-spec-id")
        specs = tuple(PartitionSpec.from_json(s) for s in spec_list)
        if not any(s.spec_id == default_spec_id for s in specs):
            raise r.fail(f"cannot find partition spec with default-spec-id={default_spec_id}")
    else:
        r.required_in("partition-specs", version)
        if "partition-spec" not in obj:
            raise r.fail("missing required key 'partition-spec'")
        default_spec_id = 0
        specs = (PartitionSpec.from_fields_json(obj["partition-spec"], 0),)
    last_partition_id = r.int("last-partition-id", required=False)
    if last_partition_id is None:
        r.required_in("last-partition-id", version)
        last_partition_id = max((s.last_assigned_field_id() for s in specs), default=PARTITION_DATA_ID_START - 1)
    return specs, default_spec_id, last_partition_id


def _parse_orders(r: _Reader, version: int) -> tuple[tuple[SortOrder, ...], int | None]:
    order_list = r.list("sort-orders")
    if order_list is not None:
        return tuple(SortOrder.from_json(o) for o in order_list), r.int("default-sort-order-id")
    r.required_in("sort-orders", version)
    return (UNSORTED_ORDER,), UNSORTED_ORDER.order_id


def _parse_properties(r: _Reader, obj: dict[str, Any]) -> dict[str, str]:
    props_json = obj.get("properties")
    properties: dict[str, str] = {}
    if props_json is not None:
        if not isinstance(props_json, dict):
            raise r.fail("'properties' must be an object")
        for k, v in props_json.items():
            if not isinstance(v, str):
                raise r.fail(f"property {k!r} is not a string: {v!r}")
            properties[k] = v
    return properties


def _parse_refs(r: _Reader, obj: dict[str, Any], current_id: int | None) -> dict[str, SnapshotRef]:
    refs: dict[str, SnapshotRef] = {}
    if "refs" in obj and obj["refs"] is not None:
        if not isinstance(obj["refs"], dict):
            raise r.fail("'refs' must be an object")
        refs = {name: SnapshotRef.from_json(ref, name) for name, ref in obj["refs"].items()}
    elif current_id is not None:
        refs = {MAIN_BRANCH: SnapshotRef(current_id, BRANCH)}
    main = refs.get(MAIN_BRANCH)
    if current_id is not None:
        if main is not None and main.snapshot_id != current_id:
            raise r.fail(f"current-snapshot-id {current_id} does not match the main branch ({main.snapshot_id})")
    elif main is not None:
        raise r.fail(f"current snapshot is not set, but the main branch points at {main.snapshot_id}")
    return refs


def _object_list(r: _Reader, key: str) -> list[dict[str, Any]]:
    return _objects(r, r.list(key) or [], key)


def _objects(r: _Reader, items: list[Any], key: str) -> list[dict[str, Any]]:
    for item in items:
        if not isinstance(item, dict):
            raise r.fail(f"entries of {key!r} must be objects")
    return [dict(i) for i in items]


# ------------------------------------------------------------------------------------------------
# Bytes: compact JSON text (as the reference writes files) and gzip


def metadata_to_json_text(md: TableMetadata, indent: int | None = None) -> str:
    """The JSON text. Without ``indent`` it is compact, byte for byte what the reference writes."""
    obj = md.to_json()
    if indent is not None:
        return json.dumps(obj, ensure_ascii=False, indent=indent)
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def metadata_to_bytes(md: TableMetadata, compress: bool = False) -> bytes:
    data = metadata_to_json_text(md).encode("utf-8")
    if compress:
        return gzip.compress(data, mtime=0)
    return data


def metadata_from_bytes(data: bytes, source: str | None = None) -> TableMetadata:
    """Decode a metadata file's bytes. Gzip is recognised by its magic bytes (the name may lie)."""
    where = f"metadata file {source}" if source else "table metadata"
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as e:
            raise CorruptMetadata(f"{where}: broken gzip data ({e})") from None
    try:
        obj = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise CorruptMetadata(f"{where}: not UTF-8 text ({e})") from None
    except json.JSONDecodeError as e:
        raise CorruptMetadata(f"{where}: invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    return metadata_from_json(obj, source)


