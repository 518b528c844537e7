"""Manifest lists: reading (v1 defaults applied) and writing in the reference's layout."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Sequence

from icectl.errors import CorruptMetadata, ValidationError
from icectl.spec.manifests import (
    MANIFEST_DATA,
    FieldSummary,
    ManifestFile,
    assign_manifest_first_row_ids,
    iceberg_schema_json,
    manifest_file_type,
    manifest_list_avro_schema,
)

if TYPE_CHECKING:
    from icectl.io.storage.files import FileIO

__all__ = ["read_manifest_list", "load_manifest_list", "write_manifest_list", "SharedEntryReader"]


def _summary(s: dict) -> FieldSummary:
    return FieldSummary(s["contains_null"], s.get("contains_nan"), s.get("lower_bound"),
                        s.get("upper_bound"))


def read_manifest_list(source: Any, format_version: int | None = None) -> list[ManifestFile]:
    """Entries of a manifest list, with v1 defaults applied (content 0, sequence numbers 0).

    ``format_version`` is the table's; the file's own fields decide what is present, so a
    list written by an older version reads correctly in a newer table.
    """
    from icectl.io.formats.avro_files import RawFile  # (here: a warm plan reads lists from the cache)

    f = RawFile(source)
    out: list[ManifestFile] = []
    try:
        for r in f.records():
            out.append(_manifest_file(r))
    except CorruptMetadata:
        raise
    except Exception as e:
        raise CorruptMetadata(f"cannot decode manifest list entries: {e!r}") from e
    return out


def _manifest_file(r: dict) -> ManifestFile:
    """A raw manifest_file record (logical types not applied) -> ManifestFile, v1 defaults in."""
    parts = r.get("partitions")
    return ManifestFile(
        manifest_path=r["manifest_path"],
        manifest_length=r["manifest_length"],
        partition_spec_id=r["partition_spec_id"],
        content=r.get("content") or MANIFEST_DATA,
        sequence_number=r.get("sequence_number") or 0,
        min_sequence_number=r.get("min_sequence_number") or 0,
        added_snapshot_id=r.get("added_snapshot_id"),
        added_files_count=r.get("added_files_count"),
        existing_files_count=r.get("existing_files_count"),
        deleted_files_count=r.get("deleted_files_count"),
        added_rows_count=r.get("added_rows_count"),
        existing_rows_count=r.get("existing_rows_count"),
        deleted_rows_count=r.get("deleted_rows_count"),
        partitions=None if parts is None else tuple(_summary(s) for s in parts),
        key_metadata=r.get("key_metadata"),
        first_row_id=r.get("first_row_id"),
    )


class SharedEntryReader:
    """Reads many manifest lists of one table, decoding each distinct entry once.

    A table's manifest lists repeat each other: every snapshot's list carries the manifests of
    its parent, written again byte for byte (a committed manifest's entry never changes). The
    reader remembers each decoded entry with its encoded bytes, under the list's writer schema;
    an entry whose bytes it has seen (found by its path, the first field, then compared whole)
    is taken as decoded, never decoded again. Reading a history of N lists of M entries then
    decodes about as many entries as there are distinct manifests, and compares bytes for the
    rest. Equal bytes under the same schema are the same record, so the result is exactly
    :func:`read_manifest_list`'s (a property test runs both). A list whose schema does not
    start with the manifest path is read by :func:`read_manifest_list`. Thread-safe: a race
    only decodes an entry twice."""

    def __init__(self) -> None:
        # writer schema bytes -> (parsed raw schema, {path bytes: [(entry bytes, ManifestFile)]})
        self._schemas: dict[bytes, tuple[Any, dict[bytes, list[tuple[bytes, ManifestFile]]]] | None] = {}
        self.decoded = 0  # entries decoded (the others were recognised)

    def load(self, file_io: FileIO, path: str) -> list[ManifestFile]:
        """A manifest list through a FileIO (as :func:`load_manifest_list`, uncached)."""
        from icectl.io.formats.avro_container import naming_file

        with naming_file("manifest list", path):
            return self.read(file_io.read(path))

    def read(self, data: bytes) -> list[ManifestFile]:
        from icectl.io.formats.avro_container import decoded_blocks, split_header

        data = bytes(data)
        meta, sync, start = split_header(data)
        schema_json = meta.get("avro.schema")
        known = self._known(schema_json) if schema_json is not None else None
        if known is None:
            return read_manifest_list(data)
        parsed, seen = known
        codec = meta.get("avro.codec", b"null").decode() or "null"
        out: list[ManifestFile] = []
        try:
            for n, block in decoded_blocks(data, start, sync, codec):
                pos = self._entries(block, n, parsed, seen, out)
                if pos != len(block):
                    raise CorruptMetadata(f"manifest list block has {len(block) - pos} trailing bytes")
        except CorruptMetadata:
            raise
        except Exception as e:
            raise CorruptMetadata(f"cannot decode manifest list entries: {e!r}") from e
        return out

    def _entries(self, block: bytes, n: int, parsed: Any, seen: dict, out: list[ManifestFile]) -> int:
        import io

        from fastavro import schemaless_reader

        from icectl.io.formats.avro_container import read_long

        pos = 0
        stream = None
        end_of_block = len(block)
        for _ in range(n):
            b = block[pos]
            if b < 128:  # the path's length: zig-zag varint, one or two bytes for any real path
                size, p = (b >> 1) ^ -(b & 1), pos + 1
            elif block[pos + 1] < 128:
                z = (b & 127) | (block[pos + 1] << 7)
                size, p = (z >> 1) ^ -(z & 1), pos + 2
            else:
                size, p = read_long(block, pos)
            if size < 0 or p + size > end_of_block:
                raise CorruptMetadata("manifest list entry runs past its block")
            candidates = seen.get(block[p:p + size])
            hit = None
            if candidates is not None:
                for encoded, mf in candidates:
                    if block.startswith(encoded, pos):
                        hit = mf
                        pos += len(encoded)
                        break
            if hit is None:
                if stream is None:
                    stream = io.BytesIO(block)
                stream.seek(pos)
                hit = _manifest_file(schemaless_reader(stream, parsed, None))
                end = stream.tell()
                seen.setdefault(block[p:p + size], []).append((block[pos:end], hit))
                self.decoded += 1
                pos = end
            out.append(hit)
        return pos

    def _known(self, schema_json: bytes) -> tuple[Any, dict] | None:
        if schema_json in self._schemas:
            return self._schemas[schema_json]
        import json

        import fastavro

        from icectl.io.formats.avro_schema import strip_logical

        entry = None
        try:
            schema = json.loads(schema_json)
            first = schema["fields"][0] if isinstance(schema, dict) else None
            if first is not None and first.get("name") == "manifest_path" and first.get("type") == "string":
                entry = (fastavro.parse_schema(strip_logical(schema)), {})
        except Exception:  # noqa: BLE001 - an odd schema: the plain reader reports what is wrong
            entry = None
        self._schemas[schema_json] = entry
        return entry


def load_manifest_list(file_io: FileIO, path: str, format_version: int | None = None, *,
                       cached: bool = False) -> list[ManifestFile]:
    """Read a manifest list through a FileIO; with ``cached``, through the persistent cache of
    decoded files (:mod:`icectl.io.manifest.cache`: keyed by the list's path, size and
    modification time, as manifests are), which planning uses."""
    key = None
    if cached:
        from icectl.io.manifest import cache as manifest_cache

        if manifest_cache.enabled():
            key = manifest_cache.file_key(file_io, path, ("manifest-list", format_version))
            kept = _recent.get(key) if key is not None else None
            if kept is not None and kept[0] == manifest_cache.entry_stamp(key):
                return list(kept[1])  # the cache entry this process read or wrote, unchanged
            got = manifest_cache.get(key) if key is not None else None
            if (type(got) is tuple and len(got) == 2 and got[0] == path and type(got[1]) is list
                    and all(type(m) is ManifestFile for m in got[1])):
                _remember(key, got[1])
                return got[1]
    from icectl.io.formats.avro_container import naming_file

    with naming_file("manifest list", path):
        out = read_manifest_list(file_io.read(path), format_version)
    if key is not None and manifest_cache.put(key, (path, out)):
        _remember(key, out)
    return out


# The manifest lists of the cache entries this process read or wrote last, with the entry's
# stamp: a process that plans the same table again (the Python API) neither reads nor unpickles
# the entry while it is unchanged.
_recent: dict[bytes, tuple[tuple[int, int, int], list[ManifestFile]]] = {}
_RECENT_LISTS = 16
_recent_lock = threading.Lock()


def _remember(key: bytes, manifests: list[ManifestFile]) -> None:
    from icectl.io.manifest import cache as manifest_cache

    stamp = manifest_cache.entry_stamp(key)
    with _recent_lock:  # (planning threads of one process)
        _recent.pop(key, None)
        if stamp is None:
            return
        while len(_recent) >= _RECENT_LISTS:
            del _recent[next(iter(_recent))]
        _recent[key] = (stamp, list(manifests))



def _summary_record(s: FieldSummary) -> dict:
    return {"contains_null": bool(s.contains_null), "contains_nan": s.contains_nan,
            "lower_bound": s.lower_bound, "upper_bound": s.upper_bound}


def _list_record(m: ManifestFile, format_version: int, snapshot_id: int,
                 sequence_number: int) -> dict:
    """The raw manifest_file record of one manifest."""
    parts = None if m.partitions is None else [_summary_record(s) for s in m.partitions]
    if format_version == 1:
        return {
            "manifest_path": m.manifest_path,
            "manifest_length": m.manifest_length,
            "partition_spec_id": m.partition_spec_id,
            "added_snapshot_id": m.added_snapshot_id
            if m.added_snapshot_id is not None else snapshot_id,
            "added_files_count": m.added_files_count,
            "existing_files_count": m.existing_files_count,
            "deleted_files_count": m.deleted_files_count,
            "partitions": parts,
            "added_rows_count": m.added_rows_count,
            "existing_rows_count": m.existing_rows_count,
            "deleted_rows_count": m.deleted_rows_count,
            "key_metadata": m.key_metadata,
        }
    seq = m.sequence_number
    min_seq = m.min_sequence_number
    added_by = m.added_snapshot_id if m.added_snapshot_id is not None else snapshot_id
    if seq is None or min_seq is None:
        if added_by != snapshot_id:
            raise ValidationError(
                f"manifest {m.manifest_path} from snapshot {added_by} has no sequence "
                "number")
        seq = sequence_number if seq is None else seq
        min_seq = sequence_number if min_seq is None else min_seq
    counts = (m.added_files_count, m.existing_files_count, m.deleted_files_count,
              m.added_rows_count, m.existing_rows_count, m.deleted_rows_count)
    if any(c is None for c in counts):
        raise ValidationError(
            f"manifest {m.manifest_path} lacks file or row counts (required from v2)")
    rec = {
        "manifest_path": m.manifest_path,
        "manifest_length": m.manifest_length,
        "partition_spec_id": m.partition_spec_id,
        "content": m.content,
        "sequence_number": seq,
        "min_sequence_number": min_seq,
        "added_snapshot_id": added_by,
        "added_files_count": m.added_files_count,
        "existing_files_count": m.existing_files_count,
        "deleted_files_count": m.deleted_files_count,
        "added_rows_count": m.added_rows_count,
        "existing_rows_count": m.existing_rows_count,
        "deleted_rows_count": m.deleted_rows_count,
        "partitions": parts,
        "key_metadata": m.key_metadata,
    }
    if format_version >= 3:
        rec["first_row_id"] = m.first_row_id
    return rec


def write_manifest_list(
    manifests: Sequence[ManifestFile],
    format_version: int,
    snapshot_id: int,
    parent_id: int | None,
    sequence_number: int,
    first_row_id: int | None = None,
) -> bytes:
    """A manifest list's bytes, in the reference's layout for ``format_version``.

    Manifests with no sequence number (written by this commit) get ``sequence_number``, and
    ``min_sequence_number`` likewise. For v3, data manifests without a first row id are
    assigned ids from ``first_row_id`` on (see
    :func:`icectl.spec.manifests.assign_manifest_first_row_ids`, which also gives the
    snapshot's added-rows).
    """
    if format_version >= 3:
        if first_row_id is None:
            raise ValidationError("a v3 manifest list needs the snapshot's first row id")
        manifests, _ = assign_manifest_first_row_ids(manifests, first_row_id)

    records = (_list_record(m, format_version, snapshot_id, sequence_number)
               for m in manifests)

    metadata = {
        "snapshot-id": str(snapshot_id),
        "parent-snapshot-id": "null" if parent_id is None else str(parent_id),
    }
    if format_version >= 2:
        metadata["sequence-number"] = str(sequence_number)
    if format_version >= 3:
        metadata["first-row-id"] = str(first_row_id)
    metadata["format-version"] = str(format_version)
    from icectl.io.formats.avro_files import compact_json, write_avro_records

    metadata["iceberg.schema"] = compact_json(iceberg_schema_json(manifest_file_type(format_version)))
    return write_avro_records(manifest_list_avro_schema(format_version), records, metadata)
