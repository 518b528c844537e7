"""Splitting planned files and combining the splits into tasks, as the reference does.

* A file of a splittable format (Parquet, Avro, ORC) whose ``split_offsets`` are strictly
  ascending with the last one inside the file is split at those offsets (the first split starts
  at the first offset); otherwise it is cut into ``split_size`` pieces from offset 0.
* Splits are packed into tasks with the reference's first-fit bin packing over the last
  ``lookback`` open bins: a split's weight is ``max(length + size of its delete files,
  (1 + number of delete files) * open_file_cost)``; when an item fits no open bin a new bin is
  opened, and once more than ``lookback`` bins are open the heaviest one (the first of equal
  weight) is emitted. Remaining bins are emitted oldest first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Generic, Iterable, Iterator, Sequence, TypeVar

__all__ = ["Split", "split_offsets_valid", "split_ranges", "pack", "DEFAULT_SPLIT_SIZE",
           "DEFAULT_OPEN_FILE_COST", "DEFAULT_LOOKBACK", "SPLITTABLE_FORMATS"]

DEFAULT_SPLIT_SIZE = 134_217_728
DEFAULT_OPEN_FILE_COST = 4_194_304
DEFAULT_LOOKBACK = 10
SPLITTABLE_FORMATS = frozenset({"PARQUET", "AVRO", "ORC"})

T = TypeVar("T")


@dataclass(frozen=True)
class Split:
    """A byte range of one planned file (``file`` is a PlannedFile)."""

    file: object
    start: int
    length: int


def split_offsets_valid(offsets: Sequence[int] | None, file_size: int) -> bool:
    if not offsets:
        return False
    for a, b in zip(offsets, offsets[1:]):
        if b <= a:
            return False
    return offsets[-1] < file_size


def split_ranges(file_format: str, file_size: int, offsets: Sequence[int] | None,
                 split_size: int) -> list[tuple[int, int]]:
    """(start, length) of each split of one file."""
    if file_format.upper() not in SPLITTABLE_FORMATS:
        return [(0, file_size)]
    if split_offsets_valid(offsets, file_size):
        assert offsets is not None
        out = []
        for i, start in enumerate(offsets):
            end = offsets[i + 1] if i + 1 < len(offsets) else file_size
            out.append((start, end - start))
        return out
    if split_size <= 0:
        raise ValueError("split size must be positive")
    out = []
    pos = 0
    while pos < file_size:
        n = min(split_size, file_size - pos)
        out.append((pos, n))
        pos += n
    if not out:
        out.append((0, file_size))
    return out


class _Bin(Generic[T]):
    __slots__ = ("items", "weight")

    def __init__(self) -> None:
        self.items: list[T] = []
        self.weight = 0


def pack(items: Iterable[T], weight: Callable[[T], int], target: int, lookback: int,
         largest_bin_first: bool = True) -> Iterator[list[T]]:
    """The reference's ``BinPacking.PackingIterable``: bins of items in input order."""
    if lookback < 1:
        raise ValueError("lookback must be at least 1")
    bins: list[_Bin[T]] = []
    for item in items:
        w = weight(item)
        target_bin = None
        for b in bins:
            if b.weight + w <= target:
                target_bin = b
                break
        if target_bin is not None:
            target_bin.items.append(item)
            target_bin.weight += w
            continue
        nb: _Bin[T] = _Bin()
        nb.items.append(item)
        nb.weight = w
        bins.append(nb)
        if len(bins) > lookback:
            if largest_bin_first:
                best = 0
                for i in range(1, len(bins)):
                    if bins[i].weight > bins[best].weight:
                        best = i
                out = bins.pop(best)
            else:
                out = bins.pop(0)
            yield out.items
    for b in bins:
        yield b.items
