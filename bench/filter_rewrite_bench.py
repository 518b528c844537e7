"""The manifest filter's rewrite of a manifest listing a removed file: its entries' data_file
bytes copied (the default) against its decoded entries encoded again (``copy_entry_bytes``
off: the path a manifest in another layout takes, and what every rewrite did before), in the
same process, interleaved (which goes first alternates), median of the repetitions.

The table is the one ``bench/commit_bench.py`` builds (``bench/plan_bench.py``'s builder: one
day partition per manifest of 1,000 files, metrics for five columns as Spark writes them); one
file of the middle manifest is removed. What is timed is the rewrite proper
(``manifest_filter.carried_entries`` + ``mark_removed`` + the manifest's encoding), not the
read that found the file (the same in both) nor the file write.

    python bench/filter_rewrite_bench.py                       # 3 x 1,000 files, 21 repetitions
    python bench/filter_rewrite_bench.py --dir /tmp/frb --keep --reps 41
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from plan_bench import build_table  # noqa: E402

FILES = 1000


def main(argv: list[str] | None = None) -> int:
    from icectl.io.manifest import copy as manifest_copy
    from icectl.io.manifest import records as avro
    from icectl.table.commit.manifest_filter import carried_entries, mark_removed
    from icectl.table.commit.row_delta import RowDeltaProducer
    from icectl.table.table import Table

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reps", type=int, default=21)
    p.add_argument("--dir", default=None, help="work directory (default: a temporary one)")
    p.add_argument("--keep", action="store_true", help="keep (and reuse) the built table")
    args = p.parse_args(argv)
    work = args.dir or tempfile.mkdtemp(prefix="filterbench-")
    location = os.path.join(work, "t")
    try:
        if not os.path.exists(os.path.join(location, "metadata")):
            build_table(location, 3, FILES)
        table = Table.load(location)
        snap = table.metadata.current_snapshot()
        m = avro.load_manifest_list(table.io, snap.manifest_list)[1]
        producer = RowDeltaProducer(table, snap.snapshot_id)
        entries = producer.manifest_entries(m)
        victim = entries[len(entries) // 3].data_file.file_path
        gone = [e.data_file.file_path == victim for e in entries]
        layout, metadata = producer.layout(table.metadata, m.partition_spec_id, m.content)

        def rewrite(copy_bytes: bool) -> bytes:
            producer.copy_entry_bytes = copy_bytes
            c = mark_removed(carried_entries(producer, table.metadata, m, entries), gone, 1)
            return manifest_copy.write_carried(layout, metadata, c)

        rewrite(True)  # warm both (the decoders are compiled once)
        rewrite(False)
        times: dict[bool, list[float]] = {True: [], False: []}
        for i in range(args.reps):
            for copy_bytes in ((True, False) if i % 2 == 0 else (False, True)):
                began = time.perf_counter()
                rewrite(copy_bytes)
                times[copy_bytes].append(time.perf_counter() - began)
        copy, encode = statistics.median(times[True]), statistics.median(times[False])
        print(f"rewrite of a {len(entries):,}-entry manifest removing one file, median of {args.reps}: "
              f"byte copy {copy * 1000:.1f} ms, entries encoded {encode * 1000:.1f} ms "
              f"(x{encode / copy:.2f})")
        if hasattr(os, "getloadavg"):
            print("load average %.1f / %.1f / %.1f on %d cores" % (*os.getloadavg(), os.cpu_count() or 0))
    finally:
        if not args.keep and args.dir is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
