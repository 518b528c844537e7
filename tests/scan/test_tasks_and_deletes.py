"""Split planning, bin packing, and delete-file matching rules (unit level)."""

from __future__ import annotations

import pytest

from icectl.table.delete_index import DataStats, DeleteIndex, DeleteRef, targeted_path
from icectl.scan.tasks import pack, split_offsets_valid, split_ranges
from icectl.spec.manifests import EQUALITY_DELETES, POSITION_DELETES
from icectl.spec.types import LONG, STRING
from icectl.spec.values import to_bytes

# -- splits -------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt,size,offsets,split,expected", [
    ("PARQUET", 100, (4,), 50, [(4, 96)]),  # one row group: one split from its offset
    ("PARQUET", 100, (4, 30, 70), 1000, [(4, 26), (30, 40), (70, 30)]),
    ("PARQUET", 100, (4, 30, 30), 40, [(0, 40), (40, 40), (80, 20)]),  # not strictly ascending
    ("PARQUET", 100, (4, 100), 40, [(0, 40), (40, 40), (80, 20)]),  # last offset not in file
    ("PARQUET", 100, None, 100, [(0, 100)]),
    ("PARQUET", 100, (), 30, [(0, 30), (30, 30), (60, 30), (90, 10)]),
    ("AVRO", 10, None, 4, [(0, 4), (4, 4), (8, 2)]),
    ("ORC", 10, (3,), 4, [(3, 7)]),
    ("PUFFIN", 100, None, 10, [(0, 100)]),  # not splittable
    ("PARQUET", 0, None, 10, [(0, 0)]),
])
def test_split_ranges(fmt, size, offsets, split, expected) -> None:
    assert split_ranges(fmt, size, offsets, split) == expected


def test_split_offsets_valid() -> None:
    assert split_offsets_valid([4], 5)
    assert not split_offsets_valid([4], 4)
    assert not split_offsets_valid([], 10)
    assert not split_offsets_valid([5, 4], 10)


def test_pack_first_fit_with_lookback_and_largest_bin_first() -> None:
    # weights, target 10, lookback 2: the third bin forces out the heaviest open bin
    assert list(pack([6, 6, 6, 3, 3], lambda w: w, 10, 2)) == [[6], [6, 3], [6, 3]]
    assert list(pack([9, 8, 1, 7], lambda w: w, 10, 1)) == [[9], [8, 1], [7]]
    assert list(pack([9, 8, 7], lambda w: w, 10, 2)) == [[9], [8], [7]]
    assert list(pack([2, 9, 3], lambda w: w, 10, 1, largest_bin_first=False)) == [[2], [9], [3]]
    assert list(pack([], lambda w: w, 10, 3)) == []
    with pytest.raises(ValueError):
        list(pack([1], lambda w: w, 10, 0))


# -- deletes -------------------------------------------------------------------------------------


def _d(path, content=POSITION_DELETES, seq=5, spec=0, part=("a",), fmt="PARQUET", ref=None,
       eq=None, **stats) -> DeleteRef:
    return DeleteRef(path, content, fmt, 1, 10, seq, spec, part, ref, None, None, eq,
                     **stats)


TYPES = {1: LONG, 2: STRING}


def _index(deletes, unpartitioned=frozenset({9})) -> DeleteIndex:
    return DeleteIndex(deletes, set(unpartitioned), TYPES.get)


def _paths(refs) -> list[str]:
    return sorted(r.path for r in refs)


def test_position_deletes_apply_at_equal_or_higher_sequence_numbers() -> None:
    idx = _index([_d("p5", seq=5), _d("p3", seq=3)])
    assert _paths(idx.for_data_file("f", 0, ("a",), 3)) == ["p3", "p5"]
    assert _paths(idx.for_data_file("f", 0, ("a",), 4)) == ["p5"]
    assert _paths(idx.for_data_file("f", 0, ("a",), 6)) == []
    assert _paths(idx.for_data_file("f", 0, ("b",), 1)) == []  # other partition
    assert _paths(idx.for_data_file("f", 1, ("a",), 1)) == []  # other spec


def test_equality_deletes_need_a_higher_sequence_number_and_can_be_global() -> None:
    idx = _index([_d("e5", EQUALITY_DELETES, seq=5, eq=(1,)),
                  _d("g7", EQUALITY_DELETES, seq=7, spec=9, part=(), eq=(1,))])
    assert _paths(idx.for_data_file("f", 0, ("a",), 5)) == ["g7"]
    assert _paths(idx.for_data_file("f", 0, ("a",), 4)) == ["e5", "g7"]
    assert _paths(idx.for_data_file("f", 3, ("zz",), 6)) == ["g7"]  # global: any spec
    assert _paths(idx.for_data_file("f", 3, ("zz",), 7)) == []


def test_path_scoped_position_deletes_and_deletion_vectors() -> None:
    idx = _index([_d("scoped", ref="f1"), _d("part", seq=6), _d("dv", fmt="PUFFIN", ref="f2", seq=6)])
    assert _paths(idx.for_data_file("f1", 0, ("a",), 1)) == ["part", "scoped"]
    assert _paths(idx.for_data_file("f3", 0, ("a",), 1)) == ["part"]
    # a DV for the file hides the other position deletes
    assert _paths(idx.for_data_file("f2", 0, ("a",), 1)) == ["dv"]
    # ...unless it is older than the data file
    assert _paths(idx.for_data_file("f2", 0, ("a",), 7)) == []
    assert targeted_path(None, b"x/y.parquet", b"x/y.parquet") == "x/y.parquet"
    assert targeted_path(None, b"a", b"b") is None
    assert targeted_path("r", None, None) == "r"


def test_equality_deletes_pruned_by_statistics() -> None:
    def eq(lo, hi, nulls=0, values=10):
        return _d("e", EQUALITY_DELETES, seq=9, eq=(1,),
                  lower_bounds={1: to_bytes(LONG, lo)} if lo is not None else {},
                  upper_bounds={1: to_bytes(LONG, hi)} if hi is not None else {},
                  null_counts={1: nulls}, value_counts={1: values})

    def data(lo, hi, nulls=0, values=10):
        return DataStats(lower={1: to_bytes(LONG, lo) if lo is not None else None},
                         upper={1: to_bytes(LONG, hi) if hi is not None else None},
                         null_counts={1: nulls}, value_counts={1: values})

    def applies(d, stats) -> bool:
        return bool(_index([d]).for_data_file("f", 0, ("a",), 1, stats))

    assert applies(eq(5, 10), data(0, 5))
    assert not applies(eq(6, 10), data(0, 5))  # disjoint ranges
    assert not applies(eq(0, 1), data(2, 5))
    assert applies(eq(6, 10), None)  # no statistics: keep
    assert applies(eq(None, None), data(0, 5))  # missing delete bounds
    # nulls on both sides: may match whatever the ranges
    assert applies(eq(6, 10, nulls=1), data(0, 5, nulls=1))
    # only nulls in the data file, no nulls in the deletes
    assert not applies(eq(None, None, nulls=0, values=3), data(None, None, nulls=10, values=10))
    # only nulls in the deletes, no nulls in the data file
    assert not applies(eq(None, None, nulls=3, values=3), data(0, 5, nulls=0))
