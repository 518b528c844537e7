"""What a table column reads as in a data file that lacks it, by the spec's rules for column
projection: the file's identity partition value when the column is the source of an identity
partition field of the file's spec (this is what lets a table adopted from Hive-style
directories, whose partition columns live only in the paths, read them), else the column's
v3 initial default, else null."""

from __future__ import annotations

from typing import Any, Sequence

from icectl.spec.metadata import TableMetadata
from icectl.spec.schema import NestedField

__all__ = ["identity_constants", "initial_default"]


def identity_constants(md: TableMetadata, spec_id: int, partition: Sequence[Any]) -> dict[int, Any]:
    """The values of a file's identity partition fields, by source column id."""
    spec = md.specs_by_id().get(spec_id)
    if spec is None:
        return {}
    return {pf.source_id: v for pf, v in zip(spec.fields, partition) if pf.transform.is_identity}


def initial_default(f: NestedField) -> Any:
    """The column's initial default (v3), None when it has none."""
    if not f.has_initial_default:
        return None
    from icectl.spec.values import from_json_value

    return from_json_value(f.type, f.initial_default)
