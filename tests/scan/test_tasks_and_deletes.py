"""Split planning, bin packing, and delete-file matching rules (unit level)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icectl.table.delete_index import DataStats, DeleteIndex, DeleteRef, targeted_path
from icectl.scan.tasks import pack, split_offsets_valid, split_ranges
from icectl.spec.manifests import EQUALITY_DELETES, POSITION_DELETES
from icectl.spec.types import DOUBLE, LONG, STRING
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


def test_equality_deletes_on_float_keys_pruned_only_when_one_side_has_no_nan() -> None:
    """NaN is in no bounds, yet a NaN key deletes NaN rows: float ranges prune only when the data
    file or the delete file is known to hold no NaN, and a recorded zero stands for both zeros
    (a Spark-written equality delete of (NaN, -inf) keys against data files of only -0.0 or 100.0
    was attached by icectl and not by Java: the data files' NaN counts were 0)."""
    def eq(lo, hi, nans=None):
        return _d("e", EQUALITY_DELETES, seq=9, eq=(3,),
                  lower_bounds={3: to_bytes(DOUBLE, lo)} if lo is not None else {},
                  upper_bounds={3: to_bytes(DOUBLE, hi)} if hi is not None else {},
                  null_counts={3: 0}, value_counts={3: 4},
                  nan_counts={} if nans is None else {3: nans})

    def data(lo, hi, nans=None):
        return DataStats(lower={3: to_bytes(DOUBLE, lo) if lo is not None else None},
                         upper={3: to_bytes(DOUBLE, hi) if hi is not None else None},
                         null_counts={3: 0}, value_counts={3: 3},
                         nan_counts={} if nans is None else {3: nans})

    def applies(d, stats) -> bool:
        index = DeleteIndex([d], {9}, {3: DOUBLE}.get)
        return bool(index.for_data_file("f", 0, ("a",), 1, stats))

    inf = float("inf")
    assert not applies(eq(-inf, -inf), data(-0.0, -0.0, nans=0))  # the fuzzer's case
    assert not applies(eq(-inf, -inf), data(100.0, 100.0, nans=0))
    assert not applies(eq(-inf, -inf, nans=0), data(100.0, 100.0))  # no NaN among the deletes
    assert applies(eq(-inf, -inf), data(100.0, 100.0))  # NaN counts unknown on both sides
    assert applies(eq(-inf, -inf, nans=2), data(100.0, 100.0, nans=1))  # NaN may delete NaN
    assert applies(eq(-inf, -inf), data(-inf, 1.0, nans=0))  # overlapping
    assert applies(eq(None, None), data(1.0, 2.0, nans=0))  # only NaN deleted: no bounds
    # either zero may stand behind a recorded one
    assert applies(eq(-0.0, -0.0, nans=0), data(0.0, 5.0, nans=0))
    assert applies(eq(0.0, 0.0, nans=0), data(-5.0, -0.0, nans=0))
    assert not applies(eq(0.5, 1.0, nans=0), data(-5.0, 0.0, nans=0))


# -- the index against the plain scan of lists it replaced (a reference kept here only) -------


def _reference_for_data_file(deletes, unpartitioned, path, spec_id, partition, seq, may_apply):
    """Delete matching by scanning lists in the order the files were listed (the index before
    it sorted by sequence number)."""
    eq_global = [d for d in deletes if d.content == EQUALITY_DELETES and d.spec_id in unpartitioned]
    eq_part = [d for d in deletes if d.content == EQUALITY_DELETES and d.spec_id not in unpartitioned
               and (d.spec_id, d.partition) == (spec_id, partition)]
    out = [d for d in eq_global + eq_part if d.data_sequence_number > seq and may_apply(d)]
    dv = None
    for d in deletes:
        if d.is_dv and (d.referenced_data_file or "") == path:
            if dv is None or dv.data_sequence_number < d.data_sequence_number:
                dv = d
    if dv is not None and dv.data_sequence_number >= seq:
        return tuple(out + [dv])
    pos = [d for d in deletes if d.content == POSITION_DELETES and not d.is_dv]
    out += [d for d in pos if d.referenced_data_file is None
            and (d.spec_id, d.partition) == (spec_id, partition) and d.data_sequence_number >= seq]
    out += [d for d in pos if d.referenced_data_file == path and d.data_sequence_number >= seq]
    return tuple(out)


_delete_refs = st.builds(
    lambda i, kind, seq, spec, part, ref: _d(
        f"d{i}", EQUALITY_DELETES if kind == "eq" else POSITION_DELETES, seq=seq,
        spec=spec, part=(part,) if spec != 9 else (), fmt="PUFFIN" if kind == "dv" else "PARQUET",
        ref=ref if kind != "eq" else None, eq=(1,) if kind == "eq" else None,
        lower_bounds={1: to_bytes(LONG, seq)}, upper_bounds={1: to_bytes(LONG, seq + 2)},
        null_counts={1: 0}, value_counts={1: 5}),
    st.integers(0, 10**6), st.sampled_from(["eq", "pos", "pos", "dv"]), st.integers(0, 6),
    st.sampled_from([0, 1, 9]), st.sampled_from(["a", "b", None]),
    st.sampled_from([None, None, "f1", "f2"]))


def _eq_applies_alone(d, stats) -> bool:
    """The statistics rule alone: an index of just ``d``, asked for a data file older than it
    in its own partition."""
    return bool(_index([d]).for_data_file("x", d.spec_id, d.partition, -1, stats))


@settings(max_examples=300, deadline=None)
@given(st.lists(_delete_refs, max_size=30),
       st.lists(st.tuples(st.sampled_from(["f1", "f2", "f3"]), st.sampled_from([0, 1, 9]),
                          st.sampled_from(["a", "b", None]), st.integers(0, 7),
                          st.booleans()), min_size=1, max_size=10))
def test_index_agrees_with_scanning_the_lists(deletes, data_files) -> None:
    idx = _index(deletes)
    for path, spec, part, seq, with_stats in data_files:
        partition = (part,) if spec != 9 else ()
        stats = (DataStats(lower={1: to_bytes(LONG, 3)}, upper={1: to_bytes(LONG, 4)},
                           null_counts={1: 0}, value_counts={1: 5}) if with_stats else None)
        got = idx.for_data_file(path, spec, partition, seq, stats)
        want = _reference_for_data_file(deletes, {9}, path, spec, partition, seq,
                                        lambda d: _eq_applies_alone(d, stats))
        assert [d.path for d in got] == [d.path for d in want]
