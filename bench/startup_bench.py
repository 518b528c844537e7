"""Start-up benchmark: whole-process times of short icectl commands against pyiceberg's.

Builds a small table (icectl create + icectl write of a few rows, so it has a snapshot, a
partition spec and a sort order), then runs, interleaved (one round runs every command once, in
a shuffled order), N rounds of:

* ``icectl --help``, ``icectl --version``, ``icectl inspect table T``;
* ``pyiceberg --help``;
* a pyiceberg script printing the same table summary as ``icectl inspect table``:
  ``StaticTable.from_metadata(<current metadata file>)`` then location, uuid, format version,
  current snapshot, refs, schema, spec, sort order, totals and properties.

Each run is a fresh process (no TTY, output discarded); the medians and the ratios against the
targets (``icectl --help`` under half of ``pyiceberg --help``; ``inspect table`` under a third
of the pyiceberg script) are printed, with the commands used.

    python bench/startup_bench.py             # 21 rounds
    python bench/startup_bench.py --rounds 9 --json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PYICEBERG_SCRIPT = r"""
import sys
from pyiceberg.table import StaticTable

t = StaticTable.from_metadata(sys.argv[1])
md = t.metadata
cur = t.current_snapshot()
print("location", md.location)
print("metadata-file", sys.argv[1])
print("table-uuid", md.table_uuid)
print("format-version", md.format_version)
print("last-updated", md.last_updated_ms)
print("current-snapshot", cur.snapshot_id if cur else "none",
      cur.summary.operation.value if cur and cur.summary else "")
print("snapshots", len(md.snapshots))
print("refs", ", ".join(md.refs))
print("schema", t.schema())
print("partition-spec", t.spec())
print("sort-order", t.sort_order())
summary = cur.summary if cur else {}
for k in ("total-records", "total-data-files", "total-delete-files", "total-files-size"):
    print(k, summary.get(k) if summary else None)
for k, v in md.properties.items():
    print("property", k, v)
"""


def tool(name: str) -> list[str]:
    """The console script ``name`` beside this interpreter (as a user's venv has it)."""
    exe = Path(sys.executable).with_name(name)
    if not exe.exists():
        sys.exit(f"{exe} not found: install icectl with its test extras into this environment")
    return [str(exe)]


def build_table(root: str) -> tuple[str, str]:
    """A table with one snapshot; returns (location, current metadata file)."""
    loc = os.path.join(root, "wh", "db", "events")
    icectl = tool("icectl")
    subprocess.run(icectl + ["create", loc, "--schema", "id long not null, ts timestamptz, cat string",
                             "--partition", "days(ts), bucket(8, id)", "--sort-order", "id desc"],
                   check=True, capture_output=True)
    rows = os.path.join(root, "rows.csv")
    with open(rows, "w") as f:
        f.write("id,ts,cat\n" + "".join(f"{i},2024-01-0{1 + i % 3}T10:00:00Z,c{i % 5}\n" for i in range(50)))
    subprocess.run(icectl + ["write", loc, rows], check=True, capture_output=True)
    out = subprocess.run(icectl + ["inspect", "table", loc, "--json"], check=True, capture_output=True, text=True)
    return loc, json.loads(out.stdout)["metadata-file"]


def commands(loc: str, metadata_file: str) -> dict[str, list[str]]:
    icectl = tool("icectl")
    return {
        "icectl --help": icectl + ["--help"],
        "icectl --version": icectl + ["--version"],
        "icectl inspect table": icectl + ["inspect", "table", loc],
        "pyiceberg --help": tool("pyiceberg") + ["--help"],
        "pyiceberg script": [sys.executable, "-c", PYICEBERG_SCRIPT, metadata_file],
    }


def time_once(argv: list[str]) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    elapsed = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed ({r.returncode}): {r.stderr.decode()[-500:]}")
    return elapsed


def run(rounds: int, loc: str, metadata_file: str) -> dict[str, list[float]]:
    cmds = commands(loc, metadata_file)
    times: dict[str, list[float]] = {k: [] for k in cmds}
    for argv in cmds.values():  # warm the OS file cache once
        time_once(argv)
    rng = random.Random(1)
    for _ in range(rounds):
        order = list(cmds)
        rng.shuffle(order)
        for name in order:
            times[name].append(time_once(cmds[name]))
    return times


def report(times: dict[str, list[float]], rounds: int, as_json: bool) -> None:
    med = {k: statistics.median(v) for k, v in times.items()}
    ratios = {
        "icectl --help / pyiceberg --help": med["icectl --help"] / med["pyiceberg --help"],
        "icectl inspect table / pyiceberg script": med["icectl inspect table"] / med["pyiceberg script"],
    }
    targets = {"icectl --help / pyiceberg --help": 0.5, "icectl inspect table / pyiceberg script": 1 / 3}
    if as_json:
        print(json.dumps({"rounds": rounds, "medians-s": med, "ratios": ratios, "targets": targets}, indent=2))
        return
    print(f"whole-process medians over {rounds} interleaved rounds (load average {os.getloadavg()[0]:.1f})")
    for k, v in med.items():
        print(f"  {k:24s} {v * 1000:8.1f} ms   (min {min(times[k]) * 1000:.1f} ms)")
    for k, v in ratios.items():
        verdict = "meets" if v < targets[k] else "misses"
        print(f"  {k:42s} {v:5.2f}  ({verdict} the target < {targets[k]:.2f})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    root = tempfile.mkdtemp(prefix="startup-bench-")
    try:
        loc, metadata_file = build_table(root)
        report(run(args.rounds, loc, metadata_file), args.rounds, args.json)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
