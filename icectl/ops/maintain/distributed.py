"""Expire, orphans and rewrite-manifests with their file work on an engine (``engine=``).

The operations keep their one pipeline (retention rules, strict reads before the commit, the
pending cleanup record, the deletion order, every safety rule of ``file_removal``) and their
commit, made here in the driver. What an engine runs instead of this process's threads is the
I/O that grows with the table:

* reading manifest lists and manifests (:class:`EngineManifestReader`, the reader interface of
  ``reachable``: ``manifests_of`` / ``live_files``), batched into tasks;
* listing a table location (:func:`engine_lister`): the driver lists the first levels (at most
  three, and only directories with few subdirectories, as the reference's orphan action does)
  and hands every deeper directory to a task that walks it whole, under the same rules (links
  never followed, hidden names skipped);
* deleting files (:func:`engine_deleter`): ``delete_files`` on chunks of the paths, each chunk a
  task, each file checked against the table boundary just before it goes, in the task;
* reading the entries a manifest rewrite clusters (:func:`engine_entry_loader`); the clustering
  and the writing of the new manifests stay with the commit (see ``rewrite_manifests``).

Tasks are plain data (paths, the FileIO's storage options, the format version) and the task
functions are module-level, so they run on any engine: Spark executors, or the local engine's
worker processes. Sets (what is reachable, what is listed) are put together in the driver, as
the local path does, so both engines give the same result by construction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Callable, Sequence

from icectl.errors import NotFound
from icectl.io.manifest import records as avro
from icectl.io.storage.files import FileIO, FileInfo
from icectl.ops.maintain.file_removal import Deletion, PathIdentities, Progress, TableBoundary, delete_files
from icectl.ops.maintain.reachable import LiveEntries, LiveIndex
from icectl.spec.manifests import ManifestEntry, ManifestFile
from icectl.spec.snapshots import Snapshot

__all__ = ["EngineManifestReader", "engine_lister", "engine_deleter", "engine_entry_loader",
           "resolve_engine", "task_slots", "engine_reader"]

DRIVER_LIST_DEPTH = 3  # levels listed by the driver before the rest goes to tasks
DRIVER_LIST_MAX_SUBDIRS = 10  # a directory with more subdirectories is handed to tasks
DELETE_CHUNK_MIN = 1000  # paths per deletion task at the least (one DeleteObjects request on S3)


def resolve_engine(engine: Any) -> Any:
    """None for the in-process path (``None`` or ``"local"``), else the engine object (an
    engine given by name, ``"spark"``, is built with its defaults)."""
    if engine is None:
        return None
    if isinstance(engine, str):
        name = engine.strip().lower()
        if name == "local":
            return None
        from icectl.engines import get_engine

        return get_engine(name)
    return engine


def task_slots(engine: Any) -> int:
    """How many tasks the engine runs at once (Spark: the context's default parallelism)."""
    ctx = getattr(engine, "spark_context", None)
    if callable(ctx):
        try:
            return max(1, int(ctx().defaultParallelism))
        except Exception:  # noqa: BLE001 - a guess for chunking only
            return 2
    return max(1, int(getattr(engine, "workers", None) or 1))


def _chunks(items: Sequence[Any], engine: Any, minimum: int = 1) -> list[list[Any]]:
    """``items`` cut into about four tasks per slot (so a slow task does not hold the rest),
    each of at least ``minimum`` items."""
    if not items:
        return []
    n = max(1, min(len(items) // max(1, minimum) or 1, 4 * task_slots(engine)))
    size = -(-len(items) // n)
    return [list(items[i:i + size]) for i in range(0, len(items), size)]


# ------------------------------------------------------------------------------------------------
# Task functions (module level: picklable by name; each opens its own FileIO)


@dataclass(frozen=True)
class ReadTask:
    storage_options: dict[str, Any]
    format_version: int
    items: tuple[Any, ...]  # manifest list paths, or ManifestFiles


def read_lists_task(task: ReadTask) -> list[tuple[str, list[ManifestFile] | None]]:
    """Each manifest list's manifests (None: the list is missing)."""
    io = FileIO(task.storage_options or None)
    out = []
    for path in task.items:
        try:
            out.append((path, avro.load_manifest_list(io, path, task.format_version)))
        except NotFound:
            out.append((path, None))
    return out


def read_live_task(task: ReadTask) -> list[tuple[str, LiveEntries | None]]:
    """Each manifest's live (added or existing) entries, by the driver's own decoder
    (:func:`~icectl.ops.maintain.reachable.live_entries`); None: the manifest is missing."""
    from icectl.ops.maintain.reachable import live_entries

    io = FileIO(task.storage_options or None)
    out: list[tuple[str, LiveEntries | None]] = []
    for m in task.items:
        try:
            data = io.read(m.manifest_path)
        except NotFound:
            out.append((m.manifest_path, None))
            continue
        out.append((m.manifest_path, live_entries(m, data)))
    return out


def read_entries_task(task: ReadTask) -> list[list[ManifestEntry]]:
    """Every entry of each manifest, inheriting from its manifest list entry."""
    io = FileIO(task.storage_options or None)
    return [avro.load_manifest(io, m) for m in task.items]


@dataclass(frozen=True)
class ListTask:
    storage_options: dict[str, Any]
    walk: Callable[..., Any]  # the orphan search's walk (module-level: pickled by reference)
    hidden_rule: Callable[[Any], Callable[[str, bool], bool]]  # metadata -> hidden(name, is_dir)
    specs: tuple[Any, ...]  # the table's partition specs (what the hidden-name rule reads)
    dirs: tuple[str, ...]


def list_task(task: ListTask) -> tuple[list[FileInfo], list[str]]:
    """The files under each directory (walked whole) and the symbolic links met."""
    io = FileIO(task.storage_options or None)
    hidden = task.hidden_rule(SimpleNamespace(specs=task.specs))
    files: list[FileInfo] = []
    links: list[str] = []
    for d in task.dirs:
        files.extend(task.walk(io, d, hidden, links))
    return files, links


@dataclass(frozen=True)
class DeleteTask:
    storage_options: dict[str, Any]
    location: str
    allow_external: bool
    workers: int
    paths: tuple[str, ...]


def delete_task(task: DeleteTask) -> Deletion:
    """``delete_files`` on the task's paths, under the table boundary of its location."""
    io = FileIO(task.storage_options or None)
    return delete_files(io, list(task.paths), TableBoundary(task.location),
                        allow_external=task.allow_external, workers=task.workers)


# ------------------------------------------------------------------------------------------------
# The driver's side


@dataclass
class EngineManifestReader(LiveIndex):
    """The reader interface of ``reachable`` (``manifests_of``, ``live_files``,
    ``live_identities``, the read counters) with the reads run as engine tasks; each file is
    read at most once."""

    io: FileIO
    format_version: int
    engine: Any
    progress: Progress | None = None
    incomplete: str = "nothing is deleted while the table's metadata is incomplete"
    lists_read: int = 0
    manifests_read: int = 0
    _lists: dict[str, list[ManifestFile] | None] = field(default_factory=dict)
    _entries: dict[str, LiveEntries | None] = field(default_factory=dict)
    identities: PathIdentities = field(default_factory=PathIdentities)  # normalises the paths read

    def _run(self, fn: Callable[[ReadTask], list], items: list, phase: str) -> list:
        if not items:
            return []
        opts = self.io.storage_options
        tasks = [ReadTask(opts, self.format_version, tuple(c)) for c in _chunks(items, self.engine)]
        out = [r for part in self.engine.map(fn, tasks) for r in part]
        if self.progress is not None:
            self.progress(phase, len(items), len(items))
        return out

    def manifests_of(self, snapshots: Sequence[Snapshot], strict: bool = False) -> dict[str, ManifestFile]:
        todo = list(dict.fromkeys(s.manifest_list for s in snapshots
                                  if s.manifest_list and s.manifest_list not in self._lists))
        for path, got in self._run(read_lists_task, todo, "reading manifest lists"):
            self._lists[path] = got
            self.lists_read += 1
        from icectl.ops.maintain.reachable import snapshot_manifests

        return snapshot_manifests(self._lists, snapshots, strict, self.incomplete)

    def _read(self, todo: list[ManifestFile], phase: str) -> list[tuple[str, LiveEntries | None]]:
        return self._run(read_live_task, todo, phase)


def engine_reader(io: FileIO, format_version: int, workers: int, progress: Progress | None,
                  incomplete: str, engine: Any) -> Any:
    """The manifest reader of ``reachable`` for the in-process path (``engine`` None: this
    process's ``workers`` threads), else one whose reads are ``engine`` tasks."""
    if engine is None:
        from icectl.ops.maintain.reachable import ManifestReader

        return ManifestReader(io, format_version, max(1, workers), progress, incomplete=incomplete)
    return EngineManifestReader(io, format_version, engine, progress, incomplete)


def engine_lister(engine: Any, walk: Callable[..., Any], hidden_rule: Callable[[Any], Any],
                  specs: Sequence[Any]) -> Callable[..., Any]:
    """A lister with the signature of ``walk`` (the orphan search's: files under a root, links
    never followed, hidden names skipped by the rule ``hidden_rule`` makes of the metadata's
    ``specs``): object stores keep their one paged listing in the driver; on a store with
    directories the driver lists the first levels and engine tasks run ``walk`` on every deeper
    directory (see the module docs)."""

    def lister(io: FileIO, root: str, hidden: Callable[[str, bool], bool], links: list[str],
               every_key: list[str] | None = None) -> list[FileInfo]:
        if io.storage(root).flat:
            return list(walk(io, root, hidden, links, every_key))
        files: list[FileInfo] = []
        deep: list[str] = []
        level = [root]
        for depth in range(DRIVER_LIST_DEPTH + 1):
            below: list[str] = []
            for d in level:
                entries = [i for i in io.list_dir(d, follow_symlinks=False) if not hidden(i.name, i.is_dir)]
                subdirs = [i.path for i in entries if i.is_dir and not i.is_link]
                links.extend(i.path for i in entries if i.is_link)
                files.extend(i for i in entries if not i.is_dir and not i.is_link)
                if depth == DRIVER_LIST_DEPTH or len(subdirs) >= DRIVER_LIST_MAX_SUBDIRS:
                    deep.extend(subdirs)
                else:
                    below.extend(subdirs)
            level = below
            if not level:
                break
        tasks = [ListTask(io.storage_options, walk, hidden_rule, tuple(specs), tuple(c))
                 for c in _chunks(deep, engine)]
        for got, met in engine.map(list_task, tasks):
            files.extend(got)
            links.extend(met)
        return files

    return lister


def engine_deleter(engine: Any) -> Callable[..., Deletion]:
    """A deleter with ``delete_files``'s signature whose deletions run as engine tasks, chunk
    by chunk; the outcomes are merged in path order."""

    def deleter(io: FileIO, paths: Sequence[str], boundary: TableBoundary, *, allow_external: bool,
                workers: int, progress: Progress | None = None, done_before: int = 0,
                total: int | None = None) -> Deletion:
        out = Deletion()
        if not paths:
            return out
        tasks = [DeleteTask(io.storage_options, boundary.location, allow_external, max(1, workers), tuple(c))
                 for c in _chunks(list(paths), engine, DELETE_CHUNK_MIN)]
        for part in engine.map(delete_task, tasks):
            out.extend(part)
        if progress is not None:
            n = done_before + len(paths)
            progress("deleting files", n, total if total is not None else n)
        return out

    return deleter


def engine_entry_loader(engine: Any, io: FileIO) -> Callable[[Sequence[ManifestFile]], list[list[ManifestEntry]]]:
    """A loader for the manifest rewrite: every entry of each manifest, read in engine tasks, in
    the manifests' order."""

    def load(manifests: Sequence[ManifestFile]) -> list[list[ManifestEntry]]:
        items = list(manifests)
        tasks = [ReadTask(io.storage_options, 0, tuple(c)) for c in _chunks(items, engine)]
        return [entries for part in engine.map(read_entries_task, tasks) for entries in part]

    return load
