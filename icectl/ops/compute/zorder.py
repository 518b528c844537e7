"""Z-order values of whole columns: :func:`zorder_keys` (the sort keys), :func:`zorder_bytes`.

The same byte forms and interleaving as :mod:`icectl.spec.zorder` defines per value, computed
with Arrow kernels on whole columns (no per-row Python):

* each column becomes its form's bytes, one ``uint8`` array per byte position (primitives by
  shifts of their 64-bit ordered form, strings and binary through a fixed-width binary view);
* each byte position's active columns are interleaved with one lookup per column (a 256-entry
  table spreading a byte's bits ``n`` apart) and shifts;
* the output bytes are packed, eight at a time, into ``uint64`` arrays: sorting rows by these
  arrays in turn is sorting them by the interleaved bytes, unsigned and big-endian.

A property test runs both implementations on the same values of every type.

:func:`cell_boundary` picks where a z-ordered run of rows is cut into files: near an equal
share, at the edge of the largest z-cell there (the adjacent values sharing the shortest
prefix), so each file covers fewer, squarer cells and range filters on the columns read fewer
files.
"""

from __future__ import annotations

from functools import lru_cache

import pyarrow as pa
import pyarrow.compute as pc

from icectl.ops.compute.arrow_values import column_by_id
from icectl.spec.schema import Schema
from icectl.spec.zorder import (BINARY_FORM, BOOL_FORM, DAYS_FORM, FLOAT_FORM, LONG_FORM, SECONDS_FORM,
                                STRING_FORM, ZOrder, form_kind, form_size, output_size)

__all__ = ["zorder_keys", "zorder_sort_keys", "zorder_bytes", "column_forms", "cell_boundary"]

_SIGN = pa.scalar(-(2**63), pa.int64())
_CANONICAL_NAN = pa.scalar(0x7FF8000000000000, pa.int64())


def _u64(arr: pa.Array) -> pa.Array:
    return arr.view(pa.uint64())


def _long_form(values: pa.Array) -> pa.Array:
    """int64 values -> their ordered form as uint64 (sign bit flipped; null -> 0)."""
    v = pc.bit_wise_xor(values.cast(pa.int64()), _SIGN)
    return pc.fill_null(_u64(v), 0)


def _float_form(values: pa.Array) -> pa.Array:
    d = values.cast(pa.float64())
    bits = pc.fill_null(d, 0.0).view(pa.int64())
    bits = pc.if_else(pc.fill_null(pc.is_nan(d), False), _CANONICAL_NAN, bits)
    mask = pc.bit_wise_or(pc.shift_right(bits, 31), _SIGN)  # by 31, as the reference shifts
    out = _u64(pc.bit_wise_xor(bits, mask))
    return pc.if_else(pc.is_null(d), pa.scalar(0, pa.uint64()), out)


def _floor_seconds(values: pa.Array) -> pa.Array:
    t = values.type
    micros = values.cast(pa.timestamp("us", tz=t.tz)).cast(pa.int64())
    q = pc.divide(micros, 1_000_000)  # truncates toward zero
    r = pc.subtract(micros, pc.multiply(q, 1_000_000))
    return pc.if_else(pc.less(r, 0), pc.subtract(q, 1), q)


def _bool_form(values: pa.Array) -> pa.Array:
    on = pa.scalar(0x81 << 56, pa.uint64())
    out = pc.if_else(values, on, pa.scalar(0, pa.uint64()))
    return pc.fill_null(out, 0)


def _n(v: int) -> pa.Scalar:
    return pa.scalar(v, pa.uint64())


_BYTE = pa.scalar(0xFF, pa.uint64())


def _u64_bytes(u: pa.Array) -> list[pa.Array]:
    return [pc.cast(pc.bit_wise_and(pc.shift_right(u, _n(56 - 8 * k)), _BYTE), pa.uint8())
            for k in range(8)]


def _fixed_bytes(fixed: pa.Array, width: int) -> list[pa.Array]:
    """The byte columns of a fixed-width binary array with no nulls."""
    flat = pa.Array.from_buffers(pa.uint8(), (len(fixed) + fixed.offset) * width,
                                 [None, fixed.buffers()[1]])
    flat = flat.slice(fixed.offset * width, len(fixed) * width)
    lists = pa.FixedSizeListArray.from_arrays(flat, width)
    return [pc.list_element(lists, k) for k in range(width)]


def _fill_to(raw: pa.Array, width: int) -> pa.Array:
    padded = pc.binary_join_element_wise(raw, pa.scalar(bytes(width), pa.binary()), b"")
    return pc.binary_slice(padded, 0, width).cast(pa.binary(width))


def _is_continuation(raw: pa.Array, pos: int) -> pa.Array:
    b = pc.binary_slice(raw, pos, pos + 1)
    return pc.and_(pc.greater_equal(b, pa.scalar(b"\x80", pa.binary())),
                   pc.less(b, pa.scalar(b"\xc0", pa.binary())))


def _string_prefix(raw: pa.Array, width: int) -> pa.Array:
    """The UTF-8 bytes of the whole characters that fit in ``width`` bytes."""
    out = pc.binary_slice(raw, 0, width)
    # a cut inside a character: back to that character's first byte (at most 3 bytes back)
    cut_inside = _is_continuation(raw, width)
    for back in range(1, 4):
        if width - back < 0:
            break
        shorter = pc.binary_slice(raw, 0, width - back)
        out = pc.if_else(cut_inside, shorter, out)
        cut_inside = pc.and_(cut_inside, _is_continuation(raw, width - back))
    return out


def _uuid_text(values: pa.Array) -> pa.Array:
    if isinstance(values.type, pa.BaseExtensionType):
        values = values.storage
    cols = _fixed_bytes(pc.fill_null(values, pa.scalar(bytes(16), values.type)), 16)
    hexes = _hex_table()
    parts: list[pa.Array | pa.Scalar] = []
    for k, c in enumerate(cols):
        if k in (4, 6, 8, 10):
            parts.append(pa.scalar(b"-", pa.binary()))
        parts.append(pc.take(hexes, c))
    text = pc.binary_join_element_wise(*parts, b"")
    return pc.if_else(pc.is_null(values), pa.scalar(None, pa.binary()), text)


@lru_cache(maxsize=None)
def _hex_table() -> pa.Array:
    return pa.array([f"{i:02x}".encode() for i in range(256)], pa.binary())


def column_forms(values: pa.Array, kind: str, var_length: int) -> list[pa.Array]:
    """The byte form of a column (see :mod:`icectl.spec.zorder`), one uint8 array per byte."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if kind == LONG_FORM:
        return _u64_bytes(_long_form(values))
    if kind == DAYS_FORM:
        return _u64_bytes(_long_form(values.cast(pa.int32())))
    if kind == SECONDS_FORM:
        return _u64_bytes(_long_form(_floor_seconds(values)))
    if kind == FLOAT_FORM:
        return _u64_bytes(_float_form(values))
    if kind == BOOL_FORM:
        return _u64_bytes(_bool_form(values))
    if kind == STRING_FORM:
        if pa.types.is_fixed_size_binary(values.type) or isinstance(values.type, pa.BaseExtensionType):
            raw = _uuid_text(values)
        else:
            raw = values.cast(pa.large_binary() if pa.types.is_large_string(values.type) else pa.binary())
        raw = pc.fill_null(raw.cast(pa.binary()), b"")
        return _fixed_bytes(_fill_to(_string_prefix(raw, var_length), var_length), var_length)
    if kind == BINARY_FORM:
        if isinstance(values.type, pa.BaseExtensionType):
            values = values.storage
        raw = pc.fill_null(values.cast(pa.binary()), b"")
        return _fixed_bytes(_fill_to(pc.binary_slice(raw, 0, var_length), var_length), var_length)
    raise ValueError(f"unknown z-order byte form {kind!r}")


@lru_cache(maxsize=None)
def _spread(n: int) -> pa.Array:
    """byte -> its bits ``n`` apart (bit b at b * n), for interleaving ``n`` columns."""
    out = []
    for v in range(256):
        s = 0
        for b in range(8):
            s |= ((v >> b) & 1) << (b * n)
        out.append(s)
    return pa.array(out, pa.uint64())


def _group_bytes(active: list[pa.Array]) -> list[pa.Array]:
    """The ``len(active)`` output bytes of one byte position's columns, interleaved."""
    n = len(active)
    if n <= 8:
        table = _spread(n)
        group = None
        for i, b in enumerate(active):
            v = pc.take(table, b)
            if n - 1 - i:
                v = pc.shift_left(v, _n(n - 1 - i))
            group = v if group is None else pc.bit_wise_or(group, v)
        return [pc.cast(pc.bit_wise_and(pc.shift_right(group, _n(8 * (n - 1 - j))), _BYTE), pa.uint8())
                for j in range(n)]
    out = []
    for j in range(n):  # more than 8 columns: bit by bit
        acc = None
        for m in range(8):
            t = 8 * j + m
            u8 = pa.uint8()
            bit = pc.bit_wise_and(pc.shift_right(active[t % n], pa.scalar(7 - t // n, u8)), pa.scalar(1, u8))
            bit = pc.shift_left(bit, pa.scalar(7 - m, u8))
            acc = bit if acc is None else pc.bit_wise_or(acc, bit)
        out.append(acc)
    return out


def _interleaved(forms: list[list[pa.Array]], size: int) -> list[pa.Array]:
    out: list[pa.Array] = []
    longest = max((len(f) for f in forms), default=0)
    for pos in range(longest):
        out.extend(_group_bytes([f[pos] for f in forms if len(f) > pos]))
        if len(out) >= size:
            return out[:size]
    return out[:size]


def _pack(out_bytes: list[pa.Array]) -> list[pa.Array]:
    chunks = []
    for c in range(0, len(out_bytes), 8):
        acc = None
        for j, b in enumerate(out_bytes[c:c + 8]):
            v = pc.shift_left(b.cast(pa.uint64()), _n(56 - 8 * j))
            acc = v if acc is None else pc.bit_wise_or(acc, v)
        chunks.append(acc)
    return chunks


def zorder_keys(columns: list[pa.Array], kinds: list[str], var_length: int, max_output_size: int
                ) -> list[pa.Array]:
    """The z-order values of rows (one value per row of the equally long ``columns``), as
    uint64 arrays whose lexicographic order is the values' byte order: byte ``8c + j`` of a
    value is byte ``j`` (from the most significant) of array ``c``."""
    forms = [column_forms(col, k, var_length) for col, k in zip(columns, kinds)]
    size = output_size([form_size(k, var_length) for k in kinds], max_output_size)
    return _pack(_interleaved(forms, size))


def _order_columns(data: pa.Table, order: ZOrder, schema: Schema) -> tuple[list[pa.Array], list[str]]:
    cols, kinds = [], []
    for fid in order.source_ids:
        arr, t = column_by_id(data, schema, fid)
        kind = form_kind(t)
        if kind is None:
            raise ValueError(f"column {schema.column_name(fid)!r} of type {t} cannot be z-ordered")
        cols.append(arr)
        kinds.append(kind)
    return cols, kinds


def zorder_sort_keys(data: pa.Table, order: ZOrder, schema: Schema
                     ) -> tuple[pa.Table, list[tuple[str, str]]]:
    """The key columns that sort ``data`` by its z-order values (ascending) and their
    ``pyarrow.compute.sort_indices`` keys."""
    cols, kinds = _order_columns(data, order, schema)
    chunks = zorder_keys(cols, kinds, order.var_length_contribution, order.max_output_size)
    names = [f"z{i}" for i in range(len(chunks))]
    return pa.table(dict(zip(names, chunks))), [(n, "ascending") for n in names]


def zorder_bytes(data: pa.Table, order: ZOrder, schema: Schema) -> list[bytes]:
    """Each row's interleaved z-order value as bytes (for inspection and tests)."""
    cols, kinds = _order_columns(data, order, schema)
    size = output_size([form_size(k, order.var_length_contribution) for k in kinds], order.max_output_size)
    chunks = zorder_keys(cols, kinds, order.var_length_contribution, order.max_output_size)
    rows = zip(*[c.to_pylist() for c in chunks]) if chunks else iter([()] * data.num_rows)
    return [b"".join(v.to_bytes(8, "big") for v in row)[:size] for row in rows]


def cell_boundary(rows: pa.Table, order: ZOrder, schema: Schema, lo: int, hi: int, ideal: int) -> int:
    """The index in ``[lo, hi]`` (``0 < lo <= hi < rows.num_rows``) of the first row of a new
    file cut from ``rows`` (in z-order): where a row's value and the previous one share the
    shortest prefix, the one nearest ``ideal`` among equals."""
    values = zorder_bytes(rows.slice(lo - 1, hi - lo + 2), order, schema)
    best, best_key = lo, None
    previous = int.from_bytes(values[0], "big")
    for j, v in enumerate(values[1:], start=lo):
        current = int.from_bytes(v, "big")
        key = (-(previous ^ current).bit_length(), abs(j - ideal))
        if best_key is None or key < best_key:
            best, best_key = j, key
        previous = current
    return best
