"""Snapshot summaries as the reference writes them (Java ``SnapshotSummary.Builder``).

A :class:`SummaryBuilder` counts the files a snapshot adds and removes, overall and per
partition, and :meth:`SummaryBuilder.build` gives the operation's own summary keys in the
reference's order (custom properties first, then counters written only when positive, then
``changed-partition-count`` and optional per-partition summaries). :func:`snapshot_summary`
completes it into what a snapshot stores: ``operation`` first, the counters, the running totals
carried from the previous snapshot of the target branch, and the environment keys.

Pure: no I/O. Counters follow the reference: a deletion vector (a position delete stored in
Puffin) counts as a delete file and a DV, not as a position delete file, and its size is its
blob's ``content_size_in_bytes``.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from icectl.spec.manifests import DATA, EQUALITY_DELETES, MANIFEST_DATA, POSITION_DELETES, DataFile, ManifestFile
from icectl.spec.properties import PARTITION_SUMMARY_LIMIT, PARTITION_SUMMARY_LIMIT_DEFAULT, property_int
from icectl.spec.snapshots import carry_totals

__all__ = [
    "SummaryBuilder", "snapshot_summary", "COUNTER_KEYS", "CHANGED_PARTITION_COUNT",
    "PARTITION_SUMMARIES_INCLUDED", "PARTITION_PREFIX", "PARTITION_SUMMARY_LIMIT",
]

ADDED_DATA_FILES = "added-data-files"
DELETED_DATA_FILES = "deleted-data-files"
ADDED_EQ_DELETE_FILES = "added-equality-delete-files"
REMOVED_EQ_DELETE_FILES = "removed-equality-delete-files"
ADDED_POS_DELETE_FILES = "added-position-delete-files"
REMOVED_POS_DELETE_FILES = "removed-position-delete-files"
ADDED_DELETE_FILES = "added-delete-files"
REMOVED_DELETE_FILES = "removed-delete-files"
ADDED_DVS = "added-dvs"
REMOVED_DVS = "removed-dvs"
ADDED_RECORDS = "added-records"
DELETED_RECORDS = "deleted-records"
ADDED_FILES_SIZE = "added-files-size"
REMOVED_FILES_SIZE = "removed-files-size"
ADDED_POS_DELETES = "added-position-deletes"
REMOVED_POS_DELETES = "removed-position-deletes"
ADDED_EQ_DELETES = "added-equality-deletes"
REMOVED_EQ_DELETES = "removed-equality-deletes"
DELETED_DUPLICATE_FILES = "deleted-duplicate-files"
CHANGED_PARTITION_COUNT = "changed-partition-count"
PARTITION_SUMMARIES_INCLUDED = "partition-summaries-included"
PARTITION_PREFIX = "partitions."

# The counters in the order the reference writes them; the last six only while sizes and
# delete counts are trusted (a whole manifest added without its files makes them unknown).
COUNTER_KEYS = (
    ADDED_DATA_FILES, DELETED_DATA_FILES, ADDED_EQ_DELETE_FILES, REMOVED_EQ_DELETE_FILES,
    ADDED_POS_DELETE_FILES, REMOVED_POS_DELETE_FILES, ADDED_DELETE_FILES, REMOVED_DELETE_FILES,
    ADDED_DVS, REMOVED_DVS, ADDED_RECORDS, DELETED_RECORDS,
    ADDED_FILES_SIZE, REMOVED_FILES_SIZE, ADDED_POS_DELETES, REMOVED_POS_DELETES,
    ADDED_EQ_DELETES, REMOVED_EQ_DELETES,
)
_SIZE_AND_DELETE_KEYS = frozenset(COUNTER_KEYS[12:])


class _Counters:
    """Counters for one scope (the whole snapshot or one partition)."""

    __slots__ = ("values", "trust_sizes")

    def __init__(self) -> None:
        self.values: dict[str, int] = dict.fromkeys(COUNTER_KEYS, 0)
        self.trust_sizes = True

    def file(self, f: DataFile, added: bool) -> None:
        v = self.values
        if added:
            files, eq_files, pos_files, del_files, dvs, records, size, pos, eq = (
                ADDED_DATA_FILES, ADDED_EQ_DELETE_FILES, ADDED_POS_DELETE_FILES,
                ADDED_DELETE_FILES, ADDED_DVS, ADDED_RECORDS, ADDED_FILES_SIZE,
                ADDED_POS_DELETES, ADDED_EQ_DELETES)
        else:
            files, eq_files, pos_files, del_files, dvs, records, size, pos, eq = (
                DELETED_DATA_FILES, REMOVED_EQ_DELETE_FILES, REMOVED_POS_DELETE_FILES,
                REMOVED_DELETE_FILES, REMOVED_DVS, DELETED_RECORDS, REMOVED_FILES_SIZE,
                REMOVED_POS_DELETES, REMOVED_EQ_DELETES)
        v[size] += f.counted_size_in_bytes
        if f.content == DATA:
            v[files] += 1
            v[records] += f.record_count
        elif f.content == POSITION_DELETES:
            if f.is_deletion_vector:
                v[dvs] += 1
            else:
                v[pos_files] += 1
            v[del_files] += 1
            v[pos] += f.record_count
        elif f.content == EQUALITY_DELETES:
            v[del_files] += 1
            v[eq_files] += 1
            v[eq] += f.record_count
        else:
            raise ValueError(f"unsupported file content {f.content}")

    def manifest(self, m: ManifestFile) -> None:
        v = self.values
        if m.content == MANIFEST_DATA:
            v[ADDED_DATA_FILES] += m.added_files_count or 0
            v[ADDED_RECORDS] += m.added_rows_count or 0
            v[DELETED_DATA_FILES] += m.deleted_files_count or 0
            v[DELETED_RECORDS] += m.deleted_rows_count or 0
        else:
            v[ADDED_DELETE_FILES] += m.added_files_count or 0
            v[REMOVED_DELETE_FILES] += m.deleted_files_count or 0
            self.trust_sizes = False

    def items(self) -> list[tuple[str, str]]:
        return [(k, str(n)) for k, n in self.values.items()
                if n > 0 and (self.trust_sizes or k not in _SIZE_AND_DELETE_KEYS)]


class SummaryBuilder:
    """Accumulates what a snapshot changes; :meth:`build` gives the operation's summary keys.

    ``partition_path`` arguments are the reference's partition paths (``a=1/b=x``; empty for an
    unpartitioned spec): one changed partition per distinct path. With a partition summary
    limit above zero and at most that many changed partitions, each gets a
    ``partitions.<path>`` entry and ``partition-summaries-included`` is ``true``.
    """

    def __init__(self, partition_summary_limit: int = 0) -> None:
        self.partition_summary_limit = partition_summary_limit
        self._properties: dict[str, str] = {}
        self._metrics = _Counters()
        self._partitions: dict[str, _Counters] = {}
        self._trust_partitions = True
        self._duplicate_deletes = 0

    @classmethod
    def for_table(cls, properties: Mapping[str, str]) -> "SummaryBuilder":
        """A builder with the table's partition summary limit (``write.summary.partition-limit``)."""
        return cls(property_int(properties, PARTITION_SUMMARY_LIMIT, PARTITION_SUMMARY_LIMIT_DEFAULT))

    def set(self, key: str, value: str) -> "SummaryBuilder":
        """A custom property, written first (e.g. a pipeline's ``--summary k=v``)."""
        self._properties[key] = value
        return self

    def added_file(self, f: DataFile, partition_path: str = "") -> "SummaryBuilder":
        self._metrics.file(f, True)
        self._partition(partition_path, f, True)
        return self

    def added_files(self, files: Iterable[tuple[DataFile, str]]) -> "SummaryBuilder":
        for f, path in files:
            self.added_file(f, path)
        return self

    def removed_file(self, f: DataFile, partition_path: str = "") -> "SummaryBuilder":
        self._metrics.file(f, False)
        self._partition(partition_path, f, False)
        return self

    def added_manifest(self, m: ManifestFile) -> "SummaryBuilder":
        """A whole manifest appended without its files: partition counts become unknown."""
        self._trust_partitions = False
        self._partitions.clear()
        self._metrics.manifest(m)
        return self

    def duplicate_deletes(self, n: int = 1) -> "SummaryBuilder":
        self._duplicate_deletes += n
        return self

    def _partition(self, path: str, f: DataFile, added: bool) -> None:
        if not self._trust_partitions:
            return
        counters = self._partitions.get(path)
        if counters is None:
            counters = self._partitions[path] = _Counters()
        counters.file(f, added)

    @property
    def changed_partitions(self) -> list[str]:
        return list(self._partitions)

    def build(self) -> dict[str, str]:
        out: dict[str, str] = dict(self._properties)
        out.update(self._metrics.items())
        if self._duplicate_deletes > 0:
            out[DELETED_DUPLICATE_FILES] = str(self._duplicate_deletes)
        if self._trust_partitions:
            out[CHANGED_PARTITION_COUNT] = str(len(self._partitions))
            partitioned = any(p for p in self._partitions)
            if partitioned and len(self._partitions) <= self.partition_summary_limit:
                out[PARTITION_SUMMARIES_INCLUDED] = "true"
                for path in sorted(self._partitions):
                    if path:
                        out[PARTITION_PREFIX + path] = ",".join(
                            f"{k}={v}" for k, v in self._partitions[path].items())
        return out


def snapshot_summary(
    operation: str,
    changes: Mapping[str, str],
    previous: Mapping[str, str] | None,
    *,
    has_previous: bool,
    environment: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The summary a snapshot stores: ``operation``, ``changes``, totals, environment keys.

    ``previous`` is the summary of the target branch's head (None or empty when it had none);
    ``has_previous`` is False when the branch has no head yet, so totals start from zero. A
    total is left out when the previous summary lacks it or the result would be negative.
    """
    out: dict[str, str] = {"operation": operation}
    out.update((k, v) for k, v in changes.items() if k != "operation")
    base = None if not has_previous else dict(previous or {})
    out = carry_totals(base, out)
    for k, v in (environment or {}).items():
        out.setdefault(k, v)
    return out
