"""A filesystem table: location + FileIO + the current metadata, and commits with retry.

``Table.commit(update_fn)`` is the one way metadata changes: ``update_fn(base)`` builds the new
metadata from the current one (it may raise ValidationError to stop), the store writes it as the
next version, and if another writer won the race the table reloads, calls ``update_fn`` again on
the winner's metadata and retries with exponential backoff, as the reference's
``commit.retry.*`` properties say. ``commit_transaction`` does the same for updates that write
files (manifests, manifest lists): they register them on the attempt so that a commit that gives
up removes everything it wrote, leaving the table exactly as the winner left it.
"""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass, field
from typing import Callable

from icectl.errors import AlreadyExists, CommitConflict, CommitStateUnknown, InvalidInput, NotFound, UnsupportedFeature
from icectl import command_files
from icectl.io.storage.files import FileIO, join, os_path
from icectl.spec.metadata import TableMetadata
from icectl.spec.properties import (
    COMMIT_MAX_RETRY_WAIT_MS,
    COMMIT_MAX_RETRY_WAIT_MS_DEFAULT,
    COMMIT_MIN_RETRY_WAIT_MS,
    COMMIT_MIN_RETRY_WAIT_MS_DEFAULT,
    COMMIT_NUM_RETRIES,
    COMMIT_NUM_RETRIES_DEFAULT,
    COMMIT_TOTAL_RETRY_TIME_MS,
    COMMIT_TOTAL_RETRY_TIME_MS_DEFAULT,
    property_int,
)
from icectl.table import catalog_files, store
from icectl.table.operations import DirectoryOperations, TableOperations
from icectl.table.store import CommittedVersion, VersionConflict

__all__ = ["Table", "CommitAttempt", "RetryPolicy", "resolve_table_location"]


def resolve_table_location(ident: str, warehouse: str | None = None) -> str:
    """A table location from a path/URL, or from ``db.table`` (any depth) under a warehouse.

    Without a warehouse, or when it contains ``/`` or a URL scheme, the argument is a location
    already. Otherwise a dotted identifier maps to ``<warehouse>/<db>/<table>`` as Spark's
    Hadoop catalog lays tables out.
    """
    ident = ident.strip()
    if not ident:
        raise InvalidInput("empty table location or identifier")
    if warehouse is None or "/" in ident or "\\" in ident or ":" in ident:
        return ident.rstrip("/") if ident != "/" else ident
    parts = ident.split(".")
    if len(parts) < 2 or any(not p for p in parts):
        raise InvalidInput(f"invalid table identifier {ident!r} (expected namespace.table)")
    return "/".join([warehouse.rstrip("/"), *parts])


@dataclass(frozen=True)
class RetryPolicy:
    num_retries: int = COMMIT_NUM_RETRIES_DEFAULT
    min_wait_ms: int = COMMIT_MIN_RETRY_WAIT_MS_DEFAULT
    max_wait_ms: int = COMMIT_MAX_RETRY_WAIT_MS_DEFAULT
    total_timeout_ms: int = COMMIT_TOTAL_RETRY_TIME_MS_DEFAULT

    @classmethod
    def from_metadata(cls, md: TableMetadata, problems: list[str] | None = None) -> "RetryPolicy":
        """The table's ``commit.retry.*`` settings; a value that is not valid falls back to the
        default and is described in ``problems`` (a broken property must not block the commit
        that repairs it)."""
        p = md.properties
        return cls(
            num_retries=property_int(p, COMMIT_NUM_RETRIES, cls.num_retries, problems),
            min_wait_ms=property_int(p, COMMIT_MIN_RETRY_WAIT_MS, cls.min_wait_ms, problems),
            max_wait_ms=property_int(p, COMMIT_MAX_RETRY_WAIT_MS, cls.max_wait_ms, problems),
            total_timeout_ms=property_int(p, COMMIT_TOTAL_RETRY_TIME_MS, cls.total_timeout_ms, problems),
        )

    def delay_ms(self, attempt: int) -> float:
        """Wait before retry number ``attempt`` (1-based): min x 2^(attempt-1), capped, + <=10% jitter."""
        base = min(self.min_wait_ms * (2 ** (attempt - 1)), self.max_wait_ms)
        import random

        return base + random.uniform(0, base * 0.1)


@dataclass
class CommitAttempt:
    """What one try of a commit knows: the base it builds on and the files it wrote."""

    table: "Table"
    base: TableMetadata
    number: int  # 1 for the first try
    written: list[str] = field(default_factory=list)
    referenced: list[str] = field(default_factory=list)  # files its metadata adds (not written by it)

    @property
    def io(self) -> FileIO:
        return self.table.io

    @property
    def location(self) -> str:
        return self.table.location

    def refer(self, paths) -> None:
        """Name the files (data and delete files written earlier by the operation) that this
        attempt's metadata adds to the table: once it lands they are the table's, and the
        command's clean-up leaves them alone (see :mod:`icectl.command_files`)."""
        self.referenced.extend(paths)

    def track(self, path: str) -> str:
        """Register a file this attempt is about to write (call before writing it); it is
        deleted if the commit finally fails, and by the command's clean-up if it is stopped."""
        if path not in self.written:
            self.written.append(path)
        command_files.register(self.table.io, path)
        return path


class Table:
    """A table: its location, FileIO and current version, read and committed through its
    ``operations`` (its home: a filesystem directory by default, or a catalog's entry; see
    :mod:`icectl.table.operations`). ``metadata`` / ``version`` follow every successful commit."""

    def __init__(self, location: str, io: FileIO, current: CommittedVersion, read_only: str | None = None,
                 operations: TableOperations | None = None):
        self.location = location
        self.io = io
        self._current = current
        self.operations: TableOperations = operations or DirectoryOperations(io, location)
        self.warnings: list[str] = []  # problems met while committing (e.g. broken properties)
        # why this table cannot be changed (a catalog's table, a metadata file named directly)
        self.read_only = read_only
        # a write-audit-publish id: the data snapshots committed through this handle are staged
        # under it (added with wap.id in their summary, no branch moved), as Spark's spark.wap.id
        self.wap_id: str | None = None

    # -- state -----------------------------------------------------------------------------

    @property
    def metadata(self) -> TableMetadata:
        return self._current.metadata

    @property
    def metadata_location(self) -> str:
        return self._current.metadata_location

    @property
    def version(self) -> int:
        return self._current.version

    def __repr__(self) -> str:
        return f"Table({self.location!r}, version={self.version})"

    # -- loading ---------------------------------------------------------------------------

    @classmethod
    def load(cls, location_or_ident: str, warehouse: str | None = None, io: FileIO | None = None) -> "Table":
        """Load the newest version; NotFound naming the location when there is no table."""
        io = io or FileIO()
        location = resolve_table_location(location_or_ident, warehouse)
        if catalog_files.is_metadata_file(location):
            return cls._load_file(io, location)
        try:
            current = store.load_current(io, location)
        except NotFound:
            found = catalog_files.find_catalog_version(io, location)
            if found is None:
                raise
            md = store.read_metadata(io, found[1])
            return cls(location, io, CommittedVersion(found[0], found[1], md), catalog_files.catalog_managed(location))
        preferred = _preferred_spelling(location, current.metadata.location)
        if preferred != location:
            name = current.metadata_location.rsplit("/", 1)[-1]
            current = dataclasses.replace(current, metadata_location=join(store.metadata_dir(preferred), name))
        return cls(preferred, io, current)

    @classmethod
    def _load_file(cls, io: FileIO, path: str) -> "Table":
        """A table from a metadata file named directly (see ``store.locate_metadata_file``)."""
        location, version, read_only = catalog_files.locate_metadata_file(io, path)
        if read_only is None:
            return cls.load(location, io=io)
        md = store.read_metadata(io, path.rstrip("/"))
        return cls(location or md.location.rstrip("/"), io,
                   CommittedVersion(version, path.rstrip("/"), md), read_only)

    @classmethod
    def create(cls, location: str, metadata: TableMetadata, io: FileIO | None = None) -> "Table":
        """Write ``metadata`` as v1 of a new table at ``location``.

        AlreadyExists when any version exists there (also when another creator wins the race).
        A directory without metadata versions, e.g. left by a failed create, is fine.
        """
        io = io or FileIO()
        location = location.rstrip("/") if location not in ("/",) else location
        if store.find_current_version(io, location) is not None:
            raise AlreadyExists(f"a table already exists at {location}")
        try:
            current = store.commit(io, location, None, metadata)
        except VersionConflict:
            raise AlreadyExists(f"a table already exists at {location}") from None
        return cls(location, io, current)

    def refresh(self) -> "Table":
        if self.read_only is None:  # a pinned metadata file does not move
            self._current = self.operations.refresh()
        return self

    # -- committing ------------------------------------------------------------------------

    def commit(self, update_fn: Callable[[TableMetadata], TableMetadata]) -> "Table":
        """Apply ``update_fn`` to the current metadata and commit it, retrying on conflicts."""
        return self.commit_transaction(lambda base, attempt: update_fn(base))

    def commit_transaction(
        self,
        update_fn: Callable[[TableMetadata, CommitAttempt], TableMetadata],
        policy: RetryPolicy | None = None,
    ) -> "Table":
        """Like :meth:`commit`, with the attempt passed on so the update can ``track`` files.

        On success, files tracked only by earlier, lost attempts are deleted. When every retry
        is lost, all tracked files are deleted and CommitConflict is raised. Any other error
        (ValidationError from ``update_fn``, storage errors, an interrupt) stops at once and
        also cleans up - except when the outcome of the commit is unknown
        (:class:`~icectl.errors.CommitStateUnknown`: the new version may be part of the table),
        when every file is kept and nothing is retried, as the reference does. The store's write,
        rename and check run as one critical section (:func:`icectl.command_files.critical`):
        a signal arriving then takes effect once the outcome is known.
        Returns ``self``, now at the committed version.
        """
        if self.read_only is not None:
            raise UnsupportedFeature(self.read_only)
        if policy is None:
            problems: list[str] = []
            policy = RetryPolicy.from_metadata(self.metadata, problems)
            self.warn(*problems)
        start = time.monotonic()
        attempts: list[CommitAttempt] = []
        number = 0
        committed = False
        try:
            while True:
                number += 1
                attempt = CommitAttempt(self, self.metadata, number)
                attempts.append(attempt)
                try:
                    new = update_fn(self.metadata, attempt)
                    if new is self.metadata or new == self.metadata:
                        self._cleanup(attempts, keep=attempt.written)
                        return self  # nothing to commit
                    with command_files.critical():
                        self._current = self.operations.commit(self._current, new)
                        committed = True
                        # the winner's files, and those its metadata adds, are the table's now
                        command_files.settle(attempt.written + attempt.referenced)
                except VersionConflict as conflict:
                    if committed:
                        raise
                    elapsed_ms = (time.monotonic() - start) * 1000
                    delay = policy.delay_ms(number)
                    if number > policy.num_retries or elapsed_ms + delay > policy.total_timeout_ms:
                        self._cleanup(attempts, keep=())
                        self._refresh_quietly()
                        raise CommitConflict(
                            f"commit to {self.operations.name} failed after {number} attempt(s): another "
                            f"writer kept winning ({conflict})") from None
                    time.sleep(delay / 1000.0)
                    self.refresh()
                    continue
                self._cleanup(attempts, keep=attempt.written)
                return self
        except CommitStateUnknown:
            raise  # keep every file: the version may be in the table
        except BaseException:
            # A signal held back until a successful commit ended lands here with ``committed``:
            # only the files of lost attempts go. Otherwise no attempt is in the table.
            self._cleanup(attempts, keep=attempts[-1].written if committed else ())
            raise

    def warn(self, *messages: str) -> None:
        """Record a problem for the operation's result to report (library code never prints)."""
        for m in messages:
            if m not in self.warnings:
                self.warnings.append(m)

    def _cleanup(self, attempts: list[CommitAttempt], keep) -> None:
        keep_set = set(keep)
        gone = [p for a in attempts for p in a.written if p not in keep_set]
        command_files.discard(self.io, dict.fromkeys(gone))  # each once, in order

    def _refresh_quietly(self) -> None:
        try:
            self.refresh()
        except Exception:  # noqa: BLE001 - keep the conflict as the error to report
            pass


def _preferred_spelling(given: str, from_metadata: str) -> str:
    """Use the metadata's own spelling of the location (e.g. ``file:/...`` as Spark wrote it)
    when it names the same local directory, so new log entries match the reference's."""
    try:
        mine, theirs = os_path(given), os_path(from_metadata) if from_metadata else None
        if mine is not None and theirs is not None and _norm(mine) == _norm(theirs):
            return from_metadata.rstrip("/") if from_metadata not in ("/",) else from_metadata
    except Exception:  # noqa: BLE001 - a remote or odd location: keep what the caller gave
        pass
    return given


def _norm(p: str) -> str:
    return os.path.realpath(os.path.abspath(p))

