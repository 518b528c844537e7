"""Engines: where the work of an operation runs.

The contract, for every engine:

1. **An operation plans tasks as plain data.** Before any work runs, the operation (in
   ``icectl/ops``, in the calling process, the *driver*) turns the table's metadata into a list
   of tasks: picklable values such as paths, byte ranges, snapshot ids and small dicts. A task
   never holds an open file, a Table, a client or a lock.
2. **An engine runs a pure task function over them and returns plain results.**
   ``engine.map(fn, tasks)`` calls ``fn(task)`` for every task, possibly in other processes or
   on other machines, and returns the results in task order. ``fn`` is a module-level function
   (so it can be pickled by name) that depends only on its argument, prints nothing and never
   writes table metadata; data files it writes are named by the task and reported in its result.
   A task that fails fails the whole map with its exception.
3. **The driver commits.** The operation validates the results and makes the one commit,
   through ``icectl/table`` (or, when it gives up, deletes what the tasks wrote). Engines never
   commit, so every engine gets the same commit semantics and conflict handling for free.

Engines:

* ``local`` (:class:`LocalEngine`): a pool of worker processes, ``os.cpu_count()`` of them unless
  ``workers=N`` says otherwise; results come back in task order.
* A Spark engine belongs here too, as its own module: it may import pyspark, lazily (inside its
  functions), and it is the only code in icectl allowed to import pyspark at all (see
  tests/test_layering.py). pyspark is an optional extra, never a requirement of icectl.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Callable, Iterable, Protocol, TypeVar

from icectl.errors import InvalidInput

__all__ = ["Engine", "LocalEngine", "get_engine", "ENGINES"]

T = TypeVar("T")
R = TypeVar("R")


class Engine(Protocol):
    name: str

    def map(self, fn: Callable[[T], R], tasks: Iterable[T]) -> list[R]:
        """``[fn(t) for t in tasks]``, run wherever the engine runs work, in task order."""
        ...


class LocalEngine:
    """Worker processes on this machine (``spawn``ed, so no state leaks from the driver)."""

    name = "local"

    def __init__(self, workers: int | None = None) -> None:
        if workers is not None and workers < 1:
            raise InvalidInput(f"the number of workers must be at least 1 (got {workers})")
        self.workers = workers or os.cpu_count() or 1

    def map(self, fn: Callable[[T], R], tasks: Iterable[T]) -> list[R]:
        items = list(tasks)
        if not items:
            return []
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=min(self.workers, len(items)), mp_context=ctx) as pool:
            return list(pool.map(fn, items))


ENGINES: dict[str, Callable[..., Any]] = {"local": LocalEngine}


def get_engine(name: str = "local", **options: Any) -> Engine:
    """The engine called ``name``, built with ``options`` (``workers=N`` for ``local``)."""
    try:
        factory = ENGINES[name]
    except KeyError:
        raise InvalidInput(f"unknown engine {name!r} (known: {', '.join(sorted(ENGINES))})") from None
    return factory(**options)
