"""The filesystem warehouse as a catalog (the reference's Hadoop catalog): a table ``ns.name``
lives at ``WAREHOUSE/ns/name`` and its versions are ``metadata/v<N>.metadata.json`` (see
:mod:`icectl.table.store`). Listing and adopting tables are the warehouse operations of
:mod:`icectl.ops.metadata.warehouse`; this module puts them behind the catalog seam.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from icectl.catalog.base import TableIdent
from icectl.errors import UnsupportedFeature
from icectl.io.storage.files import FileIO
from icectl.spec.metadata import TableMetadata
from icectl.table import store
from icectl.table.store import CommittedVersion
from icectl.table.table import Table

if TYPE_CHECKING:
    from icectl.ops.metadata.warehouse import TableEntry

__all__ = ["FilesystemCatalog"]


class FilesystemCatalog:
    kind = "filesystem"

    def __init__(self, warehouse: str, io: FileIO | None = None, name: str = "warehouse"):
        self.warehouse = warehouse.rstrip("/") or warehouse
        self.io = io or FileIO()
        self.name = name

    def describe(self) -> str:
        return f"warehouse {self.warehouse}"

    def location(self, ident: TableIdent) -> str:
        return "/".join([self.warehouse, *ident.namespace, ident.name])

    def load(self, ident: TableIdent) -> Table:
        return Table.load(self.location(ident), io=self.io)

    def create(self, ident: TableIdent, build: Callable[[str], TableMetadata]) -> Table:
        location = self.location(ident)
        return Table.create(location, build(location), io=self.io)

    def commit(self, ident: TableIdent, base: CommittedVersion, new: TableMetadata) -> CommittedVersion:
        return store.commit(self.io, self.location(ident), base, new)

    def drop(self, ident: TableIdent) -> None:
        """Nothing beyond the drop's removal of ``metadata/`` (see ``ops.warehouse.drop_table``)."""

    def rename(self, src: TableIdent, dst: TableIdent) -> None:
        raise UnsupportedFeature("a filesystem warehouse cannot rename tables (the Hadoop catalog cannot either: "
                                 "manifests name files by absolute path)")

    # -- listing and adopting --------------------------------------------------------------------
    # (ops.warehouse is imported here, not at the top: loading a table must stay light)
    def list_namespaces(self, parent: tuple[str, ...] = ()) -> list[str]:
        from icectl.ops.metadata.warehouse import list_tables

        return list(list_tables(self.warehouse, ".".join(parent) or None, io=self.io).namespaces)

    def list_tables(self, namespace: tuple[str, ...] = ()) -> list["TableEntry"]:
        from icectl.ops.metadata.warehouse import list_tables

        return list(list_tables(self.warehouse, ".".join(namespace) or None, io=self.io).tables)

    def register(self, ident: TableIdent, metadata_file: str) -> Table:
        from icectl.ops.metadata.warehouse import register_table

        result = register_table(self.location(ident), metadata_file, io=self.io)
        return Table.load(result.location, io=self.io)
