"""What the deleting commands (``expire``, ``orphans``) may delete, and deleting it.

The rules live here once, for both commands:

* **The table is where its metadata says.** A table loaded from a directory its metadata does not
  name (a ``cp -r`` copy, a moved table) names the other table's files in all its manifests:
  deleting "its" files would delete the other table's. :func:`location_mismatch` finds it;
  the commands refuse (``expire`` may still rewrite the copy's own metadata when asked to, and
  then deletes nothing).
* **Never through a link.** Before each deletion the file's real path (every symbolic link
  resolved) must lie inside the real path of the table location (:class:`TableBoundary`); paths
  are compared after resolving, never as text. A path under the location that a link leads
  elsewhere is refused and reported. A file whose recorded path is itself outside the location
  (registered in place by ``append``) is an *external* file of the table: ``expire`` deletes it
  once no snapshot needs it, as the reference does; ``orphans`` never lists outside the location.
* **Never inside another table.** Tables never nest, but a table may still sit inside this one's
  directory (made before that rule, or by another tool), and a file registered in place may lie
  in another table's directory. A file goes only when the nearest directory above it that holds
  a table (``metadata/*.metadata.json``, ``table/nesting.py``) is this table's own location, or
  when no directory above it holds one (:class:`OtherTables`). The others are kept and
  reported as skipped, with the table they belong to. :func:`delete_files` and
  :func:`classify` apply it to every path, so every deleting command does.
* **Deletions never raise.** :func:`delete_files` deletes in parallel and returns what was
  deleted, what failed (with the error) and what was refused (with the reason).
"""

from __future__ import annotations

import posixpath
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Sequence

from icectl.errors import IcectlError, ValidationError
from icectl.io.storage.files import FileIO, identity, store_class
from icectl.spec.properties import GC_ENABLED, GC_ENABLED_DEFAULT
from icectl.table.catalog_files import is_metadata_file
from icectl.table.nesting import holds_table, parent_dirs

if TYPE_CHECKING:
    from icectl.table.table import Table

__all__ = ["normalize_path", "PathIdentities", "TableBoundary", "location_mismatch", "NeedsOverride", "delete_file",
           "delete_files", "classify", "Deletion", "Progress", "GC_ENABLED", "require_gc_enabled",
           "outside_location", "remove_emptied_dirs", "OtherTables", "default_workers"]

# progress(phase, done, total)
Progress = Callable[[str, int, int], None]


class NeedsOverride(ValidationError):
    """A deletion refused by a safety rule that an explicit choice of the caller can lift;
    ``override`` names the keyword argument that lifts it, ``effect`` what it then does."""

    def __init__(self, message: str, override: str, effect: str):
        super().__init__(message)
        self.override = override
        self.effect = effect


def require_gc_enabled(properties: Mapping[str, str], action: str) -> None:
    """``gc.enabled=false`` says the table's files may be shared with other tables: no deleting
    command runs (as the reference's expiry and orphan cleanup refuse)."""
    if str(properties.get(GC_ENABLED, str(GC_ENABLED_DEFAULT))).strip().lower() != "true":
        raise ValidationError(f"cannot {action}: GC is disabled (gc.enabled=false); deleting files "
                              "may corrupt other tables")


def default_workers(table: Table | None = None) -> int:
    """Threads for the reads and deletions of a maintenance command on ``table``, by its store (:meth:`FileIO.request_threads`); without a table, as
    for a store whose requests wait on a network."""
    from icectl.command_files import io_threads

    return io_threads() if table is None else table.io.request_threads(table.location)


def normalize_path(path: str) -> str:
    """The identity of a file for comparisons: the OS path for local files (``file:`` URLs and
    plain paths), else ``scheme://authority/path`` with equal schemes merged (each store's
    :meth:`~icectl.io.storage.base.Storage.identity`)."""
    return identity(path)


_PLAIN_NAME_STOPS = frozenset("/?#%")


class PathIdentities:
    """:func:`normalize_path` for many paths, each directory's spelling worked out once.

    A file's identity is its directory's identity followed by its name when the name is a plain
    one (every store's identity normalises the path part, where a last plain component stays
    as it is): a table's hundred thousand files in a few directories are then normalised by a
    dictionary look-up and a concatenation each, not a parse each. A directory for which two
    probe names do not come out as its stem plus the name, and every name that is not plain
    (empty, ``.``, ``..``, or holding ``/ ? # %``), go through :func:`normalize_path`.

    Where a directory's spelling is already its identity (local absolute paths, most object
    store URLs), the path itself is returned, not an equal copy: sets of identities then share
    their strings with the lists they were made from (half the memory of the paths held)."""

    def __init__(self) -> None:
        # directory -> its identity's stem; True: the path is its own identity; None: parse each
        self._stems: dict[str, str | bool | None] = {}

    def __call__(self, path: str) -> str:
        d, sep, name = path.rpartition("/")
        if not sep or name in ("", ".", "..") or not _PLAIN_NAME_STOPS.isdisjoint(name):
            return normalize_path(path)
        stem = self._stems.get(d, False)
        if stem is False:
            stem = self._stems[d] = self._stem(d, name)
        if stem is True:
            return path
        return normalize_path(path) if stem is None else stem + name  # type: ignore[operator]

    @staticmethod
    def _stem(d: str, name: str) -> str | bool | None:
        try:
            first = normalize_path(f"{d}/{name}")
            if not first.endswith("/" + name):
                return None
            stem = first[:-len(name)]
            if normalize_path(f"{d}/probe-name") != stem + "probe-name":
                return None
            return True if stem == d + "/" else stem
        except IcectlError:
            return None


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def same_place(a: str, b: str) -> bool:
    """Whether two locations name the same directory (on a store with links: by real path)."""
    store = store_class(a)
    if store.links and store_class(b) is store:
        return store.real_path(a) == store.real_path(b)
    return normalize_path(a).rstrip("/") == normalize_path(b).rstrip("/")


def location_mismatch(loaded_from: str, recorded: str) -> str | None:
    """None when the table's recorded location is the directory it was loaded from; else why
    nothing may be deleted (naming both)."""
    if not recorded or same_place(loaded_from, recorded):
        return None
    return (f"the table at {loaded_from} records its location as {recorded} (a copied or moved "
            "table?): its metadata names the other location's files, so nothing is deleted")


class TableBoundary:
    """Decides whether a file may be deleted on behalf of the table at ``location``."""

    def __init__(self, location: str):
        self.location = location
        self.root = normalize_path(location)
        self.store = store_class(location)
        # on a store with links each path's real path is checked (and so one at a time)
        self.links = bool(self.store.links)
        self.real_root = self.store.real_path(location) if self.links else self.root
        self._real_dirs: dict[str, str] = {}
        self._others: OtherTables | None = None

    def other_tables(self, io: FileIO) -> "OtherTables":
        """The rule on other tables' files for this location (one cache of listings per run)."""
        if self._others is None:
            self._others = OtherTables(io, self)
        return self._others

    def contains(self, path: str) -> bool:
        """Whether the recorded path is under the location (as text, after normalising)."""
        return self.contains_identity(normalize_path(path))

    def contains_identity(self, identity: str) -> bool:
        """:meth:`contains` of a path already normalised (:func:`normalize_path`)."""
        return _under(identity, self.root)

    def real_path(self, path: str) -> str:
        """The path with links resolved; directories are resolved once and remembered."""
        if not self.resolves_links(path):
            return normalize_path(path)
        return self.store.real_path(path, self._real_dirs)

    def resolves_links(self, path: str) -> bool:
        """Whether ``path``'s links are resolved: on the location's own store, if it has links."""
        return self.links and store_class(path) is self.store

    def inside(self, path: str) -> bool:
        """Whether the file really is inside the table: its real path under the location's."""
        return _under(self.real_path(path), self.real_root)

    def refusal(self, path: str, allow_external: bool = False) -> str | None:
        """None when ``path`` may be deleted, else the reason it may not.

        Allowed: a file whose real path is inside the location's real path, and with
        ``allow_external`` a file recorded outside the location (an external file). Refused: a
        path recorded under the location that a symbolic link leads out of it."""
        if self.inside(path):
            return None
        if self.contains(path):
            return (f"a symbolic link leads it to {self.real_path(path)}, outside the table "
                    f"location {self.location}")
        return None if allow_external else f"outside the table location {self.location}"


class OtherTables:
    """Finds the files that belong to another table than the one at the boundary's location:
    those whose nearest directory holding a table (walking up from the file, local paths with
    their links resolved) is not the location itself. Each directory is listed once."""

    def __init__(self, io: FileIO, boundary: TableBoundary):
        self.io = io
        self.boundary = boundary
        self._holds: dict[str, bool] = {}
        self._listed: set[str] | None = None  # with a complete listing: the table dirs under the location

    def know_listing(self, paths: Iterable[str]) -> None:
        """``paths``: every object under the location (one complete listing, object stores).
        Which directories under the location hold a table then follows from the keys, with no
        listing of each."""
        found = set()
        for p in paths:
            d, name = posixpath.split(normalize_path(p))
            if posixpath.basename(d) == "metadata" and is_metadata_file(name):
                found.add(posixpath.dirname(d))
        self._listed = found

    def _holds_table(self, directory: str) -> bool:
        if self._listed is not None:
            d = normalize_path(directory).rstrip("/")
            if _under(d, self.boundary.root.rstrip("/")):
                return d in self._listed
        found = self._holds.get(directory)
        if found is None:
            found = self._holds[directory] = holds_table(self.io, directory)
        return found

    def _own(self, directory: str) -> bool:
        b = self.boundary
        if b.resolves_links(directory):
            return posixpath.normpath(directory) == b.real_root
        return normalize_path(directory).rstrip("/") == b.root.rstrip("/")

    def owner(self, path: str) -> str | None:
        """The location of the other table ``path`` lies in, or None when it may go."""
        start = self.boundary.real_path(path) if self.boundary.resolves_links(path) else path
        for d in parent_dirs(start):
            if self._own(d):
                return None
            if self._holds_table(d):
                return d
        return None

    def split(self, paths: Sequence[str], workers: int = 8) -> tuple[list[str], list[tuple[str, str]]]:
        """``(paths that may go, [(path, other table's location)])``; each directory is looked at
        once (on object stores in parallel: a listing each; a local one is a cheap system call)."""
        by_dir: dict[str, str | None] = {}
        dirs = list(dict.fromkeys(posixpath.dirname(p.rstrip("/")) for p in paths))

        def one(d: str) -> tuple[str, str | None]:
            probe = posixpath.join(d, "_")  # any name: the owner depends only on the directory
            return d, self.owner(probe)

        if len(dirs) > 1 and workers > 1 and self.boundary.store.flat:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                by_dir.update(pool.map(one, dirs))
        else:
            by_dir.update(one(d) for d in dirs)
        keep: list[str] = []
        skipped: list[tuple[str, str]] = []
        for p in paths:
            other = by_dir[posixpath.dirname(p.rstrip("/"))]
            if other is None:
                keep.append(p)
            else:
                skipped.append((p, other))
        return keep, skipped


def delete_file(io: FileIO, path: str) -> None:
    """Delete a table file and its sidecars (on local disks its Hadoop checksum ``.<name>.crc``,
    as Hadoop's local filesystem, the reference's FileIO there, does)."""
    io.delete(path, missing_ok=True)
    for sidecar in io.sidecars(path):
        io.delete_quietly(sidecar)


@dataclass
class Deletion:
    """The outcome of :func:`delete_files`."""

    deleted: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (path, error)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    outside: int = 0  # deleted files recorded outside the table location
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, the other table's location)

    def extend(self, other: "Deletion") -> None:
        self.deleted.extend(other.deleted)
        self.failed.extend(other.failed)
        self.refused.extend(other.refused)
        self.outside += other.outside
        self.skipped.extend(other.skipped)


def classify(io: FileIO, paths: Sequence[str], boundary: TableBoundary, *, allow_external: bool,
             workers: int = 8) -> Deletion:
    """What :func:`delete_files` would do now, deleting nothing: ``deleted`` lists the files
    that would go, ``refused`` and ``skipped`` the others (a dry run)."""
    out = Deletion()
    paths, out.skipped = boundary.other_tables(io).split(paths, workers)
    for path in paths:
        reason = boundary.refusal(path, allow_external)
        if reason is None:
            out.deleted.append(path)
            out.outside += not boundary.inside(path)
        else:
            out.refused.append((path, reason))
    return out


def delete_files(io: FileIO, paths: Sequence[str], boundary: TableBoundary, *, allow_external: bool,
                 workers: int, progress: Progress | None = None, done_before: int = 0,
                 total: int | None = None) -> Deletion:
    """Delete ``paths`` in parallel, each checked against ``boundary`` just before it goes;
    files inside another table's directory are kept (``skipped``)."""
    out = Deletion()
    if not paths:
        return out
    total = total if total is not None else len(paths)
    paths, skipped = boundary.other_tables(io).split(paths, workers)
    done_before += len(skipped)
    if not boundary.links:
        out = _delete_batched(io, paths, boundary, allow_external, progress, done_before, total)
        out.skipped = skipped
        return out
    out.skipped = skipped

    def some(chunk: Sequence[str]) -> list[tuple[str, str, str | None, bool]]:
        got = []
        for path in chunk:
            inside = boundary.inside(path)
            reason = None if inside else boundary.refusal(path, allow_external)
            if reason is not None:
                got.append((path, "refused", reason, False))
                continue
            try:
                delete_file(io, path)
                got.append((path, "deleted", None, not inside))
            except IcectlError as e:
                got.append((path, "failed", str(e), False))
        return got

    # each worker takes a slice of paths: a task per file cost more than its deletion
    step = max(1, min(_LOCAL_CHUNK, -(-len(paths) // max(1, workers))))
    chunks = [paths[i:i + step] for i in range(0, len(paths), step)]
    done = done_before
    pool = ThreadPoolExecutor(max_workers=workers) if workers > 1 and len(chunks) > 1 else None
    try:
        for got in (pool.map(some, chunks) if pool is not None else map(some, chunks)):
            for path, verdict, why, outside in got:
                if verdict == "deleted":
                    out.deleted.append(path)
                    out.outside += outside
                elif verdict == "refused":
                    out.refused.append((path, why or ""))
                else:
                    out.failed.append((path, why or ""))
            done += len(got)
            if progress is not None:
                progress("deleting files", done, total)
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
    return out


def outside_location(paths: Sequence[str], boundary: TableBoundary) -> list[str]:
    """The paths recorded outside the table location (files registered in place): the deleting
    commands keep them unless told otherwise."""
    return [p for p in paths if not boundary.contains(p) and not boundary.inside(p)]


def remove_emptied_dirs(io: FileIO, deleted: Sequence[str], root: str) -> list[str]:
    """Remove the directories under ``root`` that deleting ``deleted`` left empty (an expired
    partition's ``ts_day=.../``), deepest first; never ``root`` itself, never a directory that
    still holds anything. Stores without directories have none to remove."""
    one_each = {p.rsplit("/", 1)[0]: p for p in deleted}  # the directories are what matter
    return io.remove_empty_dirs(root, below=list(one_each.values()))


_BATCH = 1000  # keys per S3 DeleteObjects request
_LOCAL_CHUNK = 256  # files per task of a local deletion's workers


def _delete_batched(io: FileIO, paths: Sequence[str], boundary: TableBoundary, allow_external: bool,
                    progress: Progress | None, done_before: int, total: int) -> Deletion:
    """Object stores: no links to resolve, so each path is checked as text, and the allowed
    ones go in batches (one DeleteObjects request per 1000 keys on S3) instead of one round
    trip per file."""
    out = Deletion()
    allowed: list[str] = []
    for path in paths:
        reason = boundary.refusal(path, allow_external)
        if reason is None:
            allowed.append(path)
        else:
            out.refused.append((path, reason))
    done = done_before + len(out.refused)
    for start in range(0, len(allowed), _BATCH):
        chunk = allowed[start:start + _BATCH]
        failed = io.delete_many(chunk)
        for path in chunk:
            if path in failed:
                out.failed.append((path, failed[path]))
            else:
                out.deleted.append(path)
                out.outside += not boundary.inside(path)
        done += len(chunk)
        if progress is not None:
            progress("deleting files", done, total)
    return out
