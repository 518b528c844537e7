"""What a scan plan returns: the planned files (light views of decoded manifest rows), the
decisions taken on manifests and files (for ``--explain``), and tasks bin-packed from splits.

Columnar inside, objects on demand: a planned file, and a delete file attached to it, gives its
real :class:`~icectl.spec.manifests.DataFile` (``spec_id`` and ``manifest_path`` set) or
:class:`~icectl.spec.manifests.ManifestEntry` (with its inherited data and file sequence
numbers) when asked, built from the decoded columns (:func:`data_file_of`), so an operation
hands the files it planned straight to a commit without reading a manifest again. The column
metrics such an object carries are those the plan decoded: of the columns the filter (and the
equality deletes) name; ``column_sizes`` are not decoded. A commit finds the entries it
removes by path in the manifests themselves, so it never writes these metrics back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from itertools import repeat
from operator import itemgetter
from typing import Iterable, Iterator, Sequence

from icectl.expr.expressions import Expression
from icectl.io.manifest.columns import ManifestColumns
from icectl.table.delete_index import DeleteRef
from icectl.scan.tasks import pack, split_ranges
from icectl.spec.manifests import DataFile, ManifestEntry
from icectl.spec.partitioning import PartitionSpec
from icectl.spec.schema import Schema

__all__ = ["PlannedFile", "FileRun", "ScanTask", "ManifestDecision", "FileDecision", "PlanResult",
           "columns_of", "row_of", "residual_of", "deletes_of", "data_file_of", "entry_of"]

# C-level accessors of a PlannedFile's parts, for code that walks many files at once
columns_of = itemgetter(0)
row_of = itemgetter(1)
residual_of = itemgetter(3)
deletes_of = itemgetter(4)


def data_file_of(cols: ManifestColumns, i: int, spec_id: int, manifest_path: str) -> DataFile:
    """The :class:`DataFile` of row ``i`` of decoded manifest columns (metrics: those decoded)."""
    st = cols.stats
    offsets, eq = cols.split_offsets[i], cols.equality_ids[i]
    return DataFile(
        content=cols.content[i], file_path=cols.file_path[i], file_format=cols.file_format[i],
        partition=cols.partition_tuple(i), record_count=cols.record_count[i],
        file_size_in_bytes=cols.file_size_in_bytes[i],
        value_counts={f: s.value_counts[i] for f, s in st.items() if s.value_counts[i] is not None},
        null_value_counts={f: s.null_counts[i] for f, s in st.items() if s.null_counts[i] is not None},
        nan_value_counts={f: s.nan_counts[i] for f, s in st.items() if s.nan_counts[i] is not None},
        lower_bounds={f: s.lower[i] for f, s in st.items() if s.lower[i] is not None},
        upper_bounds={f: s.upper[i] for f, s in st.items() if s.upper[i] is not None},
        key_metadata=cols.key_metadata[i],
        split_offsets=tuple(offsets) if offsets is not None else None,
        equality_ids=tuple(eq) if eq is not None else None, sort_order_id=cols.sort_order_id[i],
        first_row_id=cols.first_row_id[i], referenced_data_file=cols.referenced_data_file[i],
        content_offset=cols.content_offset[i], content_size_in_bytes=cols.content_size_in_bytes[i],
        spec_id=spec_id, manifest_path=manifest_path)


def entry_of(cols: ManifestColumns, i: int, spec_id: int, manifest_path: str) -> ManifestEntry:
    """The :class:`ManifestEntry` of row ``i``: status, snapshot id and sequence numbers as
    inherited from the manifest list entry, and :func:`data_file_of`."""
    return ManifestEntry(cols.status[i], cols.snapshot_id[i], cols.data_sequence_number[i],
                         cols.file_sequence_number[i], data_file_of(cols, i, spec_id, manifest_path))


class FileRun:
    """Planned files from one decoded manifest: the rows ``idx`` of ``cols``.

    A *uniform* run (``residual`` set, ``files`` not given) is files that share one residual and
    have no delete files, the common case: their :class:`PlannedFile` views are built only when
    something asks for them, so renderers and counters that read the columns directly never
    build 200,000 per-file objects. Otherwise ``files`` holds the views (each with its own
    residual and delete files) and ``residual`` is None.
    """

    __slots__ = ("cols", "idx", "spec_id", "residual", "manifest_path", "_files", "_whole")

    def __init__(self, cols: ManifestColumns, idx: list[int], spec_id: int,
                 residual: Expression | None, manifest_path: str,
                 files: list["PlannedFile"] | None = None):
        self.cols = cols
        self.idx = idx
        self.spec_id = spec_id
        self.residual = residual
        self.manifest_path = manifest_path
        self._files = files
        self._whole: bool | None = None

    @property
    def uniform(self) -> bool:
        return self._files is None

    @property
    def files(self) -> list["PlannedFile"]:
        if self._files is None:
            return PlannedFile.run(self.cols, self.idx, self.spec_id, self.residual,
                                   self.manifest_path)
        return self._files

    @property
    def whole(self) -> bool:
        """Whether the run is every row of its manifest, in order."""
        if self._whole is None:
            idx, n = self.idx, self.cols.count
            self._whole = len(idx) == n and (n == 0 or (idx[0] == 0 and idx[-1] == n - 1
                                                        and idx == list(range(n))))
        return self._whole

    def __len__(self) -> int:
        return len(self.idx)


class PlannedFile(tuple):
    """A data file the scan reads, with its residual filter and delete files.

    A light view of one row of the decoded manifest columns: the file's fields are read from
    the columns when accessed. It is a tuple underneath so that planning 200,000 files builds
    them without a Python-level constructor call each (:meth:`run`); equality is identity.
    """

    __slots__ = ()

    def __new__(cls, cols: ManifestColumns, i: int, spec_id: int, residual: Expression,
                deletes: tuple, manifest_path: str) -> "PlannedFile":
        return tuple.__new__(cls, (cols, i, spec_id, residual, deletes, manifest_path))

    @classmethod
    def run(cls, cols: ManifestColumns, idx: Iterable[int], spec_id: int, residual: Expression,
            manifest_path: str) -> list["PlannedFile"]:
        """Views of the rows ``idx`` that share a residual and have no delete files."""
        return list(map(partial(tuple.__new__, cls),
                        zip(repeat(cols), idx, repeat(spec_id), repeat(residual), repeat(()),
                            repeat(manifest_path))))

    def __getnewargs__(self) -> tuple:
        return tuple(self)

    __eq__ = object.__eq__
    __ne__ = object.__ne__
    __hash__ = object.__hash__
    _cols = property(columns_of)
    _i = property(row_of)
    spec_id = property(itemgetter(2))
    residual = property(residual_of)
    deletes = property(deletes_of)
    manifest_path = property(itemgetter(5))

    @property
    def path(self) -> str:
        return self._cols.file_path[self._i]

    @property
    def file_format(self) -> str:
        return self._cols.file_format[self._i]

    @property
    def partition(self) -> tuple:
        return self._cols.partition_tuple(self._i)

    @property
    def record_count(self) -> int:
        return self._cols.record_count[self._i]

    @property
    def file_size_in_bytes(self) -> int:
        return self._cols.file_size_in_bytes[self._i]

    @property
    def data_sequence_number(self) -> int | None:
        return self._cols.data_sequence_number[self._i]

    @property
    def file_sequence_number(self) -> int | None:
        return self._cols.file_sequence_number[self._i]

    @property
    def split_offsets(self) -> Sequence[int] | None:
        return self._cols.split_offsets[self._i]

    @property
    def first_row_id(self) -> int | None:
        return self._cols.first_row_id[self._i]

    @property
    def snapshot_id(self) -> int | None:
        return self._cols.snapshot_id[self._i]

    def data_file(self) -> DataFile:
        """The file as a :class:`DataFile` (``spec_id``, ``manifest_path`` set), from the columns."""
        return data_file_of(self._cols, self._i, self.spec_id, self.manifest_path)

    def manifest_entry(self) -> ManifestEntry:
        """The file's live manifest entry, with its data and file sequence numbers."""
        return entry_of(self._cols, self._i, self.spec_id, self.manifest_path)

    def __repr__(self) -> str:
        return f"PlannedFile({self.path!r}, deletes={len(self.deletes)}, residual={self.residual})"


@dataclass(frozen=True)
class ScanTask:
    """A combined task: splits of one or more files, read together."""

    splits: tuple  # of (PlannedFile, start, length)

    @property
    def length(self) -> int:
        return sum(n for _, _, n in self.splits)

    @property
    def files(self) -> tuple[PlannedFile, ...]:
        seen: dict[str, PlannedFile] = {}
        for f, _, _ in self.splits:
            seen.setdefault(f.path, f)
        return tuple(seen.values())


@dataclass(frozen=True)
class ManifestDecision:
    path: str
    content: str  # "data" | "deletes"
    spec_id: int
    added_snapshot_id: int | None
    kept: bool
    reason: str
    files: int | None = None  # live entries decoded (None when skipped)
    matched: int | None = None  # files kept from it


@dataclass(frozen=True)
class FileDecision:
    path: str
    manifest_path: str
    kept: bool
    reason: str


@dataclass
class PlanResult:
    location: str
    snapshot_id: int | None
    schema: Schema
    filter: Expression
    columns: tuple[str, ...] | None
    manifests: list[ManifestDecision]
    delete_files_total: int
    data_files_total: int
    split_size: int
    open_file_cost: int
    lookback: int
    specs: dict[int, PartitionSpec] = field(default_factory=dict)
    file_decisions: list[FileDecision] = field(default_factory=list)
    incremental: tuple[int | None, int] | None = None
    case_sensitive: bool = False
    file_runs: list[FileRun] = field(default_factory=list)
    _files: list[PlannedFile] | None = field(default=None, repr=False, compare=False)
    _files_runs: int = field(default=-1, repr=False, compare=False)
    # where each indexed delete file was decoded: (path, content offset) -> (columns, row,
    # spec id, manifest path), for :meth:`delete_file`
    delete_rows: dict[tuple, tuple] = field(default_factory=dict, repr=False, compare=False)

    @property
    def files(self) -> list[PlannedFile]:
        """The planned files in plan order (built from :attr:`file_runs` on first use)."""
        if self._files is None or self._files_runs != len(self.file_runs):
            out: list[PlannedFile] = []
            for r in self.file_runs:
                out.extend(r.files)
            self._files, self._files_runs = out, len(self.file_runs)
        return self._files

    @property
    def file_count(self) -> int:
        return sum(map(len, self.file_runs))

    @property
    def manifests_scanned(self) -> int:
        return sum(1 for m in self.manifests if m.kept)

    @property
    def manifests_skipped(self) -> int:
        return sum(1 for m in self.manifests if not m.kept)

    @property
    def delete_files(self) -> list[DeleteRef]:
        seen: dict[tuple, DeleteRef] = {}
        for r in self.file_runs:
            if not r.uniform:
                for f in r.files:
                    for d in f.deletes:
                        seen.setdefault((d.path, d.content_offset), d)
        return list(seen.values())

    def delete_file(self, ref: DeleteRef) -> DataFile:
        """The :class:`DataFile` of a delete file the plan attached (``ref``), from its columns."""
        return self.delete_entry(ref).data_file

    def delete_entry(self, ref: DeleteRef) -> ManifestEntry:
        """The live manifest entry of a delete file the plan attached, with its sequence numbers."""
        return entry_of(*self.delete_rows[(ref.path, ref.content_offset)])

    def delete_entries(self) -> Iterator[ManifestEntry]:
        """The live manifest entries of every delete file the plan indexed, attached to a
        planned file or not (unfiltered, every live delete file of the snapshot)."""
        return (entry_of(*row) for row in self.delete_rows.values())

    @property
    def total_bytes(self) -> int:
        return _column_sum(self.file_runs, "file_size_in_bytes")

    @property
    def total_records(self) -> int:
        return _column_sum(self.file_runs, "record_count")

    def tasks(self) -> list[ScanTask]:
        """Splits bin-packed into tasks (the reference's ``planTasks``)."""
        return [ScanTask(tuple(s[:3] for s in b))
                for b in pack(self._weighted_splits(True), _weight_of, self.split_size,
                              self.lookback)]

    def task_count(self) -> int:
        """``len(self.tasks())``, packed from the weights alone (no per-file objects)."""
        return sum(1 for _ in pack(self._weighted_splits(False), _weight_of, self.split_size,
                                   self.lookback))

    def _weighted_splits(self, with_files: bool) -> Iterator[tuple]:
        """(planned file, start, length, weight) of every split, in plan order; the file is
        None without ``with_files`` for files without delete files. A split weighs
        ``max(length + size of its delete files, (1 + number of delete files) * cost)``."""
        size, cost = self.split_size, self.open_file_cost
        for r in self.file_runs:
            cols = r.cols
            formats, sizes, offsets = cols.file_format, cols.file_size_in_bytes, cols.split_offsets
            if r.uniform and not with_files:
                for i in r.idx:
                    for start, length in split_ranges(formats[i], sizes[i], offsets[i], size):
                        yield (None, start, length, length if length > cost else cost)
                continue
            for f in r.files:
                i = f._i
                deletes = f.deletes
                extra = sum(d.scan_size for d in deletes) if deletes else 0
                floor = (1 + len(deletes)) * cost
                for start, length in split_ranges(formats[i], sizes[i], offsets[i], size):
                    w = length + extra
                    yield (f, start, length, w if w > floor else floor)


_weight_of = itemgetter(3)


def _column_sum(file_runs: list[FileRun], name: str) -> int:
    """Sum of one column over the planned files, read from the decoded columns run by run."""
    total = 0
    for r in file_runs:
        col = getattr(r.cols, name)
        if r.whole:
            total += sum(col)  # every row (positions are ascending and distinct)
        else:
            total += sum(map(col.__getitem__, r.idx))
    return total
