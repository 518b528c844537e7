"""Name mappings (spec "Column Projection"): field ids for data files written without them.

A table may carry a mapping in the ``schema.name-mapping.default`` property: a JSON list of
objects ``{"field-id": 1, "names": ["id", "record_id"], "fields": [...]}``. A column of a data
file that has no field id gets the id of the mapped field whose ``names`` hold the column's name
at the same nesting level; list elements are addressed as ``element`` and map keys and values as
``key`` / ``value``, as in :func:`mapping_from_schema`.

Parsing accepts what the reference accepts (``field-id`` may be absent, ``names`` defaults to no
names, ``fields`` is optional); :func:`name_mapping_to_json` writes the reference's layout
(Jackson's default pretty printer), so a mapping written by icectl is byte-identical to one
written by the reference.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Iterable, Iterator, Sequence

from icectl.errors import CorruptMetadata
from icectl.spec.schema import Schema
from icectl.spec.types import IcebergType, ListType, MapType, StructType

__all__ = [
    "NAME_MAPPING_PROPERTY", "MappedField", "NameMapping", "parse_name_mapping",
    "name_mapping_from_json", "name_mapping_to_json", "mapping_from_schema",
    "table_name_mapping",
]

# the table property holding a mapping (listed with the other keys in icectl.spec.properties)
NAME_MAPPING_PROPERTY = "schema.name-mapping.default"


@dataclass(frozen=True)
class MappedField:
    """One mapped field. ``fields`` is ``None`` when the JSON had no ``fields`` key."""

    field_id: int | None
    names: tuple[str, ...]
    fields: tuple["MappedField", ...] | None = None

    def child(self, name: str) -> "MappedField | None":
        return _find_in(self.fields or (), name)


def _find_in(fields: Iterable[MappedField], name: str) -> MappedField | None:
    for f in fields:
        if name in f.names:
            return f
    return None


@dataclass(frozen=True)
class NameMapping:
    """A whole mapping: the top-level mapped fields, in order."""

    fields: tuple[MappedField, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))
        self._check_unique()

    def _check_unique(self) -> None:
        seen: set[int] = set()

        def visit(fields: Sequence[MappedField], path: str) -> None:
            names: set[str] = set()
            for f in fields:
                if f.field_id is not None:
                    if f.field_id in seen:
                        raise CorruptMetadata(f"invalid name mapping: field id {f.field_id} is not unique")
                    seen.add(f.field_id)
                for n in f.names:
                    if n in names:
                        where = f" under {path!r}" if path else ""
                        raise CorruptMetadata(f"invalid name mapping: name {n!r} is mapped twice{where}")
                    names.add(n)
                if f.fields:
                    visit(f.fields, f"{path}.{f.names[0]}" if path and f.names else
                          (f.names[0] if f.names else path))

        visit(self.fields, "")

    def find(self, path: Sequence[str]) -> MappedField | None:
        """The mapped field for a path of names (``["location", "lat"]``), or None."""
        fields: Sequence[MappedField] = self.fields
        found: MappedField | None = None
        for name in path:
            found = _find_in(fields, name)
            if found is None:
                return None
            fields = found.fields or ()
        return found

    def find_id(self, path: Sequence[str]) -> int | None:
        f = self.find(path)
        return None if f is None else f.field_id

    @cached_property
    def _by_id(self) -> dict[int, MappedField]:
        return {f.field_id: f for f in self._walk(self.fields) if f.field_id is not None}

    def find_by_id(self, field_id: int) -> MappedField | None:
        return self._by_id.get(field_id)

    @staticmethod
    def _walk(fields: Sequence[MappedField]) -> Iterator[MappedField]:
        for f in fields:
            yield f
            if f.fields:
                yield from NameMapping._walk(f.fields)

    def to_json(self) -> list[dict[str, Any]]:
        return [_field_to_obj(f) for f in self.fields]

    def __len__(self) -> int:
        return len(self.fields)


# -- JSON ----------------------------------------------------------------------------------------


def _field_to_obj(f: MappedField) -> dict[str, Any]:
    out: dict[str, Any] = {"field-id": f.field_id, "names": list(f.names)}
    if f.fields is not None:
        out["fields"] = [_field_to_obj(c) for c in f.fields]
    return out


def _fields_from_obj(obj: Any) -> tuple[MappedField, ...]:
    if not isinstance(obj, list):
        raise CorruptMetadata(f"cannot parse non-array mapping fields: {str(obj)[:200]}")
    return tuple(_field_from_obj(f) for f in obj)


def _field_from_obj(obj: Any) -> MappedField:
    if not isinstance(obj, dict):
        raise CorruptMetadata(f"cannot parse non-object mapping field: {str(obj)[:200]}")
    fid = obj.get("field-id")
    if fid is not None and (isinstance(fid, bool) or not isinstance(fid, int)):
        raise CorruptMetadata(f"invalid field-id in name mapping: {fid!r}")
    names = obj.get("names")
    if names is None:
        names = []
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise CorruptMetadata(f"invalid names in name mapping: {names!r}")
    # Names form a set in the reference: repeated names collapse, first position kept.
    unique = tuple(dict.fromkeys(names))
    nested = _fields_from_obj(obj["fields"]) if obj.get("fields") is not None else None
    return MappedField(fid, unique, nested)


def name_mapping_from_json(obj: Any) -> NameMapping:
    """A mapping from its decoded JSON value (a list)."""
    return NameMapping(_fields_from_obj(obj))


def parse_name_mapping(text: str) -> NameMapping:
    """A mapping from its JSON text (the value of ``schema.name-mapping.default``)."""
    try:
        obj = json.loads(text)
    except (TypeError, ValueError) as e:
        raise CorruptMetadata(f"invalid name mapping JSON: {e}") from None
    return name_mapping_from_json(obj)


def _pretty(value: Any, indent: int) -> str:
    # Jackson's DefaultPrettyPrinter: objects one member per line indented by two spaces,
    # "key" : value; arrays inline as [ a, b ] (and [ ] when empty).
    if isinstance(value, dict):
        if not value:
            return "{ }"
        pad = "  " * (indent + 1)
        members = [f"{pad}{json.dumps(k, ensure_ascii=False)} : {_pretty(v, indent + 1)}"
                   for k, v in value.items()]
        return "{\n" + ",\n".join(members) + "\n" + "  " * indent + "}"
    if isinstance(value, list):
        if not value:
            return "[ ]"
        return "[ " + ", ".join(_pretty(v, indent) for v in value) + " ]"
    return json.dumps(value, ensure_ascii=False)


def name_mapping_to_json(mapping: NameMapping, pretty: bool = True) -> str:
    """JSON text of a mapping; ``pretty`` gives the reference's exact layout."""
    obj = mapping.to_json()
    if pretty:
        return _pretty(obj, 0)
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


# -- from a schema ----------------------------------------------------------------------------


def _nested(t: IcebergType) -> tuple[MappedField, ...] | None:
    if isinstance(t, StructType):
        return tuple(MappedField(f.field_id, (f.name,), _nested(f.type)) for f in t.fields())
    if isinstance(t, ListType):
        return (MappedField(t.element_id, ("element",), _nested(t.element_type)),)
    if isinstance(t, MapType):
        return (MappedField(t.key_id, ("key",), _nested(t.key_type)),
                MappedField(t.value_id, ("value",), _nested(t.value_type)))
    return None


def mapping_from_schema(schema: Schema) -> NameMapping:
    """The mapping that maps every field's own name to its id (the reference's default)."""
    return NameMapping(_nested(schema.struct) or ())


def table_name_mapping(properties: dict[str, str], schema: Schema) -> NameMapping:
    """The table's mapping: its ``schema.name-mapping.default`` property, else the schema's names.

    This is the mapping the reference uses when it imports files into a table.
    """
    text = properties.get(NAME_MAPPING_PROPERTY)
    if text is not None:
        return parse_name_mapping(text)
    return mapping_from_schema(schema)
