"""Every writing operation resolves its branch by one rule with one set of messages
(icectl/table/branches.py): a tag is refused with the same text, a missing branch is "not found"
with the same text (except where the operation starts the branch), and the error kinds (so the
exit codes) stay each operation's own."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from icectl.errors import IcectlError, InvalidInput, NotFound, ValidationError
from icectl.ops.metadata import refs
from icectl.ops.maintain.compact import compact_table
from icectl.ops.maintain.compact_deletes import compact_deletes
from icectl.ops.delete.merge_on_read import delete_rows
from icectl.ops.delete.equality import delete_equality
from icectl.ops.maintain.rewrite_manifests import rewrite_manifests
from icectl.ops.delete.upsert import upsert_rows
from icectl.ops.write.rows import write_rows
from icectl.table.table import Table
from support.tables import empty_table, with_files

TAG_TEXT = "v1 is a tag, not a branch: snapshots cannot be added to tags"
MISSING_TEXT = "no branch named 'nob'"
ROWS = pa.table({"id": pa.array([1, 2], pa.int64()), "cat": ["a", "b"]})

# operation -> (call on a branch, kind for a tag, refuses a missing branch)
OPERATIONS = {
    "delete (merge-on-read)": (lambda t, b: delete_rows(t, "id = 1", mode="merge-on-read", branch=b),
                               ValidationError, True),
    "delete (copy-on-write)": (lambda t, b: delete_rows(t, "id = 1", mode="copy-on-write", branch=b),
                               ValidationError, True),
    "delete by keys": (lambda t, b: delete_equality(t, "id", ROWS.select(["id"]), branch=b),
                       ValidationError, True),
    "upsert": (lambda t, b: upsert_rows(t, ROWS, "id", branch=b), ValidationError, True),
    "compact": (lambda t, b: compact_table(t, branch=b, workers=1), InvalidInput, True),
    "compact deletes": (lambda t, b: compact_deletes(t, branch=b), ValidationError, False),
    "rewrite manifests": (lambda t, b: rewrite_manifests(t, branch=b), ValidationError, False),
    "write": (lambda t, b: write_rows(t, ROWS, branch=b), ValidationError, False),
}


@pytest.fixture
def table(tmp_path: Path) -> Table:
    t = with_files(empty_table(tmp_path / "t", "id long, cat string", format_version=2), 2,
                   lambda i: ROWS)
    refs.create_tag(t, "v1", t.metadata.current_snapshot_id)
    return Table.load(t.location)


@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_a_tag_is_refused_with_one_message(table: Table, name: str) -> None:
    call, kind, _ = OPERATIONS[name]
    before = table.metadata_location
    with pytest.raises(IcectlError) as info:
        call(table, "v1")
    assert type(info.value) is kind and str(info.value) == TAG_TEXT
    assert Table.load(table.location).metadata_location == before


@pytest.mark.parametrize("name", sorted(n for n, (_, _, refuses) in OPERATIONS.items() if refuses))
def test_a_missing_branch_is_not_found_with_one_message(table: Table, name: str) -> None:
    call, _, _ = OPERATIONS[name]
    with pytest.raises(NotFound) as info:
        call(table, "nob")
    assert str(info.value) == MISSING_TEXT and info.value.argument == "branch"
