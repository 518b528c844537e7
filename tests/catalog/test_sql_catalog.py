"""The SQL catalog's commit protocol on sqlite: the conditional UPDATE, lost races retried through
the table's one retry loop, creates refused by the primary key, and outcomes the database cannot
confirm settled by reading the row back (else CommitStateUnknown, every file kept)."""

from __future__ import annotations

import os
import sqlite3

import pytest

from icectl.catalog.base import TableIdent
from icectl.catalog.sql import SqlCatalog
from icectl.catalog.sql_db import ConnectionLost
from icectl.errors import AlreadyExists, CommitStateUnknown, CorruptMetadata, NotFound, StorageError
from icectl.ops.metadata.create import build_create_metadata
from icectl.ops.metadata.properties import set_properties

IDENT = TableIdent(("db",), "t")


def catalog(tmp_path, name="cat") -> SqlCatalog:
    return SqlCatalog(name, f"sqlite:///{tmp_path}/c.db", str(tmp_path / "wh"))


def create(cat, ident=IDENT):
    return cat.create(ident, lambda loc: build_create_metadata(loc, schema_text="id long"))


def row(tmp_path, ident=IDENT):
    with sqlite3.connect(tmp_path / "c.db") as db:
        return db.execute("SELECT metadata_location, previous_metadata_location, iceberg_type FROM iceberg_tables "
                          "WHERE table_namespace = ? AND table_name = ?", (ident.namespace_text, ident.name)).fetchone()


def metadata_files(tmp_path, ident=IDENT):
    d = tmp_path / "wh" / os.path.join(*ident.namespace) / ident.name / "metadata"
    return sorted(n for n in os.listdir(d) if n.endswith(".metadata.json"))


def test_create_writes_the_first_file_and_the_row(tmp_path):
    t = create(catalog(tmp_path))
    loc, prev, kind = row(tmp_path)
    assert loc == t.metadata_location and prev is None and kind == "TABLE"
    assert metadata_files(tmp_path)[0].startswith("00000-") and len(metadata_files(tmp_path)) == 1
    assert t.location == str(tmp_path / "wh" / "db" / "t")


def test_a_multi_level_namespace_is_stored_as_java_writes_it(tmp_path):
    ident = TableIdent(("a", "b"), "t")
    t = create(catalog(tmp_path), ident)
    assert row(tmp_path, ident)[0] == t.metadata_location
    assert t.location == str(tmp_path / "wh" / "a" / "b" / "t")
    cat = catalog(tmp_path)
    assert cat.list_namespaces() == ["a", "a.b"]
    assert [e.identifier for e in cat.list_tables(("a",))] == ["a.b.t"]


def test_a_second_create_is_refused_by_the_primary_key_and_leaves_no_file(tmp_path):
    create(catalog(tmp_path))
    cat = catalog(tmp_path)
    cat._row_quiet = lambda ident: None  # as if the racer's row appeared after our check
    with pytest.raises(AlreadyExists):
        create(cat)
    assert len(metadata_files(tmp_path)) == 1


def test_a_commit_swaps_the_pointer_and_names_the_base(tmp_path):
    t = create(catalog(tmp_path))
    base = t.metadata_location
    set_properties(t, {"a": "1"})
    loc, prev, _ = row(tmp_path)
    assert loc == t.metadata_location and prev == base
    assert loc.rsplit("/", 1)[-1].startswith("00001-")
    assert [e.metadata_file for e in t.metadata.metadata_log] == [base]


def test_a_lost_race_is_retried_on_the_winners_metadata(tmp_path):
    create(catalog(tmp_path))
    mine, theirs = catalog(tmp_path).load(IDENT), catalog(tmp_path).load(IDENT)
    set_properties(theirs, {"theirs": "1"})
    set_properties(mine, {"mine": "1"})  # its first UPDATE matches no row: reload, re-apply, retry
    final = catalog(tmp_path).load(IDENT)
    assert final.metadata.properties["theirs"] == "1" and final.metadata.properties["mine"] == "1"
    assert row(tmp_path)[0] == mine.metadata_location
    # the lost attempt's file is gone: versions 0, 1 (theirs), 2 (mine)
    assert [n[:5] for n in metadata_files(tmp_path)] == ["00000", "00001", "00002"]


class _DropsAfter:
    """A database whose UPDATE runs and then loses the connection (``ran``), or loses it before
    the statement reached the server; ``read_back`` False breaks the read-back too."""

    def __init__(self, db, ran: bool, read_back: bool = True):
        self.db, self.ran, self.read_back = db, ran, read_back

    def __getattr__(self, name):
        return getattr(self.db, name)

    def execute(self, sql, params=(), create=False):
        if sql.startswith("UPDATE"):
            if self.ran:
                self.db.execute(sql, params, create)
            if not self.read_back:
                self.db.query = _fail
            raise ConnectionLost("server closed the connection unexpectedly")
        return self.db.execute(sql, params, create)


def _fail(*a, **k):
    raise ConnectionLost("connection refused")


def test_a_lost_connection_after_the_update_is_settled_as_committed(tmp_path):
    create(catalog(tmp_path))
    cat = catalog(tmp_path)
    cat.db = _DropsAfter(cat.db, ran=True)
    t = cat.load(IDENT)
    set_properties(t, {"a": "1"})
    assert row(tmp_path)[0] == t.metadata_location
    assert catalog(tmp_path).load(IDENT).metadata.properties["a"] == "1"


def test_a_lost_connection_before_the_update_did_not_land_and_leaves_nothing(tmp_path):
    t0 = create(catalog(tmp_path))
    cat = catalog(tmp_path)
    cat.db = _DropsAfter(cat.db, ran=False)
    with pytest.raises(StorageError, match="did not land"):
        set_properties(cat.load(IDENT), {"a": "1"})
    assert row(tmp_path)[0] == t0.metadata_location
    assert len(metadata_files(tmp_path)) == 1


def test_an_outcome_nobody_can_read_back_is_unknown_and_keeps_the_file(tmp_path):
    t0 = create(catalog(tmp_path))
    cat = catalog(tmp_path)
    cat.db = _DropsAfter(cat.db, ran=True, read_back=False)
    with pytest.raises(CommitStateUnknown):
        set_properties(cat.load(IDENT), {"a": "1"})
    assert row(tmp_path)[0] != t0.metadata_location  # (it did land)
    assert len(metadata_files(tmp_path)) == 2  # and its file was kept


def test_a_v0_table_without_iceberg_type_is_used_as_it_is(tmp_path):
    with sqlite3.connect(tmp_path / "c.db") as db:  # the tables an older Java (schema V0) made
        db.execute("CREATE TABLE iceberg_tables (catalog_name VARCHAR(255) NOT NULL, table_namespace VARCHAR(255) "
                   "NOT NULL, table_name VARCHAR(255) NOT NULL, metadata_location VARCHAR(1000), "
                   "previous_metadata_location VARCHAR(1000), PRIMARY KEY (catalog_name, table_namespace, table_name))")
    t = create(catalog(tmp_path))
    set_properties(t, {"a": "1"})
    with sqlite3.connect(tmp_path / "c.db") as db:
        cols = [r[1] for r in db.execute("PRAGMA table_info(iceberg_tables)")]
        assert "iceberg_type" not in cols
        assert db.execute("SELECT metadata_location FROM iceberg_tables").fetchone()[0] == t.metadata_location


def test_catalogs_of_other_names_in_one_database_are_apart(tmp_path):
    create(catalog(tmp_path, "one"))
    with pytest.raises(NotFound):
        catalog(tmp_path, "two").load(IDENT)


def test_reading_a_missing_database_creates_nothing(tmp_path):
    with pytest.raises(NotFound, match="no catalog database"):
        catalog(tmp_path).load(IDENT)
    assert not (tmp_path / "c.db").exists()


def test_a_row_whose_metadata_file_is_missing_is_corrupt(tmp_path):
    t = create(catalog(tmp_path))
    os.remove(t.metadata_location)
    with pytest.raises(CorruptMetadata, match="missing"):
        catalog(tmp_path).load(IDENT)


def test_rename_and_drop(tmp_path):
    create(catalog(tmp_path))
    cat = catalog(tmp_path)
    create(cat, TableIdent(("db",), "u"))
    with pytest.raises(AlreadyExists):
        cat.rename(IDENT, TableIdent(("db",), "u"))
    cat.rename(IDENT, TableIdent(("other",), "t2"))
    assert cat.load(TableIdent(("other",), "t2")).location == str(tmp_path / "wh" / "db" / "t")
    cat.drop(TableIdent(("other",), "t2"))
    with pytest.raises(NotFound):
        cat.load(TableIdent(("other",), "t2"))


@pytest.mark.parametrize("uri, kind, where", [
    ("sqlite:///rel/c.db", "sqlite", "rel/c.db"),
    ("sqlite:////abs/c.db", "sqlite", "/abs/c.db"),
    ("sqlite+pysqlite:////abs/c.db", "sqlite", "/abs/c.db"),
    ("jdbc:sqlite:/abs/c.db", "sqlite", "/abs/c.db"),
    ("postgresql://u:p%40ss@h:6543/db", "postgresql", {"host": "h", "port": 6543, "database": "db", "user": "u",
                                                        "password": "p@ss"}),
    ("postgresql+psycopg2://u@h/db", "postgresql", {"host": "h", "port": 5432, "database": "db", "user": "u"}),
    ("jdbc:postgresql://h:5433/db?user=u&password=x", "postgresql",
     {"host": "h", "port": 5433, "database": "db", "user": "u", "password": "x"}),
])
def test_catalog_uris_as_pyiceberg_and_spark_write_them(uri, kind, where, monkeypatch):
    from icectl.catalog.sql_db import open_database, redact

    monkeypatch.delenv("PGPASSWORD", raising=False)
    d = open_database(uri)
    assert d.kind == kind
    assert (d.path if kind == "sqlite" else d.params) == where
    assert "x&" not in redact(uri) and "p%40ss" not in redact(uri) and not redact(uri).endswith("password=x")


@pytest.mark.parametrize("uri", ["mysql://h/db", "sqlite:/c.db", "postgresql:///db", "c.db", "sqlite://"])
def test_other_uris_are_refused(uri):
    from icectl.catalog.sql_db import open_database
    from icectl.errors import InvalidInput

    with pytest.raises(InvalidInput):
        open_database(uri)
