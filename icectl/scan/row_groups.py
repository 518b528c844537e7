"""Which row groups of a Parquet data file may hold rows matching the file's residual filter.

Each row group's footer statistics are turned into the metrics a manifest records for a data
file (record count, value and null counts, lower and upper bounds as single-value bytes), and
the residual is asked of them by the one metrics evaluator that prunes data files
(:class:`icectl.expr.eval_metrics.MetricsEvaluator`): there is no second set of rules.

The statistics are read by :func:`icectl.io.formats.parquet.column_stats` (the reading ``icectl append``
and the manifest metrics share), one row group at a time, so the same cautions hold: columns are
matched by field id (from the file, else the table's name mapping), columns inside lists and maps
and INT96 columns give nothing, a chunk without a null count gives nothing, a float/double chunk
whose min or max is NaN gives no bounds, nor does a zero float bound (its sign may be widened),
millisecond timestamps are converted to microseconds, unsigned integers read as unsigned.

What is more cautious here than for the manifest metrics:

* a column's statistics are used only when the file's type gives the table's values unchanged
  (same type; int read as long; float read as double; a decimal widened at the same scale);
  other evolved columns are left to the row filter;
* float/double bounds: Parquet writers leave NaN out of min/max and record no NaN count, so no
  NaN count is claimed: ``is_nan`` and ``not_nan`` never skip a row group; comparisons may,
  since a NaN matches no comparison in the row semantics the residual is applied with
  (:mod:`icectl.expr.eval_rows`), so a NaN hidden from the bounds is one no comparison keeps;
* string bounds that are not valid UTF-8 (a statistic cut inside a character) give nothing;
  pyarrow does not expose Parquet's "min/max is exact" flags, and none are needed: a truncated
  minimum is still a lower bound and a truncated maximum is rounded up by the writers that cut,
  exactly as the manifests' truncated bounds the evaluator already reads.

Skipping a row group changes nothing about positions: the reader keeps each row group's first
row position (the sum of the earlier groups' row counts), so ``_pos``, row lineage and position
deletes still address rows of the whole file.

Page indexes are not used: pyarrow (26) writes them and says whether a column chunk has one
(``has_column_index``), but neither reads a column or offset index nor reads a range of rows
inside a row group, so skipping pages would mean parsing the Thrift index and decoding pages
ourselves: not simple, and not done.
"""

from __future__ import annotations

from typing import Any

from icectl.expr.eval_metrics import MetricsEvaluator
from icectl.expr.expressions import AlwaysTrue, Expression, referenced_field_ids
from icectl.io.formats.parquet import FileMetrics, column_stats, parquet_columns
from icectl.spec.name_mapping import NameMapping
from icectl.spec.schema import Schema
from icectl.spec.types import DOUBLE, FLOAT, INT, LONG, STRING, DecimalType, IcebergType
from icectl.spec.values import to_bytes

__all__ = ["row_group_metrics", "row_groups_to_read", "row_group_starts"]


def _same_values(file_type: IcebergType | None, table_type: IcebergType | None) -> bool:
    """Whether bounds in the file's type read as the table's type give the same values."""
    if file_type is None or table_type is None:
        return False
    if file_type == table_type:
        return True
    if (file_type, table_type) in ((INT, LONG), (FLOAT, DOUBLE)):
        return True
    return (isinstance(file_type, DecimalType) and isinstance(table_type, DecimalType)
            and file_type.scale == table_type.scale)


def row_group_metrics(footer: Any, index: int, types: dict[int, IcebergType],
                      mapping: NameMapping | None = None,
                      file_types: dict[int, IcebergType | None] | None = None) -> FileMetrics:
    """Row group ``index``'s metrics, for the columns ``types`` names (field id -> the table's
    type), in the form a manifest records for a data file. ``file_types``: the file's column
    types by field id, when the caller has them."""
    rg = footer.row_group(index)
    if file_types is None:
        file_types = _file_types(footer, mapping, types)
    values: dict[int, int] = {}
    nulls: dict[int, int] = {}
    lower: dict[int, bytes] = {}
    upper: dict[int, bytes] = {}
    stats = column_stats(footer, mapping, set(types), row_group=index)
    for fid, st in stats.items():
        ft = file_types.get(fid)
        if not _same_values(ft, types.get(fid)):
            continue
        values[fid], nulls[fid] = st.value_count, st.null_count
        if not st.has_bounds or st.min is None or st.max is None:
            continue
        if ft == STRING and ("\ufffd" in st.min or "\ufffd" in st.max):
            continue  # not valid UTF-8 (or a replacement character): no bounds
        lower[fid], upper[fid] = to_bytes(ft, st.min), to_bytes(ft, st.max)
    return FileMetrics(record_count=rg.num_rows, file_size_in_bytes=rg.total_byte_size,
                       value_counts=values, null_value_counts=nulls, lower_bounds=lower,
                       upper_bounds=upper)


def row_group_starts(footer: Any) -> list[int]:
    """The position in the file of each row group's first row."""
    out, pos = [], 0
    for i in range(footer.num_row_groups):
        out.append(pos)
        pos += footer.row_group(i).num_rows
    return out


def row_groups_to_read(footer: Any, residual: Expression, schema: Schema,
                       mapping: NameMapping | None = None) -> list[int]:
    """The row groups that may hold rows matching ``residual`` (bound to ``schema``), in file
    order; every row group when the residual is always true."""
    every = list(range(footer.num_row_groups))
    if isinstance(residual, AlwaysTrue) or not every:
        return every
    types = {}
    for fid in referenced_field_ids(residual):
        f = schema.find_field_or_none(fid)
        if f is not None:
            types[fid] = f.type
    evaluator = MetricsEvaluator(residual, schema)
    file_types = _file_types(footer, mapping, types)
    return [i for i in every
            if evaluator.eval(row_group_metrics(footer, i, types, mapping, file_types))[0]]


def _file_types(footer: Any, mapping: NameMapping | None,
                types: dict[int, IcebergType]) -> dict[int, IcebergType | None]:
    return {c.field.field_id: c.field.iceberg_type
            for c in parquet_columns(footer, mapping) if c.field.field_id in types}
