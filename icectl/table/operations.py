"""Where a table's current metadata lives and how a new version replaces it: the one part of a
table that differs between its homes (the reference's ``TableOperations``).

A :class:`~icectl.table.table.Table` reads and commits through its operations: ``refresh``
returns the current version, ``commit(base, new)`` makes ``new`` the version after ``base`` or
raises :class:`~icectl.table.store.VersionConflict` when another writer moved the table past
``base`` (the table's retry loop then reloads, re-validates and tries again, whatever the home),
or :class:`~icectl.errors.CommitStateUnknown` when the outcome cannot be told. ``forget`` removes
the table from its home without touching its files (a catalog's row; nothing for a directory,
whose ``metadata/`` is the pointer and is removed by the drop itself).

:class:`DirectoryOperations` is the filesystem home (``metadata/v<N>.metadata.json``, see
:mod:`icectl.table.store`); catalogs (:mod:`icectl.catalog`) bring their own.
"""

from __future__ import annotations

from typing import Protocol

from icectl.io.storage.files import FileIO
from icectl.spec.metadata import TableMetadata
from icectl.table import store
from icectl.table.store import CommittedVersion

__all__ = ["TableOperations", "DirectoryOperations"]


class TableOperations(Protocol):
    home: str  # "filesystem", or the kind of catalog ("sql")
    name: str  # how messages name the table (its location, or catalog.namespace.table)

    def refresh(self) -> CommittedVersion: ...

    def commit(self, base: CommittedVersion | None, new: TableMetadata) -> CommittedVersion: ...

    def forget(self) -> None: ...


class DirectoryOperations:
    """A filesystem table: the newest ``metadata/v<N>`` file is the current version."""

    home = "filesystem"

    def __init__(self, io: FileIO, location: str):
        self.io = io
        self.location = location
        self.name = location

    def refresh(self) -> CommittedVersion:
        return store.load_current(self.io, self.location)

    def commit(self, base: CommittedVersion | None, new: TableMetadata) -> CommittedVersion:
        return store.commit(self.io, self.location, base, new)

    def forget(self) -> None:
        """Nothing to do: removing ``metadata/`` (the drop's work) is what forgets the table."""
