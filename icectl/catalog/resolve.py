"""From a TABLE argument to a table: a location, a metadata file, a warehouse's ``ns.table``,
or a catalog's ``namespace.table`` (see :mod:`icectl.catalog.config` for which catalog).

A TABLE containing ``/``, ``\\`` or ``:`` is a location (or a metadata file) and is read from the
filesystem; an identifier goes to the chosen catalog, else to the filesystem warehouse.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping

from icectl.catalog.base import Catalog, TableIdent
from icectl.catalog.config import CATALOG_ENV, resolve_config
from icectl.errors import InvalidInput
from icectl.io.storage.files import FileIO
from icectl.table.table import Table, resolve_table_location

__all__ = ["CatalogChoice", "is_identifier", "open_catalog", "catalog_for", "load_table", "list_catalog"]


@dataclass(frozen=True)
class CatalogChoice:
    """What the options say about the catalog: ``--catalog NAME`` and ``--catalog-uri URI``."""

    name: str | None = None
    uri: str | None = None

    @property
    def explicit(self) -> bool:
        return bool(self.name or self.uri)


def is_identifier(text: str) -> bool:
    return not any(c in text for c in "/\\:")


def open_catalog(choice: CatalogChoice, warehouse: str | None, io: FileIO | None = None,
                 env: Mapping[str, str] | None = None) -> Catalog | None:
    """The SQL catalog the options (or ICECTL_CATALOG) choose; None when none is chosen."""
    env = os.environ if env is None else env
    if not choice.explicit and not env.get(CATALOG_ENV):
        return None
    from icectl.catalog.sql import SqlCatalog  # (only when a catalog is chosen)

    cfg = resolve_config(choice.name, choice.uri, warehouse, env)
    return SqlCatalog(cfg.name, cfg.uri, cfg.warehouse, io=io)


def catalog_for(table: str, warehouse: str | None, choice: CatalogChoice, io: FileIO | None = None,
                env: Mapping[str, str] | None = None) -> tuple[Catalog, TableIdent] | None:
    """The catalog and identifier TABLE names, or None for a filesystem table."""
    text = table.strip()
    if not text:
        raise InvalidInput("TABLE must not be empty")
    if not is_identifier(text):
        if choice.explicit:
            raise InvalidInput(f"a catalog's table is named namespace.table, not by a location ({text})",
                               argument="catalog" if choice.name else "catalog_uri")
        return None
    catalog = open_catalog(choice, warehouse, io, env)
    if catalog is None:
        return None
    return catalog, TableIdent.parse(text)


def load_table(table: str, warehouse: str | None, choice: CatalogChoice = CatalogChoice(),
               io: FileIO | None = None) -> Table:
    """The table TABLE names, from its catalog or its filesystem location."""
    found = catalog_for(table, warehouse, choice, io)
    if found is None and warehouse is not None and is_identifier(table.strip()):
        from icectl.catalog.filesystem import FilesystemCatalog

        found = FilesystemCatalog(warehouse, io), TableIdent.parse(table)  # WAREHOUSE/ns/table
    if found is not None:
        catalog, ident = found
        return catalog.load(ident)
    return Table.load(resolve_table_location(table, warehouse), io=io)


def list_catalog(choice: CatalogChoice, warehouse: str | None) -> Catalog | None:
    """The catalog `icectl list` lists: the chosen SQL catalog, else the warehouse directory
    (None when neither is given)."""
    catalog = open_catalog(choice, warehouse)
    if catalog is not None:
        return catalog
    from icectl.catalog.filesystem import FilesystemCatalog

    if not warehouse:
        return None  # (the CLI says which options name one)
    return FilesystemCatalog(warehouse)
