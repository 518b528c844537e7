"""Rows in and out of the Python API as Arrow: what a caller hands over to write (an Arrow table,
a record batch or reader, a pandas frame, or a path) and a planned scan read as a
``pyarrow.Table`` or a ``pyarrow.RecordBatchReader`` (:class:`ScanResult`)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from icectl.errors import InvalidInput

__all__ = ["ScanResult", "as_rows"]


def as_rows(data: Any) -> Any:
    """Rows to write: an Arrow table as it is (a record batch, a reader or a pandas frame turned
    into one), a path or URL (``str`` or path-like) as the command line reads its DATA."""
    if isinstance(data, (str, pa.Table)):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.read_all()
    if hasattr(data, "__fspath__"):
        import os

        return os.fspath(data)
    if type(data).__module__.startswith("pandas"):
        return pa.Table.from_pandas(data, preserve_index=False)
    raise InvalidInput(f"rows must be an Arrow table or a file path (got {type(data).__name__})",
                       argument="data")


class ScanResult:
    """A planned scan (``icectl scan``), read as Arrow when consumed."""

    def __init__(self, scan: Any) -> None:
        self._scan = scan

    @property
    def schema(self) -> Any:
        """The ``pyarrow.Schema`` of the rows (metadata columns included when asked for)."""
        return self._scan.arrow_schema()

    @property
    def snapshot_id(self) -> int | None:
        return self._scan.snapshot_id

    @property
    def files(self) -> list[Any]:
        """The planned data files the scan reads (:class:`icectl.scan.reader.ScanFile`)."""
        return list(self._scan.files)

    def to_batches(self, limit: int | None = None) -> Any:
        """A ``pyarrow.RecordBatchReader`` streaming the rows (at most ``limit``)."""
        if limit is not None and limit < 0:
            raise InvalidInput("the limit must not be negative", argument="limit")
        return pa.RecordBatchReader.from_batches(self.schema, self._scan.batches(limit=limit))

    def to_arrow(self, limit: int | None = None) -> Any:
        """The rows as one ``pyarrow.Table``."""
        return self.to_batches(limit).read_all()

    def count(self) -> int:
        """The number of rows (from the manifests when no delete or residual needs reading)."""
        return self._scan.count()
