"""Z-order values: order-preserving byte forms of column values, interleaved bit by bit.

The reference (Iceberg Java's ``ZOrderByteUtils`` and Spark's z-order rewrite) orders rows of a
z-order compaction by one binary value per row, built so:

1. each z-ordered column contributes a byte form of its value whose unsigned, big-endian byte
   order is the value's order:

   * int and long: the 64-bit two's-complement value with its sign bit flipped (8 bytes);
   * float and double: the value widened to a double, its IEEE 754 bits (every NaN as the one
     canonical NaN) XORed with a mask -- the sign bit always, and for a negative value all the
     bits the *31-bit* arithmetic shift of the bits sets. The reference shifts by 31 where 63
     would flip all of a negative value's bits; its upper 32 bits still order correctly, the
     lower ones are what the reference writes, and icectl writes the same (8 bytes);
   * timestamptz: its seconds since the epoch (floor, as Spark casts a timestamp to a bigint),
     then as a long (8 bytes);
   * date: its days since the epoch, as a long (8 bytes). Spark's rewrite casts a date to a
     bigint, which Spark 3.5 evaluates to null for every date, so Spark gives every date the same
     zero bytes (a date column adds nothing to its z-order); icectl orders dates by their day;
   * boolean: ``0x81`` for true, ``0x00`` for false, then seven zero bytes (8 bytes). A null
     boolean makes the reference's rewrite fail (NullPointerException); icectl orders it as
     zeros, as every other null;
   * string (and uuid, which Spark reads as its text): the UTF-8 bytes of the whole characters
     that fit in ``var_length_contribution`` bytes (default 8), zero-filled to that length;
   * binary and fixed: the bytes truncated or zero-filled to ``var_length_contribution``;
   * null: all zero bytes, the smallest form (nulls sort first);

2. the forms are interleaved bit by bit: the first (most significant) bit of every column's
   first byte, in column order, then each one's second bit, and so on; a column whose form has
   no byte at a position is skipped there;

3. the result is cut to ``max_output_size`` bytes (default: no limit, 2**31 - 1).

Other types (decimal, timestamp without zone, time, nanosecond timestamps, nested types) are
refused, as the reference refuses them; so are columns inside structs (the reference finds them
in the schema, then fails to read them).

Rows are then sorted by the value, ascending (:mod:`icectl.ops.compute.zorder` computes it on
whole columns; the functions here are the plain per-value definition it is tested against).
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import Any, Sequence

from icectl.errors import InvalidInput, NotFound
from icectl.spec.schema import Schema
from icectl.spec.sorting import NullOrder, SortDirection, SortField, SortOrder
from icectl.spec.transforms import UnknownTransform
from icectl.spec.types import (BINARY, BOOLEAN, DATE, DOUBLE, FLOAT, INT, LONG, STRING, TIMESTAMPTZ,
                               UUID, FixedType, IcebergType)

__all__ = ["ZOrder", "PRIMITIVE_SIZE", "VAR_LENGTH_CONTRIBUTION", "VAR_LENGTH_CONTRIBUTION_DEFAULT",
           "MAX_OUTPUT_SIZE", "MAX_OUTPUT_SIZE_DEFAULT", "ZORDER_TRANSFORM", "form_kind",
           "ordered_bytes", "interleave", "zorder_value", "output_size", "parse_zorder_terms",
           "bind_zorder", "sort_order_from_json"]

PRIMITIVE_SIZE = 8
VAR_LENGTH_CONTRIBUTION = "var-length-contribution"
VAR_LENGTH_CONTRIBUTION_DEFAULT = PRIMITIVE_SIZE
MAX_OUTPUT_SIZE = "max-output-size"
MAX_OUTPUT_SIZE_DEFAULT = 2**31 - 1
ZORDER_TRANSFORM = UnknownTransform("zorder")
_JSON_KEY = "zorder"

# the form of each accepted type: how its values become bytes
LONG_FORM, FLOAT_FORM, SECONDS_FORM, DAYS_FORM, BOOL_FORM, STRING_FORM, BINARY_FORM = (
    "long", "float", "seconds", "days", "boolean", "string", "binary")
_FORMS = {INT: LONG_FORM, LONG: LONG_FORM, FLOAT: FLOAT_FORM, DOUBLE: FLOAT_FORM,
          TIMESTAMPTZ: SECONDS_FORM, DATE: DAYS_FORM, BOOLEAN: BOOL_FORM, STRING: STRING_FORM,
          UUID: STRING_FORM, BINARY: BINARY_FORM}
_SIGN = 1 << 63
_MASK64 = (1 << 64) - 1
_CANONICAL_NAN = 0x7FF8000000000000


def form_kind(t: IcebergType) -> str | None:
    """The byte form of values of type ``t`` (None: the type cannot be z-ordered)."""
    if isinstance(t, FixedType):
        return BINARY_FORM
    return _FORMS.get(t)  # type: ignore[arg-type]


def form_size(kind: str, var_length: int) -> int:
    return var_length if kind in (STRING_FORM, BINARY_FORM) else PRIMITIVE_SIZE


def _long_bytes(v: int) -> bytes:
    return ((v & _MASK64) ^ _SIGN).to_bytes(8, "big")


def float_bits(v: float) -> int:
    """The reference's ordered form of a double as an unsigned 64-bit integer."""
    bits = _CANONICAL_NAN if math.isnan(v) else struct.unpack(">q", struct.pack(">d", v))[0]
    mask = (bits >> 31) | -_SIGN  # arithmetic shift of the signed bits, by 31 as the reference does
    return (bits ^ mask) & _MASK64


def ordered_bytes(kind: str, value: Any, var_length: int = VAR_LENGTH_CONTRIBUTION_DEFAULT) -> bytes:
    """The byte form of one value (module docs). ``value`` is the Python value of the type:
    int, float, bool, str, bytes, a date as days or ``datetime.date``, a timestamptz as
    microseconds or an aware ``datetime.datetime``, a uuid as ``uuid.UUID`` or text."""
    size = form_size(kind, var_length)
    if value is None:
        return bytes(size)
    if kind == LONG_FORM:
        return _long_bytes(int(value))
    if kind == FLOAT_FORM:
        return float_bits(float(value)).to_bytes(8, "big")
    if kind == SECONDS_FORM:
        return _long_bytes(_micros(value) // 1_000_000)
    if kind == DAYS_FORM:
        return _long_bytes(_days(value))
    if kind == BOOL_FORM:
        return (b"\x81" if value else b"\x00") + bytes(7)
    if kind == STRING_FORM:
        text = str(value)
        out = bytearray()
        for ch in text:  # whole characters only, as Java's encoder stops at one that overflows
            b = ch.encode("utf-8")
            if len(out) + len(b) > size:
                break
            out += b
        return bytes(out) + bytes(size - len(out))
    if kind == BINARY_FORM:
        raw = bytes(value)[:size]
        return raw + bytes(size - len(raw))
    raise ValueError(f"unknown z-order byte form {kind!r}")


def _micros(value: Any) -> int:
    import datetime as dt

    if isinstance(value, dt.datetime):
        epoch = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
        d = value - epoch if value.tzinfo is not None else value - epoch.replace(tzinfo=None)
        return (d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds
    return int(value)


def _days(value: Any) -> int:
    import datetime as dt

    if isinstance(value, dt.date):
        return (value - dt.date(1970, 1, 1)).days
    return int(value)


def output_size(sizes: Sequence[int], max_output_size: int = MAX_OUTPUT_SIZE_DEFAULT) -> int:
    """Bytes of the interleaved value: every form's bytes, at most ``max_output_size``."""
    return min(sum(sizes), max_output_size)


def interleave(forms: Sequence[bytes], size: int) -> bytes:
    """The forms' bits interleaved (module docs, step 2), cut to ``size`` bytes."""
    out = bytearray(size)
    bit = 0
    longest = max((len(f) for f in forms), default=0)
    for pos in range(longest):
        active = [f[pos] for f in forms if len(f) > pos]
        for b in range(7, -1, -1):
            for byte in active:
                if bit >= size * 8:
                    return bytes(out)
                if byte >> b & 1:
                    out[bit >> 3] |= 0x80 >> (bit & 7)
                bit += 1
    return bytes(out)


def zorder_value(kinds: Sequence[str], values: Sequence[Any], var_length: int = VAR_LENGTH_CONTRIBUTION_DEFAULT,
                 max_output_size: int = MAX_OUTPUT_SIZE_DEFAULT) -> bytes:
    """One row's z-order value: its columns' forms interleaved (per value; the reference for
    the columnar :mod:`icectl.ops.compute.zorder`)."""
    forms = [ordered_bytes(k, v, var_length) for k, v in zip(kinds, values)]
    return interleave(forms, output_size([len(f) for f in forms], max_output_size))


@dataclass(frozen=True)
class ZOrder(SortOrder):
    """A z-order as a sort order: one ``zorder`` field over the columns' ids (order id 0: it is
    none of the table's orders), with the two options of the byte forms."""

    var_length_contribution: int = VAR_LENGTH_CONTRIBUTION_DEFAULT
    max_output_size: int = MAX_OUTPUT_SIZE_DEFAULT

    @classmethod
    def of(cls, source_ids: Sequence[int], var_length_contribution: int = VAR_LENGTH_CONTRIBUTION_DEFAULT,
           max_output_size: int = MAX_OUTPUT_SIZE_DEFAULT) -> "ZOrder":
        ids = tuple(source_ids)
        f = SortField(ids[0], ZORDER_TRANSFORM, SortDirection.ASC, NullOrder.NULLS_LAST,
                      ids if len(ids) > 1 else ())
        return cls(0, (f,), var_length_contribution, max_output_size)

    @property
    def source_ids(self) -> tuple[int, ...]:
        return self.fields[0].all_source_ids

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        out[_JSON_KEY] = {VAR_LENGTH_CONTRIBUTION: self.var_length_contribution,
                          MAX_OUTPUT_SIZE: self.max_output_size}
        return out


def sort_order_from_json(obj: Any) -> SortOrder:
    """A sort order's JSON, or a :class:`ZOrder`'s (which carries its options)."""
    if isinstance(obj, dict) and _JSON_KEY in obj:
        opts = obj[_JSON_KEY]
        base = SortOrder.from_json(obj)
        return ZOrder.of(base.fields[0].all_source_ids, int(opts[VAR_LENGTH_CONTRIBUTION]),
                         int(opts[MAX_OUTPUT_SIZE]))
    return SortOrder.from_json(obj)


# -- sort-order text and binding ------------------------------------------------------------------


def _split_top(text: str, sep: str = ",") -> list[str]:
    parts, depth, start, quote = [], 0, 0, None
    for i, ch in enumerate(text):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "`\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def parse_zorder_terms(text: str | None) -> list[str] | None:
    """The columns of the ``zorder(a, b)`` terms of sort-order text (several terms add their
    columns in order, as the reference does), or None when the text has no such term. A
    direction or null order after a term is accepted and ignored, as the reference does; mixing
    z-order terms with other sort terms is refused, as the reference refuses it."""
    if not text or "zorder" not in text.lower():
        return None
    columns: list[str] = []
    other = False
    for term in _split_top(text):
        t = term.strip()
        head = t[:6].lower()
        rest = t[6:].lstrip()
        if head != "zorder" or not rest.startswith("("):
            other = other or bool(t)
            continue
        close = _matching_paren(rest)
        if close < 0:
            raise InvalidInput(f"unbalanced parentheses in the sort order {text!r}")
        tail = rest[close + 1:].split()
        if not _direction_words(tail):
            raise InvalidInput(f"unexpected text after a zorder term in the sort order {text!r}")
        args = [a.strip().strip("`").strip('"') for a in _split_top(rest[1:close])]
        if any(not a for a in args):
            raise InvalidInput(f"empty column in the zorder term {t!r}")
        columns.extend(args)
    if not columns:
        return None
    if other:
        raise InvalidInput(f"cannot mix z-order terms with other sort terms in one sort order: {text!r}")
    return columns


def _matching_paren(text: str) -> int:
    depth = 0
    for i, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0:
            return i
    return -1


def _direction_words(words: list[str]) -> bool:
    w = [x.lower() for x in words]
    if w[:1] in (["asc"], ["desc"]):
        w = w[1:]
    return w in ([], ["nulls", "first"], ["nulls", "last"])


def bind_zorder(schema: Schema, identity_source_ids: set[int], columns: Sequence[str], *,
                case_sensitive: bool = False,
                var_length_contribution: int | None = None,
                max_output_size: int | None = None) -> tuple[ZOrder, list[str]]:
    """The z-order of ``columns`` in ``schema`` and the columns left out: those an identity
    partition field holds constant in each partition (ignored, as the reference ignores them;
    all of them ignored is refused). Unknown columns, nested columns and types the reference
    cannot z-order are refused; so are options below 1 byte."""
    var_length = VAR_LENGTH_CONTRIBUTION_DEFAULT if var_length_contribution is None else var_length_contribution
    max_out = MAX_OUTPUT_SIZE_DEFAULT if max_output_size is None else max_output_size
    if var_length < 1:
        raise InvalidInput(f"z-order cannot use less than 1 byte of a variable-length value "
                           f"(the variable-length contribution is {var_length})",
                           argument="var_length_contribution")
    if max_out < 1:
        raise InvalidInput(f"the interleaved z-order value cannot use less than 1 byte "
                           f"(the maximum output size is {max_out})", argument="max_output_size")
    names = [c.strip() for c in columns if c.strip()]
    if not names:
        raise InvalidInput("cannot z-order without columns", argument="zorder_columns")
    ids: list[int] = []
    ignored: list[str] = []
    for name in names:
        f = schema.find_field_or_none(name, case_sensitive=case_sensitive)
        if f is None:
            raise NotFound(f"cannot find column {name!r} to z-order by in the table schema "
                           f"(case sensitive: {str(case_sensitive).lower()}){schema.suggest(name)}",
                           argument="zorder_columns")
        if schema.parent_id(f.field_id) is not None:
            raise InvalidInput(f"cannot z-order by {schema.column_name(f.field_id)!r}: z-order takes "
                               f"top-level columns only", argument="zorder_columns")
        if form_kind(f.type) is None:
            raise InvalidInput(f"cannot z-order by column {f.name!r} of type {f.type}: the type is "
                               f"not supported (z-order takes int, long, float, double, date, "
                               f"timestamptz, boolean, string, uuid, binary and fixed)",
                               argument="zorder_columns")
        if f.field_id in identity_source_ids:
            ignored.append(f.name)
            continue
        ids.append(f.field_id)  # a column given twice counts twice, as in the reference
    if not ids:
        raise InvalidInput("cannot z-order: every column given is an identity partition column, "
                           "constant within each partition", argument="zorder_columns")
    return ZOrder.of(ids, var_length, max_out), ignored
