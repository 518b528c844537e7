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
- Tests run the command line through tests/clirun.py (in-process, or a real process where one is
  needed); ``process_guard`` puts back after every test what a test or an in-process run may
  change of this process (environment, working directory, signal handlers, the CLI's settings).
- Under pytest-xdist (``-n 2 --dist loadgroup``, the test command) every test that uses the Spark
  session (tests/interop, tests/differential, any test asking for a Spark fixture) is in the one
  ``xdist_group`` "spark": one worker runs them all, with one session (xdist hands out the
  biggest group first, so the other worker takes the rest meanwhile).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

_INTEROP_DIR = Path(__file__).parent / "interop"
_SPARK_DIRS = (_INTEROP_DIR, Path(__file__).parent / "differential")

# spark_support and spark_fixtures are plain modules of tests/interop (imported by name there)
if str(_INTEROP_DIR) not in sys.path:
    sys.path.insert(0, str(_INTEROP_DIR))
if str(Path(__file__).parent) not in sys.path:  # tests/clirun.py, tests/support/ (the builders)
    sys.path.insert(0, str(Path(__file__).parent))

import run_figures  # noqa: E402
from clirun import process_state_kept  # noqa: E402

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


# the fixtures of the one Spark session (tests/interop/spark_fixtures.py)
_SPARK_FIXTURES = frozenset({"spark_stack", "spark", "jvm", "warehouse", "sql", "new_table",
                             "ice_table"})
SPARK_GROUP = "spark"


@pytest.hookimpl(tryfirst=True)  # before xdist reads the xdist_group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    run_slow = config.getoption("--runslow")
    skip_slow = pytest.mark.skip(reason="slow: run with --runslow")
    for item in items:
        in_spark_dir = any(d in Path(str(item.path)).parents for d in _SPARK_DIRS)
        if in_spark_dir:
            item.add_marker(pytest.mark.interop)
        if in_spark_dir or _SPARK_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.xdist_group(SPARK_GROUP))
        if not run_slow and "slow" in item.keywords:
            item.add_marker(skip_slow)


@pytest.fixture(autouse=True)
def process_guard() -> Iterator[None]:
    """What a test changes of this process (environment, working directory, terminal signal
    handlers, sys.argv, the CLI's process-wide settings) is put back after it."""
    with process_state_kept(logging_too=False):
        yield


def pytest_sessionfinish(session: pytest.Session) -> None:
    # an xdist worker hands the Spark start time and the modules' figures to the controller
    # (pytest_testnodedown)
    started = getattr(session.config, "_icectl_spark_start_seconds", None)
    out = getattr(session.config, "workeroutput", None)
    if out is not None and started is not None:
        out["icectl_spark_start_seconds"] = started
    if out is not None:
        worker = session.config.workerinput.get("workerid", "worker")  # type: ignore[attr-defined]
        out["icectl_run_figures"] = [(f"{title} ({worker})", text) for title, text in run_figures.collected()]


_FIGURES_FROM_WORKERS: list[tuple[str, str]] = []  # tests/run_figures.py's, from xdist workers
_FROM_WORKERS: list[tuple[str, str]] = []  # the fuzzer's summaries (tests/differential/conftest.py)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:  # noqa: ANN001 - xdist's hook (controller side)
    out = getattr(node, "workeroutput", {})
    if out.get("icectl_spark_start_seconds") is not None:
        node.config._icectl_spark_start_seconds = out["icectl_spark_start_seconds"]
    _FROM_WORKERS.extend(out.get("icectl_fuzz_summaries", []))
    _FIGURES_FROM_WORKERS.extend(out.get("icectl_run_figures", []))


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # noqa: ANN001
    for name, text in _FROM_WORKERS:
        terminalreporter.section(f"differential fuzzer: {name}")
        terminalreporter.write_line(text)
    for title, text in _FIGURES_FROM_WORKERS or run_figures.collected():
        terminalreporter.section(f"figures: {title}")
        terminalreporter.write_line(text)
    started = getattr(config, "_icectl_spark_start_seconds", None)
    if started is not None:
        terminalreporter.write_line(f"interop: Spark session started in {started:.1f}s")
