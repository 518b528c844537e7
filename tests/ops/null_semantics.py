"""A plain three-valued evaluator of filters, written apart from icectl's, for the tests of
"one meaning of a row matches" (deletes, scans, Spark interop).

Filters are small trees of tuples, rendered to icectl's filter text by :func:`render`:

* ``("cmp", col, op, lit)`` with op one of ``< <= > >= = !=``
* ``("in", col, lits, negated)``, ``("null", col, negated)``, ``("nan", col, negated)``,
  ``("like", col, prefix, negated)``
* ``("not", e)``, ``("and", a, b)``, ``("or", a, b)``

:func:`truth` gives True, False or None (unknown) for one row (a dict of column -> value), with
Iceberg's meaning: a null compares unknown with anything; NaN is unknown for ``< <= > >=``
(neither they nor their negations select it), is not equal to any literal (``=`` / ``in``
false, ``!=`` / ``not in`` true); floats order ``-0.0`` before ``0.0`` and the two are not
equal. ``not`` / ``and`` / ``or`` are Kleene's. A row is selected (deleted) only when the
filter is True.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

T, F, U = True, False, None


def _key(v: Any) -> Any:
    if isinstance(v, float):
        return (v, math.copysign(1.0, v))  # -0.0 before 0.0, not equal
    return v


def _nan(v: Any) -> bool:
    return isinstance(v, float) and math.isnan(v)


def truth(e: tuple, row: dict) -> bool | None:
    kind = e[0]
    if kind == "not":
        r = truth(e[1], row)
        return None if r is None else not r
    if kind == "and":
        a, b = truth(e[1], row), truth(e[2], row)
        if a is F or b is F:
            return F
        return T if a is T and b is T else U
    if kind == "or":
        a, b = truth(e[1], row), truth(e[2], row)
        if a is T or b is T:
            return T
        return F if a is F and b is F else U
    v = row.get(e[1])
    if kind == "null":
        return (v is not None) if e[2] else (v is None)
    if kind == "nan":
        return (not _nan(v)) if e[2] else _nan(v)
    if v is None:
        return U
    if kind == "cmp":
        op, lit = e[2], e[3]
        if _nan(v):
            return {"=": F, "!=": T}.get(op, U)
        a, b = _key(v), _key(lit)
        return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "=": a == b,
                "!=": a != b}[op]
    if kind == "in":
        hit = (not _nan(v)) and any(_key(v) == _key(x) for x in e[2])
        return hit != e[3]
    if kind == "like":
        return v.startswith(e[2]) != e[3]
    raise AssertionError(e)


def lit_text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v) + "e0" if "e" not in repr(v) else repr(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, dt.datetime):
        return f"timestamp '{v.isoformat()}'"
    if isinstance(v, dt.date):
        return f"date '{v.isoformat()}'"
    assert isinstance(v, str)
    return "'" + v.replace("'", "''") + "'"


def render(e: tuple) -> str:
    kind = e[0]
    if kind == "not":
        return f"not ({render(e[1])})"
    if kind in ("and", "or"):
        return f"({render(e[1])}) {kind} ({render(e[2])})"
    col = e[1]
    if kind == "null":
        return f"{col} is {'not ' if e[2] else ''}null"
    if kind == "nan":
        return f"{col} is {'not ' if e[2] else ''}nan"
    if kind == "cmp":
        return f"{col} {e[2]} {lit_text(e[3])}"
    if kind == "in":
        return f"{col} {'not ' if e[3] else ''}in ({', '.join(lit_text(x) for x in e[2])})"
    if kind == "like":
        return f"{col} {'not ' if e[3] else ''}like {lit_text(e[2] + '%')}"
    raise AssertionError(e)
