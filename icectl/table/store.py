"""Filesystem-table storage: where the current metadata is and how a new version is committed.

Same layout and protocol as the reference's Hadoop tables (HadoopTableOperations):

* versions are ``metadata/v<N>.metadata.json`` (``v<N>.gz.metadata.json`` with gzip; the legacy
  ``v<N>.metadata.json.gz`` is read too); a new table starts at v1;
* ``metadata/version-hint.text`` holds the newest N as decimal text, best-effort: readers use it,
  fall back to listing ``metadata/`` when it is missing, unreadable or names a version that was
  cleaned up, and then probe N+1, N+2 ... so a stale hint still finds the newest version. With
  ``write.metadata.delete-after-commit.enabled`` old versions are deleted, which can leave gaps,
  so readers of such tables also confirm the newest version with a listing;
* a commit writes the whole new metadata to ``metadata/<uuid>.icectl.metadata.json`` and
  flushes it to disk, then renames it to ``v<N+1>`` with a rename that never replaces a file.

Deleting old versions frees their names, so "the rename succeeded" alone does not prove that a
commit extended the newest version: a writer that stalled long enough could rename into a name
freed under it, behind newer versions no reader looks at. So a commit checks both before the
rename (its base is the newest listed version and still exists, no hint names anything newer)
and after it (no newer version or hint appeared, the base still exists). When newer versions
did appear, the commit still landed if another writer already built on it; that is proved by
:func:`_built_on` (see there for why a name and a timestamp alone are not proof). A commit that
fails the check after its rename removes the file it renamed (only if it still holds its own
bytes) and raises :class:`VersionConflict`, so the caller re-reads, re-validates and retries.
When the check cannot tell (the newer versions that would show it were deleted by other writers'
clean-up before they could be read), or the commit is stopped after its rename started, it raises
:class:`~icectl.errors.CommitStateUnknown` and removes nothing: unknown means keep.
The hint is never moved backwards (see :func:`write_version_hint`). On local disks a commit also
waits out Iceberg Java writers whose rename may still replace its version, and checks it was not
replaced (see :mod:`icectl.table.java_renames`).
"""

from __future__ import annotations

import gzip
import json
import uuid
from dataclasses import dataclass, field, replace
from hashlib import blake2b

from icectl.errors import (CommitConflict, CommitStateUnknown, CorruptMetadata, IcectlError, NotFound,
                           ValidationError)
from icectl.io.storage.files import DestinationExists, FileIO, join
from icectl.spec.metadata import TableMetadata, now_ms, with_previous_metadata
from icectl.spec.metadata_json import metadata_from_bytes, metadata_to_bytes
from icectl.spec.properties import METADATA_COMPRESSION
from icectl.spec.properties import METADATA_DELETE_AFTER_COMMIT as DELETE_AFTER_COMMIT
from icectl.spec.properties import WRITE_METADATA_PATH as WRITE_METADATA_LOCATION
from icectl.table.java_renames import settle, temp_metadata_name
from icectl.table.versions import (VERSION_HINT, VERSION_NAME, find_metadata_file, metadata_dir,
                                   metadata_file_path, newest_listed, version_hint_path)
from icectl.table.versions import codec_name as _codec
from icectl.table.versions import list_versions as _list_versions
from icectl.table.versions import probe_forward as _probe_forward
from icectl.table.versions import read_hint as _read_hint

__all__ = [
    "VersionConflict", "CommittedVersion", "metadata_dir", "version_hint_path", "metadata_file_path",
    "find_metadata_file", "find_current_version", "read_metadata", "load_current", "commit",
    "write_version_hint", "VERSION_HINT", "METADATA_COMPRESSION", "DELETE_AFTER_COMMIT",
    "IncompleteVersion", "IncompleteMetadata", "find_incomplete_versions",
    "read_version", "next_metadata", "remove_dropped_metadata",
]


class VersionConflict(CommitConflict):
    """The version this commit wanted to create already exists: another writer won the race."""

    def __init__(self, version: int, path: str, conflict: bool = False):
        super().__init__(f"cannot commit version {version}: {path}" if conflict
                         else f"version {version} already exists: {path}")
        self.version = version
        self.path = path


@dataclass(frozen=True)
class CommittedVersion:
    """A loaded or committed table version."""

    version: int
    metadata_location: str
    metadata: TableMetadata
    digest: bytes | None = field(default=None, compare=False)  # of the file's bytes, when known


def find_current_version(io: FileIO, location: str) -> tuple[int, str] | None:
    """``(version, metadata file)`` of the newest version, or None when there is no table.

    Raises CorruptMetadata when the version hint names a version beyond every existing one.
    """
    hinted = _read_hint(io, location)
    found = None
    if not io.storage(location).atomic_rename:  # versions are created under their names
        return _find_current_on_object_store(io, location, hinted)
    if hinted is not None and hinted > 0:
        path = find_metadata_file(io, location, hinted)
        if path is not None:
            found = (hinted, path)
    if found is None:
        found = newest_listed(io, location)
        if found is None or (hinted is not None and found[0] < hinted):
            if hinted:
                raise CorruptMetadata(
                    f"{version_hint_path(location)} names version {hinted}, but its metadata file is missing")
            return None
    # The hint (or listing) may be stale: follow newer versions until one is missing.
    return _probe_forward(io, location, *found)


def _find_current_on_object_store(io: FileIO, location: str, hinted: int | None) -> tuple[int, str] | None:
    """On an object store the hint is only a hint: one listing of the ``v*`` keys gives the
    newest version (listings are consistent there), a hint beyond it is checked, and the
    version after the newest is probed in case the store's listing lags."""
    names: dict[int, str] = {}
    for name in io.list_names(metadata_dir(location), prefix="v"):
        m = VERSION_NAME.match(name)
        if m:
            v = int(m.group(1))
            if v not in names or name == f"v{v}.metadata.json":
                names[v] = name
    found = None
    if names:
        newest = max(names)
        found = (newest, join(metadata_dir(location), names[newest]))
    if hinted and (found is None or hinted > found[0]):
        path = find_metadata_file(io, location, hinted)
        if path is None:
            raise CorruptMetadata(
                f"{version_hint_path(location)} names version {hinted}, but its metadata file is missing")
        found = (hinted, path)
    if found is None:
        return None
    return _probe_forward(io, location, *found)


def read_metadata(io: FileIO, path: str) -> TableMetadata:
    return metadata_from_bytes(io.read(path), path)


@dataclass(frozen=True)
class IncompleteVersion:
    """A newest version file that is not valid (gzip) JSON - a commit that never finished writing
    it - while the version before it is complete and the hint does not name it."""

    version: int
    path: str
    previous_version: int | None
    size: int

    @property
    def set_aside_path(self) -> str:
        return self.path + ".incomplete"

    def describe(self) -> str:
        prev = (f"v{self.previous_version} is the last complete version" if self.previous_version
                else "no earlier version exists")
        return (f"{self.path} is incomplete ({self.size} bytes, not valid JSON: a commit interrupted "
                f"by a crash or a full disk); {prev}. To recover, move it aside: "
                f"mv {self.path} {self.set_aside_path}")


def _unparseable(data: bytes) -> bool:
    try:
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        json.loads(data.decode("utf-8"))
    except (OSError, EOFError, UnicodeDecodeError, ValueError):
        return True
    return False


def _incomplete(io: FileIO, location: str, version: int, path: str) -> IncompleteVersion | None:
    """The safe rule: only a file that is not even JSON, whose predecessor reads fine and that
    the hint does not name, counts as a commit that did not finish. A complete file with bad
    content, or one the hint names (an acknowledged commit), is corrupt metadata, never skipped."""
    try:
        data = io.read(path)
    except NotFound:
        return None
    if not _unparseable(data):
        return None
    hinted = _read_hint(io, location)
    if hinted is not None and hinted >= version:
        return None
    previous = None
    if version > 1:
        prev_path = find_metadata_file(io, location, version - 1)
        if prev_path is None:
            return None
        try:
            read_metadata(io, prev_path)
        except (CorruptMetadata, NotFound):
            return None
        previous = version - 1
    return IncompleteVersion(version, path, previous, len(data))


def find_incomplete_versions(io: FileIO, location: str) -> list[IncompleteVersion]:
    """The newest version, when it is an unfinished commit's leftover (see :func:`_incomplete`).

    Empty when the table is fine. Used by readers to explain the failure and by checks."""
    found = newest_listed(io, location)
    if found is None:
        return []
    found = _probe_forward(io, location, *found)
    inc = _incomplete(io, location, *found)
    return [inc] if inc is not None else []


def read_version(io: FileIO, location: str, version: int, path: str, data: bytes | None = None) -> TableMetadata:
    """Read a version's metadata (from ``data`` when already read); an unfinished newest version
    is reported with its repair."""
    try:
        return metadata_from_bytes(data, path) if data is not None else read_metadata(io, path)
    except CorruptMetadata:
        inc = _incomplete(io, location, version, path)
        if inc is not None:
            raise IncompleteMetadata(inc) from None
        raise


class IncompleteMetadata(CorruptMetadata):
    """The newest version is an unfinished commit's leftover (see :class:`IncompleteVersion`)."""

    def __init__(self, incomplete: IncompleteVersion):
        super().__init__(incomplete.describe())
        self.incomplete = incomplete


def _cleans_up(md: TableMetadata) -> bool:
    return md.properties.get(DELETE_AFTER_COMMIT, "").strip().lower() == "true"


def load_current(io: FileIO, location: str) -> CommittedVersion:
    """Load the newest version; NotFound naming the location when there is no table there."""
    found = None
    for _ in range(5):
        found = found or find_current_version(io, location)
        if found is None:
            raise NotFound(f"no Iceberg table at {location} (no metadata/v<N>.metadata.json)")
        version, path = found
        found = None
        try:
            data = io.read(path)
        except NotFound:
            continue  # deleted between listing and reading by a concurrent commit's clean-up
        md = read_version(io, location, version, path, data)
        if _cleans_up(md):
            # Versions are deleted on this table: a gap may hide newer versions from probing.
            newest = newest_listed(io, location)
            if newest is not None and newest[0] > version:
                found = _probe_forward(io, location, *newest)
                continue
        return CommittedVersion(version, path, md, _digest(data))
    raise NotFound(f"no Iceberg table at {location} (its metadata kept changing while being read)")


def write_version_hint(io: FileIO, location: str, version: int) -> bool:
    """Best-effort: point ``version-hint.text`` at ``version``, never lowering it. Returns False
    if the hint was not written (a newer version exists, or the write failed).

    The hint is written to a temp file and moved over the old one, and Hadoop's checksum sidecar
    ``.version-hint.text.crc`` is removed so Java readers do not reject the new content. A
    concurrent writer may move an older value over a newer one; the check after the move sees
    the newer version and writes the hint again.
    """
    if not io.storage(location).atomic_rename:
        return _write_hint_on_object_store(io, location, version)
    d = metadata_dir(location)
    wrote = False
    for _ in range(5):
        current = _read_hint(io, location)
        listed = max(_list_versions(io, location), default=0)
        if listed > version:
            version = listed  # a newer commit exists: name it instead of ours
        if current is not None and current >= version and find_metadata_file(io, location, current):
            return wrote
        tmp = join(d, f"{uuid.uuid4()}-version-hint.temp")
        try:
            io.write_exclusive(tmp, str(version).encode("utf-8"))
            io.delete(join(d, f".{VERSION_HINT}.crc"))
            io.replace(tmp, version_hint_path(location))
        except Exception:  # noqa: BLE001 - the hint is only an optimisation
            io.delete_quietly(tmp)
            return False
        wrote = True
        if max(_list_versions(io, location), default=0) <= version:
            return True
    return wrote


def _write_hint_on_object_store(io: FileIO, location: str, version: int) -> bool:
    """One PUT over the hint (atomic on object stores; no temp file, no delete). Never lowered:
    a newer listed version is named instead, and a hint a slower writer lowered is put back."""
    wrote = False
    for _ in range(3):
        current = _read_hint(io, location)
        version = max([version] + _list_versions(io, location))
        if current is not None and current >= version:
            return wrote
        try:
            io.write(version_hint_path(location), str(version).encode("utf-8"))
        except IcectlError:
            return wrote
        wrote = True
        if (_read_hint(io, location) or 0) >= version:
            return True
    return wrote


def _check_newest(io: FileIO, location: str, base: CommittedVersion | None, next_version: int) -> None:
    """Before the rename: the base is the newest version and still there. VersionConflict else."""
    base_version = next_version - 1
    newest = max(_list_versions(io, location), default=0)
    hinted = _read_hint(io, location) or 0
    if newest > base_version or hinted > base_version:
        raise VersionConflict(next_version, f"version {max(newest, hinted)} is newer than the base "
                                            f"v{base_version}", conflict=True)
    if base is not None and not io.exists(base.metadata_location):
        raise VersionConflict(next_version, f"the base {base.metadata_location} no longer exists",
                              conflict=True)


def _check_extended(io: FileIO, location: str, base: CommittedVersion | None, version: int,
                    final: str, new: TableMetadata, data: bytes) -> None:
    """After the rename: prove the new version extended the newest one (see the module docs).

    Returns when it did; VersionConflict when it certainly did not (the version right after ours
    was read and was not built on it); CommitStateUnknown when neither can be shown (the versions
    that would tell were deleted by other writers' clean-up before they could be read)."""
    read: dict[int, TableMetadata] = {}
    for _ in range(_CHECK_ROUNDS):
        # The base first, then the listing: the newest version is never deleted, so a base
        # removed by a later commit is always followed by a listed newer version.
        base_ok = base is None or io.exists(base.metadata_location)
        hinted = _read_hint(io, location) or 0
        newer = _read_newer(io, location, version, read)
        if not newer and hinted <= version and base_ok and not read:
            return
        if _built_on(io, base, final, new, data, list(read.values())):
            return
        if version + 1 in read or (not newer and hinted <= version and not read):
            # The version after ours was built on another v<version> (or none exists and the base
            # was removed): ours is not in the table.
            why = (f"version {max(newer + [hinted])} exists" if newer or hinted > version
                   else f"the base {base.metadata_location if base else ''} was removed")
            raise VersionConflict(version, f"{final} was created under a newer table ({why})",
                                  conflict=True)
    raise CommitStateUnknown(
        f"cannot tell whether {final} is part of {location}: newer versions were written and "
        f"removed before they could be read: every file of the commit is kept; check the table before retrying")


def _digest(data: bytes) -> bytes:
    return blake2b(data, digest_size=16).digest()


def _check_base_kept(io: FileIO, location: str, base: CommittedVersion | None, next_version: int) -> None:
    """Local disks, before the rename: wait out Java writers that may still rename over the base
    (:mod:`icectl.table.java_renames`), then check it still holds the bytes it was read with, so
    that nothing is built on a version about to be replaced. VersionConflict when it was replaced."""
    settle(io, metadata_dir(location))
    if base is None or base.digest is None:
        return
    try:
        replaced = _digest(io.read(base.metadata_location)) != base.digest
    except NotFound:
        return  # removed by a clean-up: the check of the newest version decides
    if replaced:
        raise VersionConflict(next_version, f"the base {base.metadata_location} was replaced by another "
                                            f"writer (a rename that replaces, as Iceberg Java's on a local filesystem)",
                              conflict=True)


def _check_not_replaced(io: FileIO, location: str, base: CommittedVersion | None, version: int,
                        final: str, new: TableMetadata, data: bytes) -> None:
    """Local disks, after the rename: wait out Java writers that may still rename over it
    (:mod:`icectl.table.java_renames`); VersionConflict when one replaced it and no later version
    was built on it first."""
    settle(io, metadata_dir(location))
    try:
        if io.read(final) == data:
            return
    except IcectlError:
        return  # gone (another writer's clean-up) or unreadable: the checks that follow decide
    later: dict[int, TableMetadata] = {}
    _read_newer(io, location, version, later)
    if not _built_on(io, base, final, new, data, list(later.values())):
        raise VersionConflict(version, f"{final} was replaced by another writer (a rename that "
                                       f"replaces, as Iceberg Java's on a local filesystem)", conflict=True)


def _read_newer(io: FileIO, location: str, version: int, read: dict[int, TableMetadata]) -> list[int]:
    """The listed versions after ``version``; those not in ``read`` yet are read into it (one
    deleted or replaced under us is skipped: a later round lists again)."""
    newer = sorted(v for v in set(_list_versions(io, location)) if v > version)
    for v in newer:
        path = find_metadata_file(io, location, v) if v not in read else None
        if path is None:
            continue
        try:
            read[v] = read_metadata(io, path)
        except (NotFound, CorruptMetadata):
            continue
    return newer


_CHECK_ROUNDS = 5


def _built_on(io: FileIO, base: CommittedVersion | None, final: str, new: TableMetadata,
              data: bytes, later: list[TableMetadata]) -> bool:
    """Whether one of the ``later`` versions was built on the version this commit wrote.

    A version names its predecessor only by file name and ``last-updated-ms`` in its metadata
    log (the format has no other back-link, and Java writes and keeps nothing more). Both can
    repeat: a racing writer that committed the same version number on the same base in the same
    millisecond leaves the same entry, and if its version was later dropped from the log and
    deleted, this commit could rename into the freed name and mistake the racer's successors for
    its own - a lost commit reported as done. So two proofs, each tied to this commit alone:

    * **Snapshots.** Snapshot ids are random 63-bit numbers: a later version holding a snapshot
      this commit added was built on it, whatever its metadata log still says.
    * **Metadata log, guarded against a freed name.** A later version naming our file and our
      timestamp counts only if the name cannot have been freed and taken again. A name is freed
      only by a writer that dropped it from the log with ``delete-after-commit`` on, and nobody
      deletes a file that no log names any more. So if a later version with clean-up on no longer
      names our file while our exact bytes (compared in full) still sit under that name, the name
      was freed before our rename and taken by us: the entries naming it belong to the racer's
      version. Built on ours, the writer that dropped it would have deleted our file (or is about
      to: then this errs on the safe side, and the retry re-validates on the newest version).
    """
    ours = {s.snapshot_id for s in new.snapshots}
    if base is not None:
        ours -= {s.snapshot_id for s in base.metadata.snapshots}
    if any(ours & {s.snapshot_id for s in md.snapshots} for md in later):
        return True
    name = final.rsplit("/", 1)[-1]

    def names_ours(md: TableMetadata, exact: bool) -> bool:
        return any(e.metadata_file.rsplit("/", 1)[-1] == name
                   and (not exact or e.timestamp_ms == new.last_updated_ms) for e in md.metadata_log)

    if not any(names_ours(md, exact=True) for md in later):
        return False
    freed = any(_cleans_up(md) and not names_ours(md, exact=False) for md in later)
    return not (freed and _still_holds(io, final, data))


def _still_holds(io: FileIO, path: str, data: bytes) -> bool:
    try:
        return io.read(path) == data
    except NotFound:
        return False
    except IcectlError:
        return True  # unreadable is not shown to be deleted: keep to the safe side


def _undo_rename(io: FileIO, path: str, data: bytes) -> None:
    """Remove a version this commit renamed into place, if the file still holds its bytes."""
    try:
        if io.read(path) == data:
            io.delete(path)
    except IcectlError:
        pass


def next_metadata(base: CommittedVersion | None, new: TableMetadata) -> TableMetadata:
    """``new`` as the version after ``base`` in any home: the base joins the metadata log."""
    if base is None:
        return new
    if new.last_updated_ms == base.metadata.last_updated_ms:
        new = replace(new, last_updated_ms=max(now_ms(), base.metadata.last_updated_ms + 1))
    return with_previous_metadata(new, base.metadata_location, base.metadata.last_updated_ms)


def remove_dropped_metadata(io: FileIO, base: CommittedVersion | None, new: TableMetadata) -> None:
    """``write.metadata.delete-after-commit.enabled``: delete files that fell off the log."""
    if base is not None and _cleans_up(new):
        kept = {e.metadata_file for e in new.metadata_log}
        for entry in base.metadata.metadata_log:
            if entry.metadata_file not in kept:
                io.delete_quietly(entry.metadata_file)


def commit(
    io: FileIO,
    location: str,
    base: CommittedVersion | None,
    new: TableMetadata,
) -> CommittedVersion:
    """Write ``new`` as version base.version + 1 (v1 for a new table).

    Adds ``base`` to the metadata log, writes the temp file (flushed to disk), checks the base is
    still the newest version, renames the temp file into place without replacing, checks that
    nothing newer appeared, updates the hint, and with ``write.metadata.delete-after-commit.enabled``
    removes metadata files that fell off the log. VersionConflict (nothing left behind) when
    another writer created that version first or the table moved past the base.
    """
    if WRITE_METADATA_LOCATION in new.properties:
        raise ValidationError(f"filesystem tables cannot relocate metadata ({WRITE_METADATA_LOCATION})")
    if base is not None and new.location.rstrip("/") != base.metadata.location.rstrip("/"):
        raise ValidationError("filesystem tables cannot be relocated")
    new = next_metadata(base, new)

    codec = _codec(new.properties.get(METADATA_COMPRESSION))
    ext = ".gz.metadata.json" if codec == "gzip" else ".metadata.json"
    next_version = (base.version if base is not None else 0) + 1
    final = metadata_file_path(location, next_version, codec)
    temp = join(metadata_dir(location), temp_metadata_name(ext))
    data = metadata_to_bytes(new, compress=codec == "gzip")

    local = io.storage(location).atomic_rename  # else: a conditional create of the final name
    if local:
        _rename_version(io, location, base, next_version, final, temp, data)
    else:
        _create_version(io, location, base, next_version, final, data)

    try:
        if local:
            _check_not_replaced(io, location, base, next_version, final, new, data)
        _check_extended(io, location, base, next_version, final, new, data)
    except VersionConflict:
        _undo_rename(io, final, data)
        raise
    except CommitStateUnknown:
        raise
    except BaseException as e:
        raise CommitStateUnknown(f"cannot tell whether {final} is part of {location} (interrupted while "
                                 f"checking): every file of the commit is kept; check the table before retrying") from e

    try:
        write_version_hint(io, location, next_version)
        remove_dropped_metadata(io, base, new)
    except BaseException as e:
        # the commit is in the table; only its tidying was cut short. Reported as unknown so
        # the caller keeps (and does not retry) what the commit wrote.
        raise CommitStateUnknown(f"{final} was committed to {location}, but the commit was interrupted "
                                 f"before it finished: every file of the commit is kept; check the table before retrying") from e
    return CommittedVersion(next_version, final, new, _digest(data))


def _create_version(io: FileIO, location: str, base: CommittedVersion | None, next_version: int,
                    final: str, data: bytes) -> None:
    """Object stores: the new version is created under its final name by a conditional create
    (``If-None-Match: *`` and the like; :meth:`FileIO.create_if_absent`), which fails when the
    name exists: a lost race, raised as VersionConflict so the caller reloads and retries. An
    unknown outcome is settled by reading the object back (CommitStateUnknown if that cannot
    tell), never by deleting. A store that ignores the condition is refused before anything is
    written (UnsafeStorage; see :meth:`FileIO.require_safe_commits`)."""
    _check_newest(io, location, base, next_version)  # (a listing: also the other codecs' names)
    try:
        io.create_if_absent(final, data)
    except DestinationExists:
        raise VersionConflict(next_version, final) from None
    # The condition guards one name; a racer that changed the metadata codec in the same commit
    # used another. The plain name wins; the other writer backs out (its own bytes only).
    name = final.rsplit("/", 1)[-1]
    if name != f"v{next_version}.metadata.json":
        rivals = [n for n in io.list_names(metadata_dir(location), prefix=f"v{next_version}.")
                  if n != name and VERSION_NAME.match(n)]
        if f"v{next_version}.metadata.json" in rivals:
            _undo_rename(io, final, data)
            raise VersionConflict(next_version, join(metadata_dir(location), f"v{next_version}.metadata.json"))


def _rename_version(io: FileIO, location: str, base: CommittedVersion | None, next_version: int,
                    final: str, temp: str, data: bytes) -> None:
    """Local disks: the temp file, flushed, renamed to the final name without replacing."""
    io.write_exclusive(temp, data, durable=True)
    renaming = False
    try:
        _check_base_kept(io, location, base, next_version)
        _check_newest(io, location, base, next_version)
        # Names of other codecs for the same version also mean "taken".
        other = find_metadata_file(io, location, next_version)
        if other is not None:
            raise VersionConflict(next_version, other)
        renaming = True
        io.rename_no_replace(temp, final, durable=True)
    except DestinationExists:
        io.delete_quietly(temp)
        raise VersionConflict(next_version, final) from None
    except BaseException as e:
        if renaming and (not io.exists(temp) or _still_holds(io, final, data)):
            # stopped (a signal, an I/O error) while the rename was in flight, after it moved the
            # file: the version may be in the table, so nothing of the commit may be removed
            raise CommitStateUnknown(f"interrupted while committing {final}; it may be part of "
                                     f"{location}: every file of the commit is kept") from e
        io.delete_quietly(temp)
        raise
