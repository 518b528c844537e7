"""The orphans dimension (only when asked: it lists the table's location).

The listing and the reference set are those of ``icectl orphans``
(:func:`icectl.ops.maintain.orphans.find_orphan_files`, with its default cut-off of 3 days, so
files of commits still in flight are not counted); the bytes are the listed files' sizes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from icectl.ops.health import fixes
from icectl.ops.health.model import DUE, Dimension, Effect, Verdict
from icectl.ops.health.policy import Policy
from icectl.ops.maintain.orphans import DEFAULT_OLDER_THAN_MS, find_orphan_files

if TYPE_CHECKING:
    from icectl.table.table import Table

__all__ = ["orphans_dimension", "NOT_LISTED"]

NOT_LISTED = "the table's location was not listed (ask for it: listing can be slow)"


def orphans_dimension(table: Table, policy: Policy, now: int, list_files: bool,
                      workers: int = 8) -> Dimension:
    if not list_files:
        return Dimension("orphans", {}, skipped=NOT_LISTED)
    cutoff = now - DEFAULT_OLDER_THAN_MS
    found = find_orphan_files(table, older_than_ms=cutoff, workers=workers)
    sizes = []
    for p in found.orphan_files:
        try:
            sizes.append(table.io.info(p).size)
        except Exception:  # noqa: BLE001 - a file gone since the listing holds nothing
            sizes.append(0)
    n, total = len(found.orphan_files), sum(sizes)
    figures: dict[str, Any] = {"older-than-ms": cutoff, "listed-files": found.listed_files,
                               "referenced-files": found.referenced_files, "orphan-files": n,
                               "orphan-bytes": total}
    verdicts = []
    if n > policy["max-orphan-files"]:
        verdicts.append(Verdict(
            "orphans", "orphan-files", DUE,
            f"{n} file(s) ({total} bytes) older than 3 days under the table's location are "
            f"referenced by no metadata",
            "max-orphan-files", fixes.delete_orphans(table.location),
            (Effect("orphan-files", "files", n, 0), Effect("orphan-bytes", "bytes", total, 0))))
    return Dimension("orphans", figures, tuple(verdicts))
