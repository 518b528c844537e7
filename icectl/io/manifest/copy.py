"""Merging manifests by copying each entry's encoded ``data_file`` bytes.

A merge changes only an entry's leading fields (status, snapshot id, sequence numbers: the
spec wants inherited values explicit in EXISTING entries) and, in v3, a data file's
``first_row_id`` when it is inherited. When a manifest's Avro schema is the layout being written
(:func:`icectl.io.manifest.records.in_layout`), its entries are found by the generated decoder of
:mod:`icectl.io.manifest.codegen` run with ``extents`` (entry shapes matched by one regular
expression each, :mod:`icectl.io.manifest.shapes`): it reads the leading fields, the few
columns the new manifest's summary needs (record counts, partition values, paths) and where each
encoded ``data_file`` starts and ends, skipping metric maps without decoding them. The
``data_file`` bytes are then copied unchanged (spliced around ``first_row_id`` where inheritance
changes it) behind newly encoded leading fields, into container blocks written by
:func:`icectl.io.formats.avro_files.container_file`.

Manifests in another encoding (another writer's schema, an older layout, a plain fixed
partition value stored without its length prefix) are read as raw records and their data_file
records encoded (:func:`carried_from_records`), so one writer serves both. The inheritance rules
are :func:`icectl.spec.manifests.inherit_columns`, the same as every reader's.
"""

from __future__ import annotations

import json
import pickle
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

from icectl import command_files

from icectl.errors import CorruptMetadata
from icectl.io.manifest.records import in_layout, require_sequence_numbers
from icectl.io.formats.avro_container import decoded_blocks, split_header
from icectl.io.formats.avro_files import SEGMENT_OBJECTS, as_bytes, container_file, value_encoder
from icectl.io.formats.avro_schema import SchemaWalk, manifest_wire_schemas, wire_schema_jsons
from icectl.io.storage.files import FileIO
from icectl.io.manifest.codegen import compile_decoder
from icectl.io.manifest.columns import partition_columns, run_decoder
from icectl.io.manifest.shapes import bound_widths, shape_decoder
from icectl.spec.manifests import (
    ADDED,
    DELETED,
    EXISTING,
    InheritedColumns,
    ManifestFile,
    inherit_columns,
)

__all__ = ["CarriedEntries", "read_carried", "read_carried_all", "carried_from_records", "carry",
           "write_carried", "PARALLEL_MIN_MANIFESTS", "PARALLEL_MIN_BYTES", "PARALLEL_MIN_WORKERS"]

# a bin of at least this many manifests, this many bytes in all, is decoded in worker processes,
# as many as the usable cores less the one this process needs to take their results in; with
# fewer than PARALLEL_MIN_WORKERS the pool costs more than it saves (on 2 cores, the merging
# delete of 200 manifests of 1,000 entries took 1.27-1.43 s decoding here, 1.64-1.91 s with 2
# workers: pickling, and 3 processes on 2 cores)
PARALLEL_MIN_MANIFESTS = 4
PARALLEL_MIN_BYTES = 256 * 1024
PARALLEL_MIN_WORKERS = 2


@dataclass
class CarriedEntries:
    """Entries on their way into a merged manifest: leading fields, what the manifest list
    summary needs, and each entry's encoded ``data_file`` record."""

    status: list[int]
    snapshot_id: list
    sequence_number: list
    file_sequence_number: list
    record_count: list[int]
    file_path: list[str]
    partitions: list[tuple]
    data_files: list[bytes]

    def select(self, keep: list[int]) -> "CarriedEntries":
        return CarriedEntries(*([col[i] for i in keep] for col in self._columns()))

    def _columns(self) -> tuple[list, ...]:
        return (self.status, self.snapshot_id, self.sequence_number, self.file_sequence_number,
                self.record_count, self.file_path, self.partitions, self.data_files)

    @classmethod
    def concat(cls, parts: list["CarriedEntries"]) -> "CarriedEntries":
        cols: list[list] = [[] for _ in range(8)]
        for p in parts:
            for acc, col in zip(cols, p._columns()):
                acc.extend(col)
        return cls(*cols)


def _entry_parts(schema: Any) -> tuple[SchemaWalk, dict, list[dict]] | None:
    """(walk, data_file record, the entry fields before it) when data_file is the entry's
    last field (every layout the spec has), else None."""
    walk = SchemaWalk(schema)
    entry = walk.resolve(schema)
    fields = entry.get("fields", []) if isinstance(entry, dict) else []
    if not fields or fields[-1].get("name") != "data_file":
        return None
    return walk, walk.resolve(fields[-1]["type"]), fields[:-1]


def _first_row_id_type(walk: SchemaWalk, data_file: dict) -> Any:
    f = walk.field(data_file, "first_row_id")
    return None if f is None else f["type"]


def read_carried(source: Any, manifest_file: ManifestFile | None, schema: dict, *,
                 path: str = "") -> CarriedEntries | None:
    """A manifest's entries with their ``data_file`` bytes, inheriting from ``manifest_file``
    when given (as :func:`icectl.io.manifest.records.read_manifest_records` does); None when the manifest
    is not in the layout ``schema`` or does not decode in its first wire encoding (the record
    path then decides)."""
    data = as_bytes(source)
    meta, sync, start = split_header(data)
    schema_json = meta.get("avro.schema")
    if schema_json is None or (manifest_file is not None and manifest_file.sequence_number is None):
        return None
    try:
        if not in_layout(json.loads(schema_json), schema):
            return None
    except ValueError:
        return None
    parts = _entry_parts(schema)
    if parts is None:
        return None
    walk, data_file, _ = parts
    dec = shape_decoder(compile_decoder(wire_schema_jsons(bytes(schema_json))[0], (), (),
                                        extents=True), bound_widths(meta.get("schema")))
    codec = meta.get("avro.codec", b"null").decode() or "null"

    try:  # one buffer of every block: the extents index it
        blocks = list(decoded_blocks(data, start, sync, codec))
        buf = b"".join(b for _, b in blocks)
        raw, count = run_decoder(dec, [(sum(n for n, _ in blocks), buf)], path)
        partitions = list(zip(*partition_columns(dec, raw, path))) or [()] * count
        paths = [p.decode("utf-8") for p in raw["s_file_path"]]
    except (CorruptMetadata, UnicodeDecodeError, zlib.error):
        return None
    if not count:
        return CarriedEntries([], [], [], [], [], [], [], [])

    def col(name: str) -> list:
        v = raw.get(f"s_{name}")
        return list(v) if v is not None else [None] * count

    status, record_count, stored_row_ids = col("status"), col("record_count"), col("first_row_id")
    cols = InheritedColumns(col("snapshot_id"), col("sequence_number"),
                            col("file_sequence_number"), stored_row_ids)
    if manifest_file is not None:
        cols = inherit_columns(
            status, cols.snapshot_id, cols.sequence_number, cols.file_sequence_number,
            stored_row_ids, record_count, added_snapshot_id=manifest_file.added_snapshot_id,
            manifest_sequence_number=manifest_file.sequence_number,
            manifest_first_row_id=manifest_file.first_row_id)
    df0, df1 = raw["s_df0"], raw["s_df1"]
    files = [buf[a:b] for a, b in zip(df0, df1)]
    frid_type = _first_row_id_type(walk, data_file)
    if frid_type is not None:
        encode = value_encoder(frid_type)
        for i, (old, new) in enumerate(zip(stored_row_ids, cols.first_row_id)):
            if old != new:
                a, b = raw["s_fr0"][i] - df0[i], raw["s_fr1"][i] - df0[i]
                files[i] = files[i][:a] + encode(new) + files[i][b:]
    return CarriedEntries(status, cols.snapshot_id, cols.sequence_number,
                          cols.file_sequence_number, record_count, paths, partitions, files)


def _carried_local(req: tuple[str, ManifestFile | None, dict]) -> bytes:
    """Worker: :func:`read_carried` of one local manifest, pickled."""
    path, manifest_file, schema = req
    return pickle.dumps(read_carried(FileIO().read(path), manifest_file, schema, path=path),
                        protocol=pickle.HIGHEST_PROTOCOL)


def read_carried_all(io: FileIO, requests: Sequence[tuple[str, ManifestFile | None, int]],
                     schema: dict, workers: int | None = None,
                     ) -> Iterator[tuple[CarriedEntries | None, bytes | None]]:
    """:func:`read_carried` of each ``(path, manifest to inherit from or None, length)``, in
    order, with the manifest's bytes when they were read here (None when a worker read them).
    The manifests are decoded in forked worker processes (``workers``, default the usable cores
    less one) when there are at least :data:`PARALLEL_MIN_WORKERS` of them and at least
    :data:`PARALLEL_MIN_MANIFESTS` manifests of :data:`PARALLEL_MIN_BYTES` in all, all local,
    and this process may fork; else here, with the manifests of an object store fetched
    concurrently."""
    n = command_files.usable_cores() - 1 if workers is None else workers
    if (n >= PARALLEL_MIN_WORKERS and len(requests) >= PARALLEL_MIN_MANIFESTS
            and sum(length for _, _, length in requests) >= PARALLEL_MIN_BYTES
            and all(io.os_path(path) is not None for path, _, _ in requests) and command_files.can_fork()):
        results = command_files.forked_imap(
            _carried_local, [(path, m, schema) for path, m, _ in requests], n)
        try:
            for payload in results:
                yield pickle.loads(payload), None
        finally:
            results.close()
        return
    if len(requests) > 1 and not all(io.os_path(path) is not None for path, _, _ in requests):
        # an object store: the manifests are fetched concurrently, decoded here in order
        with ThreadPoolExecutor(min(command_files.io_threads(), len(requests))) as pool:
            raws = pool.map(io.read, [path for path, _, _ in requests])
            for (path, m, _), raw in zip(requests, raws):
                yield read_carried(raw, m, schema, path=path), raw
        return
    for path, m, _ in requests:
        raw = io.read(path)
        yield read_carried(raw, m, schema, path=path), raw


def carried_from_records(records: list[dict], partitions: list[tuple],
                         schema: dict) -> CarriedEntries:
    """Raw entry records (:func:`icectl.io.manifest.records.read_manifest_records` or
    :func:`icectl.io.manifest.records.entry_records`) as carried entries of the layout ``schema``, their
    data_file records encoded as :func:`icectl.io.manifest.records.write_manifest_records` encodes them."""
    parts = _entry_parts(manifest_wire_schemas(schema)[0])
    if parts is None:
        raise CorruptMetadata("manifest layout without a trailing data_file field")
    encode = value_encoder(parts[1])
    files = [r["data_file"] for r in records]
    return CarriedEntries(
        [r["status"] for r in records], [r.get("snapshot_id") for r in records],
        [r.get("sequence_number") for r in records],
        [r.get("file_sequence_number") for r in records], [d["record_count"] for d in files],
        [d["file_path"] for d in files], list(partitions), [encode(d) for d in files])


def carry(c: CarriedEntries, *, own: bool, snapshot_id: int) -> CarriedEntries:
    """The entries a merge by snapshot ``snapshot_id`` keeps, as it writes them. ``own``: the
    manifest was written by this commit (its added and deleted entries are this snapshot's,
    still to inherit its numbers; existing entries of a rewritten manifest keep the snapshot
    that added them). Otherwise DELETED entries of older snapshots are dropped and every entry
    not added by this snapshot becomes EXISTING."""
    keep: list[int] = []
    status, sids = c.status, c.snapshot_id
    for i, st in enumerate(status):
        if own:
            if st != EXISTING:
                sids[i] = snapshot_id
        elif st == DELETED:
            if sids[i] != snapshot_id:
                continue
        elif st != ADDED or sids[i] != snapshot_id:
            status[i] = EXISTING
        keep.append(i)
    return c if len(keep) == len(status) else c.select(keep)


def _prefix_encoder(fields: list[dict]) -> Callable[[tuple], bytes]:
    """Encoded leading fields of an entry, cached by value (a merge repeats few of them)."""
    encode = value_encoder({"type": "record", "name": "entry_prefix", "fields": fields})
    names = [f["name"] for f in fields]
    cache: dict[tuple, bytes] = {}

    def prefix(values: tuple) -> bytes:
        b = cache.get(values)
        if b is None:
            b = cache[values] = encode(dict(zip(names, values)))
        return b
    return prefix


def write_carried(schema: dict, metadata: dict[str, str], c: CarriedEntries) -> bytes:
    """A manifest of carried entries with the Avro schema ``schema`` and key-value
    ``metadata`` (:func:`icectl.io.manifest.records.manifest_header`). Non-ADDED entries must carry both
    sequence numbers (v2+)."""
    parts = _entry_parts(schema)
    if parts is None:
        raise CorruptMetadata("manifest layout without a trailing data_file field")
    lead = [f["name"] for f in parts[2]]
    columns = {"status": c.status, "snapshot_id": c.snapshot_id,
               "sequence_number": c.sequence_number,
               "file_sequence_number": c.file_sequence_number}
    lead_values = list(zip(*(columns[n] for n in lead)))
    if metadata.get("format-version", "1") != "1":
        for st, seq, fseq, p in zip(c.status, c.sequence_number, c.file_sequence_number,
                                    c.file_path):
            if st != ADDED:
                require_sequence_numbers(st, seq, fseq, p)
    prefix = _prefix_encoder(parts[2])

    def segments() -> Iterator[tuple[int, bytes]]:
        files = c.data_files
        for lo in range(0, len(files), SEGMENT_OBJECTS):
            hi = min(lo + SEGMENT_OBJECTS, len(files))
            yield hi - lo, b"".join(
                [piece for i in range(lo, hi) for piece in (prefix(lead_values[i]), files[i])])

    return container_file(schema, metadata, segments())
