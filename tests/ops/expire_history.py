"""Build table histories for the expire/orphan/ref tests (and the expire benchmark).

Snapshots are written the way the reference writes them (manifests with added / existing /
deleted entries, manifest lists, explicit timestamps), without any engine: appends, overwrites
that rewrite the manifests holding the removed files, merge-on-read deletes adding position
delete files, branches, tags and rollbacks. Data files are tiny real files (``touch=True``) so
that tests can see exactly what is deleted.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import replace

from icectl.io.manifest import records as avro
from icectl.io.storage.files import FileIO, join, local_path
from icectl.spec.manifests import (
    ADDED, DATA, DELETED, EXISTING, MANIFEST_DATA, MANIFEST_DELETES, POSITION_DELETES, DataFile,
    ManifestEntry, ManifestFile, summarize_columns,
)
from icectl.spec.metadata import TableMetadata, add_snapshot, new_table_metadata, set_ref
from icectl.spec.schema import Schema
from icectl.spec.snapshots import BRANCH, MAIN_BRANCH, TAG, Snapshot, SnapshotRef
from icectl.table.table import Table

SCHEMA = Schema.from_json({"type": "struct", "fields": [
    {"id": 1, "name": "id", "required": True, "type": "long"},
    {"id": 2, "name": "data", "required": False, "type": "string"}]})

DAY = 86_400_000


class History:
    def __init__(self, location: str, *, format_version: int = 2, start_ms: int = 1_600_000_000_000,
                 step_ms: int = 60_000, touch: bool = True, properties: dict | None = None):
        self.location = location
        self.io = FileIO()
        self.md: TableMetadata = new_table_metadata(
            SCHEMA, location=location, format_version=format_version,
            properties={"commit.retry.min-wait-ms": "1", **(properties or {})}, timestamp_ms=start_ms)
        self.spec = self.md.spec
        self.schema = self.md.schema
        self.clock = start_ms
        self.step = step_ms
        self.touch = touch
        self.ids = itertools.count(1001)
        self.files = itertools.count(1)
        self.heads: dict[str, list[ManifestFile]] = {}  # branch -> manifests of its head
        self.entries: dict[str, list[ManifestEntry]] = {}  # manifest path -> resolved entries
        from icectl.io.storage.files import local_path

        self.local = local_path(location)
        os.makedirs(os.path.join(self.local, "metadata"), exist_ok=True)
        os.makedirs(os.path.join(self.local, "data"), exist_ok=True)

    # -- helpers ---------------------------------------------------------------------------

    def _tick(self, ts: int | None) -> int:
        self.clock = ts if ts is not None else self.clock + self.step
        return self.clock

    def _new_file(self, content: int = DATA, ref: str | None = None) -> DataFile:
        n = next(self.files)
        ext = "parquet"
        name = f"{'delete' if content else 'data'}-{n:06d}.{ext}"
        path = join(self.location, "data", name)
        if self.touch:
            with open(local_path(path), "wb") as f:
                f.write(b"x")
        return DataFile(content, path, "PARQUET", (), 10, 1, referenced_data_file=ref)

    def _write_manifest(self, sid: int, seq: int, entries: list[ManifestEntry], content: int) -> ManifestFile:
        path = join(self.location, "metadata", f"m-{sid}-{len(self.entries)}.avro")
        data = avro.write_manifest(entries, self.spec, self.schema, self.md.format_version, sid, content)
        with open(local_path(path), "wb") as f:
            f.write(data)
        mf = summarize_columns([e.status for e in entries], [e.data_file.record_count for e in entries],
                                [e.sequence_number for e in entries], [e.data_file.partition for e in entries],
                                manifest_path=path, manifest_length=len(data),
                                partition_spec_id=self.spec.spec_id, content=content, snapshot_id=sid)
        resolved = [replace(e, snapshot_id=e.snapshot_id or sid,
                            sequence_number=e.sequence_number if e.sequence_number is not None else seq,
                            file_sequence_number=e.file_sequence_number if e.file_sequence_number is not None else seq)
                    for e in entries]
        live = [e.sequence_number for e in resolved if e.status != DELETED]
        mf = replace(mf, sequence_number=seq, min_sequence_number=min(live) if live else seq)
        self.entries[path] = resolved
        return mf

    def _commit(self, op: str, branch: str, new: list[ManifestFile], carried: list[ManifestFile],
                ts: int | None, sid: int, seq: int) -> int:
        parent = self.md.refs.get(branch)
        if parent is None and self.md.current_snapshot_id is not None:
            parent_id = self.md.current_snapshot_id
        else:
            parent_id = parent.snapshot_id if parent else None
        manifests = new + carried
        lst = join(self.location, "metadata", f"snap-{sid}-1-x.avro")
        data = avro.write_manifest_list(manifests, self.md.format_version, sid, parent_id, seq)
        with open(local_path(lst), "wb") as f:
            f.write(data)
        snap = Snapshot(sid, self._tick(ts), parent_id, seq, lst, {"operation": op}, schema_id=0)
        self.md = add_snapshot(self.md, snap, branch)
        self.heads[branch] = manifests
        return sid

    def _start(self) -> tuple[int, int]:
        return next(self.ids), self.md.last_sequence_number + 1

    def _head(self, branch: str) -> list[ManifestFile]:
        if branch in self.heads:
            return self.heads[branch]
        ref = self.md.refs.get(branch)
        sid = ref.snapshot_id if ref else self.md.current_snapshot_id
        for name, ref in self.md.refs.items():
            if ref.snapshot_id == sid and name in self.heads:
                return self.heads[name]
        return []

    # -- operations ------------------------------------------------------------------------

    def append(self, n: int = 1, *, branch: str = MAIN_BRANCH, ts: int | None = None) -> int:
        sid, seq = self._start()
        entries = [ManifestEntry(ADDED, sid, None, None, self._new_file()) for _ in range(n)]
        new = [self._write_manifest(sid, seq, entries, MANIFEST_DATA)]
        return self._commit("append", branch, new, list(self._head(branch)), ts, sid, seq)

    def append_paths(self, paths: list[str], *, branch: str = MAIN_BRANCH, ts: int | None = None) -> int:
        """Append existing files by path (as ``icectl append`` registers them, e.g. outside the
        table location)."""
        sid, seq = self._start()
        entries = [ManifestEntry(ADDED, sid, None, None, DataFile(DATA, p, "PARQUET", (), 10, 1)) for p in paths]
        new = [self._write_manifest(sid, seq, entries, MANIFEST_DATA)]
        return self._commit("append", branch, new, list(self._head(branch)), ts, sid, seq)

    def live(self, branch: str = MAIN_BRANCH, content: int = DATA) -> list[str]:
        return [e.data_file.file_path for m in self._head(branch) for e in self.entries[m.manifest_path]
                if e.status != DELETED and e.data_file.content == content]

    def _rewrite_without(self, branch: str, remove: set[str], sid: int, seq: int) -> list[ManifestFile]:
        out = []
        for m in self._head(branch):
            es = self.entries[m.manifest_path]
            if not any(e.status != DELETED and e.data_file.file_path in remove for e in es):
                out.append(m)
                continue
            rewritten = []
            for e in es:
                if e.status == DELETED:
                    continue
                if e.data_file.file_path in remove:
                    rewritten.append(replace(e, status=DELETED, snapshot_id=sid))
                else:
                    rewritten.append(replace(e, status=EXISTING))
            out.append(self._write_manifest(sid, seq, rewritten, m.content))
        return out

    def overwrite(self, remove: list[str], add: int = 1, *, branch: str = MAIN_BRANCH, ts: int | None = None,
                  op: str = "overwrite") -> int:
        sid, seq = self._start()
        carried = self._rewrite_without(branch, set(remove), sid, seq)
        new = []
        if add:
            entries = [ManifestEntry(ADDED, sid, None, None, self._new_file()) for _ in range(add)]
            new = [self._write_manifest(sid, seq, entries, MANIFEST_DATA)]
        return self._commit(op, branch, new, carried, ts, sid, seq)

    def delete_rows(self, data_files: list[str], *, branch: str = MAIN_BRANCH, ts: int | None = None) -> int:
        """Merge-on-read delete: one position delete file per data file, in a delete manifest."""
        sid, seq = self._start()
        entries = [ManifestEntry(ADDED, sid, None, None, self._new_file(POSITION_DELETES, ref=p)) for p in data_files]
        new = [self._write_manifest(sid, seq, entries, MANIFEST_DELETES)]
        return self._commit("delete", branch, new, list(self._head(branch)), ts, sid, seq)

    def tag(self, name: str, snapshot_id: int | None = None, **retention) -> None:
        sid = snapshot_id or self.md.current_snapshot_id
        self.md = set_ref(self.md, name, SnapshotRef(sid, TAG, **retention), timestamp_ms=self.clock)

    def branch(self, name: str, snapshot_id: int | None = None, **retention) -> None:
        sid = snapshot_id or self.md.current_snapshot_id
        self.md = set_ref(self.md, name, SnapshotRef(sid, BRANCH, **retention), timestamp_ms=self.clock)
        self.heads[name] = self._manifests_of(sid)

    def rollback(self, snapshot_id: int) -> None:
        self.md = set_ref(self.md, MAIN_BRANCH, self.md.refs[MAIN_BRANCH].with_snapshot(snapshot_id),
                          timestamp_ms=self.clock)
        self.heads[MAIN_BRANCH] = self._manifests_of(snapshot_id)

    def _manifests_of(self, sid: int) -> list[ManifestFile]:
        snap = self.md.snapshot_by_id(sid)
        return avro.load_manifest_list(self.io, snap.manifest_list, self.md.format_version)

    def save(self) -> Table:
        return Table.create(self.location, self.md)

    # -- inspection ------------------------------------------------------------------------

    def all_files(self) -> set[str]:
        out = set()
        for root, _, names in os.walk(self.local):
            for n in names:
                out.add(os.path.join(root, n))
        return out
