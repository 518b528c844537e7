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
    assert LocalEngine().workers == usable_cores()
    monkeypatch.setattr(command_files, "_cgroup_quota", lambda: 0.5)  # cpu.max "50000 100000"
    assert command_files.usable_cores() == 1 and LocalEngine().workers == 1  # a quota caps them
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
