"""Start and drive the reference stack: local Spark 3.5 + the Iceberg Spark runtime (Java).

Used by the interop tests (through the fixtures in conftest.py) and by make_golden.py. Nothing
here is downloaded: the Iceberg runtime jar comes from the installed Python package
``snowpark_connect_deps_iceberg`` and Spark from the installed ``pyspark``.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ICEBERG_JAR_PACKAGE = "snowpark_connect_deps_iceberg"
ICEBERG_RUNTIME_JAR = "iceberg-spark-runtime-3.5_2.12-1.10.2.jar"
ICEBERG_EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
CATALOG = "ice"

_QUIET_LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = stderr
appender.console.type = Console
appender.console.name = stderr
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
# The logger Spark initialises logging through; left unset, Spark announces and applies its
# own default level (WARN) on start.
logger.submit.name = org.apache.spark.deploy.SparkSubmit
logger.submit.level = error
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = error
"""


# JDBC drivers of the SQL catalog tests (Debian: libxerial-sqlite-jdbc-java, libpostgresql-jdbc-java):
# on the one session's classpath when installed, so a JdbcCatalog can be added to it later
JDBC_DRIVER_JARS = {"sqlite": ("/usr/share/java/sqlite-jdbc.jar", "/usr/share/java/xerial-sqlite-jdbc.jar"),
                    "postgresql": ("/usr/share/java/postgresql.jar",)}


def jdbc_driver_jars() -> dict[str, str]:
    """The installed JDBC driver jars, by database kind."""
    found = {}
    for kind, paths in JDBC_DRIVER_JARS.items():
        for p in paths:
            if Path(p).is_file():
                found[kind] = str(Path(p).resolve())
                break
    return found


class StackMissing(RuntimeError):
    """The reference stack (pyspark, a Java runtime or the Iceberg jar) is not usable."""


def find_iceberg_runtime_jar() -> Path:
    """Path of the Iceberg Spark runtime jar shipped inside the installed helper package."""
    spec = importlib.util.find_spec(ICEBERG_JAR_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise StackMissing(
            f"Python package {ICEBERG_JAR_PACKAGE!r} is not installed "
            '(it comes with the test extras: pip install -e ".[test]")'
        )
    for folder in spec.submodule_search_locations:
        jar = Path(folder) / "jars" / ICEBERG_RUNTIME_JAR
        if jar.is_file():
            return jar
    raise StackMissing(
        f"{ICEBERG_RUNTIME_JAR} not found in the jars/ folder of {ICEBERG_JAR_PACKAGE} "
        f"({list(spec.submodule_search_locations)})"
    )


def find_java() -> str:
    """The java executable Spark will use (JAVA_HOME first, then PATH); checks that it runs."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        java = str(Path(java_home) / "bin" / "java")
        if not Path(java).is_file():
            raise StackMissing(f"JAVA_HOME={java_home} has no bin/java")
    else:
        found = shutil.which("java")
        if found is None:
            raise StackMissing("no Java runtime: 'java' is not on PATH and JAVA_HOME is unset")
        java = found
    try:
        subprocess.run([java, "-version"], check=True, capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        raise StackMissing(f"'{java} -version' failed: {exc}") from exc
    return java


def check_pyspark() -> str:
    """The installed pyspark version (raises StackMissing when pyspark cannot be imported)."""
    try:
        import pyspark
    except ImportError as exc:
        raise StackMissing(f"pyspark cannot be imported: {exc}") from exc
    return pyspark.__version__


@dataclass(frozen=True)
class StartedSpark:
    session: Any  # pyspark.sql.SparkSession
    warehouse: Path
    start_seconds: float


def start_spark(warehouse: Path, scratch: Path, *, catalog: str = CATALOG) -> StartedSpark:
    """Start one local SparkSession with an Iceberg Hadoop catalog named ``catalog``.

    ``warehouse`` holds the catalog's tables (``<warehouse>/<namespace>/<table>``); ``scratch``
    receives Spark's own files (log config, spark-warehouse, local dirs).
    """
    check_pyspark()
    find_java()
    jar = find_iceberg_runtime_jar()

    from pyspark.sql import SparkSession

    warehouse.mkdir(parents=True, exist_ok=True)
    scratch.mkdir(parents=True, exist_ok=True)
    log_config = scratch / "log4j2.properties"
    log_config.write_text(_QUIET_LOG4J2, encoding="utf-8")
    local_dir = scratch / "spark-local"
    local_dir.mkdir(exist_ok=True)

    # Python workers (if any UDF is ever used) must run the same interpreter as the tests.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

    java_options = f"-Dlog4j2.configurationFile={log_config.as_uri()} -Duser.timezone=UTC"
    jars = [str(jar), *jdbc_driver_jars().values()]
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("icectl-interop")
        .config("spark.driver.memory", "1g")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.extraJavaOptions", java_options)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.warehouse.dir", str(scratch / "spark-warehouse"))
        .config("spark.local.dir", str(local_dir))
        .config("spark.jars", ",".join(jars))
        .config("spark.driver.extraClassPath", os.pathsep.join(jars[1:]))
        .config("spark.sql.extensions", ICEBERG_EXTENSIONS)
        .config(f"spark.sql.catalog.{catalog}", "org.apache.iceberg.spark.SparkCatalog")
        .config(f"spark.sql.catalog.{catalog}.type", "hadoop")
        .config(f"spark.sql.catalog.{catalog}.warehouse", str(warehouse))
    )
    began = time.perf_counter()
    try:
        session = builder.getOrCreate()
    except Exception as exc:  # the JVM did not come up: report it as a missing stack
        raise StackMissing(f"SparkSession failed to start: {exc}") from exc
    session.sparkContext.setLogLevel("ERROR")
    # Touch the catalog so that a broken jar shows up now, not in the first test.
    session.sql(f"SHOW NAMESPACES IN {catalog}").collect()
    return StartedSpark(session, warehouse, time.perf_counter() - began)


def sql_rows(spark: Any, query: str) -> list[tuple]:
    """Run one SQL statement and return its rows as plain tuples."""
    return [tuple(row) for row in spark.sql(query).collect()]


def java_table(spark: Any, location: str | os.PathLike[str]) -> Any:
    """Load the Iceberg table at ``location`` through Iceberg Java (HadoopTables).

    Returns the py4j handle of an ``org.apache.iceberg.Table``: call its Java methods directly,
    e.g. ``java_table(spark, loc).newScan().planFiles()``.
    """
    jvm = spark._jvm
    tables = jvm.org.apache.iceberg.hadoop.HadoopTables(spark._jsc.hadoopConfiguration())
    return tables.load(str(location))


def java_iter(java_iterable: Any) -> list[Any]:
    """Materialise a Java Iterable (or CloseableIterable, which is then closed) as a list."""
    items = []
    iterator = java_iterable.iterator()
    try:
        while iterator.hasNext():
            items.append(iterator.next())
    finally:
        close = getattr(java_iterable, "close", None)
        if close is not None:
            close()
    return items


def write_equality_delete(spark: Any, location: Any, columns: list[str], keys: list[tuple],
                          name: str) -> None:
    """Commit an equality delete file written by Iceberg Java (GenericAppenderFactory) with
    these key columns and key rows (a RowDelta, as Flink and the Java API write them)."""
    jvm = spark._jvm
    table = java_table(spark, location)
    table.refresh()
    schema = table.schema()
    names = jvm.java.util.ArrayList()
    for c in columns:
        names.add(c)
    delete_schema = schema.select(names)
    ids = spark.sparkContext._gateway.new_array(jvm.int, len(columns))
    for i, c in enumerate(columns):
        ids[i] = schema.findField(c).fieldId()
    factory = jvm.org.apache.iceberg.data.GenericAppenderFactory(
        schema, table.spec(), ids, delete_schema, None)
    out = table.io().newOutputFile(f"{table.location()}/data/{name}.parquet")
    enc = jvm.org.apache.iceberg.encryption.EncryptedFiles.plainAsEncryptedOutput(out)
    writer = factory.newEqDeleteWriter(enc, jvm.org.apache.iceberg.FileFormat.PARQUET, None)
    for key in keys:
        rec = jvm.org.apache.iceberg.data.GenericRecord.create(delete_schema)
        for c, v in zip(columns, key):
            rec.setField(c, v)
        writer.write(rec)
    writer.close()
    table.newRowDelta().addDeletes(writer.toDeleteFile()).commit()


@dataclass(frozen=True)
class IceTable:
    """One table in the Hadoop catalog: its SQL identifier and its directory."""

    catalog: str
    namespace: str
    name: str
    warehouse: Path

    @property
    def ident(self) -> str:
        return f"{self.catalog}.{self.namespace}.{self.name}"

    @property
    def location(self) -> Path:
        return self.warehouse / self.namespace / self.name

    @property
    def metadata_dir(self) -> Path:
        return self.location / "metadata"
