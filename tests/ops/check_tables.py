"""Small tables for the `icectl check` tests, built with icectl's own library, and ways to
break them on purpose."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import pyarrow as pa
from pyroaring import BitMap64

from icectl.io.manifest import records as avro
from icectl.io.storage.files import local_path
from icectl.spec.manifests import ADDED, MANIFEST_DELETES, POSITION_DELETES, DataFile, ManifestEntry, ManifestFile
from icectl.spec.metadata import TableMetadata
from icectl.spec.summary import SummaryBuilder
from icectl.table.commit.producer import SnapshotProducer
from icectl.table.table import Table
from support.tables import empty_table, with_files

SCHEMA = "id long, cat string, v double"
DV_MAGIC = b"\xd1\xd3\x39\x64"


def rows(start: int, n: int = 3) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({"id": ids, "cat": ["a" if i % 2 else "b" for i in ids], "v": [float(i) for i in ids]})


def build(root: Path, name: str = "t", *, format_version: int = 2, partition: str | None = "bucket(4, id), cat",
          writes: int = 2, properties: dict[str, str] | None = None) -> Table:
    t = empty_table(root / name, SCHEMA, partition=partition, format_version=format_version,
                    properties=properties)
    return with_files(t, writes, lambda i: rows(10 * i))


def metadata_file(t: Table) -> Path:
    return Path(local_path(t.metadata_location))


def edit_metadata(t: Table, change: Callable[[dict[str, Any]], Any]) -> None:
    """Edit the current metadata JSON in place."""
    p = metadata_file(t)
    obj = json.loads(p.read_text())
    change(obj)
    p.write_text(json.dumps(obj))


def snapshot_list(t: Table, snapshot_id: int | None = None) -> tuple[Any, list[ManifestFile]]:
    md = t.metadata
    s = md.snapshot_by_id(snapshot_id) if snapshot_id is not None else md.current_snapshot()
    return s, avro.load_manifest_list(t.io, s.manifest_list, md.format_version)


def rewrite_list(t: Table, change: Callable[[list[ManifestFile]], list[ManifestFile]],
                 snapshot_id: int | None = None) -> None:
    """Rewrite a snapshot's manifest list (default: the current one) with changed entries."""
    s, manifests = snapshot_list(t, snapshot_id)
    data = avro.write_manifest_list(change(manifests), t.metadata.format_version, s.snapshot_id,
                                    s.parent_snapshot_id, s.sequence_number, s.first_row_id)
    Path(local_path(s.manifest_list)).write_bytes(data)


def live_data_files(t: Table) -> list[DataFile]:
    _, manifests = snapshot_list(t)
    out = []
    for m in manifests:
        out += [e.data_file for e in avro.load_manifest(t.io, m) if e.is_live and e.data_file.is_data]
    return out


# -- deletion vectors ---------------------------------------------------------------------------


def dv_blob(positions: Iterable[int]) -> tuple[bytes, int]:
    """A ``deletion-vector-v1`` blob (length, magic, portable 64-bit Roaring, CRC) and its cardinality."""
    bm = BitMap64(positions)
    bm.run_optimize()
    body = DV_MAGIC + bm.serialize()
    return struct.pack(">I", len(body)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF), len(bm)


def write_puffin(path: Path, blobs: Sequence[tuple[bytes, str, int]]) -> list[tuple[int, int]]:
    """A Puffin file holding the given (blob, referenced data file, cardinality); returns each
    blob's (offset, length)."""
    data = b"PFA1"
    where = []
    footer_blobs = []
    for blob, ref, card in blobs:
        where.append((len(data), len(blob)))
        footer_blobs.append({"type": "deletion-vector-v1", "fields": [2147483645], "snapshot-id": -1,
                             "sequence-number": -1, "offset": len(data), "length": len(blob),
                             "properties": {"referenced-data-file": ref, "cardinality": str(card)}})
        data += blob
    payload = json.dumps({"blobs": footer_blobs, "properties": {}}).encode()
    data += b"PFA1" + payload + struct.pack("<I", len(payload)) + b"\0\0\0\0" + b"PFA1"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return where


def dv_files(root: Path, targets: Sequence[tuple[str, Sequence[int]]], name: str = "dv.puffin",
             record_counts: Sequence[int] | None = None) -> list[DataFile]:
    """One Puffin file with a DV per (data file, positions); their manifest entries' files."""
    blobs = [(*dv_blob(pos), ref) for ref, pos in targets]
    path = root / name
    where = write_puffin(path, [(b, ref, card) for b, card, ref in blobs])
    size = path.stat().st_size
    out = []
    for i, ((blob, card, ref), (off, length)) in enumerate(zip(blobs, where)):
        count = record_counts[i] if record_counts is not None else card
        out.append(DataFile(POSITION_DELETES, str(path), "PUFFIN", (), count, size,
                            referenced_data_file=ref, content_offset=off, content_size_in_bytes=length))
    return out


class AddDeletes(SnapshotProducer):
    """A test producer: one snapshot adding delete files (a row delta without data), with the
    data sequence number ``sequence_number`` (default: the new snapshot's)."""

    operation = "delete"

    def __init__(self, table: Table, deletes: Sequence[DataFile], sequence_number: int | None = None,
                 **kwargs: Any):
        super().__init__(table, **kwargs)
        self.deletes = list(deletes)
        self.sequence_number = sequence_number

    def summary(self, base: TableMetadata) -> SummaryBuilder:
        return SummaryBuilder().added_files((d, "") for d in self.deletes)

    def apply(self, base, parent, attempt) -> list[ManifestFile]:
        entries = [ManifestEntry(ADDED, self.snapshot_id, self.sequence_number, None, d) for d in self.deletes]
        new = self.write_manifests(attempt, base, base.spec, entries, content=MANIFEST_DELETES)
        return new + self.parent_manifests(base, parent)


class AddEntries(SnapshotProducer):
    """A test producer: one append snapshot whose entries are written exactly as given."""

    operation = "append"

    def __init__(self, table: Table, entries: Sequence[ManifestEntry], **kwargs: Any):
        super().__init__(table, **kwargs)
        self.entries = list(entries)

    def summary(self, base: TableMetadata) -> SummaryBuilder:
        return SummaryBuilder().added_files((e.data_file, "") for e in self.entries)

    def apply(self, base, parent, attempt) -> list[ManifestFile]:
        return self.write_manifests(attempt, base, base.spec, self.entries) + self.parent_manifests(base, parent)
