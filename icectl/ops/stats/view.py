"""``inspect statistics``: the table's statistics files and their blobs.

For each ``statistics`` entry of the metadata: the snapshot, the file, its sizes, and each blob
as the metadata lists it (type, fields by id and name, ndv), with what the Puffin file itself
says of it (offset, length, compression) and, for theta sketches, the sketch decoded: its
estimate and whether it is exact. A file that cannot be read is reported in ``error`` (the
metadata's view of it still listed). ``partition-statistics`` entries are listed as the
metadata gives them.
"""

from __future__ import annotations

from typing import Any

from icectl.errors import IcectlError
from icectl.io.formats.puffin_file import blob_data, read_puffin
from icectl.io.storage.files import FileIO
from icectl.spec.metadata import TableMetadata
from icectl.spec.snapshots import statistics_path, statistics_snapshot_id
from icectl.spec.theta import MAX_THETA, THETA_BLOB_TYPE, parse_sketch

__all__ = ["statistics_view"]


def _field_names(md: TableMetadata, fields: list[Any]) -> list[str | None]:
    schema = md.schema
    out: list[str | None] = []
    for fid in fields:
        try:
            out.append(schema.column_name(int(fid)))
        except (IcectlError, KeyError, ValueError, TypeError):
            out.append(None)
    return out


def _file_view(io: FileIO, md: TableMetadata, entry: dict[str, Any]) -> dict[str, Any]:
    path = statistics_path(entry)
    listed = [b for b in entry.get("blob-metadata") or [] if isinstance(b, dict)]
    out: dict[str, Any] = {
        "snapshot-id": statistics_snapshot_id(entry), "statistics-path": path,
        "file-size-in-bytes": entry.get("file-size-in-bytes"),
        "file-footer-size-in-bytes": entry.get("file-footer-size-in-bytes"),
        "created-by": None, "error": None, "blobs": []}
    footer = None
    if path is not None:
        try:
            footer = read_puffin(io, path, entry.get("file-size-in-bytes"))
            out["created-by"] = footer.properties.get("created-by")
        except IcectlError as e:
            out["error"] = str(e)
    stored = list(footer.blobs) if footer is not None else []
    for i, b in enumerate(listed):
        fields = list(b.get("fields") or [])
        view: dict[str, Any] = {
            "type": b.get("type"), "snapshot-id": b.get("snapshot-id"),
            "sequence-number": b.get("sequence-number"), "fields": fields,
            "columns": _field_names(md, fields),
            "ndv": (b.get("properties") or {}).get("ndv"),
            "properties": dict(b.get("properties") or {}),
            "offset": None, "length": None, "compression-codec": None,
            "sketch-estimate": None, "sketch-exact": None}
        blob = stored[i] if i < len(stored) and stored[i].type == b.get("type") else None
        if blob is not None:
            view.update({"offset": blob.offset, "length": blob.length,
                         "compression-codec": blob.compression})
            if blob.type == THETA_BLOB_TYPE and out["error"] is None:
                try:
                    sketch = parse_sketch(blob_data(io, path, blob), f"sketch in {path}")
                    view["sketch-estimate"] = sketch.estimate
                    view["sketch-exact"] = sketch.theta >= MAX_THETA
                except IcectlError as e:
                    out["error"] = str(e)
        out["blobs"].append(view)
    return out


def statistics_view(io: FileIO, md: TableMetadata) -> dict[str, Any]:
    """Every statistics file of the metadata with its blobs (module docs)."""
    return {
        "statistics": [_file_view(io, md, dict(e)) for e in md.statistics],
        "partition-statistics": [
            {"snapshot-id": statistics_snapshot_id(e), "statistics-path": statistics_path(e),
             "file-size-in-bytes": e.get("file-size-in-bytes")} for e in md.partition_statistics],
    }
