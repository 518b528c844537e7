"""``warehouse_health``: one row per table of a warehouse, the worst first.

A table that cannot be read gives a row with its ``error`` (kind and message) instead of
stopping the listing; it sorts with the worst.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from icectl.errors import InvalidInput, IcectlError
from icectl.ops.health.engine import table_health
from icectl.ops.health.model import HealthReport

__all__ = ["WarehouseHealth", "warehouse_health", "summary_row", "SORT_KEYS"]


def _fig(report: HealthReport, dim: str, name: str) -> Any:
    d = report.dimension(dim)
    return None if d is None else d.figures.get(name)


def summary_row(identifier: str, location: str, report: HealthReport | None,
                error: IcectlError | None = None) -> dict[str, Any]:
    """A table's row of the warehouse view."""
    if report is None:
        return {"identifier": identifier, "location": location, "status": "error",
                "error": {"kind": getattr(error, "kind", "error"), "message": str(error)},
                "due": None, "warn": None, "info": None, "data-files": None, "data-bytes": None,
                "small-file-share": None, "delete-files": None, "data-manifests": None,
                "snapshots": None, "worst": None, "verdicts": []}
    counts = report.counts()
    worst = report.verdicts[0] if report.verdicts else None
    return {
        "identifier": identifier, "location": location, "status": report.status, "error": None,
        "due": counts["due"], "warn": counts["warn"], "info": counts["info"],
        "data-files": _fig(report, "data-files", "data-files"),
        "data-bytes": _fig(report, "data-files", "data-bytes"),
        "small-file-share": _fig(report, "data-files", "small-file-share"),
        "delete-files": _fig(report, "deletes", "delete-files"),
        "data-manifests": _fig(report, "manifests", "data-manifests"),
        "snapshots": _fig(report, "snapshots", "snapshots"),
        "worst": worst.code if worst is not None else None,
        "verdicts": [{"dimension": v.dimension, "code": v.code, "severity": v.severity,
                      "command-text": v.to_json()["command-text"]} for v in report.verdicts],
    }


def _worst_key(r: dict[str, Any]) -> tuple:
    err = r["status"] == "error"
    return (0 if err else 1, -(r["due"] or 0), -(r["warn"] or 0), -(r["info"] or 0), r["identifier"])


def _desc(name: str) -> Any:
    return lambda r: (r[name] is None, -(r[name] or 0), r["identifier"])


SORT_KEYS = {
    "worst": _worst_key,
    "name": lambda r: r["identifier"],
    **{k: _desc(k) for k in ("data-files", "data-bytes", "small-file-share", "delete-files")},
    "manifests": _desc("data-manifests"),
    "snapshots": _desc("snapshots"),
}


@dataclass(frozen=True)
class WarehouseHealth:
    warehouse: str
    sort: str
    table_rows: tuple[dict[str, Any], ...]

    @property
    def due(self) -> bool:
        return any(r["status"] == "maintenance-due" for r in self.table_rows)

    def rows(self) -> list[dict[str, Any]]:
        return list(self.table_rows)

    def to_json(self) -> dict[str, Any]:
        return {"warehouse": self.warehouse, "sort": self.sort,
                "status": "maintenance-due" if self.due else "ok",
                "tables": len(self.table_rows),
                "tables-due": sum(1 for r in self.table_rows if r["status"] == "maintenance-due"),
                "tables-failed": sum(1 for r in self.table_rows if r["status"] == "error"),
                "rows": self.rows()}


def warehouse_health(warehouse: str, *, sort: str = "worst", columns: Sequence[str] | None = None,
                     list_files: bool = False, policy: Mapping[str, str] | None = None,
                     workers: int | None = None, progress: Any = None) -> WarehouseHealth:
    """The health of every table of ``warehouse`` (each judged as :func:`table_health` does);
    ``progress(phase, done, total)`` is told of each table judged."""
    from icectl.ops.metadata.warehouse import list_tables
    from icectl.table.table import Table

    if sort not in SORT_KEYS:
        raise InvalidInput(f"unknown sort key {sort!r} (use one of {', '.join(SORT_KEYS)})", argument="sort")
    rows = []
    entries = list_tables(warehouse).tables
    for n, entry in enumerate(entries):
        if progress is not None:
            progress("judging tables", n, len(entries))
        try:
            report = table_health(Table.load(entry.location), columns=columns, list_files=list_files,
                                  policy=policy, workers=workers, identifier=entry.identifier)
            rows.append(summary_row(entry.identifier, entry.location, report))
        except IcectlError as e:
            rows.append(summary_row(entry.identifier, entry.location, None, e))
    rows.sort(key=SORT_KEYS[sort])
    return WarehouseHealth(warehouse, sort, tuple(rows))
