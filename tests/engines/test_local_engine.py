"""The local engine: a pure task function run over plain tasks in worker processes."""

from __future__ import annotations

import os

import pytest

from icectl.engines import LocalEngine, get_engine
from icectl.errors import InvalidInput


def square_with_pid(x: int) -> tuple[int, int]:
    return x * x, os.getpid()


def fail_on_three(x: int) -> int:
    if x == 3:
        raise ValueError("task 3 failed")
    return x


def test_runs_the_function_in_worker_processes_and_keeps_task_order() -> None:
    engine = get_engine("local", workers=2)
    assert engine.name == "local" and engine.workers == 2
    out = engine.map(square_with_pid, range(20))
    assert [v for v, _ in out] == [x * x for x in range(20)]
    pids = {pid for _, pid in out}
    assert os.getpid() not in pids  # not run in the driver
    assert 1 <= len(pids) <= 2  # at most `workers` processes


def test_defaults_and_edges() -> None:
    assert LocalEngine().workers == (os.cpu_count() or 1)
    assert LocalEngine(workers=3).map(square_with_pid, []) == []
    with pytest.raises(InvalidInput):
        LocalEngine(workers=0)
    with pytest.raises(InvalidInput, match="unknown engine 'spark'"):
        get_engine("spark")


def test_a_failing_task_fails_the_map() -> None:
    with pytest.raises(ValueError, match="task 3 failed"):
        LocalEngine(workers=2).map(fail_on_three, range(5))
