"""Which delete files apply to a data file (the reference's ``DeleteFileIndex``).

With ``d`` the data file's data sequence number and ``D`` the delete file's:

* position deletes apply when ``D >= d``; equality deletes when ``D > d``;
* a deletion vector (v3, Puffin) applies to its ``referenced_data_file`` only, and when one
  applies, the other position deletes of that file are ignored;
* a position delete file naming one data file (``referenced_data_file``, or equal lower and
  upper ``file_path`` bounds) applies to that file only; the others to every data file of the
  same spec and partition;
* equality deletes written under an unpartitioned spec are global; the others match the same
  spec and partition. They are also pruned per data file with the equality columns' statistics:
  non-overlapping value ranges, or one side all null while the other has no nulls. On float
  and double keys NaN is in no bounds, yet a NaN key deletes NaN rows: ranges are compared only
  when one side is known to hold no NaN (Java compares them always), and a zero bound counts as
  both -0.0 and 0.0 (writers differ in which zero they record).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

from icectl.spec.partition_identity import partition_key
from icectl.spec.manifests import EQUALITY_DELETES, POSITION_DELETES, DataFile
from icectl.spec.reserved import DELETE_FILE_PATH_ID
from icectl.spec.types import DOUBLE, FLOAT, UUID, IcebergType, PrimitiveType
from icectl.spec.values import from_bytes

if TYPE_CHECKING:
    from icectl.io.manifest.columns import ManifestColumns

__all__ = ["DeleteRef", "DeleteIndex", "DELETE_FILE_PATH_ID", "targeted_path", "delete_target",
           "LiveDataFiles", "is_dangling"]


@dataclass(frozen=True)
class DeleteRef:
    """A live delete file as the planner attaches it to data files."""

    path: str
    content: int
    file_format: str
    record_count: int
    file_size_in_bytes: int
    data_sequence_number: int
    spec_id: int
    partition: tuple
    referenced_data_file: str | None = None
    content_offset: int | None = None
    content_size_in_bytes: int | None = None
    equality_ids: tuple[int, ...] | None = None
    manifest_path: str = ""
    # equality-field statistics (field id -> value), for pruning equality deletes
    lower_bounds: dict = field(default_factory=dict, compare=False, hash=False, repr=False)
    upper_bounds: dict = field(default_factory=dict, compare=False, hash=False, repr=False)
    null_counts: dict = field(default_factory=dict, compare=False, hash=False, repr=False)
    value_counts: dict = field(default_factory=dict, compare=False, hash=False, repr=False)
    nan_counts: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    @classmethod
    def from_data_file(cls, f: DataFile, data_sequence_number: int, manifest_path: str = "") -> "DeleteRef":
        """The reference to a delete file read by the record reader (``spec.manifests.DataFile``,
        its ``spec_id`` set from its manifest); equality-field statistics decoded lazily by
        :meth:`DeleteIndex._eq_may_apply` stay raw here, as the planner's columns keep them."""
        referenced = f.referenced_data_file if f.content == EQUALITY_DELETES else delete_target(f)
        return cls(
            path=f.file_path, content=f.content, file_format=f.file_format,
            record_count=f.record_count, file_size_in_bytes=f.file_size_in_bytes,
            data_sequence_number=data_sequence_number, spec_id=f.spec_id, partition=f.partition,
            referenced_data_file=referenced, content_offset=f.content_offset,
            content_size_in_bytes=f.content_size_in_bytes, equality_ids=f.equality_ids,
            manifest_path=manifest_path, lower_bounds=dict(f.lower_bounds or {}),
            upper_bounds=dict(f.upper_bounds or {}), null_counts=dict(f.null_value_counts or {}),
            value_counts=dict(f.value_counts or {}), nan_counts=dict(f.nan_value_counts or {}))

    @classmethod
    def from_columns(cls, mc: ManifestColumns, i: int, spec_id: int, manifest_path: str) -> "DeleteRef":
        """The reference to entry ``i`` of a delete manifest decoded column-wise (the planner's
        and health's path; the statistics decoded are those kept)."""
        lower: dict = {}
        upper: dict = {}
        nulls: dict = {}
        values: dict = {}
        nans: dict = {}
        for fid, st in mc.stats.items():
            lower[fid] = st.lower[i]
            upper[fid] = st.upper[i]
            nulls[fid] = st.null_counts[i]
            values[fid] = st.value_counts[i]
            if fid in mc.nan_decoded:
                nans[fid] = st.nan_counts[i]
        referenced = mc.referenced_data_file[i]
        content = mc.content[i]
        if content != EQUALITY_DELETES:
            path_stats = mc.stats.get(DELETE_FILE_PATH_ID)
            referenced = targeted_path(referenced, path_stats.lower[i] if path_stats else None,
                                       path_stats.upper[i] if path_stats else None)
        seq = mc.data_sequence_number[i]
        eq = mc.equality_ids[i]
        return cls(
            path=mc.file_path[i], content=content, file_format=mc.file_format[i],
            record_count=mc.record_count[i], file_size_in_bytes=mc.file_size_in_bytes[i],
            data_sequence_number=seq if seq is not None else 0, spec_id=spec_id,
            partition=mc.partition_tuple(i), referenced_data_file=referenced,
            content_offset=mc.content_offset[i], content_size_in_bytes=mc.content_size_in_bytes[i],
            equality_ids=tuple(eq) if eq is not None else None, manifest_path=manifest_path,
            lower_bounds=lower, upper_bounds=upper, null_counts=nulls, value_counts=values,
            nan_counts=nans)

    @property
    def is_dv(self) -> bool:
        return self.content == POSITION_DELETES and self.file_format.upper() == "PUFFIN"

    @property
    def content_name(self) -> str:
        if self.is_dv:
            return "deletion_vector"
        return "position_deletes" if self.content == POSITION_DELETES else "equality_deletes"

    @property
    def scan_size(self) -> int:
        """Bytes a reader reads for it: the blob for a deletion vector, else the file."""
        if self.is_dv and self.content_size_in_bytes is not None:
            return self.content_size_in_bytes
        return self.file_size_in_bytes


@dataclass
class DataStats:
    """Statistics of one data file for the equality-field ids (raw bounds)."""

    lower: dict[int, bytes | None]
    upper: dict[int, bytes | None]
    null_counts: dict[int, int | None]
    value_counts: dict[int, int | None]
    nan_counts: dict[int, int | None] = field(default_factory=dict)  # decoded ones only

    @classmethod
    def from_columns(cls, mc: ManifestColumns, i: int, eq_ids: Iterable[int]) -> "DataStats":
        """Entry ``i``'s statistics of the equality-field ids, from a manifest decoded
        column-wise (ids whose statistics were not decoded are left out)."""
        st = mc.stats
        ids = [f for f in eq_ids if f in st]
        return cls(lower={f: st[f].lower[i] for f in ids}, upper={f: st[f].upper[i] for f in ids},
                   null_counts={f: st[f].null_counts[i] for f in ids},
                   value_counts={f: st[f].value_counts[i] for f in ids},
                   nan_counts={f: st[f].nan_counts[i] for f in ids if f in mc.nan_decoded})


class _BySequence:
    """Delete files of one group (a partition, a data file path, the global ones), sorted by
    data sequence number once, so the ones at or after a sequence number are found by
    bisection; they come back in the order they were added."""

    __slots__ = ("_entries", "_seqs", "_sorted")

    def __init__(self) -> None:
        self._entries: list[tuple[int, int, DeleteRef]] = []  # (sequence number, order, ref)
        self._seqs: list[int] = []
        self._sorted = True

    def add(self, order: int, d: DeleteRef) -> None:
        self._entries.append((d.data_sequence_number, order, d))
        self._sorted = False

    def __iter__(self) -> Iterator[DeleteRef]:
        return (d for _, _, d in sorted(self._entries, key=lambda e: e[1]))

    def from_sequence(self, seq: int, after: bool) -> list[DeleteRef]:
        """Those with a data sequence number ``> seq`` (``after``) or ``>= seq``."""
        if not self._sorted:
            self._entries.sort(key=lambda e: (e[0], e[1]))
            self._seqs = [e[0] for e in self._entries]
            self._sorted = True
        start = (bisect_right if after else bisect_left)(self._seqs, seq)
        hits = self._entries[start:]
        if len(hits) > 1:
            hits = sorted(hits, key=lambda e: e[1])
        return [d for _, _, d in hits]


class DeleteIndex:
    """Delete files of a snapshot, indexed as the reference's ``DeleteFileIndex``: global
    equality deletes apart, the others by (spec, partition); position deletes naming their data
    file by its path, deletion vectors by their data file; each group sorted by data sequence
    number, so a data file's deletes are a lookup and a bisection, not a scan."""

    def __init__(self, deletes: Iterable[DeleteRef], unpartitioned_specs: set[int],
                 field_type: Callable[[int], IcebergType | None]):
        self.field_type = field_type
        self.global_eq = _BySequence()
        self.eq_by_partition: dict[tuple, _BySequence] = {}
        self.pos_by_partition: dict[tuple, _BySequence] = {}
        self.pos_by_path: dict[str, _BySequence] = {}
        self.dv_by_path: dict[str, DeleteRef] = {}
        self.all: list[DeleteRef] = []
        for order, d in enumerate(deletes):
            self.all.append(d)
            key = (d.spec_id, partition_key(tuple(d.partition)))
            if d.content == EQUALITY_DELETES:
                if d.spec_id in unpartitioned_specs:
                    self.global_eq.add(order, d)
                else:
                    self.eq_by_partition.setdefault(key, _BySequence()).add(order, d)
            elif d.is_dv:
                target = d.referenced_data_file or ""
                old = self.dv_by_path.get(target)
                if old is None or old.data_sequence_number < d.data_sequence_number:
                    self.dv_by_path[target] = d
            elif d.content == POSITION_DELETES:
                target = d.referenced_data_file
                if target is not None:
                    self.pos_by_path.setdefault(target, _BySequence()).add(order, d)
                else:
                    self.pos_by_partition.setdefault(key, _BySequence()).add(order, d)

    def __len__(self) -> int:
        return len(self.all)

    @property
    def is_empty(self) -> bool:
        return not self.all

    @property
    def equality_field_ids(self) -> set[int]:
        out: set[int] = set()
        for d in self.all:
            if d.content == EQUALITY_DELETES and d.equality_ids:
                out.update(d.equality_ids)
        return out

    def for_data_file(self, path: str, spec_id: int, partition: tuple, seq: int,
                      stats: DataStats | None = None) -> tuple[DeleteRef, ...]:
        """The delete files that apply to a data file (equality deletes first, global then
        partition; then its deletion vector, or its position deletes)."""
        key = (spec_id, partition_key(tuple(partition)))
        out = [d for d in self.global_eq.from_sequence(seq, after=True)
               if self._eq_may_apply(d, stats)]
        group = self.eq_by_partition.get(key)
        if group is not None:
            out += [d for d in group.from_sequence(seq, after=True) if self._eq_may_apply(d, stats)]
        dv = self.dv_by_path.get(path)
        if dv is not None and dv.data_sequence_number >= seq:
            out.append(dv)
            return tuple(out)
        for groups in (self.pos_by_partition.get(key), self.pos_by_path.get(path)):
            if groups is not None:
                out += groups.from_sequence(seq, after=False)
        return tuple(out)

    def _eq_may_apply(self, d: DeleteRef, data: DataStats | None) -> bool:
        """The reference's ``canContainEqDeletesForFile``."""
        if data is None or not d.equality_ids:
            return True
        for fid in d.equality_ids:
            t = self.field_type(fid)
            if t is not None and not _is_primitive(t):
                return True
            d_nulls = data.null_counts.get(fid)
            x_nulls = d.null_counts.get(fid)
            if _contains_null(d_nulls) and _contains_null(x_nulls):
                return True
            if _all_null(d_nulls, data.value_counts.get(fid)) and _all_non_null(x_nulls):
                return False
            if _all_null(x_nulls, d.value_counts.get(fid)) and _all_non_null(d_nulls):
                return False
            floating = t in (FLOAT, DOUBLE)
            if t is None or (floating and not (_no_nan(data.nan_counts.get(fid))
                                               or _no_nan(d.nan_counts.get(fid)))):
                # NaN is in no bounds, but a NaN key deletes the NaN rows: unless one side holds
                # no NaN, ranges prove nothing (Java compares them anyway; icectl attaches the
                # delete and stays sound)
                continue
            lo, hi = data.lower.get(fid), data.upper.get(fid)
            xlo, xhi = d.lower_bounds.get(fid), d.upper_bounds.get(fid)
            if lo is None or hi is None or xlo is None or xhi is None:
                continue
            try:
                a, b = from_bytes(t, lo), from_bytes(t, hi)
                c, e = from_bytes(t, xlo), from_bytes(t, xhi)
                from icectl.expr.ordering import uuid_bounds
                from icectl.expr.ordering import value_key as k
                if t == UUID:  # either order may have written the pairs
                    (a, b), (c, e) = uuid_bounds(a, b), uuid_bounds(c, e)
                    if a is None or c is None:
                        continue
                if floating:  # a recorded zero may stand for either zero
                    a, c = (-0.0 if v == 0 else v for v in (a, c))
                    b, e = (0.0 if v == 0 else v for v in (b, e))
                if k(a) > k(e) or k(c) > k(b):
                    return False
            except Exception:  # noqa: BLE001 - unreadable bounds: keep the delete
                continue
        return True


def _is_primitive(t: Any) -> bool:
    from icectl.spec.types import DecimalType, FixedType
    return isinstance(t, (PrimitiveType, DecimalType, FixedType))


def _contains_null(count: int | None) -> bool:
    return count is None or count > 0


def _all_null(nulls: int | None, values: int | None) -> bool:
    return nulls is not None and values is not None and nulls == values


def _all_non_null(nulls: int | None) -> bool:
    return nulls is not None and nulls <= 0


def _no_nan(count: int | None) -> bool:
    return count is not None and count <= 0


def delete_target(f: DataFile) -> str | None:
    """The one data file a position delete file (a ``DataFile``) applies to, if it names one:
    the one home of this rule (see :func:`targeted_path`)."""
    return targeted_path(f.referenced_data_file, (f.lower_bounds or {}).get(DELETE_FILE_PATH_ID),
                         (f.upper_bounds or {}).get(DELETE_FILE_PATH_ID))


def targeted_path(referenced: str | None, lower: bytes | None, upper: bytes | None) -> str | None:
    """The one data file a position delete file applies to, if it names one: its
    ``referenced_data_file``, else equal ``file_path`` bounds read as UTF-8. Bounds that are not
    UTF-8 name no file (the delete then applies to its whole partition, which is safe), as the
    reference's strict decoder refuses them."""
    if referenced is not None:
        return referenced
    if lower is not None and upper is not None and lower == upper:
        try:
            return bytes(lower).decode("utf-8")
        except UnicodeDecodeError:
            return None
    return None



# -- dangling delete files --------------------------------------------------------------------------


class LiveDataFiles:
    """The live data files a dangling-delete decision sees: path and data sequence number, by
    spec and partition (-0.0 and 0.0 apart). ``floor``: the least data sequence number the
    live data files not added here may have (None: every live data file was added)."""

    def __init__(self) -> None:
        self._by_partition: dict[tuple, list[tuple[str, int]]] = {}
        self._seq: dict[str, int] = {}
        self.floor: int | None = None

    def add(self, spec_id: int, partition: tuple, path: str, seq: int | None) -> None:
        seq = seq if seq is not None else 0
        self._by_partition.setdefault((spec_id, partition_key(tuple(partition))), []).append((path, seq))
        self._seq[path] = seq

    def sequence_number(self, path: str) -> int | None:
        """The data sequence number of a live data file, None when it is not live (or not added)."""
        return self._seq.get(path)

    def in_partition(self, spec_id: int, partition: tuple) -> list[tuple[str, int]]:
        return self._by_partition.get((spec_id, partition_key(tuple(partition))), [])

    def sequence_numbers(self) -> Iterator[int]:
        return iter(self._seq.values())


def is_dangling(f: DataFile, seq: int, live: LiveDataFiles, unpartitioned_specs: set[int]) -> bool:
    """Whether the delete file ``f`` (a ``DataFile``, data sequence number ``seq``) can apply
    to no live data file, the one home of this rule (remove-dangling-deletes; the rules of
    :class:`DeleteIndex`):

    * a position delete file naming one data file (a deletion vector, ``referenced_data_file``,
      equal ``file_path`` bounds): that file is not live, or is newer than the delete;
    * another position delete file: no live data file of its spec and partition at or below its
      sequence number whose path lies within its ``file_path`` bounds;
    * an equality delete file: no live data file older than it in its partition, or, written
      under an unpartitioned spec (global), in the table (never when ``live.floor`` says a data
      file not added may be older).

    ``live`` must hold every live data file of the delete's partition (of the table, for a
    global equality delete, or a ``floor``); the caller decides which deletes it judges."""
    if f.content == POSITION_DELETES:
        target = delete_target(f)
        if target is not None:
            s = live.sequence_number(target)
            return s is None or s > seq
        lo, hi = _path_bound(f.lower_bounds), _path_bound(f.upper_bounds)
        return not any(s <= seq and (lo is None or p >= lo) and (hi is None or p <= hi)
                       for p, s in live.in_partition(f.spec_id, f.partition))
    if f.content == EQUALITY_DELETES:
        if f.spec_id in unpartitioned_specs:
            if live.floor is not None and live.floor < seq:
                return False
            return not any(s < seq for s in live.sequence_numbers())
        return not any(s < seq for _, s in live.in_partition(f.spec_id, f.partition))
    return False


def _path_bound(bounds: dict | None) -> str | None:
    b = (bounds or {}).get(DELETE_FILE_PATH_ID)
    return bytes(b).decode("utf-8", "replace") if b is not None else None
