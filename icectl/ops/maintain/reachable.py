"""What snapshots reach: their manifest lists, manifests, live data and delete files and
statistics files. The one reader behind ``expire`` (what expired snapshots alone reach) and
``orphans`` (what any snapshot reaches).

Reading is *strict* for everything a deletion must not touch: a missing manifest list or
manifest of a snapshot that stays makes the reachable set unknowable, and taking live files for
unreachable ones would delete them, so it raises CorruptMetadata instead. Expired snapshots are
read leniently (an interrupted earlier run may already have deleted some of their files).

Cost. The work follows what the history holds once, not what each snapshot repeats: a manifest
list is read once, and each of its entries is decoded once per table however many later lists
carry it (:class:`~icectl.io.manifest.manifest_list.SharedEntryReader` recognises an entry by
its bytes); a manifest is read once, by the column decoder (paths, content and status columns,
no record per entry); an expired snapshot's manifest whose list entry counts no live file is not
read at all; paths are normalised per directory (:class:`~icectl.ops.maintain.file_removal.PathIdentities`).
So a history of N snapshots of M manifests each costs N x M byte comparisons plus one decode of
each distinct manifest list entry and of each manifest, and the memory held is one entry per
distinct manifest plus the live file paths.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from icectl.errors import CorruptMetadata, NotFound, UnsupportedFeature
from icectl.io.manifest import records as avro
from icectl.io.manifest.manifest_list import SharedEntryReader
from icectl.io.storage.files import FileIO
from icectl.ops.maintain.file_removal import PathIdentities, Progress
from icectl.spec.manifests import DELETED, ManifestFile
from icectl.spec.metadata import TableMetadata
from icectl.spec.snapshots import Snapshot, statistics_path

__all__ = ["LiveEntries", "LiveIndex", "ManifestReader", "Reachable", "live_entries", "read_reachable",
           "statistics_files"]


LiveEntries = tuple[list[str], Sequence[int]]
"""A manifest's live (added or existing) entries: their paths, and their contents (0 data, 1
position deletes, 2 equality deletes), as one byte each unless a value does not fit one. Two
objects per manifest, not a tuple per file: what a reader keeps of millions of entries is their
path strings."""


class LiveIndex:
    """The live entries of the manifests a reader has read (``_entries``: manifest path ->
    :data:`LiveEntries`, None when missing), and what is asked of them; ``_read`` reads the
    manifests not read yet (this process's threads, or an engine's tasks)."""

    _entries: dict[str, LiveEntries | None]
    identities: PathIdentities
    incomplete: str
    manifests_read: int

    def _read(self, todo: list[ManifestFile], phase: str) -> Iterable[tuple[str, LiveEntries | None]]:
        raise NotImplementedError

    def _load(self, manifests: Sequence[ManifestFile], phase: str, strict: bool) -> list[LiveEntries]:
        """The live entries of each manifest (read when not read yet); missing manifests are
        skipped unless ``strict``.

        Not ``strict`` (the manifests of expired snapshots, whose files may go), a manifest
        whose list entry counts no added and no existing file has no live entry and is not
        read: were the counts wrong, its files would be kept, never deleted. A strict read
        (what stays, what is referenced) reads every manifest."""
        todo = list({m.manifest_path: m for m in manifests
                     if m.manifest_path not in self._entries and (strict or _may_have_live(m))}.values())
        for path, got in self._read(todo, phase):
            self._entries[path] = got
            self.manifests_read += 1
        out: list[LiveEntries] = []
        for m in manifests:
            if m.manifest_path not in self._entries:
                continue  # not read: no live entry
            got = self._entries[m.manifest_path]
            if got is None:
                if strict:
                    raise CorruptMetadata(f"manifest {m.manifest_path} is missing; {self.incomplete}")
                continue
            out.append(got)
        return out

    def live_files(self, manifests: Sequence[ManifestFile], phase: str, strict: bool = False) -> dict[str, int]:
        """Live (added or existing) file paths -> content, across the manifests (see
        :meth:`_load` for what is read)."""
        out: dict[str, int] = {}
        for paths, contents in self._load(manifests, phase, strict):
            for path, content in zip(paths, contents):
                out.setdefault(path, content)
        return out

    def live_identities(self, manifests: Sequence[ManifestFile], phase: str, strict: bool = False) -> set[str]:
        """The normalised paths of the live files across the manifests (a new set): one set
        entry per file, whose strings are the paths read wherever a path is its own identity."""
        norm = self.identities
        return set(norm(p) for paths, _ in self._load(manifests, phase, strict) for p in paths)


@dataclass
class ManifestReader(LiveIndex):
    """Reads manifest lists and manifests at most once each, in parallel: a retried commit or a
    second pass over the same snapshots reads nothing again (both are immutable).

    ``incomplete`` ends the message of a strict read that finds a file missing (what the
    command does not do because of it)."""

    io: FileIO
    format_version: int
    workers: int
    progress: Progress | None = None
    incomplete: str = "nothing is deleted while the table's metadata is incomplete"
    lists_read: int = 0
    manifests_read: int = 0
    _lists: dict[str, list[ManifestFile] | None] = field(default_factory=dict)
    _entries: dict[str, LiveEntries | None] = field(default_factory=dict)
    _list_reader: SharedEntryReader = field(default_factory=SharedEntryReader)
    identities: PathIdentities = field(default_factory=PathIdentities)  # normalises the paths read

    def manifests_of(self, snapshots: Sequence[Snapshot], strict: bool = False) -> dict[str, ManifestFile]:
        """Manifests (by path) the snapshots list; missing manifest lists are skipped unless
        ``strict``."""
        todo = list(dict.fromkeys(s.manifest_list for s in snapshots
                                  if s.manifest_list and s.manifest_list not in self._lists))

        def load(path: str) -> tuple[str, list[ManifestFile] | None]:
            try:
                return path, self._list_reader.load(self.io, path)
            except NotFound:
                return path, None

        for path, got in self._map(load, todo, "reading manifest lists"):
            self._lists[path] = got
            self.lists_read += 1
        return snapshot_manifests(self._lists, snapshots, strict, self.incomplete)

    def _read(self, todo: list[ManifestFile], phase: str) -> Iterable[tuple[str, LiveEntries | None]]:
        def load(m: ManifestFile) -> tuple[str, LiveEntries | None]:
            try:
                data = self.io.read(m.manifest_path)
            except NotFound:
                return m.manifest_path, None
            return m.manifest_path, live_entries(m, data)

        return self._map(load, todo, phase)

    def _map(self, fn: Callable[[Any], Any], items: list, phase: str) -> Iterable[Any]:
        if not items:
            return
        if self.workers <= 1 or len(items) == 1:
            yield from self._counted(map(fn, items), phase, len(items))
            return
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            yield from self._counted(pool.map(fn, items), phase, len(items))

    def _counted(self, results: Iterable[Any], phase: str, total: int) -> Iterable[Any]:
        for done, result in enumerate(results, 1):
            yield result
            if self.progress is not None:
                self.progress(phase, done, total)


def snapshot_manifests(lists: dict[str, list[ManifestFile] | None], snapshots: Sequence[Snapshot], strict: bool,
                       incomplete: str) -> dict[str, ManifestFile]:
    """Manifests (by path) of the snapshots, from their manifest lists as read (``lists``: path ->
    manifests, None when missing: skipped unless ``strict``); every reader's one rule."""
    out: dict[str, ManifestFile] = {}
    for s in snapshots:
        if strict and s.manifest_list and lists.get(s.manifest_list) is None:
            raise CorruptMetadata(
                f"manifest list {s.manifest_list} of snapshot {s.snapshot_id} is missing; {incomplete}")
        if s.manifest_list:
            for m in lists.get(s.manifest_list) or ():
                out.setdefault(m.manifest_path, m)
        elif s.manifests:  # v1 inline manifests: only the path matters here
            for p in s.manifests:
                out.setdefault(p, ManifestFile(manifest_path=p, manifest_length=0, partition_spec_id=0,
                                               added_snapshot_id=s.snapshot_id))
    return out


def _may_have_live(m: ManifestFile) -> bool:
    """False when the manifest list entry counts no added and no existing file (v1 lists may
    leave the counts out: then it may)."""
    return not (m.added_files_count == 0 and m.existing_files_count == 0)


def live_entries(m: ManifestFile, data: bytes) -> LiveEntries:
    """The live entries of a manifest's bytes, by the column decoder (no record per entry); a
    manifest it cannot decode is read by the record reader."""
    from icectl.io.formats.avro_container import naming_file
    from icectl.io.manifest.columns import decode_manifest

    try:
        with naming_file("manifest", m.manifest_path):
            cols = decode_manifest(data, path=m.manifest_path, added_snapshot_id=m.added_snapshot_id,
                                   sequence_number=m.sequence_number, first_row_id=m.first_row_id)
    except UnsupportedFeature:
        entries = [e for e in avro.read_manifest(data, include_stats=False) if e.status != DELETED]
        return [e.data_file.file_path for e in entries], _compact([e.data_file.content for e in entries])
    if DELETED not in cols.status:
        return cols.file_path, _compact(cols.content)
    keep = [i for i, st in enumerate(cols.status) if st != DELETED]
    return [cols.file_path[i] for i in keep], _compact([cols.content[i] for i in keep])


def _compact(contents: list[int]) -> Sequence[int]:
    """One byte per content value; the list itself when a (corrupt) value does not fit one."""
    try:
        return bytes(contents)
    except (ValueError, TypeError):
        return contents


def statistics_files(md: TableMetadata, snapshot_ids: set[int] | None = None) -> set[str]:
    """Statistics and partition-statistics files of the metadata (of some snapshots only)."""
    out: set[str] = set()
    for entry in tuple(md.statistics) + tuple(md.partition_statistics):
        if snapshot_ids is not None and entry.get("snapshot-id") not in snapshot_ids:
            continue
        p = statistics_path(entry)
        if p is not None:
            out.add(p)
    return out


@dataclass(frozen=True)
class Reachable:
    """Everything the snapshots of a metadata version reach (normalised paths), read whole."""

    manifest_lists: frozenset[str]
    manifests: frozenset[str]
    files: set[str]  # made for this read alone (see take_all_paths)
    statistics: frozenset[str]
    spec_ids: frozenset[int]

    def take_all_paths(self) -> set[str]:
        """Every path reached, in one set: the files set itself, grown by the other kinds' paths
        (no copy of millions of entries), so this is the last use of this Reachable."""
        out = self.files
        out.update(self.manifest_lists, self.manifests, self.statistics)
        return out


def read_reachable(reader: ManifestReader, md: TableMetadata, phase: str = "reading manifests") -> Reachable:
    """Strict: a missing manifest list or manifest raises CorruptMetadata."""
    manifests = reader.manifests_of(md.snapshots, strict=True)
    files = reader.live_identities(list(manifests.values()), phase, strict=True)
    norm = reader.identities
    return Reachable(
        manifest_lists=frozenset(norm(s.manifest_list) for s in md.snapshots if s.manifest_list),
        manifests=frozenset(map(norm, manifests)),
        files=files,
        statistics=frozenset(map(norm, statistics_files(md))),
        spec_ids=frozenset(m.partition_spec_id for m in manifests.values()))
