"""Manifest lists and manifests with their paths moved to another location (``icectl relocate``).

A file is read as raw Avro records with the schema its writer used and written back with that
schema and its key-value metadata, so every field another writer put there survives; only the
fields that hold a location change:

* a manifest list entry's ``manifest_path``, and its ``manifest_length`` (the rewritten
  manifest's own length: a path of another length changes the manifest's size);
* a manifest entry's ``data_file.file_path``; for position delete files also the
  ``referenced_data_file`` and the bounds of the ``file_path`` column (``DELETE_FILE_PATH_ID``):
  rewritten when lower and upper bound are equal (a delete file of one data file,
  the only case where planning uses them), dropped otherwise, as Java's RewriteTablePath does;
  and the size (and row-group offsets) of each position delete file rewritten with it.

Which path goes where is the caller's rule, given as ``new_path``; it raises for a path it
cannot move. Entries are otherwise written as read (statuses, snapshot ids, sequence numbers,
null ones kept null for inheritance).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from icectl.errors import CorruptMetadata
from icectl.io.formats.avro_files import RawFile, collect_records, write_avro_records
from icectl.io.formats.avro_schema import manifest_wire_schemas, strip_logical
from icectl.spec.reserved import DELETE_FILE_PATH_ID, POSITION_DELETES

__all__ = ["RawAvro", "read_raw", "ManifestRef", "manifest_refs", "ContentRef", "content_refs",
           "relocated_manifest_list", "relocated_manifest", "DeleteRewrite"]

NewPath = Callable[[str], str]

_AVRO_KEYS = ("avro.schema", "avro.codec")


@dataclass
class RawAvro:
    """An Avro container's records as stored, the schema its writer used (header) and the one the
    records were decoded with (``wire``), and its other key-value metadata."""

    schema: Any
    wire: Any
    metadata: dict[str, str]
    records: list[dict]


def read_raw(data: bytes, what: str) -> RawAvro:
    """Every record of a manifest or manifest list, decoded with the first wire schema that
    reads it (see :func:`manifest_wire_schemas`)."""
    f = RawFile(data)
    wires = manifest_wire_schemas(f.schema)
    for i, wire in enumerate(wires):
        try:
            records = collect_records(f.records(wire_schema=wire))
        except CorruptMetadata as e:
            if i == len(wires) - 1:
                raise CorruptMetadata(f"cannot read {what}: {e}") from None
            continue
        meta = {k: v for k, v in f.metadata.items() if k not in _AVRO_KEYS}
        return RawAvro(f.schema, wire, meta, records)
    raise AssertionError("unreachable")


def _write(raw: RawAvro, records: list[dict]) -> bytes:
    return write_avro_records(raw.schema, records, raw.metadata, wire_schema=strip_logical(raw.wire))


# -- manifest lists ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ManifestRef:
    path: str
    length: int
    content: int  # 0 data, 1 deletes
    added_snapshot_id: int | None


def manifest_refs(raw: RawAvro) -> list[ManifestRef]:
    return [ManifestRef(r["manifest_path"], r["manifest_length"], r.get("content") or 0,
                        r.get("added_snapshot_id")) for r in raw.records]


def relocated_manifest_list(raw: RawAvro, new_path: NewPath, lengths: Mapping[str, int]) -> bytes:
    """The manifest list with each manifest's new path and (from ``lengths``, by old path) the
    length of its rewritten copy."""
    out = []
    for r in raw.records:
        r = dict(r)
        old = r["manifest_path"]
        r["manifest_path"] = new_path(old)
        r["manifest_length"] = lengths[old]
        out.append(r)
    return _write(raw, out)


# -- manifests --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ContentRef:
    """What relocation needs of one manifest entry."""

    status: int
    snapshot_id: int | None  # inherited from the manifest when the entry leaves it null
    content: int
    path: str
    file_format: str
    size: int


def content_refs(raw: RawAvro, added_snapshot_id: int | None) -> list[ContentRef]:
    out = []
    for r in raw.records:
        df = r["data_file"]
        sid = r.get("snapshot_id")
        out.append(ContentRef(r["status"], added_snapshot_id if sid is None else sid,
                              df.get("content") or 0, df["file_path"], str(df["file_format"]).upper(),
                              df["file_size_in_bytes"]))
    return out


@dataclass(frozen=True)
class DeleteRewrite:
    """A rewritten position delete file: its new size and row-group offsets (None: keep)."""

    size: int
    split_offsets: list[int] | None = None


def _bounds(items: Any) -> dict | None:
    return None if items is None else {kv["key"]: kv["value"] for kv in items}


def _path_bounds(df: dict, new_path: NewPath) -> None:
    lower, upper = _bounds(df.get("lower_bounds")), _bounds(df.get("upper_bounds"))
    lo = None if lower is None else lower.get(DELETE_FILE_PATH_ID)
    hi = None if upper is None else upper.get(DELETE_FILE_PATH_ID)
    if lo is None and hi is None:
        return
    moved = None
    if lo is not None and lo == hi:
        moved = new_path(bytes(lo).decode("utf-8")).encode("utf-8")
    for key in ("lower_bounds", "upper_bounds"):
        items = df.get(key)
        if items is None:
            continue
        kept = [kv for kv in items if kv["key"] != DELETE_FILE_PATH_ID]
        if moved is not None:
            kept.append({"key": DELETE_FILE_PATH_ID, "value": moved})
            kept.sort(key=lambda kv: kv["key"])
        df[key] = kept


def relocated_manifest(raw: RawAvro, new_path: NewPath, deletes: Mapping[str, DeleteRewrite]) -> bytes:
    """The manifest with every entry's paths moved; ``deletes`` (by old path) the rewritten
    position delete files whose size (and offsets) the entries take."""
    out = []
    for r in raw.records:
        r = dict(r)
        df = dict(r["data_file"])
        old = df["file_path"]
        df["file_path"] = new_path(old)
        if (df.get("content") or 0) == POSITION_DELETES:
            _path_bounds(df, new_path)
            ref = df.get("referenced_data_file")
            if ref is not None:
                df["referenced_data_file"] = new_path(ref)
            rewrite = deletes.get(old)
            if rewrite is not None:
                df["file_size_in_bytes"] = rewrite.size
                if rewrite.split_offsets is not None and df.get("split_offsets") is not None:
                    df["split_offsets"] = list(rewrite.split_offsets)
        r["data_file"] = df
        out.append(r)
    return _write(raw, out)
