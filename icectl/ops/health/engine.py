"""``table_health``: every dimension of one table, from its metadata only (no data file read)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Mapping, Sequence

from icectl.ops.health.collect import Progress, TableFacts, collect_facts
from icectl.ops.health.deletes import deletes_dimension
from icectl.ops.health.files import data_files_dimension, partitions_dimension
from icectl.ops.health.layout import layout_columns, layout_dimension
from icectl.ops.health.manifests import manifests_dimension
from icectl.ops.health.orphans import orphans_dimension
from icectl.ops.health.snapshots import snapshots_dimension
from icectl.ops.health.model import Dimension, HealthReport
from icectl.ops.health.policy import read_policy

if TYPE_CHECKING:
    from icectl.table.table import Table

__all__ = ["table_health", "DIMENSIONS"]

DIMENSIONS = ("data-files", "deletes", "manifests", "snapshots", "partitions", "layout", "orphans")


def _compaction_forecast(facts: TableFacts) -> "tuple[int, int] | None":
    """(data files rewritten, files written) of ``icectl compact`` with its defaults, by
    compaction's own rules on the files of each partition (files of older specs together, as
    the compaction planner groups them); the deletes dimension has attached their deletes."""
    from icectl.ops.maintain.compact_rules import forecast_compaction

    md = facts.md
    current = md.spec.spec_id
    groups = [p.files for p in facts.partitions.values() if p.spec_id == current and p.files]
    older = [f for p in facts.partitions.values() if p.spec_id != current for f in p.files]
    return forecast_compaction(groups + ([older] if older else []), md.properties)


def _delete_compaction_forecast(table: Table) -> "tuple[int, int, int]":
    """(dangling delete files removed, delete files merged, files they are merged into) of
    ``icectl compact --deletes`` with its defaults: its own dry run (nothing written; a merged
    group writes one file per target size, at least one)."""
    from icectl.ops.maintain.compact_deletes import compact_deletes

    r = compact_deletes(table, dry_run=True)
    written = max(r.groups, -(-r.rewritten_bytes // r.target_file_size)) if r.groups else 0
    return len(r.dangling_delete_files), len(r.rewritten_delete_files), written


def table_health(table: Table, *, columns: Sequence[str] | None = None, list_files: bool = False,
                 policy: Mapping[str, str] | None = None, workers: int | None = None,
                 progress: Progress | None = None, now_ms: int | None = None,
                 identifier: str | None = None) -> HealthReport:
    """The health of ``table``'s current snapshot.

    ``columns``: the layout dimension's columns (default: the sort order's); ``list_files``:
    also list the table's location for orphan files (can be slow on object stores);
    ``policy``: property keys to values that win over the table's properties (thresholds);
    ``progress(phase, done, total)`` is called as manifests are read."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    md = table.metadata
    pol = read_policy(md.properties, policy)
    snapshot = md.current_snapshot()
    layout_ids, chosen = layout_columns(md, columns)
    facts = collect_facts(table.io, md, snapshot, small_file_size=pol["small-file-size"],
                          layout_ids=layout_ids, workers=workers, progress=progress)
    location = table.location
    deletes = deletes_dimension(facts, pol, location, lambda: _delete_compaction_forecast(table))
    dims: list[Dimension] = [
        data_files_dimension(facts, pol, location, lambda: _compaction_forecast(facts)),
        deletes,
        manifests_dimension(facts, pol, location),
        snapshots_dimension(table.io, facts, pol, location, table.metadata_location, now, workers, progress),
        partitions_dimension(facts, pol),
        layout_dimension(facts, pol, location, chosen),
        orphans_dimension(table, pol, now, list_files),
    ]
    order = {name: i for i, name in enumerate(DIMENSIONS)}
    dims.sort(key=lambda d: order.get(d.name, len(order)))
    return HealthReport(table=location, metadata_file=table.metadata_location,
                        format_version=md.format_version,
                        snapshot_id=snapshot.snapshot_id if snapshot is not None else None,
                        generated_at_ms=now, policy=pol, dimensions=tuple(dims), identifier=identifier)
