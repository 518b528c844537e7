"""Checks across a snapshot's manifests: sequence numbers, summaries, and delete files that
must apply to live data files (dangling: :func:`icectl.table.delete_index.is_dangling`)."""

from __future__ import annotations

from collections import Counter
from typing import Mapping

from icectl.ops.check.manifests import TOTALS, ManifestFacts
from icectl.ops.check.model import Problems
from icectl.table.delete_index import LiveDataFiles, delete_target, is_dangling
from icectl.spec.manifests import ADDED, DATA, POSITION_DELETES, DataFile, ManifestFile
from icectl.spec.metadata import TableMetadata
from icectl.spec.snapshots import Snapshot
from icectl.spec.summary import COUNTER_KEYS, SummaryBuilder

__all__ = ["check_sequence_numbers", "check_snapshot"]

# Summary keys whose mismatch is only a warning: sizes are not tracked when the reference
# appends a whole manifest, so they can drift without anything being wrong with the data.
_SIZE_KEYS = frozenset({"added-files-size", "removed-files-size", "total-files-size"})
# Counters the reference always writes when they are above zero.
_ALWAYS_WRITTEN = ("added-data-files", "deleted-data-files", "added-records", "deleted-records",
                   "added-delete-files", "removed-delete-files")


def check_sequence_numbers(md: TableMetadata, lists: Mapping[int, list[ManifestFile]],
                           facts: Mapping[str, ManifestFacts], problems: Problems) -> None:
    """No manifest or entry has a sequence number above the snapshots it belongs to."""
    if md.format_version < 2:
        return
    lowest: dict[str, Snapshot] = {}  # manifest path -> the lowest-numbered snapshot listing it
    for s in md.snapshots:
        for m in lists.get(s.snapshot_id, ()):
            other = lowest.get(m.manifest_path)
            if other is None or s.sequence_number < other.sequence_number:
                lowest[m.manifest_path] = s
            if m.sequence_number is not None and m.sequence_number > s.sequence_number:
                problems.error("manifest-sequence-number-too-high", m.manifest_path,
                               f"sequence number {m.sequence_number} is above snapshot {s.snapshot_id}'s "
                               f"({s.sequence_number}), whose manifest list names it")
    for path, f in facts.items():
        owner = lowest.get(path)
        for sid, (data_max, file_max) in f.seqs.items():
            limits = [(owner.sequence_number, f"snapshot {owner.snapshot_id}, whose manifest list names it")] \
                if owner is not None else []
            own = md.snapshot_by_id(sid) if sid is not None else None
            if own is not None:
                limits.append((own.sequence_number, f"snapshot {sid}, which the entry names"))
            for code, what, top in (("data-sequence-number-too-high", "data", data_max),
                                    ("file-sequence-number-too-high", "file", file_max)):
                if top is None:
                    continue
                for limit, whose in limits:
                    if top[0] > limit:
                        problems.error(code, path, f"the entry of {top[1]} has {what} sequence number {top[0]}, "
                                                   f"above {whose} ({limit})")
                        break


def check_snapshot(s: Snapshot, manifests: list[ManifestFile], facts: Mapping[str, ManifestFacts],
                   problems: Problems, reported: set, unpartitioned_specs: set[int]) -> None:
    """Summary counters and totals against the entries; live data files listed once; one
    deletion vector per data file; no dangling delete file (``unpartitioned_specs``: the ids of
    the table's unpartitioned specs, whose equality deletes are global). Needs every manifest of
    the snapshot."""
    got = [facts[m.manifest_path] for m in manifests]
    _check_summary(s, got, problems)
    _check_deletes(s, got, problems, reported, unpartitioned_specs)


def _int(summary: Mapping[str, str], key: str) -> int | None:
    try:
        return int(summary[key])
    except (KeyError, ValueError):
        return None


def _check_summary(s: Snapshot, got: list[ManifestFacts], problems: Problems) -> None:
    summary = s.summary
    if not summary:
        return
    where = f"snapshot {s.snapshot_id}"
    builder = SummaryBuilder()
    for f in got:
        for status, df in f.changes.get(s.snapshot_id, ()):
            (builder.added_file if status == ADDED else builder.removed_file)(df)
    built = builder.build()
    expected: dict[str, int] = {k: int(built.get(k, "0")) for k in COUNTER_KEYS}
    for k in TOTALS:
        expected[k] = sum(f.totals[k] for f in got)
    for key, real in expected.items():
        if key in summary:
            have = _int(summary, key)
            if have is None:
                problems.error("summary-value-invalid", where, f"summary {key}={summary[key]!r} is not a number")
                continue
        elif real > 0 and key in _ALWAYS_WRITTEN:
            have = 0
        else:
            continue
        if have == real:
            continue
        total = key.startswith("total-")
        code = "summary-size-mismatch" if key in _SIZE_KEYS else \
            "summary-total-mismatch" if total else "summary-count-mismatch"
        shown = f"summary {key}={summary[key]}" if key in summary else f"summary has no {key}"
        where_from = "its live entries" if total else "the entries it added and removed"
        msg = f"{shown}, {where_from} give {real}"
        if key in _SIZE_KEYS:
            problems.warning(code, where, msg)
        else:
            problems.error(code, where, msg)


def _check_deletes(s: Snapshot, got: list[ManifestFacts], problems: Problems, reported: set,
                   unpartitioned_specs: set[int]) -> None:
    live: set[str] = set()
    deletes: list[tuple[DataFile, int]] = []
    for f in got:
        for df, seq in zip(f.live, f.live_seqs):
            if df.content != DATA:
                deletes.append((df, seq))
                continue
            if df.file_path in live and ("dup", df.file_path) not in reported:
                reported.add(("dup", df.file_path))
                problems.error("duplicate-data-file", df.file_path,
                               f"listed as live more than once in snapshot {s.snapshot_id}")
            live.add(df.file_path)
    if not deletes:
        return
    live_files = LiveDataFiles()  # what the dangling rule sees
    for f in got:
        for df, seq in zip(f.live, f.live_seqs):
            if df.content == DATA:
                live_files.add(df.spec_id, df.partition, df.file_path, seq)
    dvs: Counter = Counter()
    for df, seq in deletes:
        target = delete_target(df) if df.content == POSITION_DELETES else None
        if df.is_deletion_vector and target is not None:
            dvs[target] += 1
        key = ("dangling", df.file_path, df.content_offset, target)
        if key not in reported and is_dangling(df, seq, live_files, unpartitioned_specs):
            reported.add(key)
            problems.warning("dangling-delete", df.file_path,
                             _dangling_message(df, seq, target, live_files, unpartitioned_specs)
                             + f" in snapshot {s.snapshot_id}")
    for target, n in dvs.items():
        if n > 1 and ("dv", target) not in reported:
            reported.add(("dv", target))
            problems.error("duplicate-dv", target, f"has {n} deletion vectors in snapshot {s.snapshot_id}")


def _dangling_message(df: DataFile, seq: int, target: str | None, live: LiveDataFiles,
                      unpartitioned_specs: set[int]) -> str:
    """Why a dangling delete file applies to nothing (the case of ``is_dangling`` it meets)."""
    if target is not None:
        what = "deletion vector in" if df.is_deletion_vector else "position delete file"
        target_seq = live.sequence_number(target)
        if target_seq is None:
            return f"{what} names data file {target}, which is not live"
        return (f"{what} names data file {target}, which is newer than it (data sequence number "
                f"{target_seq} > {seq})")
    if df.content == POSITION_DELETES:
        return f"position delete file (data sequence number {seq}) applies to no live data file of its partition"
    where = "the table" if df.spec_id in unpartitioned_specs else "its partition"
    return f"equality delete file (data sequence number {seq}) has no older live data file in {where}"
