"""One filter, four renderings: icectl's filter text, Spark SQL with Iceberg's semantics, an
Iceberg Java expression (py4j) and a three-valued Python evaluation.

Iceberg's row semantics (what the reference is), per operator, for a row value ``x``:

* null ``x``: every comparison, ``in``, ``not in``, ``starts with`` and ``not starts with`` is
  *unknown* (never selected, and neither is its negation); ``is null``/``is not null`` and
  ``is nan``/``is not nan`` are two-valued (a null is not NaN).
* NaN ``x`` (float/double): ``=`` and ``in`` are false, ``!=`` and ``not in`` true; ``<``,
  ``<=``, ``>``, ``>=`` are unknown: they never select NaN, nor do their negations (Iceberg
  rewrites ``not (x < 5)`` to ``x >= 5``).
* ``-0.0`` orders before ``0.0`` and is not equal to it (Iceberg's float comparator,
  ``Double.compare``; icectl documents ``-0.0 < 0.0``).
* ``and``/``or``/``not`` are Kleene's three-valued logic; a row is selected where the filter is
  true.

Spark SQL differs: NaN = NaN and NaN is above every number; ``-0.0 = 0.0``. The translation
below is explicit per operator so that the Spark expression is TRUE, FALSE or NULL exactly where
the Iceberg filter is true, false or unknown:

====================  ===========================================================================
``x = lit``           ``x = lit``; for a zero float ``lit``: ``(x = 0.0 AND <sign of x> = <sign>)``
``x != lit``          ``NOT (<x = lit>)`` (NaN: NOT false = true; null stays NULL)
``x < lit`` (float)   ``IF(isnan(x), NULL, x < lit)``, with ``OR <x is -0.0>`` for ``lit = +0.0``
``x in (a, b)``       ``(<x = a> OR <x = b>)``; ``not in`` its NOT
``x is nan``          ``isnan(x)`` (false on null); ``is not nan``: ``NOT isnan(x)``
``starts with 'p'``   ``substring(x, 1, len) = 'p'`` (not pushed down: Spark's LIKE on a null
                      identity partition throws, REFERENCE.md)
``not e``             ``NOT (e)``
====================  ===========================================================================

The sign of a float zero is read in Spark from its text (``CAST(x AS STRING)`` is ``-0.0``).
"""

from __future__ import annotations

import datetime as dt
import math
import uuid
from decimal import Decimal
from typing import Any

from fuzz_model import FLOATS, decimal_ps, f32

# -- icectl text ----------------------------------------------------------------------------------

_ICE_OP = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "=", "ne": "!="}
_FLIP = {"lt": ">", "le": ">=", "gt": "<", "ge": "<=", "eq": "=", "ne": "!="}


def ts_text(v: dt.datetime) -> str:
    return v.strftime("%Y-%m-%d %H:%M:%S") + f".{v.microsecond:06d}" if v.year >= 1000 else (
        f"{v.year:04d}-{v.month:02d}-{v.day:02d} {v.hour:02d}:{v.minute:02d}:{v.second:02d}.{v.microsecond:06d}")


def ice_literal(t: str, v: Any) -> str:
    if t == "boolean":
        return "true" if v else "false"
    if t in ("int", "long"):
        return str(v)
    if t in FLOATS:
        if math.isinf(v) or (v == 0 and math.copysign(1, v) < 0):
            return f"double '{repr(v).replace('inf', 'Infinity')}'"
        return repr(v)
    if t.startswith("decimal"):
        return str(v)
    if t == "date":
        return f"date '{v.isoformat()}'"
    if t == "time":
        return f"time '{v.isoformat()}'"
    if t == "timestamp":
        return f"timestamp '{ts_text(v)}'"
    if t == "timestamptz":
        return f"timestamptz '{ts_text(v)}+00:00'"
    if t == "string":
        return "'" + v.replace("'", "''") + "'"
    if t == "uuid":
        return f"uuid '{v}'"
    return f"X'{v.hex()}'"


def ice_name(path: tuple[str, ...]) -> str:
    return ".".join(path)


def to_icectl(e) -> str:
    k = e[0]
    if k == "true":
        return "true"
    if k == "false":
        return "false"
    if k == "and":
        a, b = e[1], e[2]
        if a[0] == "pred" and b[0] == "pred" and a[5] == "between" and b[5] == "between":
            return f"{ice_name(a[2])} between {ice_literal(a[3], a[4][0])} and {ice_literal(b[3], b[4][0])}"
        return f"({to_icectl(a)} and {to_icectl(b)})"
    if k == "or":
        return f"({to_icectl(e[1])} or {to_icectl(e[2])})"
    if k == "not":
        c = e[1]
        if c[0] == "and" and c[1][0] == "pred" and c[1][5] == "between" and c[2][0] == "pred":
            inner = to_icectl(c)
            return inner.replace(" between ", " not between ", 1)
        return f"not ({to_icectl(c)})"
    _, op, path, t, lits, form = e
    name = ice_name(path)
    if op == "is_null":
        return f"{name} is null"
    if op == "not_null":
        return f"{name} is not null"
    if op == "is_nan":
        return f"{name} is nan"
    if op == "not_nan":
        return f"{name} is not nan"
    if op in ("in", "not_in"):
        word = "in" if op == "in" else "not in"
        return f"{name} {word} (" + ", ".join(ice_literal(t, v) for v in lits) + ")"
    if op in ("starts_with", "not_starts_with"):
        neg = "not " if op == "not_starts_with" else ""
        if form == "like":
            pat = lits[0].replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            return f"{name} {neg}like " + "'" + pat.replace("'", "''") + "'"
        return f"{name} {neg}starts with " + ice_literal("string", lits[0])
    if form == "flip":
        return f"{ice_literal(t, lits[0])} {_FLIP[op]} {name}"
    return f"{name} {_ICE_OP[op]} {ice_literal(t, lits[0])}"


# -- Spark SQL ------------------------------------------------------------------------------------


def spark_literal(t: Any, v: Any) -> str:
    """A Spark SQL literal of Iceberg type t (primitive or nested), typed by a cast."""
    from fuzz_model import spark_type

    if v is None:
        return f"CAST(NULL AS {spark_type(t)})"
    if isinstance(t, tuple):
        if t[0] == "struct":
            return "named_struct(" + ", ".join(f"'{n}', {spark_literal(ft, v.get(n))}" for n, ft in t[1]) + ")"
        if t[0] == "list":
            return f"CAST(array({', '.join(spark_literal(t[1], x) for x in v)}) AS {spark_type(t)})"
        inner = ", ".join(f"{spark_literal(t[1], k)}, {spark_literal(t[2], x)}" for k, x in v)
        return f"CAST(map({inner}) AS {spark_type(t)})"
    if t == "boolean":
        return "true" if v else "false"
    if t == "int":
        return f"CAST({v} AS INT)"
    if t == "long":
        return f"CAST('{v}' AS BIGINT)"
    if t in FLOATS:
        return f"CAST('{repr(v).replace('inf', 'Infinity').replace('nan', 'NaN')}' AS {t.upper()})"
    if t.startswith("decimal"):
        p, s = decimal_ps(t)
        return f"CAST('{v}' AS DECIMAL({p},{s}))"
    if t == "date":
        return f"DATE '{v.isoformat()}'"
    if t == "timestamp":
        return f"TIMESTAMP_NTZ '{ts_text(v)}'"
    if t == "timestamptz":
        return f"TIMESTAMP '{ts_text(v)}'"
    if t in ("string", "uuid"):
        return "'" + str(v).replace("\\", "\\\\").replace("'", "\\'") + "'"
    if t in ("binary", "fixed[4]"):
        return f"X'{v.hex()}'"
    raise AssertionError(t)


def spark_name(path: tuple[str, ...]) -> str:
    return ".".join(f"`{p}`" for p in path)


def _neg0(x: str) -> str:
    return f"(CAST({x} AS STRING) LIKE '-%')"


def _eq(x: str, t: str, v: Any) -> str:
    lit = spark_literal(t, v)
    if t in FLOATS and v == 0:
        sign = "" if math.copysign(1, v) < 0 else "NOT "
        return f"({x} = {lit} AND {sign}{_neg0(x)})"
    return f"({x} = {lit})"


def _ordered(x: str, t: str, op: str, v: Any) -> str:
    lit = spark_literal(t, v)
    sop = _ICE_OP[op]
    if t not in FLOATS:
        return f"({x} {sop} {lit})"
    if v == 0:
        neg = math.copysign(1, v) < 0
        zero = spark_literal(t, 0.0)
        if not neg:  # +0.0: -0.0 is below it
            body = {"lt": f"({x} < {zero} OR {_neg0(x)})", "le": f"({x} <= {zero})",
                    "gt": f"({x} > {zero})", "ge": f"({x} > {zero} OR ({x} = {zero} AND NOT {_neg0(x)}))"}[op]
        else:  # -0.0: +0.0 is above it
            body = {"lt": f"({x} < {zero})", "le": f"({x} < {zero} OR {_neg0(x)})",
                    "gt": f"({x} > {zero} OR ({x} = {zero} AND NOT {_neg0(x)}))", "ge": f"({x} >= {zero})"}[op]
    else:
        body = f"({x} {sop} {lit})"
    return f"IF(isnan({x}), NULL, {body})"


def to_spark(e) -> str:
    k = e[0]
    if k == "true":
        return "true"
    if k == "false":
        return "false"
    if k == "and":
        return f"({to_spark(e[1])} AND {to_spark(e[2])})"
    if k == "or":
        return f"({to_spark(e[1])} OR {to_spark(e[2])})"
    if k == "not":
        return f"(NOT {to_spark(e[1])})"
    _, op, path, t, lits, _form = e
    x = spark_name(path)
    if op == "is_null":
        return f"({x} IS NULL)"
    if op == "not_null":
        return f"({x} IS NOT NULL)"
    if op == "is_nan":
        return f"isnan({x})"
    if op == "not_nan":
        return f"(NOT isnan({x}))"
    if op in ("in", "not_in"):
        body = "(" + " OR ".join(_eq(x, t, v) for v in lits) + ")"
        return body if op == "in" else f"(NOT {body})"
    if op in ("starts_with", "not_starts_with"):
        p = lits[0]
        body = f"(substring({x}, 1, {len(p)}) = {spark_literal('string', p)})"
        return body if op == "starts_with" else f"(NOT {body})"
    if op == "eq":
        return _eq(x, t, lits[0])
    if op == "ne":
        return f"(NOT {_eq(x, t, lits[0])})"
    return _ordered(x, t, op, lits[0])


# -- Iceberg Java ---------------------------------------------------------------------------------

_JAVA = {"lt": "lessThan", "le": "lessThanOrEqual", "gt": "greaterThan", "ge": "greaterThanOrEqual",
         "eq": "equal", "ne": "notEqual", "in": "in", "not_in": "notIn", "is_null": "isNull",
         "not_null": "notNull", "is_nan": "isNaN", "not_nan": "notNaN", "starts_with": "startsWith",
         "not_starts_with": "notStartsWith"}


def java_value(jvm: Any, t: str, v: Any) -> Any:
    if t == "boolean":
        return jvm.java.lang.Boolean.valueOf(bool(v))
    if t == "int":
        return jvm.java.lang.Integer.valueOf(str(v))
    if t == "long":
        return jvm.java.lang.Long.valueOf(str(v))
    if t == "float":
        # py4j hands a java.lang.Float back as a Python float holding its *decimal text*
        # (-3.4028235E38, beyond -Float.MAX_VALUE as a double), and Java then binds that Double to
        # belowMin. The exact double of the float32 value binds to the same float in Java.
        return f32(v)
    if t == "double":
        return jvm.java.lang.Double.valueOf(repr(v).replace("inf", "Infinity"))
    if t.startswith("decimal"):
        return jvm.java.math.BigDecimal(str(v))
    if t == "date":
        return v.isoformat()
    if t == "time":
        return v.isoformat()
    if t == "timestamp":
        return ts_text(v).replace(" ", "T")
    if t == "timestamptz":
        return ts_text(v).replace(" ", "T") + "+00:00"
    if t == "string":
        return v
    if t == "uuid":
        return jvm.java.util.UUID.fromString(str(v))
    if t == "binary":
        return jvm.java.nio.ByteBuffer.wrap(bytearray(v))
    return bytearray(v)  # fixed: byte[] -> a fixed literal


def to_java(jvm: Any, e) -> Any:
    ex = jvm.org.apache.iceberg.expressions.Expressions
    k = e[0]
    if k == "true":
        return ex.alwaysTrue()
    if k == "false":
        return ex.alwaysFalse()
    if k in ("and", "or"):
        return getattr(ex, k)(to_java(jvm, e[1]), to_java(jvm, e[2]))
    if k == "not":
        return getattr(ex, "not")(to_java(jvm, e[1]))
    _, op, path, t, lits, _form = e
    name = ".".join(path)
    method = getattr(ex, _JAVA[op])
    if op in ("is_null", "not_null", "is_nan", "not_nan"):
        return method(name)
    if op in ("in", "not_in"):
        lst = jvm.java.util.ArrayList()
        for v in lits:
            lst.add(java_value(jvm, t, v))
        return method(name, lst)
    return method(name, java_value(jvm, t, lits[0]))


# -- three-valued Python evaluation ---------------------------------------------------------------

T, F, U = True, False, None


def _key(t: str, v: Any) -> Any:
    if t in FLOATS:
        return (v, 0 if math.copysign(1, v) < 0 else 1) if v == 0 else (v, 0)
    if t == "uuid":
        return v.bytes
    return v


def _lit(t: str, v: Any) -> Any:
    return f32(v) if t == "float" else v


def get_path(row: dict, path: tuple[str, ...]) -> Any:
    v = row.get(path[0])
    for p in path[1:]:
        v = None if v is None else v.get(p)
    return v


def evaluate(e, row: dict) -> bool | None:
    """Iceberg's truth value of filter e on row: True, False or None (unknown)."""
    k = e[0]
    if k == "true":
        return T
    if k == "false":
        return F
    if k == "and":
        a, b = evaluate(e[1], row), evaluate(e[2], row)
        if a is F or b is F:
            return F
        return U if (a is U or b is U) else T
    if k == "or":
        a, b = evaluate(e[1], row), evaluate(e[2], row)
        if a is T or b is T:
            return T
        return U if (a is U or b is U) else F
    if k == "not":
        a = evaluate(e[1], row)
        return U if a is U else (not a)
    _, op, path, t, lits, _form = e
    x = get_path(row, path)
    if op == "is_null":
        return x is None
    if op == "not_null":
        return x is not None
    nan = t in FLOATS and x is not None and math.isnan(x)
    if op == "is_nan":
        return nan
    if op == "not_nan":
        return not nan
    if x is None:
        return U
    if op in ("starts_with", "not_starts_with"):
        r = x.startswith(lits[0])
        return r if op == "starts_with" else not r
    if op in ("in", "not_in", "eq", "ne"):
        hit = (not nan) and any(_key(t, x) == _key(t, _lit(t, v)) for v in lits)
        return hit if op in ("in", "eq") else not hit
    if nan:
        return U
    a, b = _key(t, x), _key(t, _lit(t, lits[0]))
    return {"lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[op]


def negate(e):
    return ("not", e)


__all__ = ["to_icectl", "to_spark", "to_java", "evaluate", "spark_literal", "ice_literal",
           "get_path", "negate", "Decimal", "uuid"]
