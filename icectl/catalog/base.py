"""The catalog seam: what every home of tables offers (the reference's ``Catalog``).

A catalog finds tables by identifier (``namespace.table``, namespaces of any depth), creates
them, commits a new version on the base it started from (a lost race is
:class:`~icectl.table.store.VersionConflict`, which the table's one retry loop answers),
lists namespaces and tables, forgets (drops), renames and registers them. A loaded table
carries :class:`CatalogOperations`, so every operation that changes a table commits through its
catalog without knowing which one it is. The filesystem warehouse (:mod:`.filesystem`) and the
SQL catalog (:mod:`.sql`) are the implementations; another catalog is one more module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Protocol

from icectl.errors import InvalidInput
from icectl.spec.metadata import TableMetadata
from icectl.table.store import CommittedVersion
from icectl.table.table import Table

if TYPE_CHECKING:  # (ops.warehouse is heavy to import: reading a table does not need it)
    from icectl.ops.metadata.warehouse import TableEntry

__all__ = ["TableIdent", "Catalog", "CatalogOperations", "parse_namespace"]


def parse_namespace(text: str | None) -> tuple[str, ...]:
    """``a.b`` -> ("a", "b"); "" or None -> () (the top). InvalidInput on an empty level."""
    if not text:
        return ()
    parts = tuple(text.split("."))
    if any(not p for p in parts):
        raise InvalidInput(f"invalid namespace {text!r} (expected a or a.b)")
    return parts


@dataclass(frozen=True)
class TableIdent:
    """A table's identifier: its namespace levels and its name."""

    namespace: tuple[str, ...]
    name: str

    @classmethod
    def parse(cls, text: str) -> "TableIdent":
        parts = text.strip().split(".")
        if len(parts) < 2 or any(not p for p in parts):
            raise InvalidInput(f"invalid table identifier {text!r} (expected namespace.table)")
        return cls(tuple(parts[:-1]), parts[-1])

    @property
    def namespace_text(self) -> str:
        """The namespace as Java's JDBC catalog stores it: the levels joined by dots."""
        return ".".join(self.namespace)

    def __str__(self) -> str:
        return f"{self.namespace_text}.{self.name}"


class Catalog(Protocol):
    name: str
    kind: str  # "filesystem", "sql"
    warehouse: str | None

    def load(self, ident: TableIdent) -> Table: ...

    def create(self, ident: TableIdent, build: Callable[[str], TableMetadata]) -> Table:
        """Create the table ``ident`` with the metadata ``build(location)`` gives for its
        default location. AlreadyExists when it exists (also when a racer wins)."""
        ...

    def commit(self, ident: TableIdent, base: CommittedVersion, new: TableMetadata) -> CommittedVersion: ...

    def list_namespaces(self, parent: tuple[str, ...] = ()) -> list[str]: ...

    def list_tables(self, namespace: tuple[str, ...] = ()) -> list["TableEntry"]: ...

    def drop(self, ident: TableIdent) -> None:
        """Forget the table (its files are the caller's: drop --purge deletes them)."""
        ...

    def rename(self, src: TableIdent, dst: TableIdent) -> None: ...

    def register(self, ident: TableIdent, metadata_file: str) -> Table: ...

    def describe(self) -> str: ...


class CatalogOperations:
    """The operations of a catalog's table: reads and commits go to its catalog."""

    def __init__(self, catalog: Catalog, ident: TableIdent, refresh: Callable[[], CommittedVersion]):
        self.catalog = catalog
        self.ident = ident
        self.home = catalog.kind
        self.name = f"{catalog.name}.{ident}"
        self._refresh = refresh

    def refresh(self) -> CommittedVersion:
        return self._refresh()

    def commit(self, base: CommittedVersion | None, new: TableMetadata) -> CommittedVersion:
        assert base is not None, "a catalog's table is created by Catalog.create"
        return self.catalog.commit(self.ident, base, new)

    def forget(self) -> None:
        self.catalog.drop(self.ident)
