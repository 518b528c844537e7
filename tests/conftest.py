"""Test-run options shared by every test package.

- ``slow`` tests run only with ``--runslow``.
- Everything under tests/interop and tests/differential is marked ``interop``: it needs the
  Spark + Iceberg reference stack and fails (never skips) when that stack is missing.
- The Spark session fixtures (``spark``, ``jvm``, ``warehouse``, ``sql``, ``new_table``,
  ``ice_table``; tests/interop/spark_fixtures.py) are imported here so that every test directory
  shares the one session. Importing them starts nothing: the session starts when a test first
  asks for ``spark``.
- Hypothesis runs derandomized (the same examples every run) with no deadline, so a loaded
  machine cannot fail a test by timing; ``--runslow`` raises the example count of every property
  test that does not fix its own, and ``--hypothesis-profile=explore`` draws fresh random examples.
- The persistent manifest cache of every icectl run (in-process and subprocess) lives in a
  temporary directory of the test run, never in the user's cache directory.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

_INTEROP_DIR = Path(__file__).parent / "interop"
_SPARK_DIRS = (_INTEROP_DIR, Path(__file__).parent / "differential")

# spark_support and spark_fixtures are plain modules of tests/interop (imported by name there)
if str(_INTEROP_DIR) not in sys.path:
    sys.path.insert(0, str(_INTEROP_DIR))

from spark_fixtures import (  # noqa: E402,F401  (fixtures shared by every test directory)
    ice_table,
    jvm,
    new_table,
    spark,
    spark_stack,
    sql,
    warehouse,
)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--runslow", action="store_true", default=False, help="also run tests marked slow"
    )


_HYPOTHESIS_BASE = dict(deadline=None, derandomize=True, database=None, print_blob=True,
                        suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("icectl", **_HYPOTHESIS_BASE)
settings.register_profile("icectl-slow", max_examples=1000, **_HYPOTHESIS_BASE)
settings.register_profile("explore", deadline=None, max_examples=500, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("icectl")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--runslow") and config.getoption("--hypothesis-profile", None) is None:
        settings.load_profile("icectl-slow")
    cache = tempfile.mkdtemp(prefix="icectl-test-cache-")
    config._icectl_cache_dir = cache  # type: ignore[attr-defined]
    os.environ["ICECTL_CACHE_DIR"] = cache
    os.environ.pop("ICECTL_NO_CACHE", None)
    # Also declared in pyproject.toml; repeated so the markers exist whatever the ini file.
    config.addinivalue_line(
        "markers",
        "interop: needs the Spark + Iceberg reference stack (fails, not skips, when missing)",
    )
    config.addinivalue_line("markers", "slow: big cases, run with --runslow")


def pytest_unconfigure(config: pytest.Config) -> None:
    cache = getattr(config, "_icectl_cache_dir", None)
    if cache:
        shutil.rmtree(cache, ignore_errors=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    run_slow = config.getoption("--runslow")
    skip_slow = pytest.mark.skip(reason="slow: run with --runslow")
    for item in items:
        if any(d in Path(str(item.path)).parents for d in _SPARK_DIRS):
            item.add_marker(pytest.mark.interop)
        if not run_slow and "slow" in item.keywords:
            item.add_marker(skip_slow)


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # noqa: ANN001
    started = getattr(config, "_icectl_spark_start_seconds", None)
    if started is not None:
        terminalreporter.write_line(f"interop: Spark session started in {started:.1f}s")
