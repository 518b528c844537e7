"""Does the shape decoder (icectl/io/manifest/shapes.py) pay for itself? A merge with and
without it, same run, interleaved.

On the *big* table of ``bench/commit_bench.py`` (200 manifests x 1,000 files, merging on, as
built), times as whole processes, median of the repetitions, alternating which variant goes
first:

* the merging one-file delete (``delete_rows``, merge-on-read): it rewrites one manifest and
  merges all 200 (200,000 entries copied by their encoded bytes);
* the commit of a one-partition compaction (``commit_bench.py --child compact``), which merges
  the same way;

each with the shape patterns (``shapes``) and with the generated extents decoder alone
(``plain``: ``manifest_copy.shape_decoder`` replaced by the identity in the child). The table's
metadata directory is put back after every run; the persistent cache is bypassed.

    python bench/shapes_bench.py --reps 5 --dir /tmp/shapesbench --keep
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import commit_bench as cb  # noqa: E402

MANIFESTS = 200
VARIANTS = ("shapes", "plain")


def child(what: str, location: str, variant: str) -> None:
    if variant == "plain":
        from icectl.io.manifest import copy as manifest_copy

        manifest_copy.shape_decoder = lambda dec, widths=None: dec  # type: ignore[assignment]
    if what == "delete":
        from icectl.ops.delete.merge_on_read import delete_rows
        from icectl.table.table import Table

        r = delete_rows(Table.load(location), cb.icectl_filter(MANIFESTS), mode="merge-on-read")
        assert len(r.removed_data_files) == 1, r.removed_data_files
    else:
        cb.compact_commit(location, MANIFESTS)


def timed(what: str, location: str, variant: str) -> float:
    cmd = [sys.executable, os.path.abspath(__file__), "--child", what, location, variant]
    began = time.perf_counter()
    done = subprocess.run(cmd, env=cb.child_env(), capture_output=True, text=True)
    took = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"{what} ({variant}) failed: {done.stderr.strip()}")
    return took


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--dir", default=None, help="work directory (default: a temporary one)")
    p.add_argument("--keep", action="store_true", help="keep (and reuse) the built table")
    p.add_argument("--child", nargs=3, metavar=("WHAT", "LOCATION", "VARIANT"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child(*args.child)
        return 0
    root = args.dir or tempfile.mkdtemp(prefix="shapesbench-")
    location = os.path.join(root, "big")
    if not os.path.exists(os.path.join(location, "metadata")):
        cb.build(location, MANIFESTS, merge_off=False)
    template = cb.Template(location)
    times: dict[str, dict[str, list[float]]] = {v: {"delete": [], "compact": []} for v in VARIANTS}
    try:
        for i in range(args.reps):
            order = VARIANTS if i % 2 == 0 else VARIANTS[::-1]
            for what in ("delete", "compact"):
                for variant in order:
                    template.reset()
                    times[variant][what].append(timed(what, location, variant))
            print(f"rep {i + 1}: " + ", ".join(f"{v} {w} {times[v][w][-1]:.2f}s"
                                              for v in VARIANTS for w in ("delete", "compact")),
                  flush=True)
    finally:
        template.reset()
    med = {v: {w: statistics.median(xs) for w, xs in ws.items()} for v, ws in times.items()}
    out = {"reps": args.reps, "load-average": os.getloadavg(), "median-seconds": med,
           "plain-over-shapes": {w: med["plain"][w] / med["shapes"][w] for w in ("delete", "compact")}}
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
