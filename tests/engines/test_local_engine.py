"""The local engine: a pure task function run over plain tasks in worker processes."""

from __future__ import annotations

import multiprocessing
import os
from typing import Any, Iterator

import pytest

from icectl import command_files
from icectl.command_files import usable_cores

from icectl.engines import LocalEngine, TaskProgress, get_engine
from icectl.errors import InvalidInput


def square_with_pid(x: int) -> tuple[int, int]:
    return x * x, os.getpid()


def fail_on_three(x: int) -> int:
    if x == 3:
        raise ValueError("task 3 failed")
    return x


def last_first(task: tuple[int, Any]) -> int:
    """Task 0 finishes last: it waits until the driver has seen every other task done (an event
    the driver's progress callback sets), so results must still come back in task order."""
    x, others_done = task
    if x == 0 and not others_done.wait(120):
        raise TimeoutError("the other tasks were never reported done")
    return x


@pytest.fixture
def others_done() -> Iterator[Any]:
    """An event shared with the spawned workers (through a manager process)."""
    with multiprocessing.get_context("spawn").Manager() as manager:
        yield manager.Event()


def test_runs_the_function_in_worker_processes_and_keeps_task_order() -> None:
    engine = get_engine("local", workers=2)
    assert engine.name == "local" and engine.workers == 2
    out = engine.map(square_with_pid, range(20))
    assert [v for v, _ in out] == [x * x for x in range(20)]
    pids = {pid for _, pid in out}
    assert os.getpid() not in pids  # not run in the driver
    assert 1 <= len(pids) <= 2  # at most `workers` processes


def test_defaults_and_edges(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(command_files, "free_cores", lambda: 3)
    assert LocalEngine().workers == 3  # the default follows the free cores, not all of them
    monkeypatch.undo()
    assert 1 <= LocalEngine().workers <= usable_cores()
    assert LocalEngine(workers=3).map(square_with_pid, []) == []
    with pytest.raises(InvalidInput):
        LocalEngine(workers=0)
    with pytest.raises(InvalidInput, match="unknown engine 'flink'"):
        get_engine("flink")


def test_a_failing_task_fails_the_map() -> None:
    with pytest.raises(ValueError, match="task 3 failed"):
        LocalEngine(workers=2).map(fail_on_three, range(5))


def test_progress_counts_tasks_and_bytes_as_they_finish(others_done: Any) -> None:
    seen: list[TaskProgress] = []

    def progress(p: TaskProgress) -> None:
        seen.append(p)
        if p.done == 3:
            others_done.set()

    engine = LocalEngine(workers=2, progress=progress)
    tasks = [(x, others_done) for x in range(4)]
    assert engine.map(last_first, tasks, sizes=[10, 20, 30, 40]) == [0, 1, 2, 3]
    assert seen[0] == TaskProgress(0, 4, 0, 100)
    assert seen[-1] == TaskProgress(4, 4, 100, 100)
    # task 0 finishes last (one worker holds it until the driver has seen the other three done,
    # which the other worker runs in order): the bytes of tasks 1, 2, 3, then 0's
    assert [p.done for p in seen] == [0, 1, 2, 3, 4]
    assert [p.bytes_done for p in seen] == [0, 20, 50, 90, 100]


def test_sizes_come_from_the_tasks_when_not_given() -> None:
    seen: list[TaskProgress] = []
    tasks = [{"input_bytes": 5, "n": 1}, {"input_bytes": 7, "n": 2}]
    LocalEngine(workers=1, progress=seen.append).map(len, tasks)
    assert seen[-1] == TaskProgress(2, 2, 12, 12)
    with pytest.raises(ValueError, match="2 sizes for 3 tasks"):
        LocalEngine(workers=1).map(len, ["a", "b", "c"], sizes=[1, 2])


def test_imap_streams_results_in_order(others_done: Any) -> None:
    def progress(p: TaskProgress) -> None:
        if p.done == 2:  # tasks 1 and 2 are done: task 0 may finish
            others_done.set()

    engine = LocalEngine(workers=2, progress=progress)
    it = engine.imap(last_first, [(x, others_done) for x in range(3)])
    assert next(it) == 0
    assert list(it) == [1, 2]


@pytest.mark.parametrize("cores, machine, load1, running, free", [
    (2, 2, 0.05, 1, 2),     # idle: only this process runs
    (2, 2, 0.4, 1, 2),      # a little past work in the load average
    (2, 2, 1.0, 2, 1),      # one other busy process: one core left
    (2, 2, 4.0, 5, 1),      # load twice the cores: one worker (in-process paths), never zero
    (2, 2, 0.1, 4, 1),      # a burst the 1-minute average has not seen yet counts
    (4, 4, 4.2, 1, 1),      # a load average that outlasts a burst counts too
    (8, 8, 2.0, 3, 6),
    (2, 64, 40.0, 41, 1),   # a container of 2 cores on a busy host of 64: its share of the load
    (2, 64, 8.0, 9, 2),     # ... a host a quarter busy leaves the container's cores free
])
def test_free_cores_leave_the_busy_ones(cores: int, machine: int, load1: float, running: int,
                                        free: int) -> None:
    assert command_files.cores_left(cores, machine, load1, running) == free


def test_free_cores_reads_this_machine() -> None:
    assert 1 <= command_files.free_cores() <= command_files.usable_cores() <= (os.cpu_count() or 1)
