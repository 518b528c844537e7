"""Snapshots, snapshot references and the two history logs (spec: Snapshots, Appendix C).

Everything here is a frozen value with a ``to_json``/``from_json`` pair that writes keys in the
order the reference writer uses. Keys a newer writer added that icectl does not know are kept in
``extra`` and written back after the known ones, so a rewrite never drops them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator, Mapping

from icectl.errors import CorruptMetadata

__all__ = [
    "Operation", "Snapshot", "SnapshotRef", "SnapshotLogEntry", "MetadataLogEntry",
    "MAIN_BRANCH", "BRANCH", "TAG", "ancestors_of", "ancestor_ids",
    "statistics_snapshot_id", "statistics_path", "TOTAL_KEYS", "carry_totals",
]

MAIN_BRANCH = "main"
BRANCH = "branch"
TAG = "tag"


class Operation:
    """The snapshot operations the spec names (``summary.operation``)."""

    APPEND = "append"
    REPLACE = "replace"
    OVERWRITE = "overwrite"
    DELETE = "delete"
    ALL = (APPEND, REPLACE, OVERWRITE, DELETE)


def _req(obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], what: str) -> Any:
    if key not in obj or obj[key] is None:
        raise CorruptMetadata(f"{what} is missing required key {key!r}")
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise CorruptMetadata(f"{what} has an invalid {key!r}: {value!r}")
    return value


def _opt_int(obj: Mapping[str, Any], key: str, what: str) -> int | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise CorruptMetadata(f"{what} has an invalid {key!r}: {value!r}")
    return value


def _check_object(obj: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(obj, dict):
        raise CorruptMetadata(f"{what} must be a JSON object, got: {str(obj)[:200]}")
    return obj


# -- snapshots ---------------------------------------------------------------------------------

_SNAPSHOT_KEYS = (
    "sequence-number", "snapshot-id", "parent-snapshot-id", "timestamp-ms", "summary",
    "manifest-list", "manifests", "schema-id", "first-row-id", "added-rows", "key-id",
)


@dataclass(frozen=True)
class Snapshot:
    """One snapshot of a table.

    ``summary`` holds every summary entry including ``operation`` (first), or is None when the
    file had no summary at all (very old v1 writers). ``manifests`` is the v1 inline list of
    manifest paths, used only when ``manifest_list`` is absent.
    """

    snapshot_id: int
    timestamp_ms: int
    parent_snapshot_id: int | None = None
    sequence_number: int = 0
    manifest_list: str | None = None
    summary: dict[str, str] | None = field(default=None, hash=False)
    schema_id: int | None = None
    first_row_id: int | None = None
    added_rows: int | None = None
    key_id: str | None = None
    manifests: tuple[str, ...] | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def operation(self) -> str | None:
        return None if self.summary is None else self.summary.get("operation")

    def summary_value(self, key: str, default: str | None = None) -> str | None:
        return default if self.summary is None else self.summary.get(key, default)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.sequence_number > 0:
            out["sequence-number"] = self.sequence_number
        out["snapshot-id"] = self.snapshot_id
        if self.parent_snapshot_id is not None:
            out["parent-snapshot-id"] = self.parent_snapshot_id
        out["timestamp-ms"] = self.timestamp_ms
        if self.summary is not None and self.summary.get("operation") is not None:
            summary = {"operation": self.summary["operation"]}
            summary.update((k, v) for k, v in self.summary.items() if k != "operation")
            out["summary"] = summary
        if self.manifest_list is not None:
            out["manifest-list"] = self.manifest_list
        else:
            out["manifests"] = list(self.manifests or ())
        if self.schema_id is not None:
            out["schema-id"] = self.schema_id
        if self.first_row_id is not None:
            out["first-row-id"] = self.first_row_id
        if self.added_rows is not None:
            out["added-rows"] = self.added_rows
        if self.key_id is not None:
            out["key-id"] = self.key_id
        for k, v in self.extra.items():
            out.setdefault(k, v)
        return out

    @classmethod
    def from_json(cls, obj: Any) -> "Snapshot":
        what = "snapshot"
        obj = _check_object(obj, what)
        snapshot_id = _req(obj, "snapshot-id", int, what)
        what = f"snapshot {snapshot_id}"
        summary_json = obj.get("summary")
        summary: dict[str, str] | None = None
        if summary_json is not None:
            if not isinstance(summary_json, dict):
                raise CorruptMetadata(f"{what} has a non-object summary: {summary_json!r}")
            for k, v in summary_json.items():
                if not isinstance(v, str):
                    raise CorruptMetadata(f"{what} summary value for {k!r} is not a string: {v!r}")
            # As the reference does: a summary without an operation reads as an overwrite.
            summary = {"operation": summary_json.get("operation", Operation.OVERWRITE)}
            summary.update((k, v) for k, v in summary_json.items() if k != "operation")
        manifest_list = obj.get("manifest-list")
        if manifest_list is not None and not isinstance(manifest_list, str):
            raise CorruptMetadata(f"{what} has an invalid 'manifest-list': {manifest_list!r}")
        manifests = None
        if manifest_list is None:
            raw = obj.get("manifests")
            if raw is None:
                raise CorruptMetadata(f"{what} has neither 'manifest-list' nor 'manifests'")
            if not isinstance(raw, list) or not all(isinstance(m, str) for m in raw):
                raise CorruptMetadata(f"{what} has an invalid 'manifests' list")
            manifests = tuple(raw)
        key_id = obj.get("key-id")
        return cls(
            snapshot_id=snapshot_id,
            timestamp_ms=_req(obj, "timestamp-ms", int, what),
            parent_snapshot_id=_opt_int(obj, "parent-snapshot-id", what),
            sequence_number=_opt_int(obj, "sequence-number", what) or 0,
            manifest_list=manifest_list,
            summary=summary,
            schema_id=_opt_int(obj, "schema-id", what),
            first_row_id=_opt_int(obj, "first-row-id", what),
            added_rows=_opt_int(obj, "added-rows", what),
            key_id=key_id if isinstance(key_id, str) else None,
            manifests=manifests,
            extra={k: v for k, v in obj.items() if k not in _SNAPSHOT_KEYS},
        )


# -- refs ----------------------------------------------------------------------------------------

_REF_KEYS = ("snapshot-id", "type", "min-snapshots-to-keep", "max-snapshot-age-ms", "max-ref-age-ms")


@dataclass(frozen=True)
class SnapshotRef:
    """A named branch or tag. Retention fields are None when not set (table defaults apply)."""

    snapshot_id: int
    type: str = BRANCH
    min_snapshots_to_keep: int | None = None
    max_snapshot_age_ms: int | None = None
    max_ref_age_ms: int | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def is_branch(self) -> bool:
        return self.type == BRANCH

    @property
    def is_tag(self) -> bool:
        return self.type == TAG

    def with_snapshot(self, snapshot_id: int) -> "SnapshotRef":
        return replace(self, snapshot_id=snapshot_id)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"snapshot-id": self.snapshot_id, "type": self.type}
        if self.min_snapshots_to_keep is not None:
            out["min-snapshots-to-keep"] = self.min_snapshots_to_keep
        if self.max_snapshot_age_ms is not None:
            out["max-snapshot-age-ms"] = self.max_snapshot_age_ms
        if self.max_ref_age_ms is not None:
            out["max-ref-age-ms"] = self.max_ref_age_ms
        for k, v in self.extra.items():
            out.setdefault(k, v)
        return out

    @classmethod
    def from_json(cls, obj: Any, name: str = "?") -> "SnapshotRef":
        what = f"ref {name!r}"
        obj = _check_object(obj, what)
        ref_type = _req(obj, "type", str, what).lower()
        if ref_type not in (BRANCH, TAG):
            raise CorruptMetadata(f"{what} has an unknown type {obj['type']!r}")
        return cls(
            snapshot_id=_req(obj, "snapshot-id", int, what),
            type=ref_type,
            min_snapshots_to_keep=_opt_int(obj, "min-snapshots-to-keep", what),
            max_snapshot_age_ms=_opt_int(obj, "max-snapshot-age-ms", what),
            max_ref_age_ms=_opt_int(obj, "max-ref-age-ms", what),
            extra={k: v for k, v in obj.items() if k not in _REF_KEYS},
        )


# -- logs ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SnapshotLogEntry:
    timestamp_ms: int
    snapshot_id: int

    def to_json(self) -> dict[str, Any]:
        return {"timestamp-ms": self.timestamp_ms, "snapshot-id": self.snapshot_id}

    @classmethod
    def from_json(cls, obj: Any) -> "SnapshotLogEntry":
        what = "snapshot-log entry"
        obj = _check_object(obj, what)
        return cls(_req(obj, "timestamp-ms", int, what), _req(obj, "snapshot-id", int, what))


@dataclass(frozen=True)
class MetadataLogEntry:
    timestamp_ms: int
    metadata_file: str

    def to_json(self) -> dict[str, Any]:
        return {"timestamp-ms": self.timestamp_ms, "metadata-file": self.metadata_file}

    @classmethod
    def from_json(cls, obj: Any) -> "MetadataLogEntry":
        what = "metadata-log entry"
        obj = _check_object(obj, what)
        return cls(_req(obj, "timestamp-ms", int, what), _req(obj, "metadata-file", str, what))


# -- statistics entries (kept as the JSON objects they are) --------------------------------------

def statistics_snapshot_id(entry: Mapping[str, Any]) -> int | None:
    """The snapshot a ``statistics`` / ``partition-statistics`` entry belongs to."""
    value = entry.get("snapshot-id")
    return value if isinstance(value, int) else None


def statistics_path(entry: Mapping[str, Any]) -> str | None:
    """The file a ``statistics`` / ``partition-statistics`` entry points at."""
    value = entry.get("statistics-path")
    return value if isinstance(value, str) else None


# -- ancestry ------------------------------------------------------------------------------------

Lookup = Callable[[int], "Snapshot | None"] | Mapping[int, Snapshot]


def _getter(lookup: Lookup) -> Callable[[int], Snapshot | None]:
    if isinstance(lookup, Mapping):
        return lookup.get
    return lookup


def ancestors_of(snapshot_id: int | None, lookup: Lookup) -> Iterator[Snapshot]:
    """The snapshot itself, then its parent, grandparent ... while they are known.

    ``lookup`` maps a snapshot id to its Snapshot (a dict or a function returning None for an
    unknown id). The walk stops at the first parent that is missing (expired) and never loops.
    """
    get = _getter(lookup)
    seen: set[int] = set()
    current = None if snapshot_id is None else get(snapshot_id)
    while current is not None and current.snapshot_id not in seen:
        seen.add(current.snapshot_id)
        yield current
        parent = current.parent_snapshot_id
        current = None if parent is None else get(parent)


def ancestor_ids(snapshot_id: int | None, lookup: Lookup) -> list[int]:
    return [s.snapshot_id for s in ancestors_of(snapshot_id, lookup)]


# -- summary totals ------------------------------------------------------------------------------

# total key -> (added key(s), removed key(s))
TOTAL_KEYS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "total-records": (("added-records",), ("deleted-records",)),
    "total-files-size": (("added-files-size",), ("removed-files-size",)),
    "total-data-files": (("added-data-files",), ("deleted-data-files",)),
    "total-delete-files": (("added-delete-files",), ("removed-delete-files",)),
    "total-position-deletes": (("added-position-deletes",), ("removed-position-deletes",)),
    "total-equality-deletes": (("added-equality-deletes",), ("removed-equality-deletes",)),
}


def carry_totals(previous: Mapping[str, str] | None, summary: Mapping[str, str]) -> dict[str, str]:
    """``summary`` plus the running totals: previous total + added - removed.

    A total is left out when the previous snapshot on the branch had none (and there was a
    previous snapshot) or when the result would be negative, as the reference does. With no
    previous snapshot at all the totals start from zero.
    """
    out = dict(summary)

    def num(m: Mapping[str, str], key: str) -> int:
        try:
            return int(m.get(key, "0"))
        except ValueError:
            return 0

    for total, (added_keys, removed_keys) in TOTAL_KEYS.items():
        if previous is None:
            base = 0
        elif total in previous:
            try:
                base = int(previous[total])
            except ValueError:
                continue
        else:
            continue
        value = base + sum(num(summary, k) for k in added_keys) - sum(num(summary, k) for k in removed_keys)
        if value >= 0:
            out[total] = str(value)
    return out
