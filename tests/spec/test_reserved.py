"""Reserved field ids have one home (spec/reserved.py), and one rule says which data file a
position delete file targets (table/delete_index.delete_target)."""

from __future__ import annotations

import re
from pathlib import Path

from icectl.spec import reserved
from icectl.spec.manifests import DATA, POSITION_DELETES, DataFile, entry_key
from icectl.table.delete_index import delete_target

PKG = Path(__file__).resolve().parents[2] / "icectl"


def test_ids_are_the_specs() -> None:
    # spec "Reserved Field IDs"
    assert (reserved.FILE_PATH_COLUMN_ID, reserved.ROW_POSITION_ID, reserved.IS_DELETED_ID,
            reserved.SPEC_ID_COLUMN_ID, reserved.PARTITION_COLUMN_ID) == (
        2147483646, 2147483645, 2147483644, 2147483643, 2147483642)
    assert (reserved.DELETE_FILE_PATH_ID, reserved.DELETE_FILE_POS_ID, reserved.DELETE_FILE_ROW_ID) == (
        2147483546, 2147483545, 2147483544)
    assert (reserved.ROW_ID_ID, reserved.LAST_UPDATED_SEQUENCE_NUMBER_ID) == (2147483540, 2147483539)
    fields = reserved.POSITION_DELETE_SCHEMA.fields
    assert [(f.field_id, f.name, str(f.type), f.required) for f in fields] == [
        (2147483546, "file_path", "string", True), (2147483545, "pos", "long", True)]


def test_no_other_module_writes_a_reserved_id() -> None:
    ids = {str(v) for k, v in vars(reserved).items() if k.endswith("_ID") and isinstance(v, int)}
    number = re.compile(r"\b\d{10}\b")
    found = []
    for path in sorted(PKG.rglob("*.py")):
        if path.name == "reserved.py" and path.parent.name == "spec":
            continue
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if any(n in ids for n in number.findall(line)):
                found.append(f"{path.relative_to(PKG)}:{lineno}: {line.strip()}")
    assert not found, "reserved field ids written outside spec/reserved.py:\n" + "\n".join(found)


def _pos_delete(lower: bytes | None, upper: bytes | None, referenced: str | None = None) -> DataFile:
    bounds = lambda b: {} if b is None else {reserved.DELETE_FILE_PATH_ID: b}  # noqa: E731
    return DataFile(content=POSITION_DELETES, file_path="d.parquet", file_format="PARQUET", partition=(),
                    record_count=1, file_size_in_bytes=10, lower_bounds=bounds(lower),
                    upper_bounds=bounds(upper), referenced_data_file=referenced)


def test_delete_target() -> None:
    assert delete_target(_pos_delete(b"s3://b/a.parquet", b"s3://b/a.parquet")) == "s3://b/a.parquet"
    assert delete_target(_pos_delete(b"a", b"b")) is None  # a range names no one file
    assert delete_target(_pos_delete(None, None)) is None
    assert delete_target(_pos_delete(b"a", b"b", referenced="x.parquet")) == "x.parquet"
    # bounds that are not UTF-8 name no file: the delete applies to its partition (safe), never
    # to a mangled path that matches nothing
    assert delete_target(_pos_delete(b"a\xff", b"a\xff")) is None
    assert delete_target(_pos_delete("é/ü.parquet".encode(), "é/ü.parquet".encode())) == "é/ü.parquet"


def test_entry_key_tells_deletion_vectors_in_one_file_apart() -> None:
    a = DataFile(content=POSITION_DELETES, file_path="dv.puffin", file_format="PUFFIN", partition=(),
                 record_count=1, file_size_in_bytes=10, content_offset=4, content_size_in_bytes=3)
    b = DataFile(content=POSITION_DELETES, file_path="dv.puffin", file_format="PUFFIN", partition=(),
                 record_count=1, file_size_in_bytes=10, content_offset=7, content_size_in_bytes=3)
    d = DataFile(content=DATA, file_path="dv.puffin", file_format="PARQUET", partition=(),
                 record_count=1, file_size_in_bytes=10)
    assert len({entry_key(a), entry_key(b), entry_key(d)}) == 3
