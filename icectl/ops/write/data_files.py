"""What append learns from a data file without reading its rows: the footer facts (format,
size, record count, column metrics, untruncated statistics of the partition source columns) and
the partition the file belongs to.

Partition values, per partition field of the table's default spec, come from:

1. the file's column statistics, when the transform maps the column's min and max to one value
   (for identity and bucket the min must equal the max); NaN is in no bounds, so a float or
   double column decides only when its NaN count is known to be 0 (Parquet footers carry no
   NaN count): otherwise the file holds its min (and maybe NaN rows), and a value from the
   path or the caller must be that min;
2. a Hive-style directory in the file's path (``ts_day=2024-01-02/``), in the reference's
   partition-path text (the field name, ``=``, the transform's human string, URL-escaped);
3. partition values given by the caller (``field=value`` text), for every file.

A value from the path or the caller must agree with the statistics when those decide it. A file
whose rows span several partitions, or may (a float file's NaN rows), raises
:class:`SpansPartitions`.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from icectl.command_files import io_threads
from icectl.errors import IcectlError, InvalidInput, NotFound, ValidationError
from icectl.io.formats.detect import avro_record_count, detect_format, orc_record_count
from icectl.io.formats.parquet import ColumnStats, column_stats, footer_metrics, parquet_schema_fields, read_footer
from icectl.io.formats.parquet_schema import check_file_schema, footer_null_proof
from icectl.spec.manifests import DATA, DataFile
from icectl.spec.partition_identity import same_partition
from icectl.spec.partition_path import hive_values, parse_partition_value, partition_path
from icectl.spec.partitioning import PartitionField, PartitionSpec
from icectl.spec.schema import Schema
from icectl.spec.types import BINARY, DOUBLE, FLOAT, STRING, IcebergType, NestedField

if TYPE_CHECKING:
    from icectl.io.storage.files import FileIO

__all__ = ["Scanned", "ScanContext", "scan_all", "describe", "SpansPartitions", "DEFAULT_WORKERS"]

DEFAULT_WORKERS = io_threads()
# Bounds of strings and binaries may have been truncated by a writer at 16 characters/bytes
# (Iceberg's default metrics mode); such bounds are only trusted for short prefixes.
_TRUNCATED_BOUND_LENGTH = 16


@dataclass
class Scanned:
    path: str
    file_format: str
    size: int
    record_count: int
    stats: dict[int, ColumnStats] = field(default_factory=dict)  # by table field id
    metrics: DataFile | None = None  # column metrics in the table's terms (Parquet)
    uses_names: bool = False  # columns matched by name (the file has no field ids)



def _scan_parquet(file_io: FileIO, path: str, schema: Schema, size: int, ctx: "ScanContext") -> Scanned:
    footer = read_footer(file_io, path)
    fields = parquet_schema_fields(file_io, path, ctx.mapping, footer=footer)
    problems = check_file_schema(fields, schema, footer_null_proof(footer, ctx.mapping))
    if problems:
        raise ValidationError(f"{path} does not fit the table: {'; '.join(problems)}")
    fm = footer_metrics(footer, ctx.config, ctx.mapping, size, path=path)
    # untruncated statistics of the partition sources place the file in its partition
    stats = column_stats(footer, ctx.mapping, ctx.partition_source_ids) if ctx.partition_source_ids else {}
    return Scanned(path, "PARQUET", size, fm.record_count, stats, _data_file_metrics(path, size, fm),
                    any(not f.file_has_id for f in fields))


def _data_file_metrics(path: str, size: int, fm: Any) -> DataFile:
    return DataFile(
        content=DATA, file_path=path, file_format="PARQUET", record_count=fm.record_count,
        file_size_in_bytes=size, column_sizes=fm.column_sizes or None,
        value_counts=fm.value_counts or None, null_value_counts=fm.null_value_counts or None,
        nan_value_counts=fm.nan_value_counts or None, lower_bounds=fm.lower_bounds or None,
        upper_bounds=fm.upper_bounds or None, split_offsets=fm.split_offsets or None,
    )


@dataclass(frozen=True)
class ScanContext:
    mapping: Any
    config: Any
    partition_source_ids: frozenset[int] = frozenset()  # columns whose statistics place files


def _scan(file_io: FileIO, path: str, fmt: str | None, schema: Schema, ctx: ScanContext) -> Scanned:
    try:
        info = file_io.info(path)
    except NotFound:
        raise NotFound(f"data file not found: {path}") from None
    if info.is_dir:
        raise InvalidInput(f"{path} is a directory, not a data file")
    file_format = detect_format(path, fmt)
    if file_format == "PARQUET":
        return _scan_parquet(file_io, path, schema, info.size, ctx)
    if file_format == "ORC":
        return Scanned(path, "ORC", info.size, orc_record_count(file_io, path))
    return Scanned(path, "AVRO", info.size, avro_record_count(file_io, path))


# -- partitions ----------------------------------------------------------------------------------


class _Undetermined:
    pass


UNDETERMINED = _Undetermined()


@dataclass(frozen=True)
class _UnlessNaN:
    """The partition value of a float file's non-NaN rows; it may hold NaN rows too."""

    value: Any


class _Spans(Exception):
    def __init__(self, low: Any, high: Any):
        super().__init__()
        self.low, self.high = low, high


def _bound_exact(t: IcebergType, v: Any) -> bool:
    if t == STRING:
        return len(v) < _TRUNCATED_BOUND_LENGTH
    if t == BINARY:
        return len(v) < _TRUNCATED_BOUND_LENGTH
    return True


def _from_stats(pf: PartitionField, src: NestedField | None, st: ColumnStats | None) -> Any:
    """The partition value the statistics prove, UNDETERMINED, or raise _Spans."""
    t = pf.transform
    if t.is_void:
        return None
    if src is None or st is None:
        return UNDETERMINED
    stype = src.type
    nulls = st.null_count
    if nulls is not None and st.value_count > 0 and nulls == st.value_count:
        return None  # every value is null
    if not st.has_bounds or st.min is None or st.max is None:
        return UNDETERMINED
    lo, hi = st.min, st.max
    if stype == STRING:
        lo = lo.decode("utf-8") if isinstance(lo, bytes) else lo
        hi = hi.decode("utf-8") if isinstance(hi, bytes) else hi
    if isinstance(lo, float) and (math.isnan(lo) or math.isnan(hi)):
        return UNDETERMINED
    try:
        tlo, thi = t.apply(lo, stype), t.apply(hi, stype)
    except Exception:  # noqa: BLE001 - a value the transform cannot take: say nothing
        return UNDETERMINED
    exact = _bound_exact(stype, lo) and _bound_exact(stype, hi)
    exact = exact or t.exact_from_prefixes(stype, lo, hi)
    if exact and (lo == hi or (tlo == thi and t.preserves_order)):
        if nulls is None:
            return UNDETERMINED
        if nulls > 0:
            raise _Spans(None, tlo)
        if stype in (FLOAT, DOUBLE) and st.nan_count != 0:
            return _UnlessNaN(tlo)
        return tlo
    if exact and tlo != thi:
        raise _Spans(tlo, thi)
    return UNDETERMINED


class SpansPartitions(ValidationError):
    """A file whose rows belong to several partitions of the table's spec."""


def _place(scanned: Scanned, spec: PartitionSpec, schema: Schema,
           declared: Mapping[str, str], path_values: Mapping[str, str] | None = None) -> tuple:
    """The partition tuple of one file (see the module docs), or ValidationError."""
    from_path = hive_values(scanned.path) if path_values is None else path_values
    values = []
    for pf in spec.fields:
        src = schema.find_field_or_none(pf.source_id)
        stype = src.type if src is not None else None
        st = scanned.stats.get(pf.source_id)
        try:
            proven = _from_stats(pf, src, st)
        except _Spans as s:
            raise SpansPartitions(
                f"{scanned.path}: its rows span several partitions of {pf.name} "
                f"({pf.transform.to_human_string(s.low, stype)} .. "
                f"{pf.transform.to_human_string(s.high, stype)}); one file must hold one partition") from None
        claims = []
        if pf.name in from_path:
            claims.append(("its path", parse_partition_value(pf, stype, from_path[pf.name])))
        if pf.name in declared:
            claims.append(("the given partition value", parse_partition_value(pf, stype, declared[pf.name])))
        if isinstance(proven, _UnlessNaN):
            if not claims:  # it may span two partitions: refused, or rewritten on request
                raise SpansPartitions(
                    f"{scanned.path}: cannot tell its value of partition field {pf.name}: its "
                    f"column statistics say {pf.name}={pf.transform.to_human_string(proven.value, stype)} "
                    f"but do not count NaN values, so it may also hold {pf.name}=NaN rows; put it "
                    f"in the path ({pf.name}=...) or give the partition value {pf.name}=VALUE",
                    argument="partition_values", override="rewrite_spanning",
                    effect="to read it and write its rows partitioned")
            proven = proven.value  # the file holds it: a claim must agree
        if proven is not UNDETERMINED:
            for where, v in claims:
                if not same_partition((v,), (proven,)):
                    raise ValidationError(
                        f"{scanned.path}: {where} says {pf.name}="
                        f"{pf.transform.to_human_string(v, stype)} but its rows have "
                        f"{pf.name}={pf.transform.to_human_string(proven, stype)}")
            values.append(proven)
            continue
        if claims:
            first = claims[0][1]
            for where, v in claims[1:]:
                if not same_partition((v,), (first,)):
                    raise ValidationError(
                        f"{scanned.path}: {claims[0][0]} says {pf.name}="
                        f"{pf.transform.to_human_string(first, stype)} but {where} says "
                        f"{pf.transform.to_human_string(v, stype)}")
            values.append(first)
            continue
        raise ValidationError(
            f"{scanned.path}: cannot tell its value of partition field {pf.name} "
            f"({pf.transform} of {src.name if src else '?'}) from its column statistics; "
            f"put it in the path ({pf.name}=...) or give the partition value {pf.name}=VALUE",
            argument="partition_values")
    return tuple(values)


def scan_all(file_io: FileIO, paths: Sequence[str], fmt: str | None, schema: Schema, ctx: ScanContext,
              max_workers: int | None, progress: Callable[[int, int], None] | None,
              errors: list[tuple[str, str]] | None = None) -> list[Scanned]:
    """Every file's footer facts, read by a bounded thread pool, in the order given. With
    ``errors``, a file that cannot be read or does not fit is left out and listed there."""
    total = len(paths)
    workers = max(1, min(max_workers or DEFAULT_WORKERS, total))
    scanned: list[Scanned] = []
    count = 0

    def one(path: str, get: Callable[[], Scanned]) -> None:
        nonlocal count
        try:
            scanned.append(get())
        except Exception as e:  # noqa: BLE001 - set aside only when asked to
            if errors is None:
                raise
            errors.append((path, str(e) if isinstance(e, IcectlError) else f"unreadable: {e}"))
        count += 1
        if progress:
            progress(count, total)

    if workers == 1:
        for p in paths:
            one(p, lambda p=p: _scan(file_io, p, fmt, schema, ctx))
        return scanned
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="icectl-footer") as pool:
        futures = [pool.submit(_scan, file_io, p, fmt, schema, ctx) for p in paths]
        try:
            for p, fut in zip(paths, futures):
                one(p, fut.result)
        except BaseException:
            for fut in futures:
                fut.cancel()
            raise
    return scanned


def describe(s: Scanned, spec: PartitionSpec, schema: Schema, declared: Mapping[str, str],
             path_values: Mapping[str, str] | None = None) -> tuple[DataFile, str]:
    """A scanned file as a data file of ``spec`` and its partition path. ``path_values``: the
    partition texts of the file's directories when the caller parsed them (Hive's escaping, for
    an adopted directory); by default they are read from its path as partition paths spell them."""
    part = _place(s, spec, schema, declared, path_values)
    base_metrics = s.metrics or DataFile(DATA, "", s.file_format)
    df = replace(base_metrics, content=DATA, file_path=s.path, file_format=s.file_format,
                 partition=part, record_count=s.record_count, file_size_in_bytes=s.size,
                 spec_id=spec.spec_id)
    return df, (partition_path(spec, schema, part) if spec.fields else "")
