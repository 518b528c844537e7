"""Fixtures of the SQL catalog tests: a JdbcCatalog on the one shared Spark session (the JDBC
drivers are on its classpath, see spark_support.jdbc_driver_jars) and a throw-away PostgreSQL
server (``initdb`` + ``pg_ctl`` in a temporary directory, a loopback port, run as an unprivileged
user because PostgreSQL refuses root; stopped at the end). A missing part of the stack fails the
tests that need it, with the reason (never a skip)."""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest

_count = itertools.count(1)
PG_BIN_DIRS = [Path("/usr/lib/postgresql") / v / "bin" for v in ("17", "16", "15", "14", "13")]


def _pg_bin(name: str) -> str | None:
    for d in PG_BIN_DIRS:
        if (d / name).is_file():
            return str(d / name)
    return shutil.which(name)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class Postgres:
    host: str
    port: int
    user: str
    password: str

    def uri(self, database: str) -> str:
        return f"postgresql://{self.user}:{self.password}@{self.host}:{self.port}/{database}"

    def jdbc(self, database: str) -> str:
        return f"jdbc:postgresql://{self.host}:{self.port}/{database}"

    def create_database(self) -> str:
        import pg8000.dbapi

        name = f"cat{next(_count)}_{os.getpid()}"
        conn = pg8000.dbapi.connect(host=self.host, port=self.port, user=self.user, password=self.password,
                                    database="postgres")
        conn.autocommit = True
        conn.cursor().execute(f"CREATE DATABASE {name}")
        conn.close()
        return name


def _run_as(user: str | None, argv: list[str], **kw: Any) -> subprocess.CompletedProcess:
    if user is not None:
        argv = ["runuser", "-u", user, "--", *argv]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, **kw)


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    if not initdb or not pg_ctl:
        pytest.fail("PostgreSQL server binaries (initdb, pg_ctl) are missing: apt-get install postgresql", pytrace=False)
    try:
        import pg8000  # noqa: F401
    except ImportError:
        pytest.fail("the pg8000 driver is missing: pip install -e '.[postgres]'", pytrace=False)
    user = "nobody" if os.geteuid() == 0 else None  # PostgreSQL refuses to run as root
    root = Path(tempfile.mkdtemp(prefix="icectl-pg-"))
    os.chmod(root, 0o777)
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    os.chmod(sock, 0o777)
    pwfile = root / "pw"
    pwfile.write_text("icectl\n")
    os.chmod(pwfile, 0o644)
    port = _free_port()
    r = _run_as(user, [initdb, "-D", str(data), "-U", "icectl", "--pwfile", str(pwfile), "-A", "md5", "-E", "UTF8"])
    if r.returncode != 0:
        pytest.fail(f"initdb failed: {r.stderr.strip()[-500:]}", pytrace=False)
    r = _run_as(user, [pg_ctl, "-D", str(data), "-l", str(root / "log"), "-w", "-t", "60", "-o",
                       f"-p {port} -k {sock} -c listen_addresses=127.0.0.1 -c fsync=off", "start"])
    if r.returncode != 0:
        log = (root / "log").read_text() if (root / "log").exists() else ""
        pytest.fail(f"pg_ctl start failed: {r.stderr.strip()[-300:]} {log[-500:]}", pytrace=False)
    try:
        yield Postgres("127.0.0.1", port, "icectl", "icectl")
    finally:
        _run_as(user, [pg_ctl, "-D", str(data), "-m", "fast", "-w", "stop"])
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def jdbc_catalog(spark) -> Any:
    """``add(kind, uri, warehouse, jdbc_uri=None, user=None, password=None)`` -> the name of a
    new Iceberg JdbcCatalog on the shared Spark session (schema V1) for that database."""
    from spark_support import jdbc_driver_jars

    jars = jdbc_driver_jars()

    def add(kind: str, jdbc_uri: str, warehouse: str, name: str | None = None, user: str | None = None,
            password: str | None = None) -> str:
        if kind not in jars:
            pytest.fail(f"the {kind} JDBC driver jar is missing (apt-get install libxerial-sqlite-jdbc-java "
                        "libpostgresql-jdbc-java)", pytrace=False)
        name = name or f"jdbc{next(_count)}"
        prefix = f"spark.sql.catalog.{name}"
        conf = {"": "org.apache.iceberg.spark.SparkCatalog", ".type": "jdbc", ".uri": jdbc_uri,
                ".warehouse": warehouse, ".jdbc.schema-version": "V1", ".cache-enabled": "false"}
        if kind == "sqlite":
            # The catalog's tables are made first (by icectl: a WAL database) and Spark is told not
            # to check for them: Java's sqlite driver keeps the read lock of that check (a
            # DatabaseMetaData.getTables result left open) for the life of its pooled connection,
            # so no other process could commit (see README, Catalogs).
            from icectl.catalog.sql import SqlCatalog

            SqlCatalog(name, "sqlite:///" + jdbc_uri.removeprefix("jdbc:sqlite:")).initialize()
            conf[".jdbc.busy_timeout"] = "60000"
            conf[".jdbc.init-catalog-tables"] = "false"
        if user:
            conf[".jdbc.user"] = user
            conf[".jdbc.password"] = password or ""
        for k, v in conf.items():
            spark.conf.set(prefix + k, v)
        return name

    return add


@dataclass(frozen=True)
class Db:
    kind: str
    icectl_uri: str
    jdbc_uri: str
    sqlalchemy_uri: str
    user: str | None = None
    password: str | None = None


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request, tmp_path) -> Db:
    if request.param == "sqlite":
        path = tmp_path / "catalog.db"
        return Db("sqlite", f"sqlite:///{path}", f"jdbc:sqlite:{path}", f"sqlite:///{path}")
    pg = request.getfixturevalue("postgres")
    name = pg.create_database()
    return Db("postgresql", pg.uri(name), pg.jdbc(name), pg.uri(name).replace("postgresql://", "postgresql+pg8000://"),
              pg.user, pg.password)


@pytest.fixture
def shared(db, tmp_path, jdbc_catalog):
    """(db, Spark catalog name, icectl options, warehouse) of one catalog all three use."""
    warehouse = str(tmp_path / "wh")
    name = jdbc_catalog(db.kind, db.jdbc_uri, warehouse, user=db.user, password=db.password)
    opts = ["--catalog", name, "--catalog-uri", db.icectl_uri]
    return db, name, opts, warehouse
