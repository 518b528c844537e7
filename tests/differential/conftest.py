"""The differential fuzzer's summary in the test output: cases per kind, seeds, time, and the
differences grouped by category with one reproduction each."""

from __future__ import annotations

import pytest

_RUNS: list = []


@pytest.fixture
def fuzz_report(pytestconfig: pytest.Config):
    """Tests append their Stats here; the terminal summary prints them."""
    return _RUNS


def pytest_sessionfinish(session: pytest.Session) -> None:
    # an xdist worker hands its summaries to the controller (tests/conftest.py prints them)
    out = getattr(session.config, "workeroutput", None)
    if out is not None and _RUNS:
        out["icectl_fuzz_summaries"] = [(name, stats.summary()) for name, stats in _RUNS]


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # noqa: ANN001
    for name, stats in _RUNS:
        terminalreporter.section(f"differential fuzzer: {name}")
        terminalreporter.write_line(stats.summary())
