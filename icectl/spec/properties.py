"""The catalogue of known table properties: their types and allowed values (pure, no I/O).

Follows the reference's ``TableProperties`` (Iceberg Java 1.10): numbers must parse as Java
parses them (``Integer.parseInt`` / ``Long.parseLong``: no spaces, no fraction), booleans are
``true`` or ``false``, enumerations are the names the reference accepts (case-insensitive where
its parser upper-cases them). Unknown keys are free-form and always accepted: engines and users
store their own properties.

:func:`validate_property` gives the problem with one key/value (None when fine);
:func:`validate_properties` checks a whole property map, as stored in a table.
:func:`property_int` reads an integer with a fallback for garbage, so a broken property never
blocks the commit that repairs it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Callable, Mapping

__all__ = [
    "PropertyProblem", "validate_property", "validate_properties", "property_int", "KNOWN_PROPERTIES",
    "RESERVED_PROPERTIES", "known_property",
]

# Properties that describe the table rather than configure it; never stored in "properties".
RESERVED_PROPERTIES = (
    "format-version", "uuid", "snapshot-count", "current-snapshot-id", "current-snapshot-summary",
    "current-snapshot-timestamp-ms", "current-schema", "default-partition-spec",
    "default-sort-order",
)

_INT_MAX = 2 ** 31 - 1
_LONG_MAX = 2 ** 63 - 1
_JAVA_INT = re.compile(r"^[+-]?[0-9]+$")

Check = Callable[[str], "str | None"]


@dataclass(frozen=True)
class PropertyProblem:
    key: str
    value: str
    problem: str

    def __str__(self) -> str:
        return f"table property {self.key}={self.value!r}: {self.problem}"


def _number(value: str, low: int, high: int, what: str) -> str | None:
    if not _JAVA_INT.match(value):
        return f"expected {what}"
    return None if low <= int(value) <= high else f"expected {what}"


def _int(low: int = 0, high: int = _INT_MAX) -> Check:
    what = f"an integer >= {low}" if high == _INT_MAX else f"an integer from {low} to {high}"
    return lambda v: _number(v, low, high, what)


def _long(low: int = 0) -> Check:
    return lambda v: _number(v, low, _LONG_MAX, f"a whole number >= {low}")


def _bool(v: str) -> str | None:
    return None if v.lower() in ("true", "false") else "expected true or false"


def _one_of(*names: str, case_sensitive: bool = False) -> Check:
    allowed = ", ".join(names)

    def check(v: str) -> str | None:
        ok = v in names if case_sensitive else v.lower() in names
        return None if ok else f"expected one of {allowed}"
    return check


_TRUNCATE = re.compile(r"^truncate\((\d+)\)$", re.IGNORECASE)


def _metrics_mode(v: str) -> str | None:
    if v.lower() in ("none", "counts", "full"):
        return None
    m = _TRUNCATE.match(v)
    if m and int(m.group(1)) > 0:
        return None
    return "expected none, counts, full or truncate(N) with N > 0"


def _fpp(v: str) -> str | None:
    try:
        f = float(v)
    except ValueError:
        return "expected a probability between 0 and 1"
    return None if 0.0 < f < 1.0 else "expected a probability between 0 and 1"


def _name_mapping(v: str) -> str | None:
    from icectl.spec.name_mapping import name_mapping_from_json

    try:
        name_mapping_from_json(json.loads(v))
    except (ValueError, TypeError) as e:
        return f"not a name mapping (invalid JSON: {e})"
    except Exception as e:  # noqa: BLE001 - the parser's own errors say what is wrong
        return f"not a name mapping ({e})"
    return None


def _format_version(v: str) -> str | None:
    return None if v in ("1", "2", "3") else "expected 1, 2 or 3"


_PARQUET_CODECS = ("uncompressed", "snappy", "gzip", "lzo", "brotli", "lz4", "zstd", "lz4_raw")
_AVRO_CODECS = ("uncompressed", "snappy", "gzip", "zstd")
_ORC_CODECS = ("none", "zlib", "snappy", "lzo", "lz4", "zstd")
_FORMATS = ("parquet", "avro", "orc")
_MODES = ("copy-on-write", "merge-on-read")
_ISOLATION = ("serializable", "snapshot")
_DISTRIBUTION = ("none", "hash", "range")

KNOWN_PROPERTIES: dict[str, Check] = {
    "format-version": _format_version,
    # commits
    "commit.retry.num-retries": _int(),
    "commit.retry.min-wait-ms": _int(),
    "commit.retry.max-wait-ms": _int(),
    "commit.retry.total-timeout-ms": _int(),
    "commit.status-check.num-retries": _int(),
    "commit.status-check.min-wait-ms": _long(),
    "commit.status-check.max-wait-ms": _long(),
    "commit.status-check.total-timeout-ms": _long(),
    "commit.manifest.target-size-bytes": _long(1),
    "commit.manifest.min-count-to-merge": _int(),
    "commit.manifest-merge.enabled": _bool,
    # data files
    "write.format.default": _one_of(*_FORMATS),
    "write.delete.format.default": _one_of(*_FORMATS),
    "write.target-file-size-bytes": _long(1),
    "write.delete.target-file-size-bytes": _long(1),
    "write.parquet.row-group-size-bytes": _long(1),
    "write.parquet.page-size-bytes": _int(1),
    "write.parquet.page-row-limit": _int(1),
    "write.parquet.dict-size-bytes": _int(1),
    "write.parquet.compression-codec": _one_of(*_PARQUET_CODECS),
    "write.parquet.compression-level": _int(-131072),
    "write.parquet.bloom-filter-max-bytes": _int(0),
    "write.parquet.row-group-check-min-record-count": _int(1),
    "write.parquet.row-group-check-max-record-count": _int(1),
    "write.delete.parquet.row-group-size-bytes": _long(1),
    "write.delete.parquet.page-size-bytes": _int(1),
    "write.delete.parquet.page-row-limit": _int(1),
    "write.delete.parquet.dict-size-bytes": _int(1),
    "write.delete.parquet.compression-codec": _one_of(*_PARQUET_CODECS),
    "write.delete.parquet.compression-level": _int(-131072),
    "write.avro.compression-codec": _one_of(*_AVRO_CODECS),
    "write.avro.compression-level": _int(-131072),
    "write.delete.avro.compression-codec": _one_of(*_AVRO_CODECS),
    "write.orc.compression-codec": _one_of(*_ORC_CODECS),
    "write.orc.compression-strategy": _one_of("speed", "compression"),
    "write.orc.stripe-size-bytes": _long(1),
    "write.orc.block-size-bytes": _long(1),
    "write.orc.vectorized.batch-size": _int(1),
    "write.orc.bloom.filter.fpp": _fpp,
    "write.delete.orc.compression-codec": _one_of(*_ORC_CODECS),
    "write.delete.orc.compression-strategy": _one_of("speed", "compression"),
    # reading
    "read.split.target-size": _long(1),
    "read.split.metadata-target-size": _long(1),
    "read.split.planning-lookback": _int(1),
    "read.split.open-file-cost": _long(0),
    "read.parquet.vectorization.enabled": _bool,
    "read.parquet.vectorization.batch-size": _int(1),
    "read.orc.vectorization.enabled": _bool,
    "read.orc.vectorization.batch-size": _int(1),
    # locations and layout
    "write.object-storage.enabled": _bool,
    "write.object-storage.partitioned-paths": _bool,
    "write.summary.partition-limit": _int(),
    "write.manifest-lists.enabled": _bool,
    "write.data.partition-stats.enabled": _bool,
    # metadata files
    "write.metadata.compression-codec": _one_of("none", "gzip"),
    "write.metadata.previous-versions-max": _int(1),
    "write.metadata.delete-after-commit.enabled": _bool,
    "write.metadata.metrics.max-inferred-column-defaults": _int(),
    "write.metadata.metrics.default": _metrics_mode,
    "schema.name-mapping.default": _name_mapping,
    # writes and row-level operations
    "write.wap.enabled": _bool,
    "write.spark.fanout.enabled": _bool,
    "write.spark.accept-any-schema": _bool,
    "write.upsert.enabled": _bool,
    "write.distribution-mode": _one_of(*_DISTRIBUTION),
    "write.delete.distribution-mode": _one_of(*_DISTRIBUTION),
    "write.update.distribution-mode": _one_of(*_DISTRIBUTION),
    "write.merge.distribution-mode": _one_of(*_DISTRIBUTION),
    "write.delete.mode": _one_of(*_MODES),
    "write.update.mode": _one_of(*_MODES),
    "write.merge.mode": _one_of(*_MODES),
    "write.delete.isolation-level": _one_of(*_ISOLATION),
    "write.update.isolation-level": _one_of(*_ISOLATION),
    "write.merge.isolation-level": _one_of(*_ISOLATION),
    "write.delete.granularity": _one_of("file", "partition"),
    "write.merge.cardinality-check.enabled": _bool,
    "compatibility.snapshot-id-inheritance.enabled": _bool,
    "engine.hive.enabled": _bool,
    # snapshot retention
    "gc.enabled": _bool,
    "history.expire.max-snapshot-age-ms": _long(1),
    "history.expire.min-snapshots-to-keep": _int(1),
    "history.expire.max-ref-age-ms": _long(1),
}

# Families keyed by a column name after a prefix.
_PREFIXED: tuple[tuple[str, Check], ...] = (
    ("write.metadata.metrics.column.", _metrics_mode),
    ("write.parquet.bloom-filter-enabled.column.", _bool),
    ("write.parquet.bloom-filter-fpp.column.", _fpp),
    ("write.parquet.stats-enabled.column.", _bool),
)


def known_property(key: str) -> bool:
    return key in KNOWN_PROPERTIES or any(key.startswith(p) and len(key) > len(p) for p, _ in _PREFIXED)


def _checker(key: str) -> Check | None:
    check = KNOWN_PROPERTIES.get(key)
    if check is None:
        for prefix, c in _PREFIXED:
            if key.startswith(prefix) and len(key) > len(prefix):
                return c
    return check


def validate_property(key: str, value: str) -> str | None:
    """What is wrong with setting ``key`` to ``value``, or None when it is fine (or unknown)."""
    if not isinstance(key, str) or not isinstance(value, str):
        return "keys and values must be text"
    if not key.strip():
        return "empty property name"
    check = _checker(key)
    return None if check is None else check(value)


def validate_properties(props: Mapping[str, str], *, stored: bool = False) -> list[PropertyProblem]:
    """Every problem in a property map. With ``stored`` (a table's saved properties), reserved
    names such as ``format-version`` are problems too: they describe the table and are never
    stored."""
    out = []
    for key, value in props.items():
        if stored and key in RESERVED_PROPERTIES:
            out.append(PropertyProblem(key, str(value), "reserved: describes the table, never stored"))
            continue
        problem = validate_property(key, value)
        if problem is not None:
            out.append(PropertyProblem(key, str(value), problem))
    return out


def property_int(props: Mapping[str, str], key: str, default: int,
                 problems: list[str] | None = None) -> int:
    """An integer property, or ``default`` when unset or not valid (the problem is appended to
    ``problems``, so the caller can report it instead of failing)."""
    value = props.get(key)
    if value is None:
        return default
    problem = validate_property(key, value) if _checker(key) else (
        None if _JAVA_INT.match(value.strip()) else "expected an integer")
    if problem is None:
        try:
            return int(value.strip())
        except ValueError:
            problem = "expected an integer"
    if problems is not None:
        problems.append(f"{PropertyProblem(key, value, problem)}; using the default {default}")
    return default
