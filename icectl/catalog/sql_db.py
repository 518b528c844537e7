"""Connections to a SQL catalog's database: sqlite (the standard library's ``sqlite3``, the
embedded default) and PostgreSQL (the optional ``pg8000`` driver, ``icectl[postgres]``).

URIs are those pyiceberg (SQLAlchemy) and Spark (JDBC) configurations already hold:
``sqlite:///relative.db``, ``sqlite:////absolute.db``, ``jdbc:sqlite:/path``;
``postgresql://user:password@host:port/database`` (also ``postgresql+<driver>://`` and
``jdbc:postgresql://``). Statements are written with ``?`` placeholders; every statement commits
on its own (autocommit), so a conditional ``UPDATE`` is one atomic step.

Failures are sorted for the catalog: a constraint violation (a duplicate primary key) is
:class:`Duplicate`; a connection that fails or is lost is :class:`ConnectionLost` (after a
statement was sent its outcome is unknown); anything else is a :class:`~icectl.errors.StorageError`.
"""

from __future__ import annotations

import os
import re
import sqlite3
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from icectl.errors import InvalidInput, NotFound, StorageError

__all__ = ["Database", "Duplicate", "ConnectionLost", "open_database", "redact"]

_SQLITE_TIMEOUT_S = 60.0  # wait this long for another writer's lock (Spark's, pyiceberg's)


class Duplicate(Exception):
    """A row with that primary key exists."""


class ConnectionLost(StorageError):
    """The database could not be reached, or the connection broke during a statement."""


def redact(uri: str) -> str:
    """The URI without its password (for messages)."""
    parts = urlsplit(uri.removeprefix("jdbc:"))
    if parts.password:
        uri = uri.replace(parts.netloc, parts.netloc.replace(f":{parts.password}@", ":***@"))
    return re.sub(r"(password=)[^&]*", r"\1***", uri)


class Database:
    """One database; ``kind`` is "sqlite" or "postgresql"."""

    kind = ""

    def __init__(self, uri: str):
        self.uri = uri
        self._conn: Any = None

    # -- to implement -------------------------------------------------------------------------
    def _connect(self, create: bool) -> Any:
        raise NotImplementedError

    def _classify(self, e: BaseException) -> BaseException | None:
        raise NotImplementedError

    def has_column(self, table: str, column: str) -> bool:
        raise NotImplementedError

    def has_table(self, table: str) -> bool:
        raise NotImplementedError

    # -- shared -------------------------------------------------------------------------------
    def connection(self, create: bool = False) -> Any:
        if self._conn is None:
            try:
                self._conn = self._connect(create)
            except (NotFound, InvalidInput, StorageError):
                raise
            except Exception as e:  # noqa: BLE001 - sorted below
                raise ConnectionLost(f"cannot connect to the catalog database {redact(self.uri)}: "
                                     f"{_first_line(e)}") from None
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:  # noqa: BLE001 - closing a broken connection
                pass
            self._conn = None

    def _sql(self, sql: str) -> str:
        return sql

    def execute(self, sql: str, params: tuple = (), create: bool = False) -> int:
        """Run one statement; the number of rows it changed."""
        conn = self.connection(create)
        try:
            cur = conn.cursor()
            cur.execute(self._sql(sql), params)
            return cur.rowcount
        except Exception as e:  # noqa: BLE001 - sorted by _classify
            raise self._failure(e) from None

    def query(self, sql: str, params: tuple = ()) -> list[tuple]:
        conn = self.connection()
        try:
            cur = conn.cursor()
            cur.execute(self._sql(sql), params)
            return [tuple(r) for r in cur.fetchall()]
        except Exception as e:  # noqa: BLE001 - sorted by _classify
            raise self._failure(e) from None

    def _failure(self, e: BaseException) -> BaseException:
        found = self._classify(e)
        if isinstance(found, ConnectionLost):
            self.close()  # a new statement reconnects
        return found or StorageError(f"catalog database {redact(self.uri)}: {_first_line(e)}")


def _first_line(e: BaseException) -> str:
    text = str(e.args[0]) if e.args and isinstance(e.args[0], dict) else str(e)
    if e.args and isinstance(e.args[0], dict):  # pg8000: the server's fields
        text = e.args[0].get("M", text)
    return (text.strip().splitlines() or [type(e).__name__])[0]


class SqliteDatabase(Database):
    kind = "sqlite"

    def __init__(self, uri: str, path: str):
        super().__init__(uri)
        self.path = path

    def _connect(self, create: bool) -> Any:
        if self.path != ":memory:" and not os.path.exists(self.path):
            if not create:
                raise NotFound(f"no catalog database at {self.path} (from {self.uri})")
            parent = os.path.dirname(os.path.abspath(self.path))
            if not os.path.isdir(parent):
                raise NotFound(f"cannot create the catalog database {self.path}: no directory {parent}")
        new = self.path != ":memory:" and not os.path.exists(self.path)
        conn = sqlite3.connect(self.path, timeout=_SQLITE_TIMEOUT_S, isolation_level=None)
        if new:
            # WAL: a reader never blocks a writer. Java's sqlite driver keeps the read lock of
            # a metadata query (the JdbcCatalog's check that its tables exist) for as long as
            # its pooled connection lives; in the default journal mode no other writer could
            # commit until Spark stops.
            conn.execute("PRAGMA journal_mode=WAL")
        return conn

    def _classify(self, e: BaseException) -> BaseException | None:
        if isinstance(e, sqlite3.IntegrityError):
            return Duplicate(str(e))
        if isinstance(e, sqlite3.OperationalError) and "unable to open" in str(e):
            return ConnectionLost(f"cannot open the catalog database {self.path}: {e}")
        if isinstance(e, sqlite3.OperationalError) and "database is locked" in str(e):
            return StorageError(f"the catalog database {self.path} stayed locked by another connection for "
                                f"{_SQLITE_TIMEOUT_S:.0f} s (a sqlite catalog shared with Spark needs journal_mode=WAL, "
                                "as icectl creates it: see README, Catalogs)")
        if isinstance(e, sqlite3.OperationalError) and "no such table" in str(e):
            return NotFound(f"the database {self.path} holds no catalog ({e})")
        return None

    def has_table(self, table: str) -> bool:
        return bool(self.query("SELECT name FROM sqlite_master WHERE type='table' AND name=?", (table,)))

    def has_column(self, table: str, column: str) -> bool:
        return any(r[1] == column for r in self.query(f"PRAGMA table_info({table})"))


class PostgresDatabase(Database):
    kind = "postgresql"

    def __init__(self, uri: str, params: dict[str, Any]):
        super().__init__(uri)
        self.params = params

    def _connect(self, create: bool) -> Any:
        try:
            import pg8000.dbapi
        except ImportError:
            raise InvalidInput("a PostgreSQL catalog needs the pg8000 driver: pip install 'icectl[postgres]'") from None
        conn = pg8000.dbapi.connect(**self.params)
        conn.autocommit = True
        return conn

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s")

    def _classify(self, e: BaseException) -> BaseException | None:
        import pg8000.exceptions

        fields = e.args[0] if e.args and isinstance(e.args[0], dict) else {}
        code = fields.get("C", "")
        if code == "23505":
            return Duplicate(_first_line(e))
        if code == "42P01":
            return NotFound(f"the database {redact(self.uri)} holds no catalog ({_first_line(e)})")
        if isinstance(e, (pg8000.exceptions.InterfaceError, OSError)) or code.startswith("08") or code.startswith("57P"):
            return ConnectionLost(f"lost the connection to the catalog database {redact(self.uri)}: {_first_line(e)}")
        return None

    def has_table(self, table: str) -> bool:
        return bool(self.query("SELECT 1 FROM information_schema.tables WHERE table_name = ? "
                               "AND table_schema = current_schema()", (table,)))

    def has_column(self, table: str, column: str) -> bool:
        return bool(self.query("SELECT 1 FROM information_schema.columns WHERE table_name = ? AND column_name = ? "
                               "AND table_schema = current_schema()", (table, column)))


def open_database(uri: str) -> Database:
    """The database a catalog URI names (nothing is connected yet). InvalidInput on a URI of
    another kind or without a path/host."""
    text = uri.strip()
    bare = text.removeprefix("jdbc:")
    scheme = bare.split(":", 1)[0].split("+", 1)[0].lower() if ":" in bare else ""
    if scheme == "sqlite":
        rest = bare.split(":", 1)[1]
        if text.startswith("jdbc:"):
            path = rest  # jdbc:sqlite:/abs/path or jdbc:sqlite:relative
        elif rest.startswith("///"):
            path = rest[3:]  # sqlite:///rel.db, sqlite:////abs.db (SQLAlchemy's spelling)
        else:
            raise InvalidInput(f"invalid sqlite catalog URI {uri!r} (expected sqlite:///path/to/catalog.db)",
                               argument="catalog_uri")
        path = unquote(path.split("?", 1)[0])
        if not path:
            raise InvalidInput(f"the catalog URI {uri!r} names no database file", argument="catalog_uri")
        return SqliteDatabase(text, path)
    if scheme in ("postgresql", "postgres"):
        parts = urlsplit("postgresql://" + bare.split("://", 1)[1] if "://" in bare else bare)
        database = parts.path.lstrip("/")
        if not parts.hostname or not database:
            raise InvalidInput(f"invalid PostgreSQL catalog URI {redact(uri)!r} "
                               "(expected postgresql://user:password@host:port/database)", argument="catalog_uri")
        query = dict(parse_qsl(parts.query))  # jdbc:postgresql://h/db?user=u&password=p
        user = unquote(parts.username) if parts.username else query.get("user") or os.environ.get("PGUSER", "postgres")
        params: dict[str, Any] = {"host": parts.hostname, "port": parts.port or 5432, "database": unquote(database),
                                  "user": user}
        password = unquote(parts.password) if parts.password is not None else query.get("password")
        if password is None and os.environ.get("PGPASSWORD"):
            password = os.environ["PGPASSWORD"]
        if password is not None:
            params["password"] = password
        return PostgresDatabase(text, params)
    raise InvalidInput(f"unsupported catalog URI {redact(uri)!r}: expected sqlite:///FILE or "
                       "postgresql://USER@HOST:PORT/DATABASE", argument="catalog_uri")
