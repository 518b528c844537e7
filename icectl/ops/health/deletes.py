"""The row-level deletes dimension: what merge-on-read costs a reader of the snapshot.

Which delete files apply to which data file is the planner's rule
(:class:`icectl.table.delete_index.DeleteIndex`, with the equality-key statistics of each data
file); dangling delete files are those :func:`icectl.table.delete_index.is_dangling` says apply to
no live data file (the rule ``compact --deletes`` removes them by).

* ``delete-files-per-data-file``: delete files applying to a data file, averaged over the live
  data files;
* ``deleted-rows``: rows the position delete files and deletion vectors delete (their record
  counts); ``deleted-row-share``: those over the data files' records. Equality deletes delete an
  unknown number of rows: their records are counted apart (``equality-delete-records``);
* ``read-amplification``: bytes a full merge-on-read scan reads -- every data file, and every
  delete file once for each data file it applies to (a deletion vector: its blob) -- per live
  byte, the data bytes times the share of rows not deleted.
"""

from __future__ import annotations

from typing import Any, Callable

from icectl.ops.health.collect import TableFacts
from icectl.ops.health import fixes
from icectl.ops.health.model import DUE, Dimension, Effect, Verdict
from icectl.ops.health.policy import Policy
from icectl.spec.manifests import EQUALITY_DELETES
from icectl.table.delete_index import DataStats, DeleteIndex, DeleteRef, LiveDataFiles, is_dangling

__all__ = ["deletes_dimension", "DeleteCompactionForecast"]

# (dangling delete files removed, delete files rewritten, files written) of ``compact --deletes``
DeleteCompactionForecast = Callable[[], "tuple[int, int, int]"]


def _unpartitioned(facts: TableFacts) -> set[int]:
    return {s.spec_id for s in facts.md.specs if s.is_unpartitioned()}


def _applied(facts: TableFacts, refs: list[DeleteRef]) -> tuple[int, int, int, int]:
    """(data files with deletes, delete files applied summed over data files, their scan bytes
    summed likewise, the most applied to one data file)."""
    schema = facts.md.schema

    def field_type(fid: int) -> Any:
        f = schema.find_field_or_none(fid)
        return f.type if f is not None else None

    index = DeleteIndex(refs, _unpartitioned(facts), field_type)
    eq_ids = facts.equality_ids
    with_deletes = applied = applied_bytes = most = 0
    for (m, mc, i), f in zip(facts.live_data(), facts.files):
        seq = mc.data_sequence_number[i]
        stats = DataStats.from_columns(mc, i, eq_ids) if eq_ids else None
        found = index.for_data_file(mc.file_path[i], m.partition_spec_id, mc.partition_tuple(i),
                                    seq if seq is not None else 0, stats)
        f.deletes = found  # what compaction's rules weigh (the data-files forecast)
        if found:
            with_deletes += 1
            applied += len(found)
            applied_bytes += sum(d.scan_size for d in found)
            most = max(most, len(found))
    return with_deletes, applied, applied_bytes, most


def _dangling(facts: TableFacts, refs: list[DeleteRef]) -> list[DeleteRef]:
    live = LiveDataFiles()
    for m, mc, i in facts.live_data():
        live.add(m.partition_spec_id, mc.partition_tuple(i), mc.file_path[i], mc.data_sequence_number[i])
    unpartitioned = _unpartitioned(facts)
    return [d for d in refs if is_dangling(d, d.data_sequence_number, live, unpartitioned)]


def deletes_dimension(facts: TableFacts, policy: Policy, location: str,
                      forecast: DeleteCompactionForecast) -> Dimension:
    refs = [DeleteRef.from_columns(mc, i, m.partition_spec_id, m.manifest_path)
            for m, mc, i in facts.live_deletes()]
    data_files = len(facts.data_sizes)
    data_bytes = sum(facts.data_sizes)
    records = sum(p.records for p in facts.partitions.values())
    eq = [d for d in refs if d.content == EQUALITY_DELETES]
    pos = [d for d in refs if d.content != EQUALITY_DELETES]
    dvs = [d for d in pos if d.is_dv]
    with_deletes, applied, applied_bytes, most = _applied(facts, refs) if refs else (0, 0, 0, 0)
    dangling = _dangling(facts, refs) if refs else []
    deleted = sum(d.record_count for d in pos)
    share = round(min(1.0, deleted / records), 6) if records else 0.0
    live_bytes = data_bytes * (1 - share)
    amplification = round((data_bytes + applied_bytes) / live_bytes, 6) if live_bytes > 0 else None
    per_file = round(applied / data_files, 6) if data_files else 0.0
    figures: dict[str, Any] = {
        "delete-files": len(refs),
        "delete-bytes": sum(d.file_size_in_bytes for d in refs),
        "position-delete-files": len(pos) - len(dvs),
        "deletion-vectors": len(dvs),
        "equality-delete-files": len(eq),
        "position-delete-records": deleted,
        "equality-delete-records": sum(d.record_count for d in eq),
        "data-files-with-deletes": with_deletes,
        "delete-files-per-data-file": per_file,
        "max-delete-files-per-data-file": most,
        "deleted-rows": deleted,
        "deleted-row-share": share,
        "read-amplification": amplification,
        "bytes-read-by-full-scan": data_bytes + applied_bytes,
        "dangling-delete-files": len(dangling),
        "dangling-delete-bytes": sum(d.file_size_in_bytes for d in dangling),
    }
    verdicts = []
    over = []
    if per_file > policy["max-delete-files-per-data-file"]:
        over.append(("max-delete-files-per-data-file",
                     f"{per_file:.2f} delete files apply to each data file on average (at most {most})"))
    if share > policy["max-deleted-row-share"]:
        over.append(("max-deleted-row-share", f"delete files delete {share:.0%} of the data files' rows"))
    if amplification is not None and amplification > policy["max-read-amplification"]:
        over.append(("max-read-amplification",
                     f"a full read reads {amplification:.2f} bytes per live byte"))
    if over and with_deletes:
        verdicts.append(Verdict(
            "deletes", "merge-on-read-cost", DUE,
            "; ".join(text for _, text in over) + f" ({with_deletes} of {data_files} data files have deletes)",
            over[0][0], fixes.compact_deletes_applied(location),
            (Effect("data-files-with-deletes", "files", with_deletes, 0),
             Effect("delete-files-per-data-file", "files", per_file, 0.0),
             Effect("read-amplification", "ratio", amplification, 1.0))))
    if len(dangling) > policy["max-dangling-delete-files"]:
        removed, rewritten, written = forecast()
        verdicts.append(Verdict(
            "deletes", "dangling-deletes", DUE,
            f"{len(dangling)} delete file(s) ({figures['dangling-delete-bytes']} bytes) apply to no live data file",
            "max-dangling-delete-files", fixes.compact_delete_files(location),
            (Effect("dangling-delete-files", "files", len(dangling), 0),
             Effect("delete-files", "files", len(refs), len(refs) - removed - rewritten + written))))
    return Dimension("deletes", figures, tuple(verdicts))
