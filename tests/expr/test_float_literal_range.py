"""Double literals at and beyond a float column's range, for every comparison operator.

The differential fuzzer's crash: ``plan`` and ``delete --mode merge-on-read`` with
``c3_float not between 3.4028234663852886e+38 and 3.4028234663852886e+38`` exited 70
("float too large to pack with f format"): rendering the largest float (Java's shortest digits,
3.4028235E38) tried a candidate beyond the float range. Writing that value into an identity
partition (its path text) crashed the same way.

Semantics: a finite double beyond the float range compares with the column's values as a
number (no float equals it; ``x > 3.5e38`` holds only for +inf), nulls stay unknown and NaN is
selected only by ``!=``. The reference's binding settles such comparisons as always true or
always false, which would select null, NaN and infinite rows; icectl does not. ``in`` lists
drop such values. A double infinity is the float infinity (the
reference calls it above max, which makes ``c = double 'Infinity'`` miss infinite rows: a
deliberate difference). NaN literals are refused (``is nan``).
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import pytest
from clirun import icectl
from support.tables import empty_table, write_text

from icectl.spec.javatext import human_value
from icectl.spec.types import FLOAT

FMAX = struct.unpack("<f", b"\xff\xff\x7f\x7f")[0]  # 3.4028234663852886e+38
INF = math.inf
ROWS = {1: 1.5, 2: -500.0, 3: FMAX, 4: -FMAX, 5: INF, 6: -INF, 7: math.nan, 8: None}
LITERALS = {  # filter text -> the double value
    "3.4028234663852886e+38": FMAX, "-3.4028234663852886e+38": -FMAX,
    "3.4028235e+38": 3.4028235e38, "3.5e38": 3.5e38, "-3.5e38": -3.5e38, "1e300": 1e300,
    "double 'Infinity'": INF, "double '-Infinity'": -INF,
}
OPS = ("<", "<=", ">", ">=", "=", "!=", "in", "not in", "between", "not between")
ABOVE, BELOW = "above", "below"


def _convert(d: float):
    """The double literal as the float column sees it."""
    if math.isinf(d):
        return d
    if d > FMAX:
        return ABOVE
    if d < -FMAX:
        return BELOW
    return struct.unpack("<f", struct.pack("<f", d))[0]


def _cmp(op: str, x, d: float):
    """Three-valued: True, False or None (unknown)."""
    lit = _convert(d)
    if lit in (ABOVE, BELOW):
        lit = d  # compared as numbers: no float equals it, the infinities lie beyond it
    if x is None:
        return None
    if math.isnan(x):
        return {"=": False, "!=": True}.get(op)
    return {"<": x < lit, "<=": x <= lit, ">": x > lit, ">=": x >= lit, "=": x == lit,
            "!=": x != lit}[op]


def _and(a, b):
    return False if a is False or b is False else (None if a is None or b is None else True)


def _or(a, b):
    return True if a is True or b is True else (None if a is None or b is None else False)


def expected(op: str, x, d: float):
    if op in ("in", "not in"):
        if x is None:
            return None
        lit = _convert(d)
        member = any(not (isinstance(v, str)) and x == v for v in (lit, 1.5))
        return member if op == "in" else not member
    if op == "between":
        return _and(_cmp(">=", x, d), _cmp("<=", x, d))
    if op == "not between":
        return _or(_cmp("<", x, d), _cmp(">", x, d))
    return _cmp(op, x, d)


def filter_text(op: str, lit: str) -> str:
    if op in ("in", "not in"):
        return f"c {op} ({lit}, 1.5)"
    if op in ("between", "not between"):
        return f"c {op} {lit} and {lit}"
    return f"c {op} {lit}"


def run(*args) -> tuple[int, str]:
    r = icectl(*args)
    return r.exit_code, r.stdout + r.stderr


def make_table(tmp_path: Path, name: str, partition: str | None) -> str:
    t = empty_table(tmp_path / name, "_rid long, c float", partition=partition)
    text = {INF: '"Infinity"', -INF: '"-Infinity"'}
    lines = []
    for rid, v in ROWS.items():
        c = "null" if v is None else ('"NaN"' if v != v else text.get(v, repr(v)))
        lines.append(f'{{"_rid": {rid}, "c": {c}}}')
    write_text(t, "\n".join(lines) + "\n", suffix=".jsonl")
    return t.location


def scanned(loc: str, flt: str | None = None) -> set[int]:
    args = ["scan", loc, "--format", "jsonl"] + (["--filter", flt] if flt else [])
    code, out = run(*args)
    assert code == 0, (flt, out)
    return {json.loads(line)["_rid"] for line in out.splitlines() if line.startswith("{")}


def test_largest_float_text_is_javas() -> None:
    assert human_value(FLOAT, FMAX) == "3.4028235E38"
    assert human_value(FLOAT, -FMAX) == "-3.4028235E38"
    assert human_value(FLOAT, INF) == "Infinity"
    assert human_value(FLOAT, 1e39) == "Infinity"  # a double beyond the float range: (float) v
    assert human_value(FLOAT, 3.4e38) == "3.4E38"


@pytest.mark.parametrize("partition", [None, "c"], ids=["metrics", "identity"])
def test_every_operator_with_out_of_range_literals(tmp_path, partition) -> None:
    loc = make_table(tmp_path, "t", partition)
    for op in OPS:
        for text, d in LITERALS.items():
            flt = filter_text(op, text)
            want = {rid for rid, x in ROWS.items() if expected(op, x, d) is True}
            assert scanned(loc, flt) == want, flt
            code, out = run("plan", loc, "--filter", flt, "--json")
            assert code == 0, (flt, out)
            planned = json.loads(out)["summary"]["records"]
            assert planned >= len(want), flt
            assert run("plan", loc, "--filter", flt)[0] == 0, flt


@pytest.mark.parametrize("op", OPS)
def test_nan_literal_is_refused(tmp_path, op) -> None:
    loc = make_table(tmp_path, "t", None)
    code, out = run("scan", loc, "--filter", filter_text(op, "double 'NaN'"))
    assert code == 2, out
    assert "NaN" in out and "Traceback" not in out


@pytest.mark.parametrize("mode", ["merge-on-read", "copy-on-write"])
@pytest.mark.parametrize("flt, op, lit", [
    # the fuzzer's filter (with `and c3_float < -402.8873596191406` it kept only -500 and -max)
    ("(c not between 3.4028234663852886e+38 and 3.4028234663852886e+38 "
     "and c < -402.8873596191406)", None, None),
    ("c < 3.5e38", "<", "3.5e38"),
    ("c = double 'Infinity'", "=", "double 'Infinity'"),
    ("c >= 3.4028234663852886e+38", ">=", "3.4028234663852886e+38"),
])
def test_delete_with_out_of_range_literals(tmp_path, mode, flt, op, lit) -> None:
    loc = make_table(tmp_path, "t", "c")
    if op is None:
        hit = {rid for rid, x in ROWS.items()
               if _and(expected("not between", x, FMAX), _cmp("<", x, -402.8873596191406))}
    else:
        hit = {rid for rid, x in ROWS.items() if expected(op, x, LITERALS[lit]) is True}
    code, out = run("delete", loc, "--filter", flt, "--mode", mode)
    assert code == 0, out
    assert scanned(loc) == set(ROWS) - hit
