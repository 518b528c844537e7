"""Scan-planning benchmark: icectl vs pyiceberg vs plain fastavro decoding.

Builds a table with one snapshot of MANIFESTS manifests x FILES data files each (one day
partition per manifest, disjoint id ranges per file, full column metrics as Spark writes them;
the data files themselves do not exist) and times, in the same run:

* icectl's planner (``icectl.scan.plan_scan``), cold (fresh decode cache) and warm;
* pyiceberg: ``StaticTable.from_metadata(...).scan(row_filter=...).plan_files()``;
* plain fastavro: decoding every record of every manifest (``list(fastavro.reader(f))``);

for three filters: one day (one manifest can match), a narrow id range (one file matches, every
manifest must be read), and no filter. Reports medians over the repetitions and the ratios, and
the peak memory of a no-filter plan measured in a fresh subprocess. The in-process figures
bypass the persistent manifest cache (they time decoding).

With --process it also times whole processes, as a script or cron job pays them: a fresh
``python -m icectl plan T --filter F --json > file`` with the persistent manifest cache warm
(filled by a previous process), cold (emptied before each run) and bypassed (ICECTL_NO_CACHE=1),
against a fresh Python process running pyiceberg's plan and writing the planned paths as JSON.
The cache lives in a temporary directory of the run.

    python bench/plan_bench.py            # 200 x 1,000 files, 5 repetitions
    python bench/plan_bench.py --quick    # 20 x 500 files, 3 repetitions
    python bench/plan_bench.py --dir /tmp/planbench --keep   # reuse a built table
    python bench/plan_bench.py --process --no-inprocess      # whole-process figures only
    python bench/plan_bench.py --api --java --no-inprocess   # the Python API warm vs Java warm
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable

DAY_US = 86_400_000_000
START_DAY = 19723  # 2024-01-01
SCHEMA = "id long not null, ts timestamptz, name string, category string, amount double"


# -- building the table -------------------------------------------------------------------------


def build_table(location: str, manifests: int, files: int) -> str:
    """Create the benchmark table at ``location``; returns the metadata file path."""
    from icectl.ops.metadata.create import create_table
    from icectl.spec.manifests import ADDED, DATA, ManifestEntry, DataFile
    from icectl.spec.summary import SummaryBuilder
    from icectl.spec.types import DOUBLE, LONG, STRING, TIMESTAMPTZ
    from icectl.spec.values import to_bytes
    from icectl.table.commit.producer import SnapshotProducer
    from icectl.table.table import Table

    create_table(location, schema_text=SCHEMA, partition_text="days(ts)", format_version=2)
    table = Table.load(location)
    spec = table.metadata.spec

    def data_file(day_index: int, j: int) -> DataFile:
        k = day_index * files + j
        day = START_DAY + day_index
        lo_id, hi_id = k * 1000, k * 1000 + 999
        lo_ts = day * DAY_US + j * 60_000_000
        hi_ts = lo_ts + 59_000_000
        return DataFile(
            content=DATA,
            file_path=f"{location}/data/ts_day={day}/{k:08d}-0-bench.parquet",
            file_format="PARQUET",
            partition=(day,),
            record_count=1000,
            file_size_in_bytes=10_000_000 + j,
            column_sizes={1: 4000, 2: 4000, 3: 9000, 4: 2000, 5: 4000},
            value_counts={1: 1000, 2: 1000, 3: 1000, 4: 1000, 5: 1000},
            null_value_counts={1: 0, 2: 0, 3: 10, 4: 0, 5: 3},
            nan_value_counts={5: 0},
            lower_bounds={1: to_bytes(LONG, lo_id), 2: to_bytes(TIMESTAMPTZ, lo_ts),
                          3: to_bytes(STRING, f"name-{lo_id:08d}"), 4: to_bytes(STRING, "alpha"),
                          5: to_bytes(DOUBLE, 0.5)},
            upper_bounds={1: to_bytes(LONG, hi_id), 2: to_bytes(TIMESTAMPTZ, hi_ts),
                          3: to_bytes(STRING, f"name-{hi_id:08d}"), 4: to_bytes(STRING, "omega"),
                          5: to_bytes(DOUBLE, 999.5)},
            split_offsets=(4,),
            sort_order_id=0,
            spec_id=spec.spec_id,
        )

    class Producer(SnapshotProducer):
        operation = "append"

        def apply(self, base, parent, attempt):
            out = []
            for d in range(manifests):
                entries = [ManifestEntry(ADDED, self.snapshot_id, None, None, data_file(d, j))
                           for j in range(files)]
                out.extend(self.write_manifests(attempt, base, spec, entries, target_size=1 << 40))
            return out

        def summary(self, base):
            return SummaryBuilder()

    Producer(table).commit()
    return table.metadata_location


# -- the contenders ----------------------------------------------------------------------------



def filter_texts(manifests: int, files: int) -> dict[str, str | None]:
    day = START_DAY + manifests // 2
    k = (manifests // 2) * files + files // 3  # one file in the middle
    lo = k * 1000 + 100
    import datetime as dt
    d = dt.date(1970, 1, 1) + dt.timedelta(days=day)
    d1 = d + dt.timedelta(days=1)
    return {
        "one-day": f"ts >= '{d.isoformat()}T00:00:00+00:00' and ts < '{d1.isoformat()}T00:00:00+00:00'",
        "id-range": f"id between {lo} and {lo + 50}",
        "no-filter": None,
    }


def pyiceberg_filter(name: str, manifests: int, files: int):
    from pyiceberg.expressions import AlwaysTrue, And, GreaterThanOrEqual, LessThan, LessThanOrEqual
    import datetime as dt
    day = START_DAY + manifests // 2
    k = (manifests // 2) * files + files // 3
    lo = k * 1000 + 100
    if name == "one-day":
        d = dt.date(1970, 1, 1) + dt.timedelta(days=day)
        d1 = d + dt.timedelta(days=1)
        return And(GreaterThanOrEqual("ts", f"{d.isoformat()}T00:00:00+00:00"),
                   LessThan("ts", f"{d1.isoformat()}T00:00:00+00:00"))
    if name == "id-range":
        return And(GreaterThanOrEqual("id", lo), LessThanOrEqual("id", lo + 50))
    return AlwaysTrue()


def run_icectl(location: str, text: str | None, cold: bool) -> int:
    from icectl.scan import plan_scan
    from icectl.io.manifest.columns import clear_cache
    from icectl.table.table import Table
    if cold:
        clear_cache()
    table = Table.load(location)
    result = plan_scan(table, filter_text=text)
    return len(result.files)


def run_pyiceberg(metadata_location: str, name: str, manifests: int, files: int) -> int:
    from pyiceberg.table import StaticTable
    t = StaticTable.from_metadata(metadata_location)
    return len(list(t.scan(row_filter=pyiceberg_filter(name, manifests, files)).plan_files()))


def run_fastavro(location: str) -> int:
    import fastavro
    n = 0
    for name in sorted(os.listdir(os.path.join(location, "metadata"))):
        if name.endswith("-m0.avro") or ("-m" in name and name.endswith(".avro") and not name.startswith("snap-")):
            with open(os.path.join(location, "metadata", name), "rb") as f:
                n += len(list(fastavro.reader(f)))
    return n


PYICEBERG_PROCESS = r"""
import json, sys
sys.path.insert(0, sys.argv[4])
import plan_bench
from pyiceberg.table import StaticTable
t = StaticTable.from_metadata(sys.argv[1])
flt = plan_bench.pyiceberg_filter(sys.argv[2], *map(int, sys.argv[3].split("x")))
json.dump([{"path": f.file.file_path, "record-count": f.file.record_count,
            "file-size-in-bytes": f.file.file_size_in_bytes}
           for f in t.scan(row_filter=flt).plan_files()], sys.stdout)
"""

# A JVM (local Spark session of the interop tests' stack: Iceberg 1.10.2 Java) kept running for
# the whole benchmark. It reads a case name per line on stdin, plans the table with Iceberg Java
# (HadoopTables.load + newScan().filter(...).planFiles(), the tasks counted in the JVM) and
# answers with the seconds it took and the file count. The first request of each case is a
# warm-up whose time is reported separately.
JAVA_PROCESS = r"""
import json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from spark_support import start_spark
location, scratch = sys.argv[1], Path(sys.argv[2])
manifests, files = map(int, sys.argv[4].split("x"))
sys.path.insert(0, sys.argv[5])
import plan_bench
t0 = time.perf_counter()
spark = start_spark(scratch / "wh", scratch).session
jvm = spark._jvm
E = jvm.org.apache.iceberg.expressions.Expressions
Iterables = jvm.org.apache.iceberg.relocated.com.google.common.collect.Iterables
tables = jvm.org.apache.iceberg.hadoop.HadoopTables(spark._jsc.hadoopConfiguration())

def expr(name):
    lo, hi = plan_bench.java_filter_bounds(name, manifests, files)
    if name == "one-day":
        return E.And(E.greaterThanOrEqual("ts", lo), E.lessThan("ts", hi)) if False else             getattr(E, "and")(E.greaterThanOrEqual("ts", lo), E.lessThan("ts", hi))
    if name == "id-range":
        return getattr(E, "and")(E.greaterThanOrEqual("id", jvm.java.lang.Long(lo)),
                                 E.lessThanOrEqual("id", jvm.java.lang.Long(hi)))
    return E.alwaysTrue()

print(json.dumps({"ready": True, "start-seconds": time.perf_counter() - t0}), flush=True)
loaded = None  # "loaded:<case>" requests plan on one table object, loaded once (as the API run)
for line in sys.stdin:
    name = line.strip()
    if not name:
        break
    if name.startswith("loaded:"):  # loaded:<case>:<times>: the median of <times> plans
        _, name, times = name.split(":")
        if loaded is None:
            loaded = tables.load(location)
        took = []
        for _ in range(int(times)):
            t0 = time.perf_counter()
            tasks = loaded.newScan().filter(expr(name)).planFiles()
            n = Iterables.size(tasks)
            tasks.close()
            took.append(time.perf_counter() - t0)
        print(json.dumps({"seconds": sorted(took)[len(took) // 2], "files": n}), flush=True)
        continue
    t0 = time.perf_counter()
    table = tables.load(location)
    tasks = table.newScan().filter(expr(name)).planFiles()
    n = Iterables.size(tasks)
    tasks.close()
    print(json.dumps({"seconds": time.perf_counter() - t0, "files": n}), flush=True)
spark.stop()
"""


def java_filter_bounds(name: str, manifests: int, files: int) -> tuple[Any, Any]:
    """The literal bounds of a case for Iceberg Java's Expressions (strings for timestamps)."""
    import datetime as dt
    day = START_DAY + manifests // 2
    k = (manifests // 2) * files + files // 3
    lo = k * 1000 + 100
    if name == "one-day":
        d = dt.date(1970, 1, 1) + dt.timedelta(days=day)
        d1 = d + dt.timedelta(days=1)
        return f"{d.isoformat()}T00:00:00+00:00", f"{d1.isoformat()}T00:00:00+00:00"
    if name == "id-range":
        return lo, lo + 50
    return None, None


class JavaPlanner:
    """The long-running JVM of :data:`JAVA_PROCESS`."""

    def __init__(self, location: str, manifests: int, files: int, scratch: str):
        here = os.path.dirname(os.path.abspath(__file__))
        interop = os.path.join(os.path.dirname(here), "tests", "interop")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", JAVA_PROCESS, location, scratch, interop,
             f"{manifests}x{files}", here],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.start_seconds = self._answer()["start-seconds"]
        self.warmed: set[str] = set()
        self.warmup_seconds: dict[str, float] = {}

    def _answer(self) -> dict[str, Any]:
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if not line:
            raise RuntimeError("the Iceberg Java planner process ended (is the Spark stack installed?)")
        return json.loads(line)

    def plan(self, name: str) -> tuple[float, int]:
        """Seconds of one warm in-JVM plan of case ``name`` (a warm-up run first, once)."""
        assert self.proc.stdin is not None
        if name not in self.warmed:
            self.proc.stdin.write(name + "\n")
            self.proc.stdin.flush()
            self.warmup_seconds[name] = self._answer()["seconds"]
            self.warmed.add(name)
        self.proc.stdin.write(name + "\n")
        self.proc.stdin.flush()
        got = self._answer()
        return got["seconds"], got["files"]

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.write("\n")
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# Runs a command as its child and reports the child's wall time and peak resident set. The
# launcher is a small process, so the peak the child inherits at fork (ru_maxrss counts the
# memory a process had before exec) is the launcher's, not this benchmark's.
LAUNCHER = r"""
import os, sys, time
t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
sys.stderr.write("\nlauncher %r %d\n" % (time.perf_counter() - t0, usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_child(cmd: list[str], env: dict[str, str], out_path: str) -> tuple[float, int]:
    """Wall seconds and peak resident set (bytes) of a fresh process writing its stdout to a
    file, both measured by a small launcher process around it."""
    with open(out_path, "wb") as out:
        proc = subprocess.run([sys.executable, "-S", "-c", LAUNCHER, *cmd], stdout=out,
                              stderr=subprocess.PIPE, env=env, cwd=os.path.dirname(out_path))
    err = proc.stderr.decode(errors="replace")
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[:4]}... failed ({proc.returncode}): {err[-2000:]}")
    last = err.rstrip().rsplit("\n", 1)[-1].split()
    return float(last[1]), int(last[2]) * 1024


def user_install(work: str) -> str:
    """A Python environment as a user's: a fresh virtual environment with icectl copied in (a
    plain install, not this checkout's editable one, whose import hook costs every process of
    the development environment ~15-20 ms at start-up) and the development environment's
    packages (pyiceberg, fastavro, ...) on its path through a .pth line. Both icectl and
    pyiceberg run in it. Returns its python."""
    import compileall
    import sysconfig

    venv = os.path.join(work, "venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    py = os.path.join(venv, "bin", "python")
    site = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    shutil.copytree(os.path.join(repo, "icectl"), os.path.join(site, "icectl"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    compileall.compile_dir(os.path.join(site, "icectl"), quiet=1)
    with open(os.path.join(site, "bench-deps.pth"), "w") as f:
        f.write(sysconfig.get_paths()["purelib"] + "\n")
    return py


def _loadavg() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def whole_process(location: str, metadata_location: str, texts: dict[str, str | None],
                  manifests: int, files: int, reps: int, pyiceberg: bool,
                  java: bool = False, workers: int | None = None,
                  dev_python: bool = False) -> dict[str, Any]:
    """Whole-process ``icectl plan --json > file`` with the persistent cache cold (emptied first;
    it fills it) and warm (filled by the cold run just before), a whole-process pyiceberg plan,
    Iceberg Java's warm in-JVM planner and a plain fastavro decode of every manifest, all
    interleaved repetition by repetition so the same load weighs on each."""
    work = tempfile.mkdtemp(prefix="plan-bench-proc-")
    cache = os.path.join(work, "cache")
    out_path = os.path.join(work, "out.json")
    # as installed software runs: with compiled modules (the development shell may disable them)
    env = dict(os.environ, ICECTL_CACHE_DIR=cache)
    for k in ("ICECTL_NO_CACHE", "PYTHONDONTWRITEBYTECODE"):
        env.pop(k, None)
    here = os.path.dirname(os.path.abspath(__file__))
    py = sys.executable if dev_python else user_install(work)
    cmds: dict[str, list[str]] = {}
    py_cmds: dict[str, list[str]] = {}
    for name, text in texts.items():
        cmds[name] = [py, "-m", "icectl", "plan", location, "--json"] + \
            (["--filter", text] if text is not None else []) + \
            (["--workers", str(workers)] if workers else [])
        py_cmds[name] = [py, "-c", PYICEBERG_PROCESS, metadata_location, name,
                         f"{manifests}x{files}", here]
    samples: dict[str, dict[str, list[float]]] = {n: {} for n in texts}
    counts: dict[str, dict[str, int]] = {n: {} for n in texts}
    loads: list[float] = []
    jp = JavaPlanner(location, manifests, files, os.path.join(work, "spark")) if java else None
    try:
        # compile every module once (.pyc), as an installed package has them
        run_child(cmds["no-filter"] if "no-filter" in cmds else next(iter(cmds.values())),
                  dict(env, ICECTL_NO_CACHE="1"), out_path)
        if pyiceberg:
            run_child(py_cmds[next(iter(py_cmds))], env, out_path)
        for rep in range(reps):
            loads.append(_loadavg())
            t0 = time.perf_counter()
            run_fastavro(location)
            samples.setdefault("_fastavro", {}).setdefault("s", []).append(time.perf_counter() - t0)
            for name in texts:
                s = samples[name]
                shutil.rmtree(cache, ignore_errors=True)
                sec, rss = run_child(cmds[name], env, out_path)
                s.setdefault("icectl_cold_s", []).append(sec)
                s.setdefault("icectl_cold_rss", []).append(rss)
                sec, rss = run_child(cmds[name], env, out_path)
                s.setdefault("icectl_warm_s", []).append(sec)
                s.setdefault("icectl_warm_rss", []).append(rss)
                counts[name]["icectl"] = len(json.load(open(out_path))["files"])
                if pyiceberg:
                    sec, rss = run_child(py_cmds[name], env, out_path)
                    s.setdefault("pyiceberg_s", []).append(sec)
                    s.setdefault("pyiceberg_rss", []).append(rss)
                    counts[name]["pyiceberg"] = len(json.load(open(out_path)))
                if jp is not None:
                    sec, n = jp.plan(name)
                    s.setdefault("java_warm_s", []).append(sec)
                    counts[name]["java"] = n
            print(f"repetition {rep + 1}/{reps} done (load average {loads[-1]:.1f})",
                  file=sys.stderr)
    finally:
        if jp is not None:
            jp.close()
        shutil.rmtree(work, ignore_errors=True)
    return _summarise(samples, counts, loads, workers, jp, texts, pyiceberg)


def _java_start(results: dict[str, Any], jp: "JavaPlanner | None") -> None:
    if jp is not None:
        results["java_session_start_s"] = jp.start_seconds
        results["java_warmup_s"] = jp.warmup_seconds


def _case_medians(s: dict[str, list[float]], files: dict[str, int]
                  ) -> tuple[dict[str, Any], Callable[[str, str], float]]:
    """A case's medians, and ``ratio(a, b)``: the median of the ratios of each repetition's
    samples (taken under the same load)."""
    case: dict[str, Any] = {k: statistics.median(v) for k, v in s.items()}
    case["files"] = files
    return case, lambda a, b: statistics.median(x / y for x, y in zip(s[a], s[b]))


def _summarise(samples: dict[str, dict[str, list[float]]], counts: dict[str, dict[str, int]],
               loads: list[float], workers: int | None, jp: "JavaPlanner | None",
               texts: dict[str, str | None], pyiceberg: bool) -> dict[str, Any]:
    """Medians of the whole-process samples, and the per-repetition ratios' medians."""
    fastavro_s = statistics.median(samples.pop("_fastavro")["s"])
    results: dict[str, Any] = {"fastavro_decode_all_s": fastavro_s, "load_average": loads,
                               "workers": workers, "cases": {}}
    _java_start(results, jp)
    for name in texts:
        s = samples[name]
        case, ratio = _case_medians(s, counts[name])
        if pyiceberg:
            case["x_pyiceberg_warm"] = ratio("pyiceberg_s", "icectl_warm_s")
            case["x_pyiceberg_cold"] = ratio("pyiceberg_s", "icectl_cold_s")
        if jp is not None:
            case["x_java_warm"] = ratio("java_warm_s", "icectl_warm_s")
        case["cold_vs_fastavro"] = case["icectl_cold_s"] / fastavro_s
        results["cases"][name] = case
        print(f"{name:10s} whole process: icectl warm {case['icectl_warm_s']:.3f} s, "
              f"cold {case['icectl_cold_s']:.3f} s"
              + (f"; pyiceberg {case['pyiceberg_s']:.3f} s (x{case['x_pyiceberg_warm']:.1f} warm)"
                 if pyiceberg else "")
              + (f"; java warm {case['java_warm_s']:.3f} s (x{case['x_java_warm']:.2f})"
                 if jp is not None else "")
              + f"; files {counts[name]}", file=sys.stderr)
    return results


def api_warm(location: str, texts: dict[str, str | None], manifests: int, files: int,
             reps: int, java: bool, inner: int = 9) -> dict[str, Any]:
    """In process and warm, as a long-lived PySpark driver or notebook plans: icectl's planning
    through the Python API (``icectl.load_table`` once, then ``table.plan(F)``; decoded manifests
    stay cached in the process) against Iceberg Java's warm in-JVM planner on a table object
    loaded once (``newScan().filter(F).planFiles()``, tasks counted in the JVM). One warm-up plan
    per case on each side first; then, repetition by repetition, each case on both sides (the
    one-day case, a few milliseconds, as the median of ``inner`` plans on each side). icectl
    is timed twice: the plan with its counts (what Java's figure gives: a number of tasks), and
    the plan with every planned file built as a Python object (``plan.files``)."""
    import icectl

    table = icectl.load_table(location)
    work = tempfile.mkdtemp(prefix="plan-bench-api-")
    jp = JavaPlanner(location, manifests, files, os.path.join(work, "spark")) if java else None
    samples: dict[str, dict[str, list[float]]] = {n: {} for n in texts}
    counts: dict[str, dict[str, int]] = {n: {} for n in texts}
    loads: list[float] = []

    def api_plan(text: str | None, objects: bool) -> int:
        plan = table.plan(text)
        return len(plan.files) if objects else plan.file_count

    try:
        warmup = {name: timed(lambda: api_plan(text, True), 1)[0] for name, text in texts.items()}
        for rep in range(reps):
            loads.append(_loadavg())
            for name, text in texts.items():
                s = samples[name]
                times = inner if name == "one-day" else 1  # a few ms: the median of several
                sec, counts[name]["icectl"] = timed(lambda: api_plan(text, False), times)
                s.setdefault("api_s", []).append(sec)
                sec, _ = timed(lambda: api_plan(text, True), times)
                s.setdefault("api_objects_s", []).append(sec)
                if jp is not None:
                    sec, counts[name]["java"] = jp.plan(f"loaded:{name}:{times}")
                    s.setdefault("java_s", []).append(sec)
            print(f"repetition {rep + 1}/{reps} done (load average {loads[-1]:.1f})", file=sys.stderr)
    finally:
        if jp is not None:
            jp.close()
        shutil.rmtree(work, ignore_errors=True)
    out: dict[str, Any] = {"load_average": loads, "api_warmup_s": warmup, "cases": {}}
    _java_start(out, jp)
    for name in texts:
        case, ratio = _case_medians(samples[name], counts[name])
        if jp is not None:
            case["x_java"] = ratio("java_s", "api_s")
            case["x_java_objects"] = ratio("java_s", "api_objects_s")
        out["cases"][name] = case
        print(f"{name:10s} API warm {case['api_s']:.4f} s (files as objects {case['api_objects_s']:.4f} s)"
              + (f"; java warm {case['java_s']:.4f} s (x{case['x_java']:.2f}, "
                 f"x{case['x_java_objects']:.2f} with objects)" if jp is not None else "")
              + f"; files {counts[name]}", file=sys.stderr)
    return out


def timed(fn: Callable[[], int], reps: int) -> tuple[float, int]:
    times = []
    result = 0
    for _ in range(reps):
        gc.collect()
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


MEMORY_SNIPPET = r"""
import sys, time, tracemalloc


def hwm():
    # peak resident set of this process (VmHWM; ru_maxrss would include the parent's peak)
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


from icectl.scan import plan_scan
from icectl.table.table import Table
table = Table.load(sys.argv[1])
before = hwm()
if sys.argv[2] == "trace":
    tracemalloc.start()
t0 = time.perf_counter()
result = plan_scan(table)
elapsed = time.perf_counter() - t0
peak = tracemalloc.get_traced_memory()[1] if sys.argv[2] == "trace" else 0
print(len(result.files), peak, hwm(), before, elapsed)
"""


def memory_of_plan(location: str) -> dict[str, Any]:
    """Peak memory of a no-filter plan in fresh processes: resident set (plain run) and Python
    allocations (a second run under tracemalloc)."""
    def run(mode: str) -> list[str]:
        out = subprocess.run([sys.executable, "-c", MEMORY_SNIPPET, location, mode],
                             capture_output=True, text=True, check=True)
        return out.stdout.split()

    files, _, rss, rss_before, elapsed = run("plain")
    _, peak, _, _, _ = run("trace")
    return {"files": int(files), "tracemalloc_peak_bytes": int(peak),
            "max_rss_bytes": int(rss), "rss_before_plan_bytes": int(rss_before),
            "seconds": float(elapsed)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--manifests", type=int, default=None, help="manifests (default 200; 20 with --quick)")
    p.add_argument("--files", type=int, default=None, help="files per manifest (default 1000; 500 with --quick)")
    p.add_argument("--reps", type=int, default=None, help="repetitions (default 5; 3 with --quick)")
    p.add_argument("--quick", action="store_true", help="a small, fast run")
    p.add_argument("--dir", default=None, help="table directory (default: a temporary one)")
    p.add_argument("--keep", action="store_true", help="keep (and reuse) the table in --dir")
    p.add_argument("--no-pyiceberg", action="store_true", help="skip pyiceberg")
    p.add_argument("--no-memory", action="store_true", help="skip the memory measurement")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--process", action="store_true",
                   help="also time whole processes (icectl plan --json > file, cache warm/cold/off; pyiceberg)")
    p.add_argument("--no-inprocess", action="store_true", help="skip the in-process timings")
    p.add_argument("--java", action="store_true",
                   help="with --process: also Iceberg Java's warm in-JVM planner (local Spark stack)")
    p.add_argument("--api", action="store_true",
                   help="in process and warm: the Python API's plan (table loaded once) against "
                        "Iceberg Java's warm in-JVM planner (with --java) on a table loaded once")
    p.add_argument("--workers", type=int, default=None,
                   help="icectl plan --workers N in the whole-process runs (default: its own)")
    p.add_argument("--cases", default=None,
                   help="comma-separated cases to run (default: one-day,id-range,no-filter)")
    p.add_argument("--dev-python", action="store_true",
                   help="run the whole processes in this environment (an editable install pays "
                        "its import hook at every start) instead of a plain install's")
    args = p.parse_args(argv)
    manifests = args.manifests or (20 if args.quick else 200)
    files = args.files or (500 if args.quick else 1000)
    reps = args.reps or (3 if args.quick else 5)

    tmp = None
    if args.dir:
        location = os.path.abspath(args.dir)
    else:
        tmp = tempfile.mkdtemp(prefix="plan-bench-")
        location = os.path.join(tmp, "table")
    try:
        from icectl.table.table import Table
        reuse = args.keep and os.path.isdir(os.path.join(location, "metadata"))
        t0 = time.perf_counter()
        if not reuse:
            if os.path.exists(location):
                shutil.rmtree(location)
            build_table(location, manifests, files)
        build_s = time.perf_counter() - t0
        metadata_location = Table.load(location).metadata_location
        texts = filter_texts(manifests, files)
        if args.cases:
            wanted = [c.strip() for c in args.cases.split(",") if c.strip()]
            unknown = set(wanted) - set(texts)
            if unknown:
                p.error(f"unknown case(s) {', '.join(sorted(unknown))}; known: {', '.join(texts)}")
            texts = {c: texts[c] for c in wanted}
        print(f"table: {manifests} manifests x {files} files = {manifests * files} files "
              f"({'reused' if reuse else f'built in {build_s:.1f} s'}); {reps} repetitions",
              file=sys.stderr)

        results: dict[str, Any] = {"manifests": manifests, "files_per_manifest": files,
                                   "repetitions": reps, "cases": {}}
        from icectl.io.manifest import cache as manifest_cache
        manifest_cache.set_enabled(False)  # in-process figures time decoding
        fa_s = float("nan")
        if not args.no_inprocess:
            fa_s, fa_n = timed(lambda: run_fastavro(location), reps)
            print(f"fastavro decode of all manifests: {fa_s:.3f} s ({fa_n} records)", file=sys.stderr)
        results["fastavro_decode_all_s"] = fa_s
        for name, text in ({} if args.no_inprocess else texts).items():
            cold_s, n_cold = timed(lambda: run_icectl(location, text, True), reps)
            warm_s, n_warm = timed(lambda: run_icectl(location, text, False), reps)
            case: dict[str, Any] = {"filter": text, "icectl_cold_s": cold_s, "icectl_warm_s": warm_s,
                                    "icectl_files": n_cold}
            if not args.no_pyiceberg:
                py_s, n_py = timed(lambda: run_pyiceberg(metadata_location, name, manifests, files), reps)
                case.update(pyiceberg_s=py_s, pyiceberg_files=n_py,
                            speedup_cold=py_s / cold_s, speedup_warm=py_s / warm_s)
            case["cold_vs_fastavro"] = cold_s / fa_s
            results["cases"][name] = case
            print(f"{name:10s} icectl cold {cold_s:.3f} s, warm {warm_s:.4f} s, {n_cold} files"
                  + (f"; pyiceberg {case['pyiceberg_s']:.3f} s ({case['pyiceberg_files']} files); "
                     f"speed-up cold {case['speedup_cold']:.1f}x, warm {case['speedup_warm']:.0f}x"
                     if not args.no_pyiceberg else "")
                  + f"; cold / fastavro {case['cold_vs_fastavro']:.2f}", file=sys.stderr)
        if args.api:
            manifest_cache.set_enabled(True)  # as a user's process has it
            results["api_warm"] = api_warm(location, texts, manifests, files, reps, args.java)
        if args.process:
            results["whole_process"] = whole_process(
                location, metadata_location, texts, manifests, files, reps,
                not args.no_pyiceberg, java=args.java, workers=args.workers,
                dev_python=args.dev_python)
        if not args.no_memory:
            mem = memory_of_plan(location)
            results["memory_no_filter"] = mem
            print(f"no-filter plan memory: tracemalloc peak {mem['tracemalloc_peak_bytes'] / 2**20:.0f} MiB, "
                  f"max RSS {mem['max_rss_bytes'] / 2**20:.0f} MiB "
                  f"(RSS before planning {mem['rss_before_plan_bytes'] / 2**20:.0f} MiB)", file=sys.stderr)
        if args.json:
            print(json.dumps(results, indent=2))
        else:
            print(format_table(results))
    finally:
        if tmp is not None and not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


def format_table(r: dict[str, Any]) -> str:
    lines = [f"{r['manifests']} manifests x {r['files_per_manifest']} files, median of {r['repetitions']}"]
    if r["cases"]:
        lines += [f"plain fastavro decode of all manifests (in process): {r['fastavro_decode_all_s']:.3f} s",
                  f"{'case':10s} {'icectl cold':>12s} {'icectl warm':>12s} {'pyiceberg':>10s} "
                  f"{'x cold':>7s} {'x warm':>7s} {'cold/fastavro':>14s} {'files':>7s}"]
    for name, c in r["cases"].items():
        py = c.get("pyiceberg_s")
        lines.append(
            f"{name:10s} {c['icectl_cold_s']:11.3f}s {c['icectl_warm_s']:11.4f}s "
            + (f"{py:9.3f}s {c['speedup_cold']:6.1f}x {c['speedup_warm']:6.0f}x " if py is not None
               else f"{'-':>10s} {'-':>7s} {'-':>7s} ")
            + f"{c['cold_vs_fastavro']:14.2f} {c['icectl_files']:7d}")
    proc = r.get("whole_process")
    if proc:
        loads = proc["load_average"]
        lines.append(f"whole process (icectl plan --json > file), interleaved; load average "
                     f"{min(loads):.1f}-{max(loads):.1f}; plain fastavro decode "
                     f"{proc['fastavro_decode_all_s']:.3f} s")
        if "java_session_start_s" in proc:
            lines.append(f"Iceberg Java: session start {proc['java_session_start_s']:.1f} s, warm-up "
                         + ", ".join(f"{k} {v:.2f} s" for k, v in proc["java_warmup_s"].items()))
        lines.append(f"{'case':10s} {'warm':>8s} {'cold':>8s} {'pyiceberg':>9s} {'java':>8s} "
                     f"{'x py warm':>9s} {'x py cold':>9s} {'x java':>7s} {'cold/fa':>7s} "
                     f"{'RSS warm':>8s} {'RSS cold':>8s} files")
        for name, c in proc["cases"].items():
            num = lambda k, f: (f % c[k]) if k in c else "-"  # noqa: E731
            lines.append(
                f"{name:10s} {c['icectl_warm_s']:7.3f}s {c['icectl_cold_s']:7.3f}s "
                f"{num('pyiceberg_s', '%8.3fs'):>9s} {num('java_warm_s', '%7.3fs'):>8s} "
                f"{num('x_pyiceberg_warm', '%8.1fx'):>9s} {num('x_pyiceberg_cold', '%8.1fx'):>9s} "
                f"{num('x_java_warm', '%6.2fx'):>7s} {c['cold_vs_fastavro']:7.2f} "
                f"{c['icectl_warm_rss'] / 2**20:7.0f}M {c['icectl_cold_rss'] / 2**20:7.0f}M "
                f"{c['files']}")
    api = r.get("api_warm")
    if api:
        loads = api["load_average"]
        lines.append(f"in process, warm: Python API (table loaded once) vs Iceberg Java on a table "
                     f"loaded once; load average {min(loads):.1f}-{max(loads):.1f}")
        if "java_session_start_s" in api:
            lines.append(f"Iceberg Java: session start {api['java_session_start_s']:.1f} s, warm-up "
                         + ", ".join(f"{k.split(':')[1]} {v:.2f} s"
                                     for k, v in api["java_warmup_s"].items()))
        lines.append(f"{'case':10s} {'api':>9s} {'api+objs':>9s} {'java':>9s} {'x java':>7s} "
                     f"{'x java objs':>11s} files")
        for name, c in api["cases"].items():
            num = lambda k, f: (f % c[k]) if k in c else "-"  # noqa: E731
            lines.append(f"{name:10s} {c['api_s']:8.4f}s {c['api_objects_s']:8.4f}s "
                         f"{num('java_s', '%8.4fs'):>9s} {num('x_java', '%6.2fx'):>7s} "
                         f"{num('x_java_objects', '%10.2fx'):>11s} {c['files']}")
    mem = r.get("memory_no_filter")
    if mem:
        lines.append(f"no-filter plan: tracemalloc peak {mem['tracemalloc_peak_bytes'] / 2**20:.0f} MiB, "
                     f"max RSS {mem['max_rss_bytes'] / 2**20:.0f} MiB")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
