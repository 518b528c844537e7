"""A table for the planning tests: eight data manifests (days and an odd path), then deletes of
every kind (committed by support.files.commit); and the filters the tests plan it with."""

from __future__ import annotations

import pytest

from icectl.spec.manifests import DATA, EQUALITY_DELETES, POSITION_DELETES, DataFile
from icectl.spec.types import LONG
from icectl.spec.values import to_bytes
from icectl.table.table import Table

from support.files import commit
from support.tables import empty_table

DAY = 19723


def id_range_file(path: str, part: tuple, lo: int, hi: int, rc: int = 10) -> DataFile:
    """A Parquet data file of ``rc`` rows with ids ``lo``..``hi`` (column 1's bounds)."""
    return DataFile(DATA, path, "PARQUET", part, rc, 1000 + lo, value_counts={1: rc},
                    null_value_counts={1: 0}, lower_bounds={1: to_bytes(LONG, lo)},
                    upper_bounds={1: to_bytes(LONG, hi)}, split_offsets=(4,))


@pytest.fixture(name="table")
def table_fixture(tmp_path) -> Table:
    """Eight data manifests (days and an odd path), then deletes of every kind."""
    loc = str(tmp_path / "t")
    t = empty_table(loc, "id long, ts timestamptz, cat string", partition="days(ts)")
    for k in range(8):
        commit(t, [id_range_file(f"{loc}/data/d{k}-{j} \"é\".parquet", (DAY + k,), k * 100 + j * 10,
                                 k * 100 + j * 10 + 9) for j in range(3)])
    pos = DataFile(POSITION_DELETES, f"{loc}/data/pos.parquet", "PARQUET", (DAY,), 2, 60,
                   lower_bounds={2147483546: f"{loc}/data/d0-0".encode()},
                   upper_bounds={2147483546: f"{loc}/data/d0-2~".encode()})
    eq = DataFile(EQUALITY_DELETES, f"{loc}/data/eq.parquet", "PARQUET", (DAY + 1,), 1, 70,
                  equality_ids=(1,), value_counts={1: 1}, null_value_counts={1: 0},
                  lower_bounds={1: to_bytes(LONG, 105)}, upper_bounds={1: to_bytes(LONG, 105)})
    commit(t, [], [pos, eq], op="delete")
    commit(t, [id_range_file(f"{loc}/data/late.parquet", (None,), 5000, 5010)])
    return Table.load(loc)


FILTERS = [None, "id between 100 and 115", "ts >= '2024-01-03T00:00:00+00:00' and id > 210",
           "id < 0", "ts is null or id = 5005"]
