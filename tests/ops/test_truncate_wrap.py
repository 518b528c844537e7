"""Truncate of ints and longs wraps near the type's minimum, as Iceberg Java computes it
(``v - ((v % W) + W) % W`` in fixed width): truncate(10) of Long.MIN_VALUE is
9223372036854775806, and icectl writes the same partition value. Planning used to prune such a
partition for ``c < X`` (so ``scan`` lost the row), and a strict projection could call it
all-matching for ``c > 0`` (so a delete would drop Long.MIN_VALUE rows). Found by the large
differential run (seed 103)."""

from __future__ import annotations

import pytest

from clirun import icectl
from support.tables import empty_table, write_text

LMIN, LMAX, IMIN = -9223372036854775808, 9223372036854775807, -2147483648
ROWS = {1: LMIN, 2: LMIN + 1, 3: 5, 4: -20, 5: LMAX, 6: None}
FILTERS = ["c < -6336670831766359610", f"c > {LMIN}", f"c >= {LMIN + 1}", f"c <= {LMIN + 1}",
           f"c = {LMIN}", "c > 0", "c < 0", "c >= -20", f"c in ({LMIN}, 5)", "c != 5",
           f"c not in ({LMIN}, 5)", f"c < {LMIN + 2}", f"c > {LMAX - 3}"]


def _truth(f: str, v):
    if v is None:
        return False
    return eval(f.replace("c ", "v ").replace(" = ", " == ").replace("not in (", "not in (")
                .replace(" in (", " in ("), {"v": v})


def _table(tmp_path, kind: str, width: int, mode: str) -> str:
    t = empty_table(tmp_path / "t", f"id long, c {kind}", partition=f"truncate({width}, c)",
                    properties={"write.delete.mode": mode})
    rows = ROWS if kind == "long" else {1: IMIN, 2: IMIN + 1, 3: 5, 4: -20, 6: None}
    write_text(t, "id,c\n" + "".join(f"{i},{'' if v is None else v}\n" for i, v in rows.items()))
    return t.location


def _ids(loc: str, *args: str) -> list[int]:
    out = icectl("scan", loc, "--format", "csv", "--columns", "id", *args)
    assert out.returncode == 0, out.stderr
    return sorted(int(x) for x in out.stdout.splitlines()[1:])


@pytest.mark.parametrize("width", [10, 3])
def test_scan_finds_rows_in_wrapped_partitions(tmp_path, width):
    loc = _table(tmp_path, "long", width, "merge-on-read")
    for f in FILTERS:
        assert _ids(loc, "--filter", f) == sorted(i for i, v in ROWS.items() if _truth(f, v)), f


@pytest.mark.parametrize("mode", ["merge-on-read", "copy-on-write"])
@pytest.mark.parametrize("f", ["c > 0", "c < 0", f"c >= {LMIN + 1}", "c != 5"])
def test_delete_keeps_rows_the_filter_does_not_select(tmp_path, mode, f):
    loc = _table(tmp_path, "long", 10, mode)
    r = icectl("delete", loc, "--filter", f)
    assert r.returncode == 0, r.stderr
    assert _ids(loc) == sorted(i for i, v in ROWS.items() if not _truth(f, v)), f


def test_int_columns_wrap_too(tmp_path):
    loc = _table(tmp_path, "int", 10, "merge-on-read")
    assert _ids(loc, "--filter", "c < -1000000000") == [1, 2]
    assert _ids(loc, "--filter", "c > 0") == [3]
