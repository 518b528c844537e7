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

Progress: an engine built with ``progress=callback`` calls ``callback(TaskProgress)`` from the
driver as tasks finish (tasks done / total, and input bytes done / total when the caller gives
``sizes=`` to ``map``, or the tasks carry an ``input_bytes`` attribute or key). Engines never
print; the command line renders the callback (on a terminal only).

Engines:

* ``local`` (:class:`LocalEngine`): a pool of worker processes, one a usable core unless
  ``workers=N`` says otherwise; results stream back (:meth:`LocalEngine.imap`) in task order.
  Workers die with the driver and leave signals to it (:func:`icectl.command_files.worker_init`);
  a map that stops early kills them, and a worker that dies is :class:`~icectl.errors.WorkerLost`.
* ``spark`` (:class:`icectl.engines.spark.SparkEngine`): the same task function in Spark
  executors' Python workers. It is the only code in icectl allowed to import pyspark, lazily
  (inside its functions; see tests/test_layering.py). pyspark is an optional extra
  (``icectl[spark]``), never a requirement of icectl.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Iterable, Iterator, Protocol, Sequence, TypeVar

from icectl.errors import Interrupted, InvalidInput, WorkerLost
from icectl import command_files
from icectl.engines.progress import ProgressCallback, TaskProgress, Tracker, task_sizes

__all__ = ["Engine", "LocalEngine", "TaskProgress", "ProgressCallback", "get_engine", "open_engine",
           "ENGINES", "task_sizes"]

T = TypeVar("T")
R = TypeVar("R")


class Engine(Protocol):
    name: str

    def map(self, fn: Callable[[T], R], tasks: Iterable[T], *,
            sizes: Sequence[int] | None = None) -> list[R]:
        """``[fn(t) for t in tasks]``, run wherever the engine runs work, in task order."""
        ...


class LocalEngine:
    """Worker processes on this machine (``spawn``ed, so no state leaks from the driver)."""

    name = "local"

    def __init__(self, workers: int | None = None, progress: ProgressCallback | None = None) -> None:
        if workers is not None and workers < 1:
            raise InvalidInput(f"the number of workers must be at least 1 (got {workers})")
        self.workers = workers or command_files.usable_cores()
        self.progress = progress

    def imap(self, fn: Callable[[T], R], tasks: Iterable[T], *,
             sizes: Sequence[int] | None = None) -> Iterator[R]:
        """Results in task order, each yielded as soon as it and those before it are done;
        progress is reported as any task finishes. Closing the iterator early cancels the
        tasks not yet started."""
        items = list(tasks)
        tracker = Tracker(task_sizes(items, sizes), self.progress)
        if not items:
            return
        tracker.start()
        ctx = multiprocessing.get_context("spawn")
        pool: ProcessPoolExecutor | None = None
        finished = False
        try:
            with command_files.starting_workers():
                # a spawn pool starts its workers as the tasks are submitted
                pool = ProcessPoolExecutor(max_workers=min(self.workers, len(items)), mp_context=ctx,
                                           initializer=command_files.worker_init,
                                           initargs=(os.getpid(),))
                futures = [pool.submit(fn, item) for item in items]
            for i, fut in enumerate(futures):
                fut.add_done_callback(lambda f, i=i: _done(tracker, f, i))
            for fut in futures:
                try:
                    result = fut.result()
                except BrokenProcessPool:
                    raise _worker_lost(pool) from None
                yield result
            finished = True
        finally:
            if pool is not None:
                if not finished:
                    # stopped early (a failure, an interrupt, the caller gave up): the workers
                    # are killed, not waited for, so none writes another file after this returns
                    _kill_workers(pool)
                pool.shutdown(wait=True, cancel_futures=True)

    def map(self, fn: Callable[[T], R], tasks: Iterable[T], *,
            sizes: Sequence[int] | None = None) -> list[R]:
        return list(self.imap(fn, tasks, sizes=sizes))


def _kill_workers(pool: ProcessPoolExecutor) -> None:
    procs = list((getattr(pool, "_processes", None) or {}).values())
    for p in procs:
        try:
            p.kill()
        except (OSError, ValueError, AttributeError):
            pass
    for p in procs:
        try:
            p.join(5)
        except (OSError, ValueError, AssertionError, AttributeError):
            pass


def _worker_lost(pool: ProcessPoolExecutor) -> BaseException:
    """The error of a pool whose worker died: the driver's own signal when it got one (the
    terminal's Ctrl-C reaches the workers too), else WorkerLost naming how the worker ended."""
    signum = command_files.received_signal()
    if signum is not None:
        return Interrupted(signum)
    codes = []
    for p in (getattr(pool, "_processes", None) or {}).values():
        code = getattr(p, "exitcode", None)
        if code is not None and code != 0:
            codes.append(code)
    how = ""
    if codes:
        code = codes[0]
        how = f" (killed by signal {-code})" if code < 0 else f" (exit status {code})"
    return WorkerLost(f"a worker process died before its task finished{how}; the files written "
                      "for the command are removed and nothing is committed")


def _done(tracker: Tracker, fut: Any, index: int) -> None:
    if not fut.cancelled() and fut.exception() is None:
        tracker.finished(index)


def _spark_engine(**options: Any) -> Any:
    from icectl.engines.spark import SparkEngine

    return SparkEngine(**options)


ENGINES: dict[str, Callable[..., Any]] = {"local": LocalEngine, "spark": _spark_engine}


def get_engine(name: str = "local", **options: Any) -> Engine:
    """The engine called ``name``, built with ``options``: ``workers=N`` and ``progress=`` for
    ``local``; ``master=``, ``session=``, ``progress=`` for ``spark`` (see SparkEngine)."""
    try:
        factory = ENGINES[name]
    except KeyError:
        raise InvalidInput(f"unknown engine {name!r} (known: {', '.join(sorted(ENGINES))})") from None
    return factory(**options)


class _Opened:
    """An engine as a context manager: ``stop()`` on exit (a Spark session the engine itself
    started is stopped; one it was given or found running is left alone)."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine

    def __enter__(self) -> Any:
        return self.engine

    def __exit__(self, *exc: Any) -> None:
        stop = getattr(self.engine, "stop", None)
        if stop is not None:
            stop()


def open_engine(engine: Any = "local", *, workers: int | None = None, master: str | None = None,
                session: Any = None, progress: ProgressCallback | None = None) -> _Opened:
    """The engine ``engine`` names (``local`` or ``spark``, any case), or ``engine`` itself when
    it is an engine object, as a context manager; the one place the command line's engine
    options and the Python API's ``engine=`` argument become an engine. ``session``: a
    SparkSession for the ``spark`` engine (default: the active one, else one started with
    ``master``)."""
    if not isinstance(engine, str) and engine is not None:
        if not callable(getattr(engine, "map", None)):
            raise InvalidInput(f"an engine is 'local', 'spark' or an engine object (got "
                               f"{type(engine).__name__})", argument="engine")
        return _Opened(_Borrowed(engine))
    name = (engine or "local").strip().lower()
    if name not in ENGINES:
        raise InvalidInput(f"the engine must be {' or '.join(sorted(ENGINES))}, got {engine!r}",
                           argument="engine")
    if name == "local":
        if session is not None or master:
            raise InvalidInput("a Spark master or session needs the spark engine", argument="engine")
        return _Opened(get_engine("local", workers=workers, progress=progress))
    return _Opened(get_engine("spark", master=master or None, session=session, workers=workers,
                              progress=progress))


class _Borrowed:
    """An engine object the caller made: used, never stopped."""

    def __init__(self, engine: Any) -> None:
        self._engine = engine
        self.name = getattr(engine, "name", "custom")

    def __getattr__(self, name: str) -> Any:
        if name == "stop":
            raise AttributeError(name)
        return getattr(self._engine, name)

    def map(self, fn: Callable[[T], R], tasks: Iterable[T], *,
            sizes: Sequence[int] | None = None) -> list[R]:
        return self._engine.map(fn, tasks, sizes=sizes)
