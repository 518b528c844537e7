"""Rewriting a snapshot's manifests: entries clustered by partition into manifests of a target
size, committed as a ``replace`` snapshot that changes no file (the reference's
``RewriteManifests``, as Spark's ``rewrite_manifests`` procedure drives it).

For one partition spec (the table's default unless told), the data manifests and then the delete
manifests of the branch head written for that spec are selected. When a kind has a single
manifest that already fits the target size it is left alone. Otherwise the live entries of the
selected manifests are sorted by partition (nulls first), cut into ``ceil(total manifest bytes /
target)`` ranges that never split a partition, and each range is written as manifests rolled at
1.2 x the target (the reference allows its size estimate 20% slack). Entries keep their snapshot
ids and sequence numbers and become ``existing``; new manifests come first in the manifest list,
followed by the manifests kept as they were.

The summary carries the reference's counters ``manifests-created``, ``manifests-kept``,
``manifests-replaced`` and ``entries-processed``; totals are carried forward unchanged. As in
the summary Spark's procedure commits, ``entries-processed`` is 0: the reference writes the new
manifests first and hands them to the commit whole, and its commit counts only entries it
clusters itself (the number of entries rewritten is in the operation's result instead). The
rewrite is redone from the new head on every retry (a concurrent commit may have replaced the
manifests it read), so it never loses a concurrent change.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

from icectl.errors import ValidationError
from icectl.io.manifest import records as avro
from icectl.spec.manifests import EXISTING, MANIFEST_DATA, MANIFEST_DELETES, ManifestEntry, ManifestFile
from icectl.spec.metadata import TableMetadata
from icectl.spec.properties import property_int
from icectl.spec.snapshots import Snapshot
from icectl.spec.summary import SummaryBuilder
from icectl.table.commit.producer import MANIFEST_TARGET_SIZE, MANIFEST_TARGET_SIZE_DEFAULT, SnapshotProducer
from icectl.table.table import CommitAttempt, Table

__all__ = ["RewriteManifestsProducer", "ManifestRewritePlan", "plan_manifest_rewrite",
           "manifest_target_size", "SIZE_SLACK"]

SIZE_SLACK = 1.2  # manifests may exceed the target by this factor, as the reference allows
CREATED = "manifests-created"
KEPT = "manifests-kept"
REPLACED = "manifests-replaced"
PROCESSED = "entries-processed"


def manifest_target_size(md: TableMetadata) -> int:
    """``commit.manifest.target-size-bytes`` (8 MB by default)."""
    return max(1, property_int(md.properties, MANIFEST_TARGET_SIZE, MANIFEST_TARGET_SIZE_DEFAULT))


@dataclass(frozen=True)
class ManifestRewritePlan:
    """Which manifests of the head a rewrite replaces (per content kind), and how many target
    manifests each kind is cut into."""

    spec_id: int
    target_size: int
    rewritten: tuple[ManifestFile, ...]
    kept: tuple[ManifestFile, ...]
    target_counts: dict[int, int]  # content -> number of ranges

    @property
    def is_noop(self) -> bool:
        return not self.rewritten


def plan_manifest_rewrite(manifests: Sequence[ManifestFile], spec_id: int, target_size: int) -> ManifestRewritePlan:
    """The rewrite of ``manifests`` (a snapshot's manifest list) for ``spec_id``."""
    rewritten: list[ManifestFile] = []
    counts: dict[int, int] = {}
    for content in (MANIFEST_DATA, MANIFEST_DELETES):
        matching = [m for m in manifests if m.content == content and m.partition_spec_id == spec_id]
        if not matching:
            continue
        for m in matching:
            if m.added_files_count is None or m.existing_files_count is None or m.deleted_files_count is None:
                raise ValidationError(f"no file counts in manifest {m.manifest_path}: cannot rewrite it")
        total = sum(m.manifest_length for m in matching)
        n = max(1, -(-total // target_size))
        if n == 1 and len(matching) == 1:
            continue
        rewritten += matching
        counts[content] = n
    chosen = {m.manifest_path for m in rewritten}
    kept = tuple(m for m in manifests if m.manifest_path not in chosen)
    return ManifestRewritePlan(spec_id, target_size, tuple(rewritten), kept, counts)


def _null_first(value: Any) -> tuple:
    return (value is not None, value)


def partition_sort_key(entry: ManifestEntry) -> tuple:
    return tuple(_null_first(v) for v in entry.data_file.partition)


def cluster_ranges(entries: list[ManifestEntry], n: int) -> list[list[ManifestEntry]]:
    """Entries sorted by partition and cut into at most ``n`` ranges of about equal size, a
    partition never split across two ranges (the reference range-partitions by partition)."""
    ordered = sorted(entries, key=partition_sort_key)
    if n <= 1 or len(ordered) <= 1:
        return [ordered] if ordered else []
    per_range = -(-len(ordered) // n)
    ranges: list[list[ManifestEntry]] = [[]]
    last_key: tuple | None = None
    for e in ordered:
        key = partition_sort_key(e)
        current = ranges[-1]
        if current and len(current) >= per_range and key != last_key and len(ranges) < n:
            current = []
            ranges.append(current)
        current.append(e)
        last_key = key
    return ranges


class RewriteManifestsProducer(SnapshotProducer):
    """Commit a manifest rewrite (see the module docs)."""

    operation = "replace"

    def __init__(self, table: Table, *, spec_id: int | None = None, target_size: int | None = None,
                 entry_loader: Callable[[Sequence[ManifestFile]], list[list[ManifestEntry]]] | None = None,
                 **kwargs: Any) -> None:
        """``entry_loader``: reads every entry of each of the given manifests, in their order
        (default: here, one after the other); an engine's loader reads them in its tasks."""
        super().__init__(table, **kwargs)
        self.entry_loader = entry_loader
        md = table.metadata
        if spec_id is not None and spec_id not in {s.spec_id for s in md.specs}:
            raise ValidationError(f"the table has no partition spec with id {spec_id}")
        self.spec_id = md.default_spec_id if spec_id is None else spec_id
        if target_size is not None and target_size < 1:
            raise ValidationError(f"the target manifest size must be at least 1 byte (got {target_size})")
        self.target_size = target_size
        self.plan: ManifestRewritePlan | None = None
        self.created: list[ManifestFile] = []
        self.entries_processed = 0

    def make_plan(self, base: TableMetadata, parent: Snapshot | None) -> ManifestRewritePlan:
        target = self.target_size or manifest_target_size(base)
        return plan_manifest_rewrite(self.parent_manifests(base, parent), self.spec_id, target)

    def summary(self, base: TableMetadata) -> SummaryBuilder:
        b = SummaryBuilder()
        plan = self.plan
        b.set(CREATED, str(len(self.created)))
        b.set(KEPT, str(len(plan.kept) if plan else 0))
        b.set(REPLACED, str(len(plan.rewritten) if plan else 0))
        b.set(PROCESSED, "0")  # as the reference's procedure records it (module docs)
        return b

    def apply(self, base: TableMetadata, parent: Snapshot | None, attempt: CommitAttempt) -> list[ManifestFile]:
        plan = self.make_plan(base, parent)
        self.plan = plan
        self.created = []
        self.entries_processed = 0
        spec = base.spec_by_id(self.spec_id)
        limit = int(plan.target_size * SIZE_SLACK)
        for content in (MANIFEST_DATA, MANIFEST_DELETES):
            sources = [m for m in plan.rewritten if m.content == content]
            if not sources:
                continue
            live: list[ManifestEntry] = []
            loaded = (self.entry_loader(sources) if self.entry_loader is not None
                      else [avro.load_manifest(self.io, m) for m in sources])
            for entries in loaded:
                for e in entries:
                    if e.is_live:
                        live.append(replace(e, status=EXISTING))
            self.entries_processed += len(live)
            for group in cluster_ranges(live, plan.target_counts[content]):
                self.created += self.write_manifests(attempt, base, spec, group, content, target_size=limit)
        _check_counts(plan.rewritten, self.created)
        return self.created + list(plan.kept)


def _check_counts(replaced: Sequence[ManifestFile], created: Sequence[ManifestFile]) -> None:
    """The reference's guard: replaced and created manifests hold the same live files."""
    def live(ms: Sequence[ManifestFile]) -> int:
        return sum((m.added_files_count or 0) + (m.existing_files_count or 0) for m in ms)

    if live(replaced) != live(created):
        raise ValidationError(f"rewritten manifests would hold {live(created)} live file(s) instead of "
                              f"{live(replaced)}")
