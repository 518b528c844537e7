"""Helpers shared by the operation tests (the tables themselves come from tests/support/tables.py):
an in-process engine, what a table holds, and counters of the work an operation does (parses,
plans, manifest reads)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from icectl.expr import parser as parser_mod
from icectl.io.manifest import records as avro
from icectl.scan import planner as planner_mod
from icectl.scan.reader import open_scan
from icectl.spec.manifests import DELETED
from icectl.table.table import Table


def _location(where: Table | str) -> str:
    return where.location if isinstance(where, Table) else where


def rows(where: Table | str, filt: str | None = None) -> list[tuple]:
    """The table's rows (loaded afresh; all columns, ``filt`` applied), sorted."""
    out: list[tuple] = []
    for b in open_scan(Table.load(_location(where)), filt).batches():
        out += list(zip(*(b.column(i).to_pylist() for i in range(b.num_columns))))
    return sorted(out)


def entries(where: Table | str) -> list[tuple[int, Any]]:
    """(manifest content, entry) of every entry of the current snapshot's manifests, deleted
    entries too."""
    t = Table.load(_location(where))
    snap = t.metadata.current_snapshot()
    out = []
    for m in avro.load_manifest_list(t.io, snap.manifest_list, t.metadata.format_version):
        out += [(m.content, e) for e in avro.load_manifest(t.io, m)]
    return out


def live_entries(where: Table | str) -> list[tuple[int, Any]]:
    """:func:`entries` without the deleted ones."""
    return [(content, e) for content, e in entries(where) if e.status != DELETED]


def files_on_disk(where: Table | str) -> set[str]:
    """Every file under the table's location."""
    return {str(p) for p in Path(_location(where)).rglob("*") if p.is_file()}


class InProcess:
    """An engine running tasks in this process (``after`` runs once the tasks are done, as a
    concurrent writer would commit while the tasks ran)."""

    name = "inprocess"

    def __init__(self, after: Any = None):
        self.after = after
        self.calls = 0

    def map(self, fn: Any, tasks: Any, **_: Any) -> list:
        out = [fn(t) for t in tasks]
        self.calls += 1
        if self.after is not None:
            self.after()
        return out


def id_rows(t: Table) -> list[tuple]:
    out = []
    for b in open_scan(Table.load(t.location), columns=["id"]).batches():
        out += b.column(0).to_pylist()
    return sorted(out)


def live_entries_by_key(t: Table) -> dict[tuple, tuple]:
    """(content, path, offset) -> (entry, manifest path), by the record reader."""
    t = Table.load(t.location)
    snap = t.metadata.current_snapshot()
    out = {}
    for m in avro.load_manifest_list(t.io, snap.manifest_list, t.metadata.format_version):
        for e in avro.load_manifest(t.io, m):
            if e.status != DELETED:
                f = e.data_file
                out[(f.content, f.file_path, f.content_offset)] = (e, m.manifest_path)
    return out


class PlanCounts:
    """Counts filter parses, scan plans and manifest reads by icectl.ops (record reader)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        self.parsed = self.planned = 0
        self.ops_manifest_reads: list[str] = []
        real_parse, real_prepare = parser_mod._Parser.parse, planner_mod._prepare
        real_load = avro.load_manifest

        def parse(p):
            self.parsed += 1
            return real_parse(p)

        def prepare(*a, **k):
            self.planned += 1
            return real_prepare(*a, **k)

        def load_manifest(*a, **k):  # who reads a manifest with the record reader
            caller = sys._getframe(1).f_globals.get("__name__", "")
            if caller.startswith("icectl.ops"):
                self.ops_manifest_reads.append(caller)
            return real_load(*a, **k)

        monkeypatch.setattr(parser_mod._Parser, "parse", parse)
        monkeypatch.setattr(planner_mod, "_prepare", prepare)
        monkeypatch.setattr(avro, "load_manifest", load_manifest)


def record_manifests_opened(monkeypatch: pytest.MonkeyPatch, producer: type) -> list[int]:
    """The manifests each commit of ``producer`` (a SnapshotProducer class) opens, in order."""
    got: list[int] = []
    real = producer.commit

    def commit(self):  # noqa: ANN001, ANN202
        out = real(self)
        got.append(self.manifests_opened)
        return out

    monkeypatch.setattr(producer, "commit", commit)
    return got
