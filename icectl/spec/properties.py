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

from icectl.spec.name_mapping import NAME_MAPPING_PROPERTY, name_mapping_from_json

__all__ = [
    "PropertyProblem", "validate_property", "validate_properties", "property_int", "KNOWN_PROPERTIES",
    "RESERVED_PROPERTIES",
    # keys and defaults (the one home of each; users import them from here)
    "COMMIT_NUM_RETRIES", "COMMIT_NUM_RETRIES_DEFAULT", "COMMIT_MIN_RETRY_WAIT_MS",
    "COMMIT_MIN_RETRY_WAIT_MS_DEFAULT", "COMMIT_MAX_RETRY_WAIT_MS", "COMMIT_MAX_RETRY_WAIT_MS_DEFAULT",
    "COMMIT_TOTAL_RETRY_TIME_MS", "COMMIT_TOTAL_RETRY_TIME_MS_DEFAULT",
    "MANIFEST_MERGE_ENABLED", "MANIFEST_MIN_MERGE_COUNT", "MANIFEST_MIN_MERGE_COUNT_DEFAULT",
    "MANIFEST_TARGET_SIZE", "MANIFEST_TARGET_SIZE_DEFAULT",
    "TARGET_FILE_SIZE", "TARGET_FILE_SIZE_DEFAULT", "DELETE_TARGET_FILE_SIZE",
    "DELETE_TARGET_FILE_SIZE_DEFAULT", "PARQUET_COMPRESSION", "PARQUET_COMPRESSION_DEFAULT",
    "PARQUET_COMPRESSION_NEW_TABLE", "PARQUET_COMPRESSION_LEVEL", "PARQUET_ROW_GROUP_SIZE",
    "PARQUET_ROW_GROUP_SIZE_DEFAULT", "PARQUET_PAGE_SIZE", "PARQUET_PAGE_SIZE_DEFAULT",
    "PARQUET_PAGE_ROW_LIMIT", "PARQUET_PAGE_ROW_LIMIT_DEFAULT", "PARQUET_DICT_SIZE",
    "PARQUET_DICT_SIZE_DEFAULT", "WRITE_DATA_PATH", "WRITE_FOLDER_STORAGE_PATH",
    "WRITE_METADATA_PATH", "METADATA_COMPRESSION", "METADATA_DELETE_AFTER_COMMIT",
    "METADATA_PREVIOUS_VERSIONS_MAX", "METADATA_PREVIOUS_VERSIONS_MAX_DEFAULT",
    "METRICS_DEFAULT_MODE", "METRICS_COLUMN_MODE_PREFIX", "METRICS_MAX_INFERRED_COLUMNS",
    "METRICS_MAX_INFERRED_COLUMNS_DEFAULT", "NAME_MAPPING", "PARTITION_SUMMARY_LIMIT",
    "PARTITION_SUMMARY_LIMIT_DEFAULT", "DELETE_MODE", "UPDATE_MODE", "MERGE_MODE", "COPY_ON_WRITE",
    "MERGE_ON_READ", "DELETE_MODE_DEFAULT", "DELETE_ISOLATION_LEVEL", "UPDATE_ISOLATION_LEVEL",
    "MERGE_ISOLATION_LEVEL", "SERIALIZABLE", "SNAPSHOT", "ISOLATION_LEVEL_DEFAULT",
    "SPLIT_SIZE", "SPLIT_SIZE_DEFAULT", "SPLIT_OPEN_FILE_COST", "SPLIT_OPEN_FILE_COST_DEFAULT",
    "SPLIT_LOOKBACK", "SPLIT_LOOKBACK_DEFAULT", "GC_ENABLED", "GC_ENABLED_DEFAULT",
    "MAX_SNAPSHOT_AGE_MS", "MAX_SNAPSHOT_AGE_MS_DEFAULT", "MIN_SNAPSHOTS_TO_KEEP",
    "MIN_SNAPSHOTS_TO_KEEP_DEFAULT", "MAX_REF_AGE_MS", "MAX_REF_AGE_MS_DEFAULT",
]

# -- Keys and defaults: the one home of every property icectl reads ------------------------------
# (the reference's TableProperties; a module that reads a property imports its key and default)

# commits
COMMIT_NUM_RETRIES = "commit.retry.num-retries"
COMMIT_NUM_RETRIES_DEFAULT = 4
COMMIT_MIN_RETRY_WAIT_MS = "commit.retry.min-wait-ms"
COMMIT_MIN_RETRY_WAIT_MS_DEFAULT = 100
COMMIT_MAX_RETRY_WAIT_MS = "commit.retry.max-wait-ms"
COMMIT_MAX_RETRY_WAIT_MS_DEFAULT = 60_000
COMMIT_TOTAL_RETRY_TIME_MS = "commit.retry.total-timeout-ms"
COMMIT_TOTAL_RETRY_TIME_MS_DEFAULT = 1_800_000
MANIFEST_MERGE_ENABLED = "commit.manifest-merge.enabled"  # default: per operation (producer)
MANIFEST_MIN_MERGE_COUNT = "commit.manifest.min-count-to-merge"
MANIFEST_MIN_MERGE_COUNT_DEFAULT = 100
MANIFEST_TARGET_SIZE = "commit.manifest.target-size-bytes"
MANIFEST_TARGET_SIZE_DEFAULT = 8 * 1024 * 1024
# data and delete files
TARGET_FILE_SIZE = "write.target-file-size-bytes"
TARGET_FILE_SIZE_DEFAULT = 512 * 1024 * 1024
DELETE_TARGET_FILE_SIZE = "write.delete.target-file-size-bytes"
DELETE_TARGET_FILE_SIZE_DEFAULT = 64 * 1024 * 1024
PARQUET_COMPRESSION = "write.parquet.compression-codec"
PARQUET_COMPRESSION_DEFAULT = "gzip"  # TableProperties.PARQUET_COMPRESSION_DEFAULT ...
PARQUET_COMPRESSION_NEW_TABLE = "zstd"  # ... and what it persists into a new table
PARQUET_COMPRESSION_LEVEL = "write.parquet.compression-level"
PARQUET_ROW_GROUP_SIZE = "write.parquet.row-group-size-bytes"
PARQUET_ROW_GROUP_SIZE_DEFAULT = 128 * 1024 * 1024
PARQUET_PAGE_SIZE = "write.parquet.page-size-bytes"
PARQUET_PAGE_SIZE_DEFAULT = 1024 * 1024
PARQUET_PAGE_ROW_LIMIT = "write.parquet.page-row-limit"
PARQUET_PAGE_ROW_LIMIT_DEFAULT = 20_000
PARQUET_DICT_SIZE = "write.parquet.dict-size-bytes"
PARQUET_DICT_SIZE_DEFAULT = 2 * 1024 * 1024
WRITE_DATA_PATH = "write.data.path"
WRITE_FOLDER_STORAGE_PATH = "write.folder-storage.path"  # the older name of write.data.path
# metadata files
WRITE_METADATA_PATH = "write.metadata.path"
METADATA_COMPRESSION = "write.metadata.compression-codec"
METADATA_DELETE_AFTER_COMMIT = "write.metadata.delete-after-commit.enabled"
METADATA_PREVIOUS_VERSIONS_MAX = "write.metadata.previous-versions-max"
METADATA_PREVIOUS_VERSIONS_MAX_DEFAULT = 100
METRICS_DEFAULT_MODE = "write.metadata.metrics.default"
METRICS_COLUMN_MODE_PREFIX = "write.metadata.metrics.column."
METRICS_MAX_INFERRED_COLUMNS = "write.metadata.metrics.max-inferred-column-defaults"
METRICS_MAX_INFERRED_COLUMNS_DEFAULT = 100
NAME_MAPPING = NAME_MAPPING_PROPERTY  # (defined beside its parser, which validates it here)
# how many changed partitions may get their own ``partitions.<path>`` summary entry
PARTITION_SUMMARY_LIMIT = "write.summary.partition-limit"
PARTITION_SUMMARY_LIMIT_DEFAULT = 0
# row-level operations
DELETE_MODE = "write.delete.mode"
UPDATE_MODE = "write.update.mode"
MERGE_MODE = "write.merge.mode"
COPY_ON_WRITE = "copy-on-write"
MERGE_ON_READ = "merge-on-read"
DELETE_MODE_DEFAULT = COPY_ON_WRITE
DELETE_ISOLATION_LEVEL = "write.delete.isolation-level"
UPDATE_ISOLATION_LEVEL = "write.update.isolation-level"
MERGE_ISOLATION_LEVEL = "write.merge.isolation-level"
SERIALIZABLE = "serializable"
SNAPSHOT = "snapshot"
ISOLATION_LEVEL_DEFAULT = SERIALIZABLE
# reading
SPLIT_SIZE = "read.split.target-size"
SPLIT_SIZE_DEFAULT = 128 * 1024 * 1024
SPLIT_OPEN_FILE_COST = "read.split.open-file-cost"
SPLIT_OPEN_FILE_COST_DEFAULT = 4 * 1024 * 1024
SPLIT_LOOKBACK = "read.split.planning-lookback"
SPLIT_LOOKBACK_DEFAULT = 10
# snapshot retention and garbage collection
GC_ENABLED = "gc.enabled"
GC_ENABLED_DEFAULT = True
MAX_SNAPSHOT_AGE_MS = "history.expire.max-snapshot-age-ms"
MAX_SNAPSHOT_AGE_MS_DEFAULT = 5 * 24 * 3600 * 1000
MIN_SNAPSHOTS_TO_KEEP = "history.expire.min-snapshots-to-keep"
MIN_SNAPSHOTS_TO_KEEP_DEFAULT = 1
MAX_REF_AGE_MS = "history.expire.max-ref-age-ms"
MAX_REF_AGE_MS_DEFAULT = 2**63 - 1

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
_MODES = (COPY_ON_WRITE, MERGE_ON_READ)
_ISOLATION = (SERIALIZABLE, SNAPSHOT)
_DISTRIBUTION = ("none", "hash", "range")

KNOWN_PROPERTIES: dict[str, Check] = {
    "format-version": _format_version,
    # commits
    COMMIT_NUM_RETRIES: _int(),
    COMMIT_MIN_RETRY_WAIT_MS: _int(),
    COMMIT_MAX_RETRY_WAIT_MS: _int(),
    COMMIT_TOTAL_RETRY_TIME_MS: _int(),
    "commit.status-check.num-retries": _int(),
    "commit.status-check.min-wait-ms": _long(),
    "commit.status-check.max-wait-ms": _long(),
    "commit.status-check.total-timeout-ms": _long(),
    MANIFEST_TARGET_SIZE: _long(1),
    MANIFEST_MIN_MERGE_COUNT: _int(),
    MANIFEST_MERGE_ENABLED: _bool,
    # data files
    "write.format.default": _one_of(*_FORMATS),
    "write.delete.format.default": _one_of(*_FORMATS),
    TARGET_FILE_SIZE: _long(1),
    DELETE_TARGET_FILE_SIZE: _long(1),
    PARQUET_ROW_GROUP_SIZE: _long(1),
    PARQUET_PAGE_SIZE: _int(1),
    PARQUET_PAGE_ROW_LIMIT: _int(1),
    PARQUET_DICT_SIZE: _int(1),
    PARQUET_COMPRESSION: _one_of(*_PARQUET_CODECS),
    PARQUET_COMPRESSION_LEVEL: _int(-131072),
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
    SPLIT_SIZE: _long(1),
    "read.split.metadata-target-size": _long(1),
    SPLIT_LOOKBACK: _int(1),
    SPLIT_OPEN_FILE_COST: _long(0),
    "read.parquet.vectorization.enabled": _bool,
    "read.parquet.vectorization.batch-size": _int(1),
    "read.orc.vectorization.enabled": _bool,
    "read.orc.vectorization.batch-size": _int(1),
    # locations and layout
    "write.object-storage.enabled": _bool,
    "write.object-storage.partitioned-paths": _bool,
    PARTITION_SUMMARY_LIMIT: _int(),
    "write.manifest-lists.enabled": _bool,
    "write.data.partition-stats.enabled": _bool,
    # metadata files
    METADATA_COMPRESSION: _one_of("none", "gzip"),
    METADATA_PREVIOUS_VERSIONS_MAX: _int(1),
    METADATA_DELETE_AFTER_COMMIT: _bool,
    METRICS_MAX_INFERRED_COLUMNS: _int(),
    METRICS_DEFAULT_MODE: _metrics_mode,
    NAME_MAPPING: _name_mapping,
    # writes and row-level operations
    "write.wap.enabled": _bool,
    "write.spark.fanout.enabled": _bool,
    "write.spark.accept-any-schema": _bool,
    "write.upsert.enabled": _bool,
    "write.distribution-mode": _one_of(*_DISTRIBUTION),
    "write.delete.distribution-mode": _one_of(*_DISTRIBUTION),
    "write.update.distribution-mode": _one_of(*_DISTRIBUTION),
    "write.merge.distribution-mode": _one_of(*_DISTRIBUTION),
    DELETE_MODE: _one_of(*_MODES),
    UPDATE_MODE: _one_of(*_MODES),
    MERGE_MODE: _one_of(*_MODES),
    DELETE_ISOLATION_LEVEL: _one_of(*_ISOLATION),
    UPDATE_ISOLATION_LEVEL: _one_of(*_ISOLATION),
    MERGE_ISOLATION_LEVEL: _one_of(*_ISOLATION),
    "write.delete.granularity": _one_of("file", "partition"),
    "write.merge.cardinality-check.enabled": _bool,
    "compatibility.snapshot-id-inheritance.enabled": _bool,
    "engine.hive.enabled": _bool,
    # snapshot retention
    GC_ENABLED: _bool,
    MAX_SNAPSHOT_AGE_MS: _long(1),
    MIN_SNAPSHOTS_TO_KEEP: _int(1),
    MAX_REF_AGE_MS: _long(1),
}

# Families keyed by a column name after a prefix.
_PREFIXED: tuple[tuple[str, Check], ...] = (
    ("write.metadata.metrics.column.", _metrics_mode),
    ("write.parquet.bloom-filter-enabled.column.", _bool),
    ("write.parquet.bloom-filter-fpp.column.", _fpp),
    ("write.parquet.stats-enabled.column.", _bool),
)


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
