"""Fixtures for tests against the reference (Spark 3.5 + Iceberg 1.10.2 Java).

One SparkSession serves the whole test run: tests/interop and tests/differential both use these
fixtures, which tests/conftest.py imports (so both directories see them). The session starts only
when a test asks for it. When pyspark, Java or the Iceberg jar is missing the fixtures fail the
tests with the reason: the tests against the reference are part of the suite, not optional.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from spark_support import CATALOG, IceTable, StackMissing, StartedSpark, sql_rows, start_spark

_counter = itertools.count(1)


@pytest.fixture(scope="session")
def spark_stack(
    tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config
) -> Iterator[StartedSpark]:
    root = tmp_path_factory.mktemp("iceberg-interop")
    try:
        started = start_spark(root / "warehouse", root / "spark")
    except StackMissing as exc:
        missing = str(exc)
    else:
        missing = None
    if missing is not None:
        pytest.fail(f"reference stack unavailable: {missing}", pytrace=False)
    pytestconfig._icectl_spark_start_seconds = started.start_seconds  # reported in the summary
    yield started
    started.session.stop()


@pytest.fixture(scope="session")
def spark(spark_stack: StartedSpark) -> Any:
    """The shared SparkSession (catalog ``ice`` is an Iceberg Hadoop catalog)."""
    return spark_stack.session


@pytest.fixture(scope="session")
def jvm(spark: Any) -> Any:
    """The py4j JVM view, for calling Iceberg Java classes directly."""
    return spark._jvm


@pytest.fixture(scope="session")
def warehouse(spark_stack: StartedSpark) -> Path:
    """Directory of the ``ice`` catalog; a table ``ice.db.t`` lives at ``<warehouse>/db/t``."""
    return spark_stack.warehouse


@pytest.fixture(scope="session")
def sql(spark: Any) -> Callable[[str], list[tuple]]:
    """Run a SQL statement on the shared session and return its rows as tuples."""
    return lambda query: sql_rows(spark, query)


@pytest.fixture
def new_table(
    request: pytest.FixtureRequest, spark: Any, warehouse: Path
) -> Callable[[str], IceTable]:
    """Factory of fresh table names in a namespace of this test's own (namespace created)."""
    slug = re.sub(r"[^a-z0-9]+", "_", request.node.name.lower()).strip("_")[:40]
    namespace = f"n{next(_counter)}_{slug}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{namespace}")

    def make(name: str = "t") -> IceTable:
        return IceTable(CATALOG, namespace, name, warehouse)

    return make


@pytest.fixture
def ice_table(new_table: Callable[[str], IceTable]) -> IceTable:
    """One fresh, not yet created table name for this test."""
    return new_table("t")
