"""The pending-cleanup records of ``icectl expire`` (see ``ops/maintain/expire.py``'s module docs):
``metadata/.icectl-expire-<uuid>.json`` names the snapshots an expiry removed, written before its
commit and removed once every deletion is done, so a rerun finishes a run that was killed."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Sequence

from icectl.errors import CorruptMetadata, NotFound
from icectl.io.storage.files import FileInfo, FileIO, join
from icectl.ops.maintain.reachable import statistics_files
from icectl.spec.metadata import TableMetadata
from icectl.spec.snapshots import Snapshot
from icectl.table.store import metadata_dir

__all__ = ["PENDING_PREFIX", "PENDING_SUFFIX", "Pending", "pending_records", "write_record",
           "metadata_entries"]

PENDING_PREFIX = ".icectl-expire-"
PENDING_SUFFIX = ".json"


@dataclass(frozen=True)
class Pending:
    """A pending cleanup record (see the module docs)."""

    path: str | None
    snapshots: tuple[Snapshot, ...]
    statistics_files: tuple[str, ...]

    def to_json(self, base_metadata: str) -> dict[str, Any]:
        return {
            "icectl-pending-expire": 1,
            "base-metadata-file": base_metadata,
            "expired-snapshots": [s.to_json() for s in self.snapshots],
            "statistics-files": list(self.statistics_files),
        }

    @classmethod
    def from_json(cls, path: str, obj: Any) -> "Pending":
        if not isinstance(obj, dict) or obj.get("icectl-pending-expire") != 1:
            raise CorruptMetadata(f"{path} is not an icectl pending-expire record")
        try:
            snaps = tuple(Snapshot.from_json(s) for s in obj.get("expired-snapshots") or [])
            stats = tuple(str(p) for p in obj.get("statistics-files") or [])
        except (CorruptMetadata, TypeError, ValueError) as e:
            raise CorruptMetadata(f"cannot read pending-expire record {path}: {e}") from None
        return cls(path, snaps, stats)


def metadata_entries(io: FileIO, location: str, prefix: str) -> list[FileInfo]:
    """Entries of ``metadata/`` whose names start with ``prefix``: only the names are listed
    (on a flat store, an object store, only the keys with that prefix), and on a disk only the
    entries named so are looked at, not every manifest of the table."""
    d = metadata_dir(location)
    names = io.list_names(d, prefix=prefix)
    if io.storage(d).flat:
        return [FileInfo(join(d, n), 0, 0) for n in names]
    out = []
    for n in names:
        try:
            out.append(io.info(join(d, n)))
        except NotFound:
            continue  # removed while listing
    return out


def pending_records(io: FileIO, location: str) -> list[Pending]:
    out = []
    for info in metadata_entries(io, location, PENDING_PREFIX):
        if info.is_dir or not (info.name.startswith(PENDING_PREFIX) and info.name.endswith(PENDING_SUFFIX)):
            continue
        try:
            obj = json.loads(io.read(info.path).decode("utf-8"))
        except NotFound:
            continue
        except (UnicodeDecodeError, json.JSONDecodeError):
            # a record cut short while being written: the commit after it never happened
            io.delete_quietly(info.path)
            continue
        out.append(Pending.from_json(info.path, obj))
    return out


def write_record(io: FileIO, path: str, base_file: str, base: TableMetadata, ids: Sequence[int]) -> None:
    snaps = tuple(s for s in (base.snapshot_by_id(i) for i in ids) if s is not None)
    rec = Pending(path, snaps, tuple(sorted(statistics_files(base, set(ids)))))
    io.delete(path)
    io.write_exclusive(path, json.dumps(rec.to_json(base_file), indent=1).encode("utf-8"), durable=True)
