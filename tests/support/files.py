"""Hand-made files committed into a table (the scan tests' builders): Parquet files written with
pyarrow (field ids in the schema), data file entries of any metrics, delete files and deletion
vectors, and :func:`commit`, which adds them through the table's snapshot producer (one manifest
per content and spec) on top of the parent snapshot."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path
from typing import Any, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from icectl.spec.manifests import (
    ADDED,
    DATA,
    EQUALITY_DELETES,
    MANIFEST_DATA,
    MANIFEST_DELETES,
    POSITION_DELETES,
    DataFile,
    ManifestEntry,
)
from icectl.spec.summary import SummaryBuilder
from icectl.table.commit.producer import SnapshotProducer
from icectl.table.table import Table


class Producer(SnapshotProducer):
    """Adds data and delete files (one manifest per content and spec) on top of the parent."""

    def __init__(self, table: Table, data: list[DataFile], deletes: list[DataFile], op: str):
        super().__init__(table)
        self.data, self.deletes, self.operation = data, deletes, op

    def apply(self, base, parent, attempt):
        out = []
        for files, content in ((self.data, MANIFEST_DATA), (self.deletes, MANIFEST_DELETES)):
            by_spec: dict[int, list] = {}
            for f in files:
                by_spec.setdefault(f.spec_id, []).append(
                    ManifestEntry(ADDED, self.snapshot_id, None, None, f))
            for spec_id, entries in by_spec.items():
                out += self.write_manifests(attempt, base, base.spec_by_id(spec_id), entries,
                                            content)
        return out + self.parent_manifests(base, parent)

    def summary(self, base):
        return SummaryBuilder()


def field(name: str, t: pa.DataType, fid: int) -> pa.Field:
    return pa.field(name, t, metadata={b"PARQUET:field_id": str(fid).encode()})


def write_parquet(path: Path, arrays: dict[str, Any], fields: Sequence[pa.Field] | None = None,
                  row_group_size: int | None = None) -> str:
    schema = pa.schema(fields) if fields is not None else None
    tbl = pa.table(arrays, schema=schema)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(tbl, str(path), row_group_size=row_group_size)
    return str(path)


def data_file(path: str, rows: int, spec_id: int = 0, partition: tuple = ()) -> DataFile:
    return DataFile(DATA, path, "PARQUET", partition, rows, Path(path).stat().st_size,
                    spec_id=spec_id)


def pos_delete_file(path: Path, targets: list[tuple[str, int]]) -> DataFile:
    p = write_parquet(path, {"file_path": [t[0] for t in targets], "pos": [t[1] for t in targets]},
                      [field("file_path", pa.string(), 2147483546),
                       field("pos", pa.int64(), 2147483545)])
    return DataFile(POSITION_DELETES, p, "PARQUET", (), len(targets), Path(p).stat().st_size)


def eq_delete_file(path: Path, ids: tuple[int, ...], arrays: dict[str, Any],
                   fields: Sequence[pa.Field]) -> DataFile:
    p = write_parquet(path, arrays, fields)
    n = len(next(iter(arrays.values())))
    return DataFile(EQUALITY_DELETES, p, "PARQUET", (), n, Path(p).stat().st_size,
                    equality_ids=ids)


def commit(t: Table, data=(), deletes=(), op: str = "append") -> int:
    return Producer(t, list(data), list(deletes), op).commit().snapshot.snapshot_id


# -- a portable roaring serializer (test-only, to build deletion vectors) ----------------------


def roaring32(values: Sequence[int], runs: bool = False) -> bytes:
    """Portable 32-bit roaring: arrays for <= 4096 values, bitmaps above, or one run container
    per key when ``runs`` (values must then be contiguous per key)."""
    groups: dict[int, list[int]] = {}
    for v in sorted(set(values)):
        groups.setdefault(v >> 16, []).append(v & 0xFFFF)
    keys = sorted(groups)
    out = bytearray()
    if runs:
        out += struct.pack("<I", 12347 | ((len(keys) - 1) << 16))
        bits = bytearray((len(keys) + 7) // 8)
        for i in range(len(keys)):
            bits[i // 8] |= 1 << (i % 8)
        out += bits
    else:
        out += struct.pack("<II", 12346, len(keys))
    for k in keys:
        out += struct.pack("<HH", k, len(groups[k]) - 1)
    bodies = []
    for k in keys:
        lows = groups[k]
        if runs:
            bodies.append(struct.pack("<HHH", 1, lows[0], len(lows) - 1))
        elif len(lows) <= 4096:
            bodies.append(struct.pack(f"<{len(lows)}H", *lows))
        else:
            words = [0] * 1024
            for v in lows:
                words[v >> 6] |= 1 << (v & 63)
            bodies.append(struct.pack("<1024Q", *words))
    if not runs or len(keys) >= 4:
        off = len(out) + 4 * len(keys)
        for b in bodies:
            out += struct.pack("<I", off)
            off += len(b)
    for b in bodies:
        out += b
    return bytes(out)


def roaring64(values: Sequence[int], runs: bool = False) -> bytes:
    buckets: dict[int, list[int]] = {}
    for v in values:
        buckets.setdefault(v >> 32, []).append(v & 0xFFFFFFFF)
    out = struct.pack("<Q", len(buckets))
    for high in sorted(buckets):
        out += struct.pack("<I", high) + roaring32(buckets[high], runs)
    return out


def dv_blob(values: Sequence[int], runs: bool = False) -> bytes:
    body = b"\xd1\xd3\x39\x64" + roaring64(values, runs)
    return struct.pack(">I", len(body)) + body + struct.pack(">I", zlib.crc32(body))


def dv_file(path: Path, data_path: str, positions: Sequence[int]) -> DataFile:
    """A Puffin-like file holding one DV blob after 4 bytes of header (the reader reads only
    the blob range the entry names)."""
    blob = dv_blob(positions)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"PFA1" + blob + b"PFA1")
    return DataFile(POSITION_DELETES, str(path), "PUFFIN", (), len(set(positions)),
                    path.stat().st_size, referenced_data_file=data_path, content_offset=4,
                    content_size_in_bytes=len(blob))
