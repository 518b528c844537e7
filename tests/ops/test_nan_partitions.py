"""NaN and -0.0 identity partitions keep the reference's partition identity everywhere.

Iceberg Java keys partition maps by ``StructLikeWrapper``: values compared with the type's
comparator (``Double.compare``: every NaN equal to every NaN, -0.0 before 0.0) and hashed with
``Double.hashCode`` (one hash for all NaNs, another for -0.0 than for 0.0). Python's tuples do
neither (``nan != nan``; ``-0.0 == 0.0``), so a map keyed by raw partition tuples loses NaN
partitions and merges the signed zeros. Found:

* equality deletes in a NaN partition were never attached to the NaN partition's data files
  (the delete index keyed partitions by the raw tuple);
* ``append`` placed a Parquet file holding NaN under the partition of its non-NaN min/max, as
  Parquet footers carry no NaN count.
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from clirun import icectl
from support.tables import empty_table

NAN = float("nan")
# a NaN of another bit pattern (payload 1, sign set): still the one NaN partition for Java
OTHER_NAN = struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000001))[0]


def _parquet(path: Path, ids: list[int], xs: list[float | None]) -> str:
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "x": pa.array(xs, pa.float64())}), path)
    return str(path)


def _table(tmp_path: Path, rows: list[tuple[int, float]], name: str = "t") -> str:
    loc = empty_table(tmp_path / name, "id long, x double", partition="identity(x)").location
    src = _parquet(tmp_path / f"{name}-rows.parquet", [i for i, _ in rows], [x for _, x in rows])
    r = icectl("write", loc, src)
    assert r.returncode == 0, r.stderr
    return loc


def _ids(loc: str, *args: str) -> list[int]:
    r = icectl("scan", loc, "--format", "jsonl", *args)
    assert r.returncode == 0, r.stderr
    return sorted(json.loads(line)["id"] for line in r.stdout.splitlines())


def _plan(loc: str) -> list[dict]:
    r = icectl("plan", loc, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["files"]


def _part(f: dict) -> str:
    return str(f["partition"]["x"])


@pytest.mark.parametrize("key_nan", [NAN, OTHER_NAN], ids=["nan", "other-nan-bits"])
def test_equality_delete_in_a_nan_partition_is_applied(tmp_path: Path, key_nan: float) -> None:
    loc = _table(tmp_path, [(1, NAN), (2, NAN), (3, 1.0)])
    keys = _parquet(tmp_path / "keys.parquet", [1], [key_nan])
    r = icectl("delete", loc, "--equality", "id,x", "--from", keys)
    assert r.returncode == 0, r.stderr
    assert _ids(loc) == [2, 3]
    by_part = {_part(f): f for f in _plan(loc)}
    assert set(by_part) == {"NaN", "1.0"}
    assert [d["content"] for d in by_part["NaN"]["delete-files"]] == ["equality_deletes"]
    assert by_part["1.0"]["delete-files"] == []


def test_equality_deletes_keep_signed_zero_partitions_apart(tmp_path: Path) -> None:
    loc = _table(tmp_path, [(1, -0.0), (2, 0.0), (3, 0.0)])
    keys = _parquet(tmp_path / "keys.parquet", [1, 3], [-0.0, 0.0])
    r = icectl("delete", loc, "--equality", "id,x", "--from", keys)
    assert r.returncode == 0, r.stderr
    assert _ids(loc) == [2]
    for f in _plan(loc):
        # each zero's delete file applies to its own partition's data file only
        assert len(f["delete-files"]) == 1, f
        assert math.copysign(1.0, float(f["partition"]["x"])) in (1.0, -1.0)
    # a key of the other zero deletes nothing
    loc2 = _table(tmp_path, [(1, -0.0), (2, 0.0)], name="t2")
    keys = _parquet(tmp_path / "keys2.parquet", [1, 2], [0.0, -0.0])
    r = icectl("delete", loc2, "--equality", "id,x", "--from", keys)
    assert r.returncode == 0, r.stderr
    assert _ids(loc2) == [1, 2]
    assert all(f["delete-files"] == [] for f in _plan(loc2))


def test_position_deletes_in_a_nan_partition_are_applied(tmp_path: Path) -> None:
    loc = _table(tmp_path, [(1, NAN), (2, NAN), (3, 1.0)])
    r = icectl("delete", loc, "--filter", "id = 1", "--mode", "merge-on-read")
    assert r.returncode == 0, r.stderr
    assert _ids(loc) == [2, 3]
    r = icectl("compact", loc, "--deletes")
    assert r.returncode == 0, r.stderr
    assert _ids(loc) == [2, 3]


def test_append_does_not_place_a_file_with_nan_by_its_other_values(tmp_path: Path) -> None:
    loc = str(tmp_path / "t")
    assert icectl("create", loc, "--schema", "id long, x double", "--partition", "identity(x)").returncode == 0
    src = _parquet(tmp_path / "rows.parquet", [1, 2, 3], [NAN, NAN, 1.0])
    r = icectl("append", loc, src)
    # the footer's min and max (1.0) say nothing of the NaN rows: the partition is not known
    assert r.returncode != 0
    assert "x" in r.stderr and "NaN" in r.stderr, r.stderr
    assert _ids(loc) == []
    # a partition value given for it must not contradict the non-NaN rows the footer proves
    r = icectl("append", loc, src, "--partition", "x=NaN")
    assert r.returncode != 0
    assert "x=1.0" in r.stderr, r.stderr
    assert _ids(loc) == []
    # read and written partitioned on request: the NaN rows in the NaN partition
    r = icectl("append", loc, src, "--rewrite-spanning")
    assert r.returncode == 0, r.stderr
    assert _ids(loc, "--filter", "x is nan") == [1, 2]
    assert _ids(loc, "--filter", "x = 1.0") == [3]
    assert sorted(_part(f) for f in _plan(loc)) == ["1.0", "NaN"]


def test_append_places_an_all_nan_file_by_its_path_and_finds_it(tmp_path: Path) -> None:
    loc = str(tmp_path / "t")
    assert icectl("create", loc, "--schema", "id long, x double", "--partition", "identity(x)").returncode == 0
    d = tmp_path / "in" / "x=NaN"
    d.mkdir(parents=True)
    src = _parquet(d / "f.parquet", [1, 2], [NAN, OTHER_NAN])
    one = _parquet(tmp_path / "one.parquet", [3], [1.0])
    r = icectl("append", loc, src, "--partition", "x=NaN")
    assert r.returncode == 0, r.stderr
    r = icectl("append", loc, one, "--partition", "x=1.0")
    assert r.returncode == 0, r.stderr
    assert _ids(loc, "--filter", "x is nan") == [1, 2]
    assert _ids(loc, "--filter", "x = 1.0") == [3]
    assert sorted(_part(f) for f in _plan(loc)) == ["1.0", "NaN"]


def test_write_puts_every_nan_in_one_partition(tmp_path: Path) -> None:
    """NaNs of different bit patterns are one partition (one data file), as for Java."""
    loc = _table(tmp_path, [(1, NAN), (2, OTHER_NAN), (3, -NAN), (4, -0.0), (5, 0.0)])
    parts = sorted(_part(f) for f in _plan(loc))
    assert parts == ["-0.0", "0.0", "NaN"]
    assert _ids(loc, "--filter", "x is nan") == [1, 2, 3]


def test_compaction_into_a_float_partition_keeps_zeros_apart_and_nans_together(tmp_path: Path) -> None:
    """Compaction streams rows into one writer per partition, found by partition tuple: 0.0
    rows went into the -0.0 writer (Spark then reads them as -0.0) and NaNs of other bits got
    a writer each. Files of an unpartitioned spec compacted into ``identity(x)``."""
    loc = str(tmp_path / "t")
    assert icectl("create", loc, "--schema", "id long, x double").returncode == 0
    for n in range(2):
        src = _parquet(tmp_path / f"r{n}.parquet", [1 + 10 * n, 2 + 10 * n, 3 + 10 * n, 4 + 10 * n],
                       [-0.0, 0.0, NAN, OTHER_NAN])
        assert icectl("write", loc, src).returncode == 0
    assert icectl("partition", "add", loc, "identity(x)").returncode == 0
    r = icectl("compact", loc, "--min-input-files", "2", "--workers", "1")
    assert r.returncode == 0, r.stderr
    r = icectl("scan", loc, "--format", "jsonl", "--with-metadata")
    assert r.returncode == 0, r.stderr
    files: dict[str, set[str]] = {}
    for line in r.stdout.splitlines():
        row = json.loads(line)
        part, value = row["_partition"]["x"], row["x"]
        if value == "NaN":
            assert part == "NaN", row
        else:
            assert math.copysign(1.0, float(part)) == math.copysign(1.0, float(value)), row
        files.setdefault(str(part), set()).add(row["_file"])
    assert {k: len(v) for k, v in files.items()} == {"-0.0": 1, "0.0": 1, "NaN": 1}
    assert _ids(loc, "--filter", "x = 0.0") == [2, 12]
    assert _ids(loc, "--filter", "x = double '-0.0'") == [1, 11]
