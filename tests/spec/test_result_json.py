"""The one generic, field-driven ``to_json`` of results (icectl/spec/result_json.py)."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field

import pytest

from icectl.spec.result_json import JsonResult, committed_operation, derived, json_field, pairs


@dataclass(frozen=True)
class _Inner(JsonResult):
    path: str
    size_in_bytes: int


@dataclass(frozen=True)
class _Result(JsonResult):
    committed: bool
    dry_run: bool
    operation: str | None = committed_operation("append")
    files_count: int = derived(lambda r: len(r.files))
    files: tuple[str, ...] = ()
    failed: tuple[tuple[str, str], ...] = json_field(default=(), key="failed-deletes",
                                                     value=pairs("path", "error"))
    caller_only: object = json_field(default=None, omit=True)
    inner: tuple[_Inner, ...] = ()
    summary: dict[str, str] = field(default_factory=dict)


def test_keys_follow_the_fields_in_order_in_kebab_case() -> None:
    r = _Result(committed=True, dry_run=False, files=("a", "b"), failed=(("c", "gone"),),
                caller_only=object(), inner=(_Inner("d", 3),), summary={"operation": "delete"})
    assert list(r.to_json()) == ["committed", "dry-run", "operation", "files-count", "files",
                                 "failed-deletes", "inner", "summary"]
    assert r.to_json() == {
        "committed": True, "dry-run": False, "operation": "delete", "files-count": 2,
        "files": ["a", "b"], "failed-deletes": [{"path": "c", "error": "gone"}],
        "inner": [{"path": "d", "size-in-bytes": 3}], "summary": {"operation": "delete"}}
    json.dumps(r.to_json())  # JSON-shaped: tuples became lists


def test_derived_fields_are_computed_not_arguments_nor_compared() -> None:
    r = _Result(committed=False, dry_run=True, files=("a",))
    assert (r.operation, r.files_count) == (None, 1)  # not committed: no operation
    assert _Result(committed=True, dry_run=False).operation == "append"  # the default
    with pytest.raises(TypeError):
        _Result(committed=True, dry_run=False, files_count=3)  # type: ignore[call-arg]
    # replace() builds anew, so derived values follow the fields they come from
    assert dataclasses.replace(r, files=("a", "b", "c")).files_count == 3
    assert "files_count" not in repr(r)


def test_the_view_is_a_copy() -> None:
    summary = {"operation": "append"}
    r = _Result(committed=True, dry_run=False, summary=summary)
    r.to_json()["summary"]["operation"] = "changed"
    assert summary == {"operation": "append"}
