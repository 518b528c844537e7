"""Which Parquet columns to dictionary-encode, decided as the reference's writer decides it.

parquet-mr (inside Iceberg Java) starts every column with a dictionary and, once its first page
is buffered, keeps the dictionary only if it pays: the dictionary-encoded page plus the
dictionary must be smaller than the same values written PLAIN; otherwise the whole column chunk
is written PLAIN. pyarrow has no such check: it keeps a dictionary until the dictionary outgrows
its size limit, so a column of unique values (an increasing id, a unique text) is written as a
dictionary as large as the plain data plus bit-packed indices that compress badly - about
three times the bytes of PLAIN + ZSTD for such an id column.

:func:`dictionary_columns` applies the reference's test to the first page's worth of each leaf
column (at most ``page_rows`` values) of the first rows a file receives, and names the leaves
whose dictionary pays, as the dotted Parquet column paths ``pyarrow.parquet.ParquetWriter``'s
``use_dictionary`` takes. Booleans are never dictionary-encoded (nor are they by the reference).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["dictionary_columns", "dictionary_pays"]


def dictionary_columns(data: pa.Table, page_rows: int) -> list[str]:
    """The dotted Parquet paths of the leaf columns of ``data`` worth a dictionary."""
    out: list[str] = []
    for field, column in zip(data.schema, data.columns):
        arr = column.slice(0, page_rows).combine_chunks() if column.num_chunks != 1 else column.chunk(0).slice(0, page_rows)
        _walk(field.name, arr, page_rows, out)
    return out


def _walk(path: str, arr: pa.Array, page_rows: int, out: list[str]) -> None:
    t = arr.type
    if pa.types.is_struct(t):
        for i, child in enumerate(arr.flatten()):
            _walk(f"{path}.{t.field(i).name}", child, page_rows, out)
    elif pa.types.is_map(t):
        _walk(f"{path}.key_value.key", arr.keys.slice(0, page_rows), page_rows, out)
        _walk(f"{path}.key_value.value", arr.items.slice(0, page_rows), page_rows, out)
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        _walk(f"{path}.list.element", arr.flatten().slice(0, page_rows), page_rows, out)
    elif dictionary_pays(arr):
        out.append(path)


def _plain_width(t: pa.DataType) -> int | None:
    """Bytes per value in PLAIN encoding of a fixed-width type, None for variable-width."""
    if isinstance(t, pa.ExtensionType):
        t = t.storage_type
    if pa.types.is_decimal(t):
        if t.precision <= 9:
            return 4
        if t.precision <= 18:
            return 8
        return _decimal_bytes(t.precision)
    if pa.types.is_fixed_size_binary(t):
        return t.byte_width
    if pa.types.is_binary(t) or pa.types.is_string(t) or pa.types.is_large_binary(t) or pa.types.is_large_string(t):
        return None
    return max(4, t.bit_width // 8)  # INT32 is the smallest physical integer


def _decimal_bytes(precision: int) -> int:
    n = 1
    while 10 ** precision > 2 ** (8 * n - 1):
        n += 1
    return n


def dictionary_pays(arr: pa.Array) -> bool:
    """Whether a dictionary page plus RLE/bit-packed indices is smaller than PLAIN for these
    values (nulls are not stored as values, so they do not count)."""
    if pa.types.is_boolean(arr.type):
        return False
    if isinstance(arr, pa.ExtensionArray):
        arr = arr.storage
    values = pc.drop_null(arr)
    n = len(values)
    if n == 0:
        return True
    distinct = pc.unique(values)
    width = _plain_width(values.type)
    if width is None:
        raw = int(pc.sum(pc.binary_length(values)).as_py() or 0) + 4 * n
        dictionary = int(pc.sum(pc.binary_length(distinct)).as_py() or 0) + 4 * len(distinct)
    else:
        raw, dictionary = width * n, width * len(distinct)
    bits = max(1, (len(distinct) - 1).bit_length())
    runs = 1 + (int(pc.sum(pc.not_equal(values.slice(1), values.slice(0, n - 1)).cast(pa.int64())).as_py() or 0)
                if n > 1 else 0)
    encoded = 1 + min((n * bits + 7) // 8, runs * (1 + (bits + 7) // 8))
    return encoded + dictionary < raw
