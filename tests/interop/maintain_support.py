"""Tables that need maintenance, and what `icectl maintain` did to them, measured from outside.

A table here has many small data files (one append per snapshot, two partitions), merge-on-read
deletes, many snapshots and manifests, and an orphan file older than the orphans cut-off. The
measures are taken as a user would: `icectl inspect` views for the current snapshot and the
files on disk for the bytes freed, never through the code that `maintain` runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

from clirun import icectl

ORPHAN_AGE_S = 5 * 86400  # the orphan file's age: older than the orphans cut-off (3 days)


def ok(*args: Any) -> str:
    r = icectl(*map(str, args))
    assert r.returncode == 0, (args, r.returncode, r.stderr)
    return r.stdout


def build_table(root: Path, *, appends: int = 12, rows: int = 50, deletes: bool = True,
                orphan: bool = True) -> Path:
    """A table at root/db/t: ``appends`` snapshots of ``rows`` rows each over partitions a and b,
    then two merge-on-read deletes; an orphan file ``data/stray.parquet`` dated ORPHAN_AGE_S ago."""
    loc = root / "db" / "t"
    ok("create", loc, "--schema", "id long, cat string, v double", "--partition", "cat")
    for i in range(appends):
        src = root / f"in{i}.csv"
        src.write_text("id,cat,v\n" + "".join(f"{n},{'ab'[n % 2]},{n / 4}\n"
                                              for n in range(i * rows, (i + 1) * rows)))
        ok("write", loc, src)
    if deletes:
        ok("delete", loc, "--filter", "id < 20", "--mode", "merge-on-read")
        ok("delete", loc, "--filter", "id >= 100 and id < 105", "--mode", "merge-on-read")
    if orphan:
        stray = loc / "data" / "stray.parquet"
        stray.write_bytes(b"not referenced by the table" * 10)
        old = time.time() - ORPHAN_AGE_S
        os.utime(stray, (old, old))
    return loc


def head_timestamp(loc: Path) -> int:
    """The current snapshot's timestamp: an expiry cut-off that expires every snapshot built so
    far but the current one, and none that a later commit makes."""
    snaps = json.loads(ok("inspect", "snapshots", loc, "--json"))
    return max(s["timestamp-ms"] for s in snaps)


def write_policy(path: Path, policy: dict[str, Any]) -> Path:
    path.write_text(json.dumps(policy))
    return path


def measures(loc: Path) -> dict[str, int]:
    """snapshots, data-files, delete-files and manifests of the current snapshot (inspect)."""
    files = json.loads(ok("inspect", "files", loc, "--json"))
    manifests = json.loads(ok("inspect", "manifests", loc, "--json"))
    snaps = json.loads(ok("inspect", "snapshots", loc, "--json"))
    return {"snapshots": len(snaps),
            "data-files": sum(1 for f in files if f["content"] == "data"),
            "delete-files": sum(1 for f in files if f["content"] != "data"),
            "manifests": len(manifests)}


def files_on_disk(loc: Path) -> dict[str, int]:
    """Every file under the table's directory: path -> size."""
    return {str(p): p.stat().st_size for p in loc.rglob("*") if p.is_file()}


def tree_state(loc: Path) -> dict[str, str]:
    """Every file and directory under ``loc`` with the hash of its bytes (byte-identical check)."""
    out = {}
    for p in sorted(loc.rglob("*")):
        out[str(p)] = "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def bytes_freed(before: dict[str, int], after: dict[str, int]) -> int:
    return sum(size for path, size in before.items() if path not in after)


def within(expected: float, actual: float, share: float = 0.10) -> bool:
    return abs(expected - actual) <= share * max(abs(actual), 1)


def scan_rows(loc: Path) -> list[str]:
    return sorted(ok("scan", loc, "--format", "csv").splitlines())
