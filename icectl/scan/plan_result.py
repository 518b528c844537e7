"""What a scan plan returns: the planned files (light views of decoded manifest rows), the
decisions taken on manifests and files (for ``--explain``), and tasks bin-packed from splits."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from itertools import groupby, repeat
from operator import itemgetter
from typing import Iterable, Iterator, Sequence

from icectl.expr.expressions import Expression
from icectl.io.manifest_columns import ManifestColumns
from icectl.table.delete_index import DeleteRef
from icectl.scan.tasks import pack, split_ranges
from icectl.spec.partitioning import PartitionSpec
from icectl.spec.schema import Schema

__all__ = ["PlannedFile", "ScanTask", "ManifestDecision", "FileDecision", "PlanResult",
           "columns_of", "row_of", "residual_of", "deletes_of", "runs"]

# C-level accessors of a PlannedFile's parts, for code that walks many files at once
columns_of = itemgetter(0)
row_of = itemgetter(1)
residual_of = itemgetter(3)
deletes_of = itemgetter(4)
_second = itemgetter(1)


def runs(files: Iterable["PlannedFile"]) -> Iterator[tuple[ManifestColumns, list["PlannedFile"]]]:
    """The files in runs of consecutive files from one decoded manifest (compared by identity:
    comparing decoded manifests by value would read every column)."""
    files = list(files) if not isinstance(files, list) else files
    keyed = zip(map(id, map(columns_of, files)), files)
    for _, run in groupby(keyed, key=itemgetter(0)):
        fs = list(map(_second, run))
        yield fs[0][0], fs


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
    files: list[PlannedFile]
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

    @property
    def manifests_scanned(self) -> int:
        return sum(1 for m in self.manifests if m.kept)

    @property
    def manifests_skipped(self) -> int:
        return sum(1 for m in self.manifests if not m.kept)

    @property
    def delete_files(self) -> list[DeleteRef]:
        seen: dict[tuple, DeleteRef] = {}
        for f in self.files:
            for d in f.deletes:
                seen.setdefault((d.path, d.content_offset), d)
        return list(seen.values())

    @property
    def total_bytes(self) -> int:
        return _column_sum(self.files, "file_size_in_bytes")

    @property
    def total_records(self) -> int:
        return _column_sum(self.files, "record_count")

    def tasks(self) -> list[ScanTask]:
        """Splits bin-packed into tasks (the reference's ``planTasks``)."""
        size, cost, lookback = self.split_size, self.open_file_cost, self.lookback

        def splits() -> Iterable[tuple[PlannedFile, int, int]]:
            for cols, run in runs(self.files):
                formats, sizes, offsets = cols.file_format, cols.file_size_in_bytes, cols.split_offsets
                for f in run:
                    i = f._i
                    for start, length in split_ranges(formats[i], sizes[i], offsets[i], size):
                        yield (f, start, length)

        def weight(s: tuple[PlannedFile, int, int]) -> int:
            deletes = s[0].deletes
            if not deletes:
                return s[2] if s[2] > cost else cost
            return max(s[2] + sum(d.scan_size for d in deletes), (1 + len(deletes)) * cost)

        return [ScanTask(tuple(b)) for b in pack(splits(), weight, size, lookback)]


def _column_sum(files: list[PlannedFile], name: str) -> int:
    """Sum of one column over the planned files, read from the decoded columns run by run."""
    total = 0
    for cols, run in runs(files):
        col = getattr(cols, name)
        idx = list(map(row_of, run))
        if len(idx) == len(col) and idx[0] == 0 and idx[-1] == len(col) - 1:
            total += sum(col)  # every row (positions are ascending and distinct)
        else:
            total += sum(map(col.__getitem__, idx))
    return total
