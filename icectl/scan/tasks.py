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

from operator import lt, sub
from typing import Callable, Iterable, Iterator, Sequence, TypeVar

from icectl.spec.properties import SPLIT_LOOKBACK_DEFAULT, SPLIT_OPEN_FILE_COST_DEFAULT, SPLIT_SIZE_DEFAULT

__all__ = ["split_offsets_valid", "split_ranges", "pack", "DEFAULT_SPLIT_SIZE",
           "DEFAULT_OPEN_FILE_COST", "DEFAULT_LOOKBACK", "SPLITTABLE_FORMATS"]

DEFAULT_SPLIT_SIZE = SPLIT_SIZE_DEFAULT
DEFAULT_OPEN_FILE_COST = SPLIT_OPEN_FILE_COST_DEFAULT
DEFAULT_LOOKBACK = SPLIT_LOOKBACK_DEFAULT
SPLITTABLE_FORMATS = frozenset({"PARQUET", "AVRO", "ORC"})

T = TypeVar("T")


def split_offsets_valid(offsets: Sequence[int] | None, file_size: int) -> bool:
    if not offsets:
        return False
    if len(offsets) > 1 and not all(map(lt, offsets, offsets[1:])):
        return False
    return offsets[-1] < file_size


_splittable: dict[str, bool] = {}  # file format -> splittable (formats are few)


def split_ranges(file_format: str, file_size: int, offsets: Sequence[int] | None,
                 split_size: int) -> list[tuple[int, int]]:
    """(start, length) of each split of one file."""
    splittable = _splittable.get(file_format)
    if splittable is None:
        splittable = _splittable[file_format] = file_format.upper() in SPLITTABLE_FORMATS
    if not splittable:
        return [(0, file_size)]
    if split_offsets_valid(offsets, file_size):
        assert offsets is not None
        if len(offsets) == 1:
            return [(offsets[0], file_size - offsets[0])]
        ends = [*offsets[1:], file_size]
        return list(zip(offsets, map(sub, ends, offsets)))
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


def pack(items: Iterable[T], weight: Callable[[T], int], target: int, lookback: int,
         largest_bin_first: bool = True) -> Iterator[list[T]]:
    """The reference's ``BinPacking.PackingIterable``: bins of items in input order."""
    if lookback < 1:
        raise ValueError("lookback must be at least 1")
    weights: list[int] = []  # the open bins: their weights and their items
    contents: list[list[T]] = []
    for item in items:
        w = weight(item)
        room = target - w
        for j, bw in enumerate(weights):
            if bw <= room:
                weights[j] = bw + w
                contents[j].append(item)
                break
        else:
            weights.append(w)
            contents.append([item])
            if len(weights) > lookback:
                # the heaviest bin, the first of equal weight (else the oldest)
                j = weights.index(max(weights)) if largest_bin_first else 0
                del weights[j]
                yield contents.pop(j)
    yield from contents
