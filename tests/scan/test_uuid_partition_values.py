"""Partition values of uuid type as Arrow values (the scan's partition metadata column, which
``delete --mode merge-on-read`` reads to find positions): pyarrow cannot build its uuid
extension type from Python values inside a struct, and the delete failed with "... is not a
readable Parquet file: extension" (the differential fuzzer, seed 7)."""

from __future__ import annotations

import json
import uuid

from clirun import icectl

from icectl.scan.arrow_values import internal_to_arrow
from icectl.spec.types import STRING, UUID, ListType, MapType, NestedField, StructType

U1, U2 = uuid.UUID("7fffffff-ffff-ffff-ffff-ffffffffffff"), uuid.UUID(int=2**127)


def run(*args):
    r = icectl(*args)
    assert r.exit_code == 0, r.output
    return r.stdout


def test_nested_uuid_values_to_arrow() -> None:
    t = StructType((NestedField(1, "u", UUID, False),
                    NestedField(2, "l", ListType(3, UUID, False), False),
                    NestedField(4, "m", MapType(5, STRING, 6, UUID, False), False)))
    arr = internal_to_arrow([{1: U1, 2: [U2, None], 4: {"a": U1}}, {1: None, 2: None, 4: None},
                             None], t)
    got = arr.to_pylist()
    assert got[0] == {"u": U1, "l": [U2, None], "m": [("a", U1)]}  # pyarrow gives uuid.UUID
    assert got[1] == {"u": None, "l": None, "m": None} and got[2] is None
    assert str(arr.type.field("u").type) == "extension<arrow.uuid>"


def test_merge_on_read_delete_in_a_uuid_partition(tmp_path) -> None:
    loc = str(tmp_path / "t")
    run("create", loc, "--schema", "id long, u uuid", "--partition", "u")
    src = tmp_path / "rows.jsonl"
    src.write_text("".join(json.dumps({"id": i, "u": str(u)}) + "\n"
                           for i, u in ((1, U1), (2, U1), (3, U2))))
    run("write", loc, str(src))
    run("delete", loc, "--filter", f"u = uuid '{U1}' and id = 1", "--mode", "merge-on-read")
    rows = [json.loads(x) for x in run("scan", loc, "--format", "jsonl").splitlines() if x]
    assert sorted(r["id"] for r in rows) == [2, 3]
