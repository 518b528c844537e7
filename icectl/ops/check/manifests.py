"""Reading manifest lists and manifests for the check, each file once, and the checks that
need only one manifest at a time (length, counts, content, partition tuples)."""

from __future__ import annotations

import uuid as _uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Iterable

from icectl.errors import CorruptMetadata, IcectlError, NotFound
from icectl.io.manifest import records as avro
from icectl.io.storage.files import FileIO
from icectl.ops.check.model import Problems
from icectl.spec.manifests import (
    ADDED, DATA, DELETED, MANIFEST_DATA, MANIFEST_DELETES, POSITION_DELETES,
    DataFile, ManifestFile,
)
from icectl.spec.metadata import TableMetadata
from icectl.spec.partitioning import PartitionSpec
from icectl.spec.schema import Schema
from icectl.spec.types import DecimalType, FixedType, IcebergType, PrimitiveType, StructType

__all__ = ["ManifestFacts", "read_lists", "read_manifests", "TOTALS"]

# summary total key -> what it sums over a snapshot's live entries
TOTALS = ("total-data-files", "total-records", "total-delete-files", "total-position-deletes",
          "total-equality-deletes", "total-files-size")


@dataclass
class ManifestFacts:
    """What the check keeps of one manifest after reading it once."""

    manifest: ManifestFile
    entries: int = 0
    files: list[int] = field(default_factory=lambda: [0, 0, 0])  # by status
    rows: list[int] = field(default_factory=lambda: [0, 0, 0])
    live: list[DataFile] = field(default_factory=list)
    live_seqs: list[int] = field(default_factory=list)  # the data sequence number of each live file
    totals: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TOTALS, 0))
    # ADDED and DELETED entries by the snapshot that made the change: (status, file)
    changes: dict[int, list[tuple[int, DataFile]]] = field(default_factory=dict)
    # per entry snapshot id: (highest data sequence number, its file), (highest file seq, its file)
    seqs: dict[int | None, list[tuple[int, str] | None]] = field(default_factory=dict)


# ------------------------------------------------------------------------------------------------
# Manifest lists


def read_lists(io: FileIO, md: TableMetadata, problems: Problems, workers: int
               ) -> tuple[dict[int, list[ManifestFile]], int]:
    """Each snapshot's manifests (snapshot id -> list entries); snapshots whose list cannot be
    read are left out (and reported). Also returns how many manifest lists were read."""
    paths = list(dict.fromkeys(s.manifest_list for s in md.snapshots if s.manifest_list))

    def load(path: str) -> tuple[str, list[ManifestFile] | None, str | None, str | None]:
        try:
            return path, avro.load_manifest_list(io, path, md.format_version), None, None
        except NotFound:
            return path, None, "manifest-list-missing", "the manifest list does not exist"
        except CorruptMetadata as e:
            # (the problem is reported where it is: the path need not be said twice)
            return path, None, "manifest-list-unreadable", \
                f"cannot be read: {str(e).removeprefix(f'manifest list {path}: ')}"

    lists: dict[str, list[ManifestFile] | None] = {}
    for path, got, code, msg in _map(load, paths, workers):
        lists[path] = got
        if code is not None:
            users = [str(s.snapshot_id) for s in md.snapshots if s.manifest_list == path]
            problems.error(code, path, f"{msg} (snapshot {', '.join(users)})")
    out: dict[int, list[ManifestFile]] = {}
    for s in md.snapshots:
        if s.manifest_list:
            if lists.get(s.manifest_list) is not None:
                out[s.snapshot_id] = lists[s.manifest_list]
        else:  # v1 inline manifest paths: no list entry, nothing to inherit but sequence number 0
            out[s.snapshot_id] = [ManifestFile(manifest_path=p, manifest_length=-1, partition_spec_id=-1,
                                               added_snapshot_id=None) for p in s.manifests or ()]
    return out, sum(1 for v in lists.values() if v is not None)


# ------------------------------------------------------------------------------------------------
# Manifests


def read_manifests(io: FileIO, md: TableMetadata, manifests: Iterable[ManifestFile], problems: Problems,
                   workers: int) -> dict[str, ManifestFacts]:
    """Read each manifest once (the first list entry naming a path stands for all) and check
    what one manifest can tell. Manifests that cannot be read are reported and left out."""
    unique: dict[str, ManifestFile] = {}
    for m in manifests:
        unique.setdefault(m.manifest_path, m)
    specs = md.specs_by_id()

    def load(m: ManifestFile) -> tuple[ManifestFile, Any, int]:
        try:
            data = io.read(m.manifest_path)
        except NotFound:
            return m, ("manifest-missing", "the manifest does not exist"), -1
        inline = m.manifest_length < 0
        try:
            # Position delete files name their data file through file_path bounds: keep the
            # metrics of delete manifests only.
            meta, entries = avro.read_manifest_with_metadata(
                data, None if inline else m, include_stats=inline or m.content == MANIFEST_DELETES)
        except IcectlError as e:
            return m, ("manifest-unreadable", f"cannot be read: {e}"), len(data)
        return m, (meta, entries), len(data)

    ptypes: dict[int, StructType] = {sid: _partition_type(md, spec) for sid, spec in specs.items()}
    out: dict[str, ManifestFacts] = {}
    for m, got, length in _map(load, list(unique.values()), workers):
        if m.manifest_length >= 0 and length >= 0 and length != m.manifest_length:
            problems.error("manifest-length-mismatch", m.manifest_path,
                           f"is {length} bytes; the manifest list records {m.manifest_length}")
        if isinstance(got[0], str):
            problems.error(got[0], m.manifest_path, got[1])
            continue
        meta, entries = got
        if m.manifest_length < 0:  # inline v1 manifest: take the spec id from the file
            try:
                m = ManifestFile(m.manifest_path, -1, int(meta.get("partition-spec-id", 0)),
                                 content=avro.manifest_content_of(meta))
            except ValueError:
                m = ManifestFile(m.manifest_path, -1, 0)
        out[m.manifest_path] = _facts(m, entries, ptypes.get(m.partition_spec_id), problems)
    return out


def _facts(m: ManifestFile, entries: list, ptype: StructType | None, problems: Problems) -> ManifestFacts:
    where = m.manifest_path
    facts = ManifestFacts(m, entries=len(entries))
    if ptype is None:
        problems.error("manifest-spec-missing", where, f"partition spec {m.partition_spec_id} is not in the table")
    wrong_content = None
    bad_arity = None
    bad_types: dict[str, str] = {}
    for e in entries:
        f = e.data_file
        facts.files[e.status] += 1
        facts.rows[e.status] += f.record_count
        if (f.content == DATA) != (m.content == MANIFEST_DATA) and wrong_content is None:
            wrong_content = f
        if ptype is not None:
            if len(f.partition) != len(ptype.fields()):
                bad_arity = bad_arity or f
            else:
                for pf, v in zip(ptype.fields(), f.partition):
                    if pf.name not in bad_types and not _fits(pf.type, v):
                        bad_types[pf.name] = f"{f.file_path} has {v!r} for {pf.name} ({pf.type})"
        if e.status in (ADDED, DELETED):
            facts.changes.setdefault(e.snapshot_id, []).append((e.status, f))
        if e.status != DELETED:
            facts.live.append(f)
            facts.live_seqs.append(e.sequence_number or 0)
            _add_totals(facts.totals, f)
        _note_seqs(facts.seqs, e.snapshot_id, e.sequence_number, e.file_sequence_number, f.file_path)
    _check_counts(m, facts, problems)
    if wrong_content is not None:
        kind = "data" if m.content == MANIFEST_DATA else "delete"
        problems.error("manifest-content-mismatch", where,
                       f"a {kind} manifest lists {wrong_content.content_name} file {wrong_content.file_path}")
    if bad_arity is not None and ptype is not None:
        problems.error("partition-arity-mismatch", where,
                       f"{bad_arity.file_path} has {len(bad_arity.partition)} partition values; spec "
                       f"{m.partition_spec_id} has {len(ptype.fields())} fields")
    for name, msg in bad_types.items():
        problems.error("partition-type-mismatch", where, msg)
    return facts


def _add_totals(t: dict[str, int], f: DataFile) -> None:
    t["total-files-size"] += f.counted_size_in_bytes
    if f.content == DATA:
        t["total-data-files"] += 1
        t["total-records"] += f.record_count
    else:
        t["total-delete-files"] += 1
        key = "total-position-deletes" if f.content == POSITION_DELETES else "total-equality-deletes"
        t[key] += f.record_count


def _note_seqs(seqs: dict, snapshot_id: int | None, data_seq: int | None, file_seq: int | None,
               path: str) -> None:
    slot = seqs.setdefault(snapshot_id, [None, None])
    for i, value in ((0, data_seq), (1, file_seq)):
        if value is not None and (slot[i] is None or value > slot[i][0]):
            slot[i] = (value, path)


def _check_counts(m: ManifestFile, facts: ManifestFacts, problems: Problems) -> None:
    if m.manifest_length < 0:
        return
    recorded = {
        "added-files-count": (m.added_files_count, facts.files[ADDED]),
        "existing-files-count": (m.existing_files_count, facts.files[0]),
        "deleted-files-count": (m.deleted_files_count, facts.files[DELETED]),
        "added-rows-count": (m.added_rows_count, facts.rows[ADDED]),
        "existing-rows-count": (m.existing_rows_count, facts.rows[0]),
        "deleted-rows-count": (m.deleted_rows_count, facts.rows[DELETED]),
    }
    wrong = [f"{k} {have} (entries: {real})" for k, (have, real) in recorded.items()
             if have is not None and have != real]
    if wrong:
        problems.error("manifest-counts-mismatch", m.manifest_path,
                       "the manifest list records " + ", ".join(wrong))


# ------------------------------------------------------------------------------------------------
# Partition tuples


def _partition_type(md: TableMetadata, spec: PartitionSpec) -> StructType:
    """The spec's partition type, with each source column taken from the newest schema that has it."""
    schemas = sorted(md.schemas, key=lambda s: s.schema_id != md.current_schema_id)
    fields = []
    for pf in spec.fields:
        owner = next((s for s in schemas if s.find_field_or_none(pf.source_id) is not None), None)
        single = PartitionSpec(spec.spec_id, (pf,))
        fields.extend(single.partition_type(owner or Schema(())).fields())
    return StructType(fields)


_INT_RANGE = {"int": 31, "date": 31}
_LONG_NAMES = ("long", "time", "timestamp", "timestamptz", "timestamp_ns", "timestamptz_ns")


def _fits(t: IcebergType, v: Any) -> bool:
    """Whether a partition value has the internal form of its field's type."""
    if v is None or not isinstance(t, PrimitiveType):
        return True
    if isinstance(t, DecimalType):
        if not isinstance(v, Decimal) or not v.is_finite():
            return False
        digits = v.as_tuple()
        return -digits.exponent == t.scale and len(digits.digits) <= max(t.precision, 1)
    if isinstance(t, FixedType):
        return isinstance(v, bytes) and len(v) == t.length
    name = t.name
    if name == "boolean":
        return isinstance(v, bool)
    if name in _INT_RANGE or name in _LONG_NAMES:
        bits = _INT_RANGE.get(name, 63)
        return isinstance(v, int) and not isinstance(v, bool) and -(2 ** bits) <= v < 2 ** bits
    if name in ("float", "double"):
        return isinstance(v, float)
    if name == "string":
        return isinstance(v, str)
    if name == "uuid":
        return isinstance(v, _uuid.UUID)
    if name == "binary":
        return isinstance(v, bytes)
    if name == "unknown":
        return False
    return True


# ------------------------------------------------------------------------------------------------


def _map(fn, items: list, workers: int):
    if workers <= 1 or len(items) <= 1:
        for item in items:
            yield fn(item)
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(fn, items)
