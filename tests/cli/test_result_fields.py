"""--field names checked before a command runs (cli/result_fields.py): the fields a result
type's JSON view has, open below objects and lists whose content is known only after the run."""

from __future__ import annotations

from pathlib import Path

import pytest

from clirun import icectl
from icectl.cli.result_fields import check_fields, result_views
from icectl.errors import InvalidInput

WRITE = result_views(["icectl.ops.write.rows:WriteResult"])
PROPS = result_views(["icectl.ops.metadata.properties:PropertiesChange"])
SCHEMA = result_views(["icectl.ops.metadata.schema:SchemaChange"])


@pytest.mark.parametrize("views,field", [
    (WRITE, "rows-written"), (WRITE, "snapshot-id"), (WRITE, "summary.added-records"),
    (WRITE, "summary.anything"), (WRITE, "files.file-path"), (WRITE, "files.0.record-count"),
    (PROPS, "properties.write.format.default"), (SCHEMA, "schema.columns.name"),
    (SCHEMA, "schema.schema-string"),
])
def test_fields_the_result_may_have_are_accepted(views: list, field: str) -> None:
    check_fields([field], views)


@pytest.mark.parametrize("views,field,valid", [
    (WRITE, "rows-writen", "rows-written"), (WRITE, "snapshot-id.x", "snapshot-id"),
    (WRITE, "", "committed"), (SCHEMA, "schema.colums", "columns"),
    (SCHEMA, "schema.columns.nam", "name"),
])
def test_fields_the_result_cannot_have_are_refused_naming_the_valid_ones(views: list, field: str,
                                                                         valid: str) -> None:
    with pytest.raises(InvalidInput) as e:
        check_fields([field], views)
    assert e.value.argument == "fields" and valid in str(e.value)


def test_a_checked_field_the_result_lacks_prints_empty_after_the_commit(tmp_path: Path) -> None:
    t = tmp_path / "t"
    assert icectl("create", t, "--schema", "id long").returncode == 0
    (tmp_path / "r.csv").write_text("id\n1\n")
    done = icectl("write", t, tmp_path / "r.csv", "--field", "rows-written", "--field", "summary.no-such-key")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "1\t\n"
