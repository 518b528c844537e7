"""Partition transforms on whole Arrow arrays: ``transform_array(transform, array, type)``.

The vectorized form of :mod:`icectl.spec.transforms` (the plain, one-value form and the
reference for every value): results equal ``transform.apply(value, type)`` value by value, which
a property test checks on every source type and transform. Bucket hashing of int, long, date,
time and the timestamps runs Murmur3 x86 32 on whole columns (the only vectorized hash); every
other bucketed type goes through the spec's ``murmur3_hash`` once per distinct value. Truncate
of integers, strings and binary and the time transforms (floor semantics before 1970) are
vectorized; truncate of decimals goes through the spec once per distinct value, and a truncated
decimal with more digits than its column's precision is refused (DoesNotFit), as the reference
fails such a write.
"""

from __future__ import annotations

import uuid as _uuid
from typing import Any, Callable

import pyarrow as pa
import pyarrow.compute as pc

from icectl.io.formats.parquet_write import arrow_type
from icectl.ops.compute.fit import DoesNotFit
from icectl.spec.javatext import decimal_unscaled
from icectl.spec.transforms import (
    MICROS_PER_DAY,
    MICROS_PER_HOUR,
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    Transform,
    TruncateTransform,
    YearTransform,
)
from icectl.spec.types import (
    BINARY,
    DATE,
    INT,
    LONG,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMP_NS,
    TIMESTAMPTZ,
    TIMESTAMPTZ_NS,
    UUID,
    DecimalType,
    IcebergType,
)

__all__ = ["transform_array", "murmur3_longs"]

_INT_LIKE = (INT, LONG, DATE, TIME, TIMESTAMP, TIMESTAMPTZ, TIMESTAMP_NS, TIMESTAMPTZ_NS)
_NS = (TIMESTAMP_NS, TIMESTAMPTZ_NS)

_U32 = pa.uint32()


def _u32(v: int) -> pa.Scalar:
    return pa.scalar(v & 0xFFFFFFFF, _U32)


def _rotl(x: pa.Array, r: int) -> pa.Array:
    return pc.bit_wise_or(pc.shift_left(x, _u32(r)), pc.shift_right(x, _u32(32 - r)))


def murmur3_longs(v: pa.Array) -> pa.Array:
    """Murmur3 x86 32 (seed 0) of each value as 8 little-endian bytes, as uint32."""
    u = pc.cast(v, pa.uint64(), safe=False)
    lo = pc.cast(pc.bit_wise_and(u, pa.scalar(0xFFFFFFFF, pa.uint64())), _U32)
    hi = pc.cast(pc.shift_right(u, pa.scalar(32, pa.uint64())), _U32)
    c1, c2 = _u32(0xCC9E2D51), _u32(0x1B873593)
    h = pa.nulls(len(v), _U32).fill_null(0)
    for k in (lo, hi):
        k = pc.multiply(k, c1)
        k = _rotl(k, 15)
        k = pc.multiply(k, c2)
        h = pc.bit_wise_xor(h, k)
        h = _rotl(h, 13)
        h = pc.add(pc.multiply(h, _u32(5)), _u32(0xE6546B64))
    h = pc.bit_wise_xor(h, _u32(8))
    h = pc.bit_wise_xor(h, pc.shift_right(h, _u32(16)))
    h = pc.multiply(h, _u32(0x85EBCA6B))
    h = pc.bit_wise_xor(h, pc.shift_right(h, _u32(13)))
    h = pc.multiply(h, _u32(0xC2B2AE35))
    return pc.bit_wise_xor(h, pc.shift_right(h, _u32(16)))


def _floor_div(x: pa.Array, d: int) -> pa.Array:
    """Floor division of int64 values by a positive constant."""
    ds = pa.scalar(d, pa.int64())
    q = pc.divide(x, ds)  # truncates toward zero
    inexact = pc.and_(pc.less(x, pa.scalar(0, pa.int64())), pc.not_equal(pc.multiply(q, ds), x))
    return pc.if_else(inexact, pc.subtract(q, pa.scalar(1, pa.int64())), q)


def _as_longs(arr: pa.Array, t: IcebergType) -> pa.Array:
    """int/long/date/time/timestamp values as int64 (days, micros; nanos floored to micros)."""
    if isinstance(arr.type, pa.BaseExtensionType):
        arr = arr.storage
    if t == DATE:
        return arr.cast(pa.int32()).cast(pa.int64())
    out = arr.cast(pa.int64()) if not pa.types.is_int64(arr.type) else arr
    if t in _NS:
        out = _floor_div(out, 1000)
    return out


def _per_distinct(arr: pa.Array, fn: Callable[[Any], Any], result: pa.DataType) -> pa.Array:
    uniques = pc.unique(arr)
    mapped = pa.array([None if v is None else fn(v) for v in uniques.to_pylist()], result)
    return pc.take(mapped, pc.index_in(arr, value_set=uniques))


def _truncate_decimals(transform: TruncateTransform, arr: pa.Array, t: DecimalType) -> pa.Array:
    """Truncate of decimals, once per distinct value. Near the type's limit the truncated value
    can need one digit more than the column's precision (truncate[2] of -9.9 in decimal(2,1) is
    -10.0); the reference fails the write then, so such a value is refused (DoesNotFit with the
    position of its first row)."""
    uniques = pc.unique(arr)
    limit = 10**t.precision
    mapped = []
    for i, v in enumerate(uniques.to_pylist()):
        r = None if v is None else transform.apply(v, t)
        if r is not None and abs(decimal_unscaled(r, t.scale)) >= limit:
            first = pc.index(pc.index_in(arr, value_set=uniques), i).as_py()
            raise DoesNotFit(v, t, "truncated", index=first,
                             text=f"{v} truncates to {r} ({transform}), more digits than {t} holds: "
                                  f"the partition value cannot be stored")
        mapped.append(r)
    return pc.take(pa.array(mapped, arrow_type(t)), pc.index_in(arr, value_set=uniques))


def _to_internal_scalar_fn(t: IcebergType) -> Callable[[Any], Any]:
    if t == UUID:
        return lambda b: _uuid.UUID(bytes=bytes(b))
    return lambda v: v


def transform_array(transform: Transform, arr: pa.Array, source_type: IcebergType) -> pa.Array:
    """``transform`` applied to every value of ``arr`` (an array in icectl's write types)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    n = len(arr)
    if transform.is_void:
        return pa.nulls(n, arrow_type(source_type))  # void keeps the source type, always null
    if isinstance(transform, IdentityTransform):
        return arr
    if isinstance(transform, BucketTransform):
        nb = transform.num_buckets
        if source_type in _INT_LIKE:
            h = pc.cast(pc.bit_wise_and(murmur3_longs(_as_longs(arr, source_type)), _u32(0x7FFFFFFF)),
                        pa.int64())
            q = pc.divide(h, pa.scalar(nb, pa.int64()))
            return pc.subtract(h, pc.multiply(q, pa.scalar(nb, pa.int64()))).cast(pa.int32())
        storage = arr.storage if isinstance(arr.type, pa.BaseExtensionType) else arr
        conv = _to_internal_scalar_fn(source_type)
        return _per_distinct(storage, lambda v: transform.apply(conv(v), source_type), pa.int32())
    if isinstance(transform, TruncateTransform):
        w = transform.width
        if source_type in (INT, LONG):
            typ = pa.int32() if source_type == INT else pa.int64()
            ws = pa.scalar(w, typ)

            def rem(x: pa.Array) -> pa.Array:  # Java's %, in wrapping arithmetic
                return pc.subtract(x, pc.multiply(pc.divide(x, ws), ws))

            return pc.subtract(arr, rem(pc.add(rem(arr), ws)))
        if source_type == STRING:
            return pc.utf8_slice_codeunits(arr, 0, w)
        if source_type == BINARY:
            return pc.binary_slice(arr, 0, w)
        if isinstance(source_type, DecimalType):
            return _truncate_decimals(transform, arr, source_type)
        return _per_distinct(arr, lambda v: transform.apply(v, source_type), arr.type)
    if isinstance(transform, (YearTransform, MonthTransform, DayTransform, HourTransform)):
        longs = _as_longs(arr, source_type)
        if isinstance(transform, HourTransform):
            if source_type == DATE:
                return pc.multiply(longs, pa.scalar(24, pa.int64())).cast(pa.int32())
            return _floor_div(longs, MICROS_PER_HOUR).cast(pa.int32())
        days = longs if source_type == DATE else _floor_div(longs, MICROS_PER_DAY)
        if isinstance(transform, DayTransform):
            return days.cast(pa.int32())
        dates = days.cast(pa.int32()).cast(pa.date32())
        years = pc.subtract(pc.year(dates), pa.scalar(1970, pa.int64()))
        if isinstance(transform, YearTransform):
            return years.cast(pa.int32())
        months = pc.add(pc.multiply(years, pa.scalar(12, pa.int64())),
                        pc.subtract(pc.month(dates), pa.scalar(1, pa.int64())))
        return months.cast(pa.int32())
    # unknown transforms: one value at a time
    conv = _to_internal_scalar_fn(source_type)
    return pa.array([transform.apply(conv(v), source_type) if v is not None else None
                     for v in arr.to_pylist()])
