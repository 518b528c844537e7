"""Table builders: one way to make a fresh table and to put data files in it.

- :func:`empty_table` creates a table (no snapshot) at a location, as ``icectl create`` does
  (the command calls the same library function with the same arguments).
- :func:`with_files` appends ``n`` data-file writes to a table, each of the rows ``rows(i)``
  gives (one snapshot per write; a partitioned table gets a file per partition per write).
- :func:`small_files` is the merge-on-read table several operation tests start from.
- :func:`write_text` writes CSV (or JSON lines) text into a table through the command line
  (``icectl write``), for tests that want the rows typed as a user's file is.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa

from icectl.ops.metadata.create import create_table
from icectl.ops.write.rows import write_rows
from icectl.table.table import Table

# merge-on-read explicitly: tests that write delete files must not depend on the default mode
MOR = {"write.delete.mode": "merge-on-read"}

Rows = pa.Table | Mapping[str, Any]


def empty_table(location: str | Path, schema: str, *, partition: str | None = None,
                sort: str | None = None, format_version: int = 2,
                properties: Mapping[str, str] | None = None) -> Table:
    """A new table at ``location`` of ``schema`` (icectl's schema text, e.g. ``"id long, cat
    string"``), partitioned by ``partition`` and sorted by ``sort`` (icectl's term text), with
    ``properties``; loaded."""
    loc = str(location)
    create_table(loc, schema_text=schema, partition_text=partition, sort_order_text=sort,
                 format_version=format_version, properties=dict(properties or {}))
    return Table.load(loc)


def _arrow(rows: Rows) -> pa.Table:
    return rows if isinstance(rows, pa.Table) else pa.table(dict(rows))


def with_files(table: Table | str | Path, n: int, rows: Callable[[int], Rows]) -> Table:
    """``n`` writes into ``table`` (each on the table loaded afresh), write ``i`` of the rows
    ``rows(i)`` (an Arrow table, or a mapping of column name to values); the table, loaded."""
    loc = table.location if isinstance(table, Table) else str(table)
    for i in range(n):
        write_rows(Table.load(loc), _arrow(rows(i)))
    return Table.load(loc)


def ten_rows(i: int) -> pa.Table:
    """Rows of write ``i`` of :func:`small_files`: ids ``10*i .. 10*i+9``, five per category."""
    return pa.table({"id": pa.array(range(i * 10, i * 10 + 10), pa.int64()),
                     "cat": ["a"] * 5 + ["b"] * 5})


def small_files(location: str | Path, n: int = 6, *, format_version: int = 2,
                properties: Mapping[str, str] | None = None) -> Table:
    """A merge-on-read table (id long, cat string; partitioned by cat) of ``n`` writes of ten
    rows each, five per partition (:func:`ten_rows`)."""
    t = empty_table(location, "id long, cat string", partition="cat", format_version=format_version,
                    properties={**MOR, **(properties or {})})
    return with_files(t, n, ten_rows)


def write_text(table: Table | str | Path, *texts: str, suffix: str = ".csv") -> None:
    """Each of ``texts`` (CSV with a header line; JSON lines with ``suffix=".jsonl"``) written into
    the table by one ``icectl write`` run (in this process, tests/clirun.py), so its rows are
    typed as a user's file is; a failed run fails the test with its error."""
    from clirun import icectl

    loc = table.location if isinstance(table, Table) else str(table)
    with tempfile.TemporaryDirectory(prefix="rows-") as scratch:
        for i, text in enumerate(texts):
            src = Path(scratch) / f"r{i}{suffix}"
            src.write_text(text, encoding="utf-8")
            r = icectl("write", loc, str(src))
            assert r.returncode == 0, r.stderr
