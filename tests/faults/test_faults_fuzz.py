"""Fuzzing with fixed seeds: filter strings and whole argument vectors never crash icectl.

- Filter strings (built from the filter language's pieces and stray characters) go through
  ``icectl plan TABLE --filter ...`` in-process, many per second, each under a time limit.
- Argument vectors (a command, options from the real option set with good and garbage values,
  positionals) run as real processes with a per-process timeout.

Never exit 70 (internal error) or 1, never a traceback, never a hang. Hypothesis runs
derandomized (a fixed seed) with bounded example counts; ``--runslow`` runs many more
(``ICECTL_FAULTS_SCALE`` multiplies them).
"""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
import run_figures
from faults_support import EXIT_INTERNAL, create_table, json_out, run_icectl, scale
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from icectl.cli.app import app

FILTER_TIMEOUT_S = 10
PROCESS_TIMEOUT_S = 60
FIGURES: dict[str, int] = {"filters": 0, "argvs": 0, "crashes": 0}

COLUMNS = ["id", "name", "d", "ts", "amount", "f", "tags", "loc.lat", '"id"', "`name`", "ID",
           "nope", "loc"]
OPS = ["=", "==", "!=", "<>", "<", "<=", ">", ">=", "in", "not in", "between", "is null",
       "is not null", "is nan", "is not nan", "starts with", "like", "not like", "and", "or",
       "not", "(", ")", ","]
LITERALS = ["1", "-7", "3000000000", "99999999999999999999999", "12.50", "1e3", "-0.0", "'x'",
            "'it''s'", "'2024-01-02'", "date '2024-01-02'", "date '2024-02-30'",
            "timestamp '2024-01-02 10:00:00'", "timestamptz '2024-01-02 10:00:00+01:00'",
            "uuid 'f79c3e09-677c-4bbd-a479-3f349cb785e7'", "X'0a0b'", "X'zz'", "double 'Infinity'",
            "double 'NaN'", "true", "false", "null", "'abc%'", "'%'", "'é'", "''"]


def _token() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(COLUMNS), st.sampled_from(OPS), st.sampled_from(LITERALS),
                     st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=4))


FILTERS = st.lists(_token(), max_size=16).map(" ".join)


@pytest.fixture(scope="module")
def fuzz_table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    w = tmp_path_factory.mktemp("fuzz")
    t = w / "t"
    create_table(t, schema="id long, name string, d date, ts timestamp, amount decimal(9,2), "
                           "f double, tags list<string>, loc struct<lat: double, lon: double>")
    (w / "rows.csv").write_text("id,name,d,ts,amount,f\n1,a,2024-01-02,2024-01-02T10:00:00,1.50,0.5\n",
                                encoding="utf-8")
    json_out(run_icectl("write", t, w / "rows.csv", "--json"))
    return t


class _Hang(Exception):
    pass


def _alarm(_signum: int, _frame: Any) -> None:
    raise _Hang()


def _plan_in_process(table: Path, text: str) -> Any:
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(FILTER_TIMEOUT_S)
    try:
        return CliRunner().invoke(app, ["plan", str(table), "--filter", text, "--json"])
    except _Hang:
        raise AssertionError(f"plan --filter {text!r} ran over {FILTER_TIMEOUT_S}s") from None
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _check_filter(table: Path, text: str) -> None:
    FIGURES["filters"] += 1
    done = _plan_in_process(table, text)
    crashed = done.exit_code in (1, EXIT_INTERNAL) or "Traceback" in done.output
    if crashed:
        FIGURES["crashes"] += 1
    assert not crashed, f"--filter {text!r}: exit {done.exit_code}\n{done.output}"
    assert done.exit_code in (0, 2, 3), f"--filter {text!r}: exit {done.exit_code}\n{done.output}"
    if done.exit_code == 0:
        json.loads(done.stdout)


def _filter_fuzz(examples: int):  # noqa: ANN202 - a decorated test factory
    @settings(max_examples=examples, derandomize=True, deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(text=FILTERS)
    def run(fuzz_table: Path, text: str) -> None:
        _check_filter(fuzz_table, text)

    return run


test_fuzz_filters = _filter_fuzz(120)
test_fuzz_filters_many = pytest.mark.slow(_filter_fuzz(3000 * scale()))


# -- argument vectors, as real processes ---------------------------------------------------------

COMMANDS = [["inspect", "table"], ["inspect", "snapshots"], ["inspect", "files"],
            ["inspect", "snapshot"], ["inspect", "manifests"], ["plan"], ["expire"], ["orphans"],
            ["schema", "add"], ["schema", "drop"], ["properties", "set"], ["snapshot", "rollback"],
            ["branch", "create"], ["append"], ["write"], ["partition", "add"], ["sort-order", "set"]]
OPTIONS = ["--json", "--dry-run", "--filter", "--snapshot", "--snapshot-id", "--retain-last",
           "--older-than", "--workers", "--split-size", "--ref", "--as-of", "--format", "--tasks",
           "--explain", "--columns", "--bogus", "-h", "--warehouse", "--partition", "--branch",
           "--summary", "--case-sensitive", "--lookback", "--open-file-cost", "--"]
VALUES = ["0", "-1", "1", "abc", "", "9" * 30, "1.5", "7d", "0s", "2024-01-02", "nan", "id",
          "id = 1", "(", "main", "x=y", "=", "parquet", "csv", "-", "--json", "é", "' OR 1=1"]


@st.composite
def argvs(draw: Any, table: str, work: str) -> list[str]:
    argv = list(draw(st.sampled_from(COMMANDS)))
    argv.append(draw(st.sampled_from([table, table, f"{work}/missing", work, "", "db.t"])))
    for _ in range(draw(st.integers(0, 5))):
        argv.append(draw(st.sampled_from(OPTIONS)))
        if draw(st.booleans()):
            argv.append(draw(st.sampled_from(VALUES)))
    return argv


def _argv_fuzz(examples: int):  # noqa: ANN202 - a decorated test factory
    @settings(max_examples=examples, derandomize=True, deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(data=st.data())
    def run(fuzz_table: Path, data: Any) -> None:
        argv = data.draw(argvs(str(fuzz_table), str(fuzz_table.parent)))
        FIGURES["argvs"] += 1
        try:
            done = run_icectl(*argv, timeout=PROCESS_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"icectl {argv} hung for {PROCESS_TIMEOUT_S}s") from None
        crashed = done.returncode in (1, EXIT_INTERNAL) or done.returncode < 0 or "Traceback" in done.stderr
        if crashed:
            FIGURES["crashes"] += 1
        assert not crashed, f"icectl {argv}: exit {done.returncode}\n{done.stderr}"

    return run


test_fuzz_argv = _argv_fuzz(12)
test_fuzz_argv_many = pytest.mark.slow(_argv_fuzz(300 * scale()))

run_figures.report("input fuzzer", lambda: f"filters {FIGURES['filters']}, argument vectors {FIGURES['argvs']}, "
                                            f"crashes {FIGURES['crashes']}")
