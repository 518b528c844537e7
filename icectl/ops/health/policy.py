"""The thresholds health judges a table by, read from its properties (pure, no I/O).

Where Iceberg has a table property for a threshold, that property decides (with Iceberg's
default when unset): ``write.target-file-size-bytes``, ``write.delete.target-file-size-bytes``,
``commit.manifest.target-size-bytes``, ``commit.manifest.min-count-to-merge``,
``history.expire.max-snapshot-age-ms``, ``history.expire.min-snapshots-to-keep``,
``history.expire.max-ref-age-ms``, ``write.metadata.previous-versions-max``. The small-file
bound is the one compaction uses (0.75 x the target; ``compact``'s rule). The rest are icectl's
own keys, all under ``icectl.health.`` (a table property, or an entry of a policy mapping
given by the caller, which wins over the table's):

=================================================  =======  ==========================================
key                                                default  a verdict is due when
=================================================  =======  ==========================================
``icectl.health.max-small-file-share``             0.25     the share of data files below the small-
                                                            file bound is above it (and compaction
                                                            would rewrite some)
``icectl.health.max-delete-files-per-data-file``   1.0      delete files applying to a data file, on
                                                            average, are more than it
``icectl.health.max-deleted-row-share``            0.10     rows deleted by delete files, as a share
                                                            of the data files' rows, are more than it
``icectl.health.max-read-amplification``           1.5      bytes a full read reads (data and deletes)
                                                            per live byte are more than it
``icectl.health.max-dangling-delete-files``        0        delete files applying to no live data file
                                                            are more than it
``icectl.health.max-manifests-per-partition``      4        manifests a one-partition filter opens, on
                                                            average, are more than it
``icectl.health.max-manifest-count-ratio``         4.0      data manifests are more than it times the
                                                            count rewrite-manifests would write
``icectl.health.max-expirable-snapshots``          0        snapshots the expiry policy would expire
                                                            are more than it
``icectl.health.max-metadata-file-bytes``          16 MiB   the metadata.json file is bigger (warning)
``icectl.health.max-partition-skew``               10.0     the largest partition holds more than it
                                                            times the median's bytes (info)
``icectl.health.tiny-partition-bytes``             target   a partition holding fewer bytes counts as
                                                            tiny (info)
``icectl.health.max-overlap-depth``                4.0      files a point filter on a sort column
                                                            must read within a partition, on
                                                            average, are more than it
``icectl.health.max-orphan-files``                 0        files older than 3 days under the location
                                                            that no metadata references are more
                                                            than it (only when the location is listed)
=================================================  =======  ==========================================

``icectl.maintain.*`` keys (the maintenance command's policy) live with that command; this
module only reads ``icectl.health.*`` and Iceberg's own keys. A value that does not parse is
reported as a problem of the policy and its default used, so a broken property never hides the
rest of the report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from icectl.ops.maintain.compact_rules import MIN_FILE_SIZE_RATIO
from icectl.spec.properties import (
    DELETE_TARGET_FILE_SIZE,
    DELETE_TARGET_FILE_SIZE_DEFAULT,
    MANIFEST_MIN_MERGE_COUNT,
    MANIFEST_MIN_MERGE_COUNT_DEFAULT,
    MANIFEST_TARGET_SIZE,
    MANIFEST_TARGET_SIZE_DEFAULT,
    MAX_REF_AGE_MS,
    MAX_REF_AGE_MS_DEFAULT,
    MAX_SNAPSHOT_AGE_MS,
    MAX_SNAPSHOT_AGE_MS_DEFAULT,
    METADATA_PREVIOUS_VERSIONS_MAX,
    METADATA_PREVIOUS_VERSIONS_MAX_DEFAULT,
    MIN_SNAPSHOTS_TO_KEEP,
    MIN_SNAPSHOTS_TO_KEEP_DEFAULT,
    TARGET_FILE_SIZE,
    TARGET_FILE_SIZE_DEFAULT,
    property_int,
)

__all__ = ["Threshold", "Policy", "read_policy", "HEALTH_PREFIX", "HEALTH_KEYS", "SMALL_FILE_RATIO"]

HEALTH_PREFIX = "icectl.health."
SMALL_FILE_RATIO = MIN_FILE_SIZE_RATIO  # compaction's minimum file size, as a share of the target

# name -> (icectl.health.* key, default, unit, kind)
HEALTH_KEYS: dict[str, tuple[str, Any, str, type]] = {
    "max-small-file-share": (HEALTH_PREFIX + "max-small-file-share", 0.25, "share", float),
    "max-delete-files-per-data-file": (HEALTH_PREFIX + "max-delete-files-per-data-file", 1.0, "files", float),
    "max-deleted-row-share": (HEALTH_PREFIX + "max-deleted-row-share", 0.10, "share", float),
    "max-read-amplification": (HEALTH_PREFIX + "max-read-amplification", 1.5, "ratio", float),
    "max-dangling-delete-files": (HEALTH_PREFIX + "max-dangling-delete-files", 0, "files", int),
    "max-manifests-per-partition": (HEALTH_PREFIX + "max-manifests-per-partition", 4.0, "manifests", float),
    "max-manifest-count-ratio": (HEALTH_PREFIX + "max-manifest-count-ratio", 4.0, "ratio", float),
    "max-expirable-snapshots": (HEALTH_PREFIX + "max-expirable-snapshots", 0, "snapshots", int),
    "max-metadata-file-bytes": (HEALTH_PREFIX + "max-metadata-file-bytes", 16 * 1024 * 1024, "bytes", int),
    "max-partition-skew": (HEALTH_PREFIX + "max-partition-skew", 10.0, "ratio", float),
    "tiny-partition-bytes": (HEALTH_PREFIX + "tiny-partition-bytes", None, "bytes", int),  # None: the target
    "max-overlap-depth": (HEALTH_PREFIX + "max-overlap-depth", 4.0, "files", float),
    "max-orphan-files": (HEALTH_PREFIX + "max-orphan-files", 0, "files", int),
}

# name -> (Iceberg table property, default, unit)
ICEBERG_KEYS: dict[str, tuple[str, int, str]] = {
    "target-file-size": (TARGET_FILE_SIZE, TARGET_FILE_SIZE_DEFAULT, "bytes"),
    "delete-target-file-size": (DELETE_TARGET_FILE_SIZE, DELETE_TARGET_FILE_SIZE_DEFAULT, "bytes"),
    "manifest-target-size": (MANIFEST_TARGET_SIZE, MANIFEST_TARGET_SIZE_DEFAULT, "bytes"),
    "manifest-min-count-to-merge": (MANIFEST_MIN_MERGE_COUNT, MANIFEST_MIN_MERGE_COUNT_DEFAULT, "manifests"),
    "max-snapshot-age": (MAX_SNAPSHOT_AGE_MS, MAX_SNAPSHOT_AGE_MS_DEFAULT, "ms"),
    "min-snapshots-to-keep": (MIN_SNAPSHOTS_TO_KEEP, MIN_SNAPSHOTS_TO_KEEP_DEFAULT, "snapshots"),
    "max-ref-age": (MAX_REF_AGE_MS, MAX_REF_AGE_MS_DEFAULT, "ms"),
    "metadata-previous-versions-max": (METADATA_PREVIOUS_VERSIONS_MAX, METADATA_PREVIOUS_VERSIONS_MAX_DEFAULT,
                                       "versions"),
}


@dataclass(frozen=True)
class Threshold:
    """One threshold: its value and unit, and where the value came from (``source``:
    ``table-property``, ``policy`` (the caller's mapping), ``default`` or ``derived``; ``key``: the
    property that sets it, None for a derived one)."""

    name: str
    value: Any
    unit: str
    source: str
    key: str | None

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "unit": self.unit, "source": self.source, "property": self.key}


@dataclass(frozen=True)
class Policy:
    """Every threshold by name, and the problems found reading them (text, one each)."""

    thresholds: dict[str, Threshold]
    problems: tuple[str, ...] = ()

    def __getitem__(self, name: str) -> Any:
        return self.thresholds[name].value

    def to_json(self) -> dict[str, Any]:
        return {name: t.to_json() for name, t in sorted(self.thresholds.items())}


def _number(text: str, kind: type) -> Any:
    v = kind(text.strip())
    if v != v or v < 0:  # NaN or negative
        raise ValueError(text)
    return v


def read_policy(properties: Mapping[str, str], overrides: Mapping[str, str] | None = None) -> Policy:
    """The thresholds of a table with these properties; ``overrides`` (property keys to values,
    e.g. from a policy file) win over the table's."""
    props = dict(properties)
    over = dict(overrides or {})
    problems: list[str] = []
    out: dict[str, Threshold] = {}
    for name, (key, default, unit) in ICEBERG_KEYS.items():
        source_props = over if key in over else props
        source = "policy" if key in over else ("table-property" if key in props else "default")
        value = property_int(source_props, key, default, problems)
        out[name] = Threshold(name, value, unit, source, key)
    target = out["target-file-size"].value
    out["small-file-size"] = Threshold("small-file-size", int(target * SMALL_FILE_RATIO), "bytes", "derived", None)
    for name, (key, default, unit, kind) in HEALTH_KEYS.items():
        raw = over.get(key, props.get(key))
        source = "policy" if key in over else ("table-property" if key in props else "default")
        value = default
        if raw is not None:
            try:
                value = _number(raw, kind)
            except ValueError:
                problems.append(f"property {key}={raw!r} is not a non-negative "
                                f"{'integer' if kind is int else 'number'}; using the default")
                source = "default"
        if value is None and name == "tiny-partition-bytes":
            value, source = target, "derived"
        out[name] = Threshold(name, value, unit, source, key)
    return Policy(out, tuple(problems))
