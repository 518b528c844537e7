"""What crosses the JVM in a Spark engine job: every task and every result sits in the driver's
JVM heap at once, so the engine packs them (pickled, compressed). A maintenance job's results are
millions of paths sharing their directories; the packing must keep them whole and small, and
must carry tasks plain pickle cannot (a local function)."""

from __future__ import annotations

import pickle

import pytest

pytest.importorskip("pyspark")

from icectl.engines.spark import _Indexed, pack, unpack  # noqa: E402


def test_paths_round_trip_in_a_tenth_of_their_pickle() -> None:
    paths = [f"s3://bucket/warehouse/db/events/data/ts_day=2024-01-{i % 28 + 1:02d}/"
             f"00000-{i}-6f1c2a9e-4b7d-4a57-9d0e-{i:012d}-00001.parquet" for i in range(50_000)]
    result = (paths, bytes(i % 3 for i in range(len(paths))))
    packed = pack(result)
    assert unpack(packed) == result
    assert len(packed) * 10 < len(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))


def test_a_task_holding_a_local_function_is_carried() -> None:
    scale = 3

    def times(x: int) -> int:
        return x * scale

    task = {"fn": times, "items": (1, 2)}
    got = unpack(pack(task))
    assert [got["fn"](x) for x in got["items"]] == [3, 6]


def test_a_task_runs_on_its_unpacked_input_and_its_result_is_packed() -> None:
    i, out = _Indexed(lambda t: sorted(t))((7, pack({"b", "a"})))
    assert i == 7 and unpack(out) == ["a", "b"]
