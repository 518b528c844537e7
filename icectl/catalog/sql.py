"""The SQL catalog: the tables of Iceberg Java's ``JdbcCatalog`` (schema V1) and pyiceberg's
``SqlCatalog``, so that Spark, Trino, pyiceberg and icectl share one catalog database.

``iceberg_tables(catalog_name, table_namespace, table_name, metadata_location,
previous_metadata_location, iceberg_type)`` holds one row per table (primary key: the first
three; ``iceberg_type`` is 'TABLE', or NULL in rows written before views existed) and
``iceberg_namespace_properties(catalog_name, namespace, property_key, property_value)`` the
namespaces' properties. A namespace is stored as its levels joined by dots, as Java does.

* **Create** writes ``<location>/metadata/00000-<uuid>.metadata.json`` and INSERTs the row; the
  primary key refuses a second creator (AlreadyExists, its file removed).
* **Commit** writes ``NNNNN-<uuid>.metadata.json`` (NNNNN one past the base's number, under
  ``write.metadata.path`` when set) and swaps the pointer with one conditional
  ``UPDATE ... WHERE metadata_location = <base>``: no row updated means another writer won, raised
  as VersionConflict (the new file removed) for the table's retry loop to reload, re-validate and
  retry. When the database cannot confirm the outcome (the connection is lost once the statement
  was sent), the row is read back on a new connection: ours (or a later version that logs ours)
  means committed; anything else means it did not land (the reference's check of commit status);
  and when even that read fails, CommitStateUnknown keeps every file.
* The tables are created (V1, with ``iceberg_type``) only by a command that writes the catalog:
  a read never creates a database. A table made by an older Java (V0, no ``iceberg_type``) is
  used as it is.
* A table's default location is ``<warehouse>/<namespace levels>/<table>``, as Java's.
"""

from __future__ import annotations

import re
import uuid
from typing import TYPE_CHECKING, Callable

from icectl.catalog.base import CatalogOperations, TableIdent
from icectl.catalog.sql_db import ConnectionLost, Database, Duplicate, open_database, redact
from icectl.errors import (AlreadyExists, CommitStateUnknown, CorruptMetadata, IcectlError, InvalidInput, NotFound,
                           StorageError)
from icectl.io.storage.files import FileIO, join
from icectl.spec.metadata import TableMetadata
from icectl.spec.metadata_json import metadata_to_bytes
from icectl.spec.properties import METADATA_COMPRESSION, WRITE_METADATA_PATH
from icectl.table import store
from icectl.table.store import CommittedVersion, VersionConflict
from icectl.table.table import Table
from icectl.table.versions import codec_name

if TYPE_CHECKING:
    from icectl.ops.metadata.warehouse import TableEntry

__all__ = ["SqlCatalog", "TABLES", "NAMESPACES"]

TABLES = "iceberg_tables"
NAMESPACES = "iceberg_namespace_properties"
_CREATE_TABLES = (f"CREATE TABLE IF NOT EXISTS {TABLES} (catalog_name VARCHAR(255) NOT NULL, "
                  "table_namespace VARCHAR(255) NOT NULL, table_name VARCHAR(255) NOT NULL, "
                  "metadata_location VARCHAR(1000), previous_metadata_location VARCHAR(1000), "
                  "iceberg_type VARCHAR(5), "
                  "PRIMARY KEY (catalog_name, table_namespace, table_name))")
_CREATE_NAMESPACES = (f"CREATE TABLE IF NOT EXISTS {NAMESPACES} (catalog_name VARCHAR(255) NOT NULL, "
                      "namespace VARCHAR(255) NOT NULL, property_key VARCHAR(255), property_value VARCHAR(1000), "
                      "PRIMARY KEY (catalog_name, namespace, property_key))")
_KEY = "catalog_name = ? AND table_namespace = ? AND table_name = ?"
_NUMBER = re.compile(r"^(\d+)-")


def _escape_like(text: str) -> str:
    return text.replace("!", "!!").replace("_", "!_").replace("%", "!%")


def parse_version(metadata_location: str) -> int:
    """The number of a catalog-named metadata file (``00003-<uuid>...`` -> 3), else -1 (as the
    reference's ``parseVersion``: the next file is then 00000)."""
    m = _NUMBER.match(metadata_location.rsplit("/", 1)[-1])
    return int(m.group(1)) if m else -1


class SqlCatalog:
    kind = "sql"

    def __init__(self, name: str, uri: str, warehouse: str | None = None, io: FileIO | None = None,
                 database: Database | None = None):
        if not name:
            raise InvalidInput("a SQL catalog needs a name", argument="catalog")
        self.name = name
        self.uri = uri
        self.warehouse = warehouse.rstrip("/") if warehouse else None
        self.io = io or FileIO()
        self.db = database or open_database(uri)
        self._typed: bool | None = None  # iceberg_type column present (schema V1)

    def describe(self) -> str:
        return f"catalog {self.name} ({redact(self.uri)})"

    # -- the database's tables --------------------------------------------------------------------
    def initialize(self) -> None:
        """Create the catalog's tables when missing (and a sqlite database file, in WAL mode)."""
        self._ensure_tables()

    def _ensure_tables(self) -> None:
        """Create the catalog's tables when missing (commands that write the catalog only)."""
        self.db.connection(create=True)
        if not self.db.has_table(TABLES):
            self.db.execute(_CREATE_TABLES, create=True)
        if not self.db.has_table(NAMESPACES):
            self.db.execute(_CREATE_NAMESPACES, create=True)
        self._typed = None

    def _v1(self) -> bool:
        if self._typed is None:
            self._typed = self.db.has_column(TABLES, "iceberg_type")
        return self._typed

    def _type_filter(self) -> str:
        return " AND (iceberg_type = 'TABLE' OR iceberg_type IS NULL)" if self._v1() else ""

    def _row(self, ident: TableIdent) -> str | None:
        """The table's metadata_location; None when there is no row. NotFound when the database
        holds no catalog at all."""
        if not self.db.has_table(TABLES):
            return None
        rows = self.db.query(f"SELECT metadata_location FROM {TABLES} WHERE {_KEY}{self._type_filter()}",
                             (self.name, ident.namespace_text, ident.name))
        return rows[0][0] if rows else None

    # -- loading ---------------------------------------------------------------------------------
    def _current(self, ident: TableIdent) -> CommittedVersion:
        location = self._row(ident)
        if location is None:
            raise NotFound(f"no table {ident} in {self.describe()}")
        try:
            data = self.io.read(location)
        except NotFound:
            raise CorruptMetadata(f"{self.describe()} names {location} as the metadata of {ident}, "
                                  "but that file is missing") from None
        from icectl.spec.metadata_json import metadata_from_bytes

        return CommittedVersion(parse_version(location), location, metadata_from_bytes(data, location))

    def _table(self, ident: TableIdent, current: CommittedVersion) -> Table:
        ops = CatalogOperations(self, ident, lambda: self._current(ident))
        return Table(current.metadata.location.rstrip("/"), self.io, current, operations=ops)

    def load(self, ident: TableIdent) -> Table:
        return self._table(ident, self._current(ident))

    # -- writing metadata ------------------------------------------------------------------------
    def default_location(self, ident: TableIdent) -> str:
        if not self.warehouse:
            raise InvalidInput(f"{self.describe()} has no warehouse to create a table in (give one, or "
                               "set the entry's warehouse)", argument="warehouse")
        return "/".join([self.warehouse, *ident.namespace, ident.name])

    def _write_metadata(self, md: TableMetadata, version: int) -> str:
        codec = codec_name(md.properties.get(METADATA_COMPRESSION))
        ext = ".gz.metadata.json" if codec == "gzip" else ".metadata.json"
        directory = md.properties.get(WRITE_METADATA_PATH, "").rstrip("/") or store.metadata_dir(md.location)
        path = join(directory, f"{max(version, 0):05d}-{uuid.uuid4()}{ext}")
        data = metadata_to_bytes(md, compress=codec == "gzip")
        self.io.write_exclusive(path, data, durable=True)  # (a conditional create on object stores)
        return path

    def _insert(self, ident: TableIdent, metadata_location: str) -> None:
        self._ensure_tables()
        columns = "catalog_name, table_namespace, table_name, metadata_location, previous_metadata_location"
        values = (self.name, ident.namespace_text, ident.name, metadata_location, None)
        if self._v1():
            columns += ", iceberg_type"
            values += ("TABLE",)
        try:
            self.db.execute(f"INSERT INTO {TABLES} ({columns}) VALUES (?, ?, ?, ?, ?{', ?' if self._v1() else ''})",
                            values)
        except Duplicate:
            raise AlreadyExists(f"a table {ident} already exists in {self.describe()}") from None

    def create(self, ident: TableIdent, build: Callable[[str], TableMetadata]) -> Table:
        if self._row_quiet(ident) is not None:
            raise AlreadyExists(f"a table {ident} already exists in {self.describe()}")
        md = build(self.default_location(ident))
        path = self._write_metadata(md, 0)
        try:
            self._insert(ident, path)
        except Exception:  # the database refused the INSERT: no row names the file (an interrupt keeps it)
            self.io.delete_quietly(path)
            raise
        return self._table(ident, CommittedVersion(0, path, md))

    def _row_quiet(self, ident: TableIdent) -> str | None:
        try:
            return self._row(ident)
        except NotFound:
            return None

    def register(self, ident: TableIdent, metadata_file: str) -> Table:
        """Point a new row at an existing metadata file (nothing is copied or rewritten)."""
        if not self.io.exists(metadata_file):
            raise NotFound(f"metadata file not found: {metadata_file}")
        md = store.read_metadata(self.io, metadata_file)
        if self._row_quiet(ident) is not None:
            raise AlreadyExists(f"a table {ident} already exists in {self.describe()}")
        self._insert(ident, metadata_file)
        return self._table(ident, CommittedVersion(parse_version(metadata_file), metadata_file, md))

    def commit(self, ident: TableIdent, base: CommittedVersion, new: TableMetadata) -> CommittedVersion:
        new = store.next_metadata(base, new)
        version = base.version + 1
        path = self._write_metadata(new, version)
        try:
            changed = self.db.execute(
                f"UPDATE {TABLES} SET metadata_location = ?, previous_metadata_location = ? "
                f"WHERE {_KEY} AND metadata_location = ?{self._type_filter()}",
                (path, base.metadata_location, self.name, ident.namespace_text, ident.name, base.metadata_location))
        except ConnectionLost as lost:
            changed = self._settle(ident, path, lost)
        except Exception:  # the database refused the UPDATE: it changed nothing (an interrupt keeps the file)
            self.io.delete_quietly(path)
            raise
        if changed != 1:
            self.io.delete_quietly(path)
            raise VersionConflict(version, f"{self.name}.{ident} no longer points at the base "
                                           f"{base.metadata_location}", conflict=True)
        store.remove_dropped_metadata(self.io, base, new)
        return CommittedVersion(version, path, new)

    def _settle(self, ident: TableIdent, path: str, lost: ConnectionLost) -> int:
        """The connection broke once the UPDATE was sent: read the row back on a new connection.
        1 when our file is (or a version logging it is) current; 0 when it did not land."""
        try:
            self.db.close()
            current = self._row(ident)
            if current == path:
                return 1
            if current is not None and current != path:
                md = store.read_metadata(self.io, current)
                if any(e.metadata_file == path for e in md.metadata_log):
                    return 1
        except IcectlError as e:
            raise CommitStateUnknown(f"cannot tell whether {path} is part of {self.name}.{ident}: {lost}; "
                                     f"reading the catalog back failed too ({e}): every file of the commit "
                                     "is kept; check the table before retrying") from None
        self.io.delete_quietly(path)
        raise StorageError(f"the commit to {self.name}.{ident} did not land: {lost}")

    # -- namespaces and tables -------------------------------------------------------------------
    def list_namespaces(self, parent: tuple[str, ...] = ()) -> list[str]:
        """Every namespace below ``parent`` (nested, sorted), with those that only hold tables."""
        if not self.db.has_table(TABLES):
            return []
        stored = [r[0] for r in self.db.query(f"SELECT DISTINCT table_namespace FROM {TABLES} WHERE catalog_name = ?",
                                               (self.name,))]
        if self.db.has_table(NAMESPACES):
            stored += [r[0] for r in self.db.query(
                f"SELECT DISTINCT namespace FROM {NAMESPACES} WHERE catalog_name = ?", (self.name,))]
        out: set[str] = set()
        for ns in stored:
            levels = tuple(ns.split(".")) if ns else ()
            for i in range(len(parent) + 1, len(levels) + 1):
                if levels[:len(parent)] == parent:
                    out.add(".".join(levels[:i]))
        return sorted(out)

    def list_tables(self, namespace: tuple[str, ...] = ()) -> list["TableEntry"]:
        from icectl.ops.metadata.warehouse import TableEntry  # (heavy: only `list` needs it)

        if not self.db.has_table(TABLES):
            return []
        sql = f"SELECT table_namespace, table_name, metadata_location FROM {TABLES} WHERE catalog_name = ?"
        params: tuple = (self.name,)
        if namespace:
            prefix = ".".join(namespace)
            sql += " AND (table_namespace = ? OR table_namespace LIKE ? ESCAPE '!')"
            params += (prefix, _escape_like(prefix) + ".%")
        rows = self.db.query(sql + self._type_filter(), params)
        out = []
        for ns, name, location in rows:
            directory = (location or "").rsplit("/", 1)[0]
            table_dir = directory.rsplit("/", 1)[0] if directory.endswith("/metadata") else directory
            out.append(TableEntry(f"{ns}.{name}", table_dir, "sql"))
        return sorted(out, key=lambda t: t.identifier)

    def create_namespace(self, namespace: tuple[str, ...], properties: dict[str, str] | None = None) -> None:
        if not namespace:
            raise InvalidInput("a namespace needs a name")
        self._ensure_tables()
        text = ".".join(namespace)
        if self.db.query(f"SELECT 1 FROM {NAMESPACES} WHERE catalog_name = ? AND namespace = ?", (self.name, text)):
            raise AlreadyExists(f"namespace {text} already exists in {self.describe()}")
        for key, value in {**(properties or {}), "exists": "true"}.items():
            self.db.execute(f"INSERT INTO {NAMESPACES} (catalog_name, namespace, property_key, property_value) "
                            "VALUES (?, ?, ?, ?)", (self.name, text, key, value))

    def drop(self, ident: TableIdent) -> None:
        if self._row(ident) is None:
            raise NotFound(f"no table {ident} in {self.describe()}")
        self.db.execute(f"DELETE FROM {TABLES} WHERE {_KEY}{self._type_filter()}",
                        (self.name, ident.namespace_text, ident.name))

    def rename(self, src: TableIdent, dst: TableIdent) -> None:
        if self._row(src) is None:
            raise NotFound(f"no table {src} in {self.describe()}")
        try:
            changed = self.db.execute(
                f"UPDATE {TABLES} SET table_namespace = ?, table_name = ? WHERE {_KEY}{self._type_filter()}",
                (dst.namespace_text, dst.name, self.name, src.namespace_text, src.name))
        except Duplicate:
            raise AlreadyExists(f"a table {dst} already exists in {self.describe()}") from None
        if changed != 1:
            raise NotFound(f"no table {src} in {self.describe()}")

