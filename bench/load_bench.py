"""Worker counts on a busy machine: the multi-process paths against the in-process path, at the
machine's load and under a CPU burner, same run.

Three commands a cron job runs, each a whole process:

* **plan**: `icectl plan T --filter F --json --no-cache` on the plan benchmark's table
  (``--manifests`` x ``--files``, the data files do not exist; F an id range, so every manifest
  is decoded, in worker processes when there are workers);
* **compact**: `icectl compact T --json` on the compaction benchmark's table of small files
  (copied back before every run);
* **write**: `icectl write T f1 ... f4` of four Parquet files into a fresh table.

Each runs three ways, one after the other so that the same load weighs on each:
``--workers 1`` (the in-process path: plan decodes in its process; write and compact run one
worker process, which has no second core to wait for), the default (no ``--workers``: the usable cores, CPU affinity capped by a
cgroup quota, ``icectl.command_files.usable_cores``), and ``--workers K`` with K the cores a
load-following default would leave (the usable cores less the 1-minute load average or the
runnable threads, whichever is larger, at least one; computed before each run). First at the
machine's own load, then with ``2 x cores`` busy-looping processes started (a CPU burner: load
at least twice the cores). Reported: the median wall time of each, the ratios to the
in-process path, and the load average when each phase ended.

    python bench/load_bench.py                   # 3 repetitions
    python bench/load_bench.py --reps 5 --json
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import compact_bench  # noqa: E402
import plan_bench  # noqa: E402


def _burn() -> None:
    while True:
        pass


def _run(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[2:5])} failed (exit {r.returncode}): {r.stderr.strip()[-400:]}")
    return wall


def _write_inputs(root: str) -> list[str]:
    import pyarrow.parquet as pq

    paths = []
    for i in range(4):
        p = os.path.join(root, f"in-{i}.parquet")
        pq.write_table(compact_bench._small_file(i, 250_000, "a"), p, compression="zstd")
        paths.append(p)
    return paths


class Cases:
    def __init__(self, root: str, args: argparse.Namespace) -> None:
        self.root = root
        self.plan_loc = plan_bench.build_table(os.path.join(root, "plan", "t"), args.manifests, args.files)
        texts = plan_bench.filter_texts(args.manifests, args.files)
        self.plan_filter = texts["id-range"]
        self.compact = compact_bench.build(SimpleNamespace(files=args.compact_files, rows=args.rows),
                                           os.path.join(root, "compact"))
        self.inputs = _write_inputs(root)
        self.n = 0

    def command(self, case: str, workers: list[str]) -> tuple[list[str], Any]:
        py = [sys.executable, "-m", "icectl"]
        if case == "plan":
            return py + ["plan", self.plan_loc, "--filter", self.plan_filter, "--json", "--no-cache"] + workers, None
        if case == "compact":
            return py + ["compact", self.compact["location"], "--json"] + workers, \
                lambda: compact_bench.restore(self.compact)
        self.n += 1
        loc = os.path.join(self.root, "write", f"t{self.n}")

        def fresh() -> None:
            subprocess.run(py + ["create", loc, "--schema",
                                 "id long not null, cat string, ts timestamptz, v double, s string"],
                           check=True, capture_output=True)
        return py + ["write", loc, *self.inputs] + workers, fresh


def load_following(cores: int) -> int:
    """The workers a default following the load would take now: the usable cores less those
    the 1-minute load average or the runnable threads (other than this one) keep busy."""
    with open("/proc/loadavg", encoding="ascii") as f:
        fields = f.read().split()
    busy = max(float(fields[0]), int(fields[3].split("/")[0]) - 1.0, 0.0)
    busy *= min(1.0, cores / max(1, os.cpu_count() or 1))
    return max(1, min(cores, int(cores - busy + 0.5)))


def measure(cases: Cases, reps: int, cores: int) -> dict[str, dict[str, float]]:
    ways = {"in-process": lambda: ["--workers", "1"], f"default ({cores} cores)": lambda: [],
            "load-following": lambda: ["--workers", str(load_following(cores))]}
    out: dict[str, dict[str, float]] = {}
    for case in ("plan", "compact", "write"):
        samples: dict[str, list[float]] = {w: [] for w in ways}
        for _ in range(reps):
            for way, flag in ways.items():
                cmd, before = cases.command(case, flag())
                if before:
                    before()
                samples[way].append(_run(cmd))
        out[case] = {w: statistics.median(v) for w, v in samples.items()}
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--manifests", type=int, default=100)
    p.add_argument("--files", type=int, default=1000)
    p.add_argument("--compact-files", type=int, default=80)
    p.add_argument("--rows", type=int, default=25_000)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    from icectl.command_files import usable_cores

    cores = usable_cores()
    root = tempfile.mkdtemp(prefix="load-bench-")
    results: dict[str, Any] = {"cores": cores, "phases": {}}
    try:
        cases = Cases(root, args)
        for phase, burners in (("machine's load", 0), ("CPU burner", 2 * cores)):
            procs = [multiprocessing.Process(target=_burn, daemon=True) for _ in range(burners)]
            for pr in procs:
                pr.start()
            try:
                time.sleep(2 if burners else 0)
                free = load_following(cores)
                r = measure(cases, args.reps, cores)
                results["phases"][phase] = {"burners": burners, "load-following-at-start": free,
                                            "load1-at-end": os.getloadavg()[0], "medians": r}
                print(json.dumps({phase: results["phases"][phase]}), file=sys.stderr, flush=True)
            finally:
                for pr in procs:
                    pr.terminate()
                for pr in procs:
                    pr.join()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    for phase, r in results["phases"].items():
        print(f"{phase}: {r['burners']} burners, load-following workers {r['load-following-at-start']}, "
              f"load {r['load1-at-end']:.1f} at the end")
        for case, m in r["medians"].items():
            base = m["in-process"]
            cells = ", ".join(f"{w} {s:.2f} s ({s / base:.2f}x)" for w, s in m.items())
            print(f"  {case:8s} {cells}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
