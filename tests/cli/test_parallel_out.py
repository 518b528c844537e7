"""Writing a document from several processes (icectl/cli/parallel_out.py): the bytes are those
one process writes; a child that fails before its turn is replaced; a reader that goes away and a
failed write reach the caller as the errors a single process would get."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from icectl.cli.output import json_default
from icectl.cli.parallel_out import _slices, write_document
from icectl.ops.read.plan import plan_table
from icectl.table.table import Table

from tests.scan.plan_support import FILTERS, table_fixture  # noqa: F401 - the `table` fixture


def _pieces(n: int, size: int = 3) -> list:
    return [(size, (lambda i=i: f"<piece {i} " + "x" * (i % 7) + ">\n")) for i in range(n)]


def _write(tmp_path, head, pieces, tail, workers, name="out.txt") -> bytes:
    p = tmp_path / name
    with open(p, "w", encoding="utf-8") as f:
        write_document(f, head, pieces, tail, workers, min_weight=0)
    return p.read_bytes()


@pytest.mark.parametrize("workers", [1, 2, 3, 8])
def test_any_number_of_workers_writes_the_same_bytes(tmp_path, workers) -> None:
    pieces = _pieces(25)
    expected = ("head\n" + "".join(r() for _, r in pieces) + "tail é\n").encode()
    assert _write(tmp_path, "head\n", pieces, "tail é\n", workers) == expected


def test_slices_are_contiguous_and_balanced() -> None:
    pieces = [(w, None) for w in [5, 1, 1, 1, 1, 1, 5, 5]]
    for n in (1, 2, 3, 20):
        got = _slices(pieces, n)
        assert [p for s in got for p in s] == pieces and len(got) <= n and all(got)
    assert [sum(w for w, _ in s) for s in _slices(pieces, 2)] == [10, 10]


@pytest.mark.parametrize("text", FILTERS[:3])
def test_a_plan_document_is_the_same_from_every_process_count(table, tmp_path, text) -> None:
    r = plan_table(Table.load(table.location), text)
    expected = "".join(r.json_chunks(json_default)).encode()
    assert json.loads(expected)["files"] is not None
    for workers in (1, 2, 4):
        head, pieces, tail = r.json_parts(json_default)
        assert _write(tmp_path, head, pieces, tail, workers, f"w{workers}") == expected


def test_a_child_that_fails_is_replaced_by_the_parent(tmp_path) -> None:
    parent = os.getpid()

    def fragile(i: int) -> str:
        if os.getpid() != parent and i >= 10:
            raise MemoryError("only in the child")
        return f"[{i}]"

    pieces = [(1, (lambda i=i: fragile(i))) for i in range(20)]
    assert _write(tmp_path, "<", pieces, ">", 2) == ("<" + "".join(f"[{i}]" for i in range(20))
                                                     + ">").encode()


WRITER = r"""
import sys
from icectl.cli.parallel_out import write_document
pieces = [(1, (lambda i=i: ("line %d " % i) + "y" * 5000 + "\n")) for i in range(400)]
try:
    write_document(sys.stdout, "", pieces, "", 2, min_weight=0)
    sys.stdout.flush()
except BrokenPipeError:
    sys.stderr.write("broken pipe\n")
    sys.exit(7)
"""


def test_a_reader_that_goes_away_is_a_broken_pipe() -> None:
    p = subprocess.Popen([sys.executable, "-c", WRITER], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    assert p.stdout is not None and p.stdout.read(100)
    p.stdout.close()
    err = p.stderr.read().decode() if p.stderr else ""
    assert p.wait(timeout=60) == 7 and "broken pipe" in err


FULL = r"""
import sys
from icectl.cli.parallel_out import write_document
# the first slice renders nothing, so the child's write is the first to reach /dev/full
pieces = [(1000, lambda: "")] + [(1, (lambda i=i: "z" * 5000)) for i in range(400)]
try:
    write_document(sys.stdout, "", pieces, "", 2, min_weight=0)
except OSError as e:
    sys.stderr.write("%s %s\n" % (type(e).__name__, e.errno))
    sys.exit(9)
"""


def test_a_failed_write_of_a_child_is_an_oserror() -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    with open("/dev/full", "w") as full:
        r = subprocess.run([sys.executable, "-c", FULL], stdout=full, stderr=subprocess.PIPE,
                           text=True, timeout=60)
    assert r.returncode == 9 and r.stderr.startswith("OSError 28"), r.stderr  # ENOSPC
