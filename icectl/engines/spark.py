"""The Spark engine: the same task functions, run in Spark executors' Python workers.

``SparkEngine(master="local[2]")`` (or ``ICECTL_SPARK_MASTER``) starts - or joins - a
SparkSession; ``SparkEngine(session=spark)`` uses a session the caller already has, which is how
a PySpark job runs an icectl operation as a library call::

    from icectl.engines.spark import SparkEngine
    from icectl.ops.maintain.compact import compact_table
    from icectl.table.table import Table

    engine = SparkEngine(session=spark)                     # the job's SparkSession
    result = compact_table(Table.load(location), engine=engine)   # planned and committed here

``map(fn, tasks)`` makes one RDD with one partition per task, runs ``fn`` on each in the
executors' Python workers and collects the results in task order. The driver keeps planning and
committing; executors only write data files and return their metadata. Unless told otherwise,
the icectl package of the driver is shipped to the executors (zipped once per SparkContext and
added with ``addPyFile``), so executors need only pyspark and icectl's dependencies, not icectl.

The executors' Python: a session's Python workers run ``PYSPARK_PYTHON`` (as read when the
session started), else ``python3`` from the PATH - in a job started from a virtual environment
that is not activated, an interpreter without pyarrow. icectl's own tasks therefore run on the
driver's interpreter (``sys.executable``) when the session is local (``local[N]``: the executors
are processes on this machine) and neither ``PYSPARK_PYTHON`` nor ``spark.pyspark.python``
chose one; ``spark.pyspark.python`` set on the session (which Spark itself reads only from
``spark-submit``) is used for icectl's tasks. Only icectl's tasks are affected: the session's
settings, and the Python the job's own RDDs and UDFs run on, are left as they are. An executor
that still cannot import icectl's dependencies fails the operation with UnsupportedFeature
naming ``PYSPARK_PYTHON`` / ``spark.pyspark.python``, not with a Python traceback.

:func:`iceberg_runtime_jar` is the path of the Iceberg Spark runtime jar when the
``snowpark-connect-deps-iceberg`` package (installed by the ``test`` extra) is there, for
``spark.jars`` in a session that must start offline.

pyspark is imported here only, inside functions: it is the optional extra ``icectl[spark]``.
"""

from __future__ import annotations

import os
import pickle
import sys
import tempfile
import threading
import uuid
import zipfile
import zlib
from typing import Any, Callable, Iterable, Sequence, TypeVar

from icectl.engines.progress import ProgressCallback, Tracker, task_sizes
from icectl.command_files import usable_cores
from icectl.errors import UnsupportedFeature

__all__ = ["SparkEngine", "MASTER_ENV", "require_pyspark", "executor_probe", "iceberg_runtime_jar",
           "task_python"]

MASTER_ENV = "ICECTL_SPARK_MASTER"
APP_NAME = "icectl"
_POLL_SECONDS = 0.2

T = TypeVar("T")
R = TypeVar("R")

_shipped: dict[int, str] = {}  # id(SparkContext) -> the zip shipped to it
_ship_lock = threading.Lock()
_exec_lock = threading.Lock()  # held while an RDD of icectl's tasks takes its Python

ICEBERG_JAR_PACKAGE = "snowpark_connect_deps_iceberg"
ICEBERG_RUNTIME_JAR = "iceberg-spark-runtime-3.5_2.12-1.10.2.jar"


def iceberg_runtime_jar() -> str:
    """The path of the Iceberg 1.10.2 Spark 3.5 (Scala 2.12) runtime jar inside the installed
    ``snowpark-connect-deps-iceberg`` package (``pip install 'icectl[test]'`` installs it), for
    ``.config("spark.jars", iceberg_runtime_jar())``; UnsupportedFeature when it is not there."""
    import importlib.util

    spec = importlib.util.find_spec(ICEBERG_JAR_PACKAGE)
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        jar = os.path.join(folder, "jars", ICEBERG_RUNTIME_JAR)
        if os.path.isfile(jar):
            return jar
    raise UnsupportedFeature(f"the Iceberg Spark runtime jar {ICEBERG_RUNTIME_JAR} is not installed "
                             "(pip install snowpark-connect-deps-iceberg==1.0.2, or the extra: "
                             "pip install 'icectl[test]')")


def task_python(sc: Any) -> str | None:
    """The Python icectl's tasks should run on in ``sc``'s executors when it is not the one the
    session gives its Python workers (see the module docs); None to keep the session's."""
    if os.environ.get("PYSPARK_PYTHON"):
        return None  # chosen by whoever started the session: it is what sc.pythonExec holds
    chosen = sc.getConf().get("spark.pyspark.python", None)
    if chosen:
        return None if chosen == sc.pythonExec else chosen
    if str(sc.master).startswith("local") and sc.pythonExec != sys.executable:
        return sys.executable
    return None


def _java_rdd(sc: Any, rdd: Any, python: str | None) -> Any:
    """``rdd`` with its Java RDD built now, its Python workers running ``python`` (None: the
    session's). pyspark takes the workers' Python from the context when an RDD's function is
    wrapped; it is set for that moment only and put back, so nothing else of the session changes."""
    if python is None:
        return rdd
    with _exec_lock:
        saved = sc.pythonExec
        sc.pythonExec = python
        try:
            rdd.id()  # builds the Java RDD now, wrapping the function with this Python
        finally:
            sc.pythonExec = saved
    return rdd


def require_pyspark() -> Any:
    """The pyspark module; UnsupportedFeature naming the extra when it is not installed."""
    try:
        import pyspark
    except ImportError:
        raise UnsupportedFeature(
            "the spark engine needs pyspark, which is not installed "
            "(install the extra: pip install 'icectl[spark]')") from None
    return pyspark


def executor_probe(task: Any) -> dict[str, Any]:
    """Where a task ran: process id, and Spark's stage/partition/attempt when in an executor, the
    icectl it imported and whether a shipped icectl zip is on its path. (A plain task function,
    for checking an engine end to end.)"""
    import icectl

    out: dict[str, Any] = {"task": task, "pid": os.getpid(), "stage": None, "partition": None,
                           "icectl": icectl.__file__,
                           "shipped": any(str(p).endswith("icectl.zip") for p in sys.path)}
    try:
        from pyspark import TaskContext
    except ImportError:
        return out
    ctx = TaskContext.get()
    if ctx is not None:
        out.update(stage=ctx.stageId(), partition=ctx.partitionId(), attempt=ctx.taskAttemptId())
    return out


class SparkEngine:
    """Run task functions on Spark (see the module docs).

    ``master``: a Spark master URL (``local[4]``, ``spark://host:7077``, ``yarn``); default
    ``ICECTL_SPARK_MASTER``, else ``local[N]`` with N = ``workers`` or the machine's cores.
    ``session``: an existing SparkSession (its context is used; ``master`` must then be unset);
    without either, the active session of the process (a PySpark job's) when there is one.
    ``ship_package``: add the driver's icectl package to the executors' Python path.
    """

    name = "spark"

    def __init__(self, master: str | None = None, *, session: Any = None, workers: int | None = None,
                 progress: ProgressCallback | None = None, ship_package: bool = True,
                 app_name: str = APP_NAME) -> None:
        from icectl.errors import InvalidInput

        if workers is not None and workers < 1:
            raise InvalidInput(f"the number of workers must be at least 1 (got {workers})")
        if session is not None and master:
            raise InvalidInput("give either a Spark master URL or an existing Spark session, not both")
        self.master_given = bool(master)
        self.master = master or os.environ.get(MASTER_ENV) or f"local[{workers or usable_cores()}]"
        self.session = session
        self.progress = progress
        self.ship_package = ship_package
        self.app_name = app_name
        self.last_job_group: str | None = None
        self.last_python: str | None = None  # the Python the last map's tasks ran on
        self._owns_session = False

    # -- the session -----------------------------------------------------------------------------

    def spark_context(self) -> Any:
        """The SparkContext tasks run on (starting a session when none was given)."""
        if self.session is None and not self.master_given:
            require_pyspark()
            from pyspark.sql import SparkSession

            self.session = SparkSession.getActiveSession()  # a job's own session: used, not stopped
        if self.session is None:
            require_pyspark()
            from pyspark.sql import SparkSession

            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            builder = (SparkSession.builder.master(self.master).appName(self.app_name)
                       .config("spark.ui.showConsoleProgress", "false")
                       .config("spark.driver.extraJavaOptions",
                               f"-Dlog4j2.configurationFile={_quiet_log_config()}"))
            try:
                self.session = builder.getOrCreate()
            except Exception as e:  # the JVM or the master is unreachable
                from icectl.errors import StorageError

                raise StorageError(f"cannot start Spark with master {self.master}: "
                                   f"{str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
            self._owns_session = True
            self.session.sparkContext.setLogLevel("FATAL")
        return self.session.sparkContext

    def stop(self) -> None:
        """Stop the session this engine started (a session passed in is left running)."""
        if self._owns_session and self.session is not None:
            self.session.stop()
            self.session = None
            self._owns_session = False

    def __enter__(self) -> "SparkEngine":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- running tasks ---------------------------------------------------------------------------

    def map(self, fn: Callable[[T], R], tasks: Iterable[T], *,
            sizes: Sequence[int] | None = None) -> list[R]:
        items = list(tasks)
        if not items:
            return []
        tracker = Tracker(task_sizes(items, sizes), self.progress)
        sc = self.spark_context()
        if self.ship_package:
            ship_icectl(sc)
        group = f"icectl-{uuid.uuid4().hex[:12]}"
        self.last_job_group = group
        outcome: dict[str, Any] = {}
        python = task_python(sc)
        self.last_python = python or sc.pythonExec

        def run() -> None:
            try:
                sc.setJobGroup(group, f"icectl: {getattr(fn, '__name__', 'task')} x {len(items)}")
                rdd = sc.parallelize([(i, pack(t)) for i, t in enumerate(items)], len(items)).map(_Indexed(fn))
                outcome["results"] = _java_rdd(sc, rdd, python).collect()
            except BaseException as e:  # noqa: BLE001 - re-raised in the driver thread
                outcome["error"] = e

        tracker.start()
        thread = _thread(run)
        thread.start()
        while thread.is_alive():
            thread.join(_POLL_SECONDS)
            _poll(sc, group, tracker)
        if "error" in outcome:
            raise _task_error(outcome["error"], self.last_python)
        pairs = sorted(outcome["results"], key=lambda p: p[0])
        tracker.set(len(items), tracker.bytes_total)
        return [unpack(r) for _, r in pairs]


_QUIET_LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = stderr
appender.console.type = Console
appender.console.name = stderr
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
logger.submit.name = org.apache.spark.deploy.SparkSubmit
logger.submit.level = error
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = error
"""


def _quiet_log_config() -> str:
    """A log4j2 configuration for a session icectl starts: errors only (icectl's stderr carries
    its own notes; Spark's start-up chatter would drown them)."""
    path = os.path.join(tempfile.gettempdir(), f"icectl-spark-log4j2-{os.getuid() if hasattr(os, 'getuid') else 0}.properties")
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(_QUIET_LOG4J2)
    except OSError:
        return ""
    return "file://" + path


class _Indexed:
    """``(i, packed task) -> (i, packed fn(task))``: results are put back in task order by
    index; tasks and results cross the JVM packed (:func:`pack`)."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn

    def __call__(self, pair: tuple[int, bytes]) -> tuple[int, bytes]:
        i, task = pair
        return i, pack(self.fn(unpack(task)))


def pack(obj: Any) -> bytes:
    """A task or a result as the bytes that cross the JVM: pickled (by cloudpickle when plain
    pickle cannot: a task holding a local function), then compressed. Every task and result of
    a job sits in the driver's JVM heap at once, and a maintenance job's are millions of paths
    that share their directories: compressed they take about a tenth of the bytes (unpacked, a
    10M-file expiry's 5M retained paths took a default-sized driver down)."""
    try:
        data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, AttributeError, TypeError):
        from pyspark import cloudpickle

        data = cloudpickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return zlib.compress(data, 1)


def unpack(data: bytes) -> Any:
    """What :func:`pack` packed."""
    return pickle.loads(zlib.decompress(data))


def _thread(target: Callable[[], None]) -> threading.Thread:
    """A thread whose Spark job-group setting reaches the JVM (pinned-thread mode)."""
    try:
        from pyspark import InheritableThread

        return InheritableThread(target=target, daemon=True)
    except ImportError:  # pragma: no cover - old pyspark
        return threading.Thread(target=target, daemon=True)


def _poll(sc: Any, group: str, tracker: Tracker) -> None:
    """Tasks finished so far, from Spark's status tracker (bytes pro rata of the tasks done)."""
    try:
        st = sc.statusTracker()
        done = 0
        for job_id in st.getJobIdsForGroup(group):
            job = st.getJobInfo(job_id)
            for stage_id in (job.stageIds if job is not None else ()):
                stage = st.getStageInfo(stage_id)
                if stage is not None:
                    done += stage.numCompletedTasks
    except Exception:  # noqa: BLE001 - progress is best effort
        return
    total = len(tracker.sizes)
    done = min(done, total)
    tracker.set(done, tracker.bytes_total * done // total if total else 0)


_DEPENDENCIES = ("pyarrow", "fastavro", "fsspec", "mmh3", "typer", "rich")


def _python_unfit(text: str, python: str | None) -> BaseException | None:
    """UnsupportedFeature when an executor's Python lacks icectl's dependencies or is another
    Python version than the driver's; None for other failures."""
    import re

    m = re.search(r"No module named '([\w.]+)'", text)
    if m and m.group(1).split(".")[0] in _DEPENDENCIES:
        why = f"cannot import {m.group(1)}"
    elif "Python in worker has different version" in text:
        why = "is another Python version than the driver's"
    else:
        return None
    return UnsupportedFeature(
        f"the Spark executors' Python ({python or 'python3'}) {why}: start the session with "
        f"PYSPARK_PYTHON (or spark.pyspark.python with spark-submit) naming a Python that has "
        f"icectl's dependencies (pyarrow, fastavro, fsspec, mmh3), such as {sys.executable}")


def _task_error(e: BaseException, python: str | None = None) -> BaseException:
    """A failed task's error as the driver should see it. Spark reports a Python worker's
    exception inside a Java one, traceback and all; an icectl error keeps its kind and message,
    an executor Python without icectl's dependencies is UnsupportedFeature naming the setting
    that chooses it, any other error becomes one line naming the Python exception."""
    import re

    from icectl import errors

    unfit = _python_unfit(str(e), python)
    if unfit is not None:
        return unfit

    kinds = {k.__name__: k for k in (
        errors.InvalidInput, errors.NotFound, errors.AlreadyExists, errors.ValidationError,
        errors.CommitConflict, errors.StorageError, errors.CorruptMetadata, errors.UnsupportedFeature)}
    text = str(e)
    if "Traceback (most recent call last)" not in text:
        return e
    for line in text.splitlines():
        m = re.match(r"^icectl\.errors\.(\w+): (.*)$", line.strip())
        if m and m.group(1) in kinds:
            return kinds[m.group(1)](m.group(2))
    tail = text.split("Traceback (most recent call last)", 1)[1].splitlines()
    for line in tail:
        m = re.match(r"^([A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit)): (.*)$", line)
        if m:
            return RuntimeError(f"a task failed in a Spark executor: {m.group(1)}: {m.group(2)}")
    return e


# -- shipping icectl to executors ----------------------------------------------------------------


def package_zip(directory: str | None = None) -> str:
    """A zip of the installed icectl package (Python sources and package data), for
    ``addPyFile``; written to ``directory`` (default: a new temporary directory)."""
    import icectl

    root = os.path.dirname(os.path.abspath(icectl.__file__))
    out_dir = directory or tempfile.mkdtemp(prefix="icectl-spark-")
    path = os.path.join(out_dir, "icectl.zip")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in files:
                if name.endswith((".pyc", ".pyo")):
                    continue
                full = os.path.join(folder, name)
                zf.write(full, os.path.join("icectl", os.path.relpath(full, root)))
    return path


def ship_icectl(sc: Any) -> str:
    """Add icectl to ``sc``'s executors once (idempotent per SparkContext); the zip's path."""
    with _ship_lock:
        key = id(sc._jsc) if hasattr(sc, "_jsc") else id(sc)
        if key not in _shipped:
            path = package_zip()
            sc.addPyFile(path)
            _shipped[key] = path
        return _shipped[key]
