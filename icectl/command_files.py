"""The files the running command wrote, so that a command that stops half-way removes them.

One registry per process (module state; a command line runs one command per process):

* **Writers register before they create.** Every writer of a table file (data files, delete
  files, manifests, manifest lists) calls :func:`register` with the path before the file is
  opened, so a file cut off half-way by a signal is known too. Worker processes name their files
  after the operation (``<task>-0-<operation id>-<n>.parquet``); the driver registers the pattern
  (:func:`register_operation`) before the tasks start, so the files of tasks whose results never
  came back (a worker killed, a signal) are found by it.
* **A successful commit settles.** The table layer calls :func:`settle` with the files a commit
  put in the table (its manifests, manifest list and the data and delete files its snapshot
  adds) as soon as it is known to have landed: they are never deleted by the clean-up, even if a
  signal lands a moment later.
* **Unknown means keep.** While a commit's metadata is being written, renamed and checked
  (:func:`critical`), and for a failure that is (or was caused by) a commit whose outcome could
  not be told (:class:`~icectl.errors.CommitStateUnknown`), nothing is deleted: the files may be
  referenced by a version that is, or will become, current.
  Every clean-up on a failure path of the operations goes through :func:`discard`,
  :func:`discard_operation` or :func:`abort`, so this rule has one home (tests/rules checks that
  every command keeps its files when its commit's outcome is unknown, and that no failure path
  deletes files itself).
* **Signals become an exception.** :func:`install_signal_handlers` (the command line does it)
  turns SIGINT, SIGTERM and SIGHUP into :class:`~icectl.errors.Interrupted` (a KeyboardInterrupt),
  so every ``except``/``finally`` clean-up of the operations runs on ``kill`` and a closed
  terminal as on Ctrl-C. A signal that arrives inside :func:`critical` is held back until the
  command's next file or commit (:func:`checkpoint`); a command with nothing left finishes. :func:`abort` (the command line's last step on any failure) removes whatever is
  still registered and unsettled.
* **Workers die with their driver.** Pools start inside :func:`starting_workers` (the terminal's
  signals blocked, so a worker still starting holds a Ctrl-C instead of dying of it);
  :func:`worker_init` (every pool's initializer) asks Linux to kill the worker when the driver
  dies (``PR_SET_PDEATHSIG``) and ignores the terminal's signals (the driver stops its workers
  itself); :func:`register` checks that the driver is still there
  before a worker creates a file, and :func:`check_driver` before a worker hands a finished file
  on, so no worker writes after its driver is gone.
"""

from __future__ import annotations

import math
import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

if TYPE_CHECKING:
    from icectl.io.storage.files import FileIO

__all__ = ["register", "register_operation", "settle", "discard", "discard_operation", "critical",
           "checkpoint", "begin", "abort", "install_signal_handlers", "worker_init", "check_driver",
           "received_signal", "starting_workers", "SIGNALS", "usable_cores", "io_threads", "can_fork",
           "forked_imap"]

SIGNALS = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))
_PR_SET_PDEATHSIG = 1
EXIT_DRIVER_GONE = 13  # a worker that finds its driver gone stops at once (no one reads its code)


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity, capped by a cgroup CPU quota. The
    one default for worker processes and planning. It does not follow the machine's load: the
    scheduler shares a busy machine's CPUs by runnable process, so at a load of twelve times the
    cores two workers still finished plan and compact 1.1-1.6x sooner than the in-process path
    (``bench/load_bench.py``; write too at that load, not under an added CPU burner), and a
    load-following count of one would lose that."""
    try:
        cores = len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    quota = _cgroup_quota()
    return max(1, min(cores, math.ceil(quota))) if quota else cores


def _cgroup_quota() -> float | None:
    """The CPUs a cgroup v2 ``cpu.max`` quota allows (``None`` without one)."""
    try:
        with open("/sys/fs/cgroup/cpu.max", encoding="ascii") as f:
            limit, period = f.read().split()[:2]
        return None if limit == "max" else int(limit) / int(period)
    except (OSError, ValueError):
        return None


def io_threads() -> int:
    """Threads for work that mostly waits on storage (footers, deletes): 4 a core, 32 at most."""
    return min(32, 4 * usable_cores())


class _Registry:
    def __init__(self) -> None:
        self.files: dict[str, Any] = {}  # path -> FileIO, in creation order
        self.operations: list[tuple[Any, str, str, frozenset[int] | None]] = []
        self.settled: set[str] = set()
        self.critical = 0
        self.pending: int | None = None  # a signal held back by a critical section


_reg = _Registry()
_lock = threading.Lock()
_driver_pid: int | None = None  # set in worker processes: the pid of the process that started them
_received: int | None = None  # the first of SIGNALS this process received


# -- writers ---------------------------------------------------------------------------------------

def register(io: FileIO, path: str) -> str:
    """Record a file about to be created by the current command (call before opening it)."""
    check_driver()
    checkpoint()
    with _lock:
        _reg.files[path] = io
    return path


def register_operation(io: FileIO, base_dir: str, operation_id: str,
                       task_indices: Iterable[int] | None = None) -> None:
    """Record that tasks (possibly in other processes) write files under ``base_dir`` named
    ``<task index:05d>-...-<operation_id>-...`` (only those ``task_indices`` when given)."""
    checkpoint()
    with _lock:
        _reg.operations.append((io, base_dir, operation_id,
                                frozenset(task_indices) if task_indices is not None else None))


def settle(paths: Iterable[str]) -> None:
    """A commit is in the table: these files (its manifests, manifest list and the files its
    snapshot adds) are the table's now and are never removed by the clean-up."""
    with _lock:
        for p in paths:
            _reg.settled.add(p)
            _reg.files.pop(p, None)


def _keeping(error: BaseException | None = None) -> bool:
    """Whether clean-up must keep files now: a commit is in flight, or the failure being handled
    is (or was caused by) a commit whose outcome is unknown."""
    if _reg.critical:
        return True
    from icectl.errors import CommitStateUnknown

    e = error if error is not None else sys.exc_info()[1]
    seen = 0
    while e is not None and seen < 20:
        if isinstance(e, CommitStateUnknown):
            return True
        e = e.__cause__ or e.__context__
        seen += 1
    return False


def discard(io: FileIO, paths: Iterable[str]) -> None:
    """Delete files the current command wrote and no longer needs (a failure's clean-up), unless
    a commit's outcome is unknown or a commit already took them."""
    if _keeping():
        return
    for p in list(paths):
        if p in _reg.settled:
            continue
        io.delete_quietly(p)
        with _lock:
            _reg.files.pop(p, None)


def discard_operation(io: FileIO, base_dir: str, operation_id: str) -> None:
    """Delete the files of a registered operation's tasks (see :func:`register_operation`) that
    no commit took, also those of tasks whose results never came back."""
    if _keeping():
        return
    with _lock:
        mine = [op for op in _reg.operations if op[1] == base_dir and op[2] == operation_id]
        _reg.operations = [op for op in _reg.operations if op not in mine]
    for op in mine:
        _sweep(*op)


def _sweep(io: FileIO, base_dir: str, operation_id: str, indices: frozenset[int] | None) -> None:
    try:
        found = [f.path for f in io.walk(base_dir)]
    except Exception:  # noqa: BLE001 - nothing written, or the directory is gone
        return
    for p in found:
        name = p.rsplit("/", 1)[-1]
        if operation_id not in name or p in _reg.settled:
            continue
        if indices is not None:
            head = name.split("-", 1)[0]
            if not head.isdigit() or int(head) not in indices:
                continue
        io.delete_quietly(p)


# -- commits ---------------------------------------------------------------------------------------

@contextmanager
def critical() -> Iterator[None]:
    """A commit in flight: nothing is cleaned up, and a signal arriving now is held back until
    the next :func:`checkpoint` after it (the command's next file or commit): whatever the
    commit's outcome, it is then known. A command with nothing left to do finishes."""
    checkpoint()
    _reg.critical += 1
    try:
        yield
    finally:
        _reg.critical -= 1


def checkpoint() -> None:
    """Raise a signal held back by a commit that has ended (see :func:`critical`)."""
    if _reg.pending is not None and not _reg.critical:
        signum, _reg.pending = _reg.pending, None
        from icectl.errors import Interrupted

        raise Interrupted(signum)


# -- the command -----------------------------------------------------------------------------------

def begin() -> None:
    """A new command starts: forget what earlier commands of this process registered."""
    global _reg
    _reg = _Registry()


def received_signal() -> int | None:
    """The first of SIGINT/SIGTERM/SIGHUP this process received (None: none)."""
    return _received


def abort(error: BaseException | None = None) -> int:
    """The command failed with ``error`` or was interrupted: remove every registered file no
    commit took (unless the failure is a commit whose outcome is unknown). Further signals are
    ignored while it runs. Returns how many files and patterns were cleaned."""
    if _keeping(error):
        return 0
    old = {}
    if threading.current_thread() is threading.main_thread():
        for s in SIGNALS:
            old[s] = signal.signal(s, signal.SIG_IGN)
    try:
        with _lock:
            files = list(_reg.files.items())
            ops = list(_reg.operations)
            _reg.files.clear()
            _reg.operations.clear()
        for p, io in files:
            if p not in _reg.settled:
                io.delete_quietly(p)
        for op in ops:
            _sweep(*op)
        return len(files) + len(ops)
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _on_signal(signum: int, frame: Any) -> None:
    global _received
    if _received is None:
        _received = signum
    if _reg.critical:
        if _reg.pending is None:
            _reg.pending = signum
        return
    from icectl.errors import Interrupted

    raise Interrupted(signum)


def install_signal_handlers() -> None:
    """SIGINT, SIGTERM and SIGHUP raise :class:`~icectl.errors.Interrupted` (held back inside a
    critical section). Only from the main thread; a signal set to be ignored stays ignored (a
    command started with ``nohup`` keeps ignoring SIGHUP)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for s in SIGNALS:
        if signal.getsignal(s) is signal.SIG_IGN:
            continue
        signal.signal(s, _on_signal)


# -- workers ---------------------------------------------------------------------------------------

@contextmanager
def starting_workers(spawn: bool = True) -> Iterator[None]:
    """Start worker processes inside this block (``spawn``: through multiprocessing's spawn
    start method, which needs its resource tracker).

    The terminal's signals are blocked in this thread while it runs. A child inherits the mask
    through ``fork`` and ``exec``, so a Ctrl-C sent to the process group while a worker's
    interpreter is still starting stays pending in the worker until :func:`worker_init` ignores
    it, instead of ending the worker with a KeyboardInterrupt traceback on the terminal. The
    driver receives its own copy of the signal when the block ends: nothing is lost."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    try:
        if spawn:
            _start_resource_tracker()
            # starting the tracker unblocks SIGINT and SIGTERM on its way out; once it runs,
            # starting a worker only checks that it is alive
            signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _start_resource_tracker() -> None:
    """multiprocessing's resource tracker (a helper process of spawn pools), started with the
    terminal's signals blocked (it ignores SIGINT and SIGTERM itself and never unblocks
    SIGHUP): a hang-up reaches the driver alone, which stops the workers; the tracker ends when
    the driver's end of its pipe closes."""
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()


def can_fork() -> bool:
    """Whether worker processes may be forked from this one: the platform has ``fork`` and this
    process runs a single thread (a thread holding a lock at fork time could deadlock the
    child)."""
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1


def forked_imap(fn: Callable[[Any], Any], items: Sequence[Any], workers: int) -> Iterator[Any]:
    """``fn`` over ``items`` in ``workers`` forked processes (at most one an item), the results
    in item order as each is ready. For pure functions of a few modules already imported (a
    forked worker starts in milliseconds, a spawned one imports icectl again); only when
    :func:`can_fork`. The workers die with this process and leave its signals to it; they are
    stopped when the iterator ends or is closed."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    pool = None
    try:
        with starting_workers(spawn=False):
            # terminate() stops the workers with SIGTERM, so that keeps its default action
            pool = ctx.Pool(max(1, min(workers, len(items))), initializer=worker_init,
                            initargs=(os.getpid(), True))
        yield from pool.imap(fn, items, chunksize=1)
    finally:
        if pool is not None:
            pool.terminate()
            pool.join()


def worker_init(driver_pid: int, terminable: bool = False) -> None:
    """Initializer of every worker pool: die with the driver, leave the terminal's signals to
    the driver (which stops its workers itself). ``terminable``: SIGTERM keeps its default
    action, for pools that stop their workers with it (``multiprocessing.Pool.terminate``)."""
    global _driver_pid, _reg
    _driver_pid = driver_pid
    _reg = _Registry()
    for s in SIGNALS:
        try:
            signal.signal(s, signal.SIG_DFL if terminable and s == signal.SIGTERM else signal.SIG_IGN)
        except (OSError, ValueError):
            pass
    if hasattr(signal, "pthread_sigmask"):
        # started inside starting_workers(): a signal that came while this interpreter started
        # was pending, and ignoring it above discarded it
        signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):
            pass
    check_driver()  # the driver may have died before the request above


def check_driver() -> None:
    """In a worker: stop at once (removing the files this worker created) if the driver that
    started it is gone. Nothing in any other process."""
    if _driver_pid is None or os.getppid() == _driver_pid:
        return
    for p, io in list(_reg.files.items()):
        try:
            io.delete_quietly(p)
        except BaseException:  # noqa: BLE001 - exiting anyway
            pass
    os._exit(EXIT_DRIVER_GONE)
