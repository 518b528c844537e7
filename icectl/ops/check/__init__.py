"""``icectl check``: does a table follow the spec, and does every file it names exist as recorded?

Each problem has a stable code, a severity and a place (see README for the list). Errors are
what breaks readers or loses data; warnings are what the reference itself tolerates (a parent
snapshot that was expired, a delete file whose data file is gone, summary sizes that drifted).

The run reads the newest metadata (stepping back to an older version, and saying so, when the
newest cannot be read), every manifest list, and every manifest once however many snapshots
share it; with ``deep`` it also looks at every live data and delete file (without, at those
recorded outside the table location, which housekeeping of a landing directory can move away).
Nothing is written.
"""

from __future__ import annotations

from icectl.io.storage.files import FileIO
from icectl.ops.check.deep import dv_cardinality, verify_files
from icectl.ops.maintain.file_removal import TableBoundary
from icectl.ops.check.manifests import read_lists, read_manifests
from icectl.ops.check.metadata import (
    PropertyValidator,
    check_metadata,
    load_metadata,
    table_layer_property_problems,
)
from icectl.ops.check.model import CHECKED_KEYS, ERROR, WARNING, CheckResult, Problem, Problems
from icectl.ops.check.snapshots import check_sequence_numbers, check_snapshot
from icectl.spec.manifests import DATA

__all__ = ["check_table", "CheckResult", "Problem", "ERROR", "WARNING", "CHECKED_KEYS",
           "PropertyValidator", "table_layer_property_problems", "dv_cardinality"]


def check_table(location: str, *, deep: bool = False, workers: int = 8, io: FileIO | None = None,
                property_validator: PropertyValidator | None = None) -> CheckResult:
    """Check the table at ``location``. NotFound when there is no table there.

    ``property_validator`` judges the table properties (default: what the table layer's own
    readers of properties refuse).
    """
    io = io or FileIO()
    location = location.rstrip("/") or location
    problems = Problems()
    checked = dict.fromkeys(CHECKED_KEYS, 0)
    md, path = load_metadata(io, location, problems)
    if md is None:
        return CheckResult(location, None, deep, tuple(problems.items), checked)
    checked["metadata-files"] = 1
    checked["schemas"] = len(md.schemas)
    checked["snapshots"] = len(md.snapshots)
    check_metadata(md, path, problems, property_validator)

    lists, checked["manifest-lists"] = read_lists(io, md, problems, workers)
    facts = read_manifests(io, md, [m for ms in lists.values() for m in ms], problems, workers)
    checked["manifests"] = len(facts)
    checked["manifest-entries"] = sum(f.entries for f in facts.values())
    check_sequence_numbers(md, lists, facts, problems)
    reported: set = set()
    unpartitioned = {spec.spec_id for spec in md.specs if spec.is_unpartitioned()}
    for s in md.snapshots:
        manifests = lists.get(s.snapshot_id)
        if manifests is not None and all(m.manifest_path in facts for m in manifests):
            check_snapshot(s, manifests, facts, problems, reported, unpartitioned)

    live = {}
    for f in facts.values():
        for df in f.live:
            live.setdefault((df.file_path, df.content_offset), df)
    checked["data-files"] = len({p for (p, _), df in live.items() if df.content == DATA})
    checked["delete-files"] = len({p for (p, _), df in live.items() if df.content != DATA})
    if deep:
        checked["files-verified"] = verify_files(io, live.values(), problems, workers)
    else:
        # Files registered in place outside the table location are what moving or archiving
        # a landing directory breaks: they are verified even without ``deep``.
        boundary = TableBoundary(md.location or location)
        outside = [df for df in live.values() if not boundary.contains(df.file_path)]
        if outside:
            checked["files-verified"] = verify_files(io, outside, problems, workers)
    return CheckResult(location, path, deep, tuple(problems.items), checked)
