"""Partition paths: the reference's Hive-style text of partition tuples, both ways.

A partition path is ``name=value`` per partition field, joined by ``/``
(``ts_day=2024-01-02/id_bucket=3``): the field name and the transform's human string of the
value (:meth:`~icectl.spec.transforms.Transform.to_human_string`), each URL-encoded as
``java.net.URLEncoder`` encodes (space as ``+``), ``null`` for a null value. Data files are
written under this path; ``icectl append`` reads partition values back from it
(:func:`hive_values`, :func:`parse_partition_value`: year ``2024``, month ``2024-01``, day
``2024-01-02``, hour ``2024-01-02-10``, bucket an integer, identity and truncate the column's
literal form; ``null`` and ``__HIVE_DEFAULT_PARTITION__`` for null).
"""

from __future__ import annotations

import re
from typing import Any, Sequence
from urllib.parse import quote_plus, unquote_plus

from icectl.errors import InvalidInput
from icectl.spec.javatext import civil_to_days
from icectl.spec.partitioning import PartitionField, PartitionSpec
from icectl.spec.schema import Schema
from icectl.spec.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    MonthTransform,
    TruncateTransform,
    YearTransform,
)
from icectl.spec.types import DATE, IcebergType, PrimitiveType
from icectl.spec.values import parse_literal

__all__ = ["partition_path", "partition_texts", "parse_partition_value", "hive_values", "NULL_TEXTS"]

NULL_TEXTS = ("null", "__HIVE_DEFAULT_PARTITION__")


def _escape(text: str) -> str:
    """``java.net.URLEncoder.encode(text, UTF-8)``: space as ``+``, ``*-._`` kept."""
    return quote_plus(text, safe="*").replace("~", "%7E")


def partition_texts(spec: PartitionSpec, schema: Schema, values: Sequence[Any]) -> list[tuple[str, str]]:
    """``(field name, the transform's human string of its value)`` per partition field, not
    escaped: the parts of a partition path, also shown as they are."""
    out = []
    for f, v in zip(spec.fields, values):
        src = schema.find_field_or_none(f.source_id)
        out.append((f.name, f.transform.to_human_string(v, src.type if src is not None else None)))
    return out


def partition_path(spec: PartitionSpec, schema: Schema, values: Sequence[Any]) -> str:
    """The reference's partition path of a partition tuple (``a=1/ts_day=2024-01-02``)."""
    return "/".join(f"{_escape(name)}={_escape(human)}" for name, human in partition_texts(spec, schema, values))


_YEAR = re.compile(r"^([+-]?\d{4,})$")
_MONTH = re.compile(r"^([+-]?\d{4,})-(\d{2})$")
_HOUR = re.compile(r"^([+-]?\d{4,})-(\d{2})-(\d{2})-(\d{2})$")


def parse_partition_value(pf: PartitionField, source_type: IcebergType | None, text: str) -> Any:
    """A partition value from its human text (as in partition paths) for one partition field.

    year ``2024``, month ``2024-01``, day ``2024-01-02``, hour ``2024-01-02-10``; bucket an
    integer; identity and truncate the column's literal form; ``null`` for a null value.
    """
    t = pf.transform
    if text in NULL_TEXTS or t.is_void:
        return None
    try:
        if isinstance(t, YearTransform):
            m = _YEAR.match(text)
            if not m:
                raise InvalidInput("expected a year such as 2024")
            return int(m.group(1)) - 1970
        if isinstance(t, MonthTransform):
            m = _MONTH.match(text)
            if not m or not 1 <= int(m.group(2)) <= 12:
                raise InvalidInput("expected a month such as 2024-01")
            return (int(m.group(1)) - 1970) * 12 + int(m.group(2)) - 1
        if isinstance(t, DayTransform):
            return parse_literal(DATE, text)
        if isinstance(t, HourTransform):
            m = _HOUR.match(text)
            if not m:
                raise InvalidInput("expected an hour such as 2024-01-02-10")
            y, mo, d, h = (int(g) for g in m.groups())
            if not (1 <= mo <= 12 and 1 <= d <= 31 and 0 <= h <= 23):
                raise InvalidInput("expected an hour such as 2024-01-02-10")
            return civil_to_days(y, mo, d) * 24 + h
        if isinstance(t, BucketTransform):
            v = int(text)
            if not 0 <= v < t.num_buckets:
                raise InvalidInput(f"bucket must be in 0..{t.num_buckets - 1}")
            return v
        if source_type is None:
            raise InvalidInput("the partition's source column is gone")
        if isinstance(source_type, PrimitiveType) and source_type.name in ("timestamptz", "timestamptz_ns") \
                and text.endswith("Z"):
            text = text[:-1] + "+00:00"
        value = parse_literal(source_type, text)
        if isinstance(t, TruncateTransform) and t.apply(value, source_type) != value:
            raise InvalidInput(f"not a truncate({t.width}) value")
        return value
    except InvalidInput as e:
        raise InvalidInput(f"invalid value {text!r} for partition field {pf.name} ({t}): {e}") from None
    except ValueError as e:
        raise InvalidInput(f"invalid value {text!r} for partition field {pf.name} ({t}): {e}") from None


def hive_values(path: str) -> dict[str, str]:
    """The ``name=value`` directories of a file path, names and values URL-decoded."""
    out: dict[str, str] = {}
    parts = path.replace("\\", "/").split("/")[:-1]
    for seg in parts:
        if "=" in seg:
            k, v = seg.split("=", 1)
            out[unquote_plus(k)] = unquote_plus(v)
    return out
