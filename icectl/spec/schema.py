"""Schemas: a struct of nested fields with a schema id and identifier fields."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Callable, Iterator

from icectl.errors import CorruptMetadata, NotFound
from icectl.spec.types import (
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    field_from_json,
    field_to_json,
)

__all__ = ["Schema", "assign_fresh_ids", "walk_fields", "select_fields"]


def walk_fields(struct: StructType, prefix: str = "") -> Iterator[tuple[str, NestedField, int | None]]:
    """Yield ``(full_name, field, parent_id)`` for every field, depth first, parents first.

    Full names follow the reference: list elements are ``a.element``, map keys and values
    ``m.key`` / ``m.value``.
    """

    def visit(t: IcebergType, path: str, parent: int | None) -> Iterator[tuple[str, NestedField, int | None]]:
        if isinstance(t, StructType):
            for f in t.fields():
                name = f"{path}.{f.name}" if path else f.name
                yield name, f, parent
                yield from visit(f.type, name, f.field_id)
        elif isinstance(t, ListType):
            ef = t.element_field
            name = f"{path}.element"
            yield name, ef, parent
            yield from visit(t.element_type, name, ef.field_id)
        elif isinstance(t, MapType):
            for sub in (t.key_field, t.value_field):
                name = f"{path}.{sub.name}"
                yield name, sub, parent
                yield from visit(sub.type, name, sub.field_id)

    yield from visit(struct, prefix, None)


@dataclass(frozen=True)
class Schema:
    """An Iceberg schema. Field lookups are indexed once, lazily."""

    fields: tuple[NestedField, ...]
    schema_id: int = 0
    identifier_field_ids: tuple[int, ...] = ()
    extra: dict = field(default_factory=dict, compare=False, hash=False)  # unknown JSON keys

    @cached_property
    def struct(self) -> StructType:
        return StructType(self.fields)

    # -- indexes -------------------------------------------------------------------------------

    @cached_property
    def _index(self) -> tuple[dict[int, NestedField], dict[str, int], dict[int, str], dict[int, int]]:
        by_id: dict[int, NestedField] = {}
        by_name: dict[str, int] = {}
        names: dict[int, str] = {}
        parents: dict[int, int] = {}
        for name, f, parent in walk_fields(self.struct):
            by_id[f.field_id] = f
            by_name[name] = f.field_id
            names[f.field_id] = name
            if parent is not None:
                parents[f.field_id] = parent
        # Short names: fields of a struct inside a list element or map value can also be
        # addressed without the ``element``/``value`` segment ("points.x"), as the reference allows.
        for name, fid in list(by_name.items()):
            parts = name.split(".")
            short = [p for i, p in enumerate(parts)
                     if not (i > 0 and p in ("element", "value") and i < len(parts) - 1
                             and isinstance(by_id[by_name[".".join(parts[:i])]].type, (ListType, MapType)))]
            short_name = ".".join(short)
            if short_name != name and short_name not in by_name:
                by_name[short_name] = fid
        return by_id, by_name, names, parents

    @cached_property
    def _lower_names(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for name, fid in self._index[1].items():
            out.setdefault(name.lower(), fid)
        return out

    def find_field(self, key: int | str, case_sensitive: bool = True) -> NestedField:
        """The field with an id or a dotted name; NotFound otherwise."""
        f = self.find_field_or_none(key, case_sensitive)
        if f is None:
            what = f"field id {key}" if isinstance(key, int) else f"column {key!r}"
            raise NotFound(f"schema {self.schema_id} has no {what}")
        return f

    def find_field_or_none(self, key: int | str, case_sensitive: bool = True) -> NestedField | None:
        by_id, by_name, _, _ = self._index
        if isinstance(key, int):
            return by_id.get(key)
        fid = by_name.get(key) if case_sensitive else self._lower_names.get(key.lower())
        return None if fid is None else by_id[fid]

    def find_type(self, key: int | str) -> IcebergType:
        return self.find_field(key).type

    def column_name(self, field_id: int) -> str:
        """The full dotted name of a field id."""
        try:
            return self._index[2][field_id]
        except KeyError:
            raise NotFound(f"schema {self.schema_id} has no field id {field_id}") from None

    def parent_id(self, field_id: int) -> int | None:
        return self._index[3].get(field_id)

    def root_id(self, field_id: int) -> int:
        """The id of the top-level column holding ``field_id`` (itself when top-level or not
        in this schema)."""
        parents = self._index[3]
        while field_id in parents:
            field_id = parents[field_id]
        return field_id

    def all_field_ids(self) -> list[int]:
        return list(self._index[0])

    def suggest(self, name: str) -> str:
        """`` (did you mean 'x'?)`` naming the column whose name is closest to a misspelt
        ``name`` (difflib), or ``""`` when none is close."""
        import difflib

        names = list(self.name_to_id())
        close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
        if not close:
            lowered = {n.lower(): n for n in names}
            close = [lowered[c] for c in difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.6)]
        return f" (did you mean {close[0]!r}?)" if close else ""

    def name_to_id(self) -> dict[str, int]:
        """Full dotted names (and the reference's short forms) to field ids."""
        return dict(self._index[1])

    def highest_field_id(self) -> int:
        ids = self._index[0]
        return max(ids) if ids else 0

    def identifier_field_names(self) -> list[str]:
        return [self.column_name(i) for i in self.identifier_field_ids]

    def leaf_fields(self) -> list[tuple[str, NestedField]]:
        return [(n, f) for n, f, _ in walk_fields(self.struct) if isinstance(f.type, PrimitiveType)]

    # -- JSON ----------------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "struct", "schema-id": self.schema_id}
        if self.identifier_field_ids:
            out["identifier-field-ids"] = list(self.identifier_field_ids)
        out["fields"] = [field_to_json(f) for f in self.fields]
        out.update(self.extra)
        return out

    @classmethod
    def from_json(cls, obj: Any) -> "Schema":
        if not isinstance(obj, dict) or obj.get("type", "struct") != "struct" or "fields" not in obj:
            raise CorruptMetadata(f"invalid schema JSON: {str(obj)[:200]}")
        known = {"type", "schema-id", "identifier-field-ids", "fields"}
        return cls(
            fields=tuple(field_from_json(f) for f in obj["fields"]),
            schema_id=int(obj.get("schema-id", 0)),
            identifier_field_ids=tuple(int(i) for i in obj.get("identifier-field-ids") or ()),
            extra={k: v for k, v in obj.items() if k not in known},
        )

    def with_schema_id(self, schema_id: int) -> "Schema":
        return Schema(self.fields, schema_id, self.identifier_field_ids, dict(self.extra))

    def same_structure(self, other: "Schema") -> bool:
        """Equal fields and identifier fields (schema ids aside), as the reference compares."""
        return self.fields == other.fields and set(self.identifier_field_ids) == set(other.identifier_field_ids)

    def __str__(self) -> str:
        lines = ["table {"]
        for name, f, _ in walk_fields(self.struct):
            depth = name.count(".")
            req = "required" if f.required else "optional"
            t = f.type if isinstance(f.type, PrimitiveType) else type(f.type).__name__.replace("Type", "").lower()
            lines.append(f"{'  ' * (depth + 1)}{f.field_id}: {f.name}: {req} {t}")
        lines.append("}")
        return "\n".join(lines)


def select_fields(fields: tuple[NestedField, ...] | list[NestedField], ids: set[int] | frozenset[int]
                  ) -> list[NestedField]:
    """``fields`` pruned to the fields ``ids`` names: a selected field keeps its whole type; a
    struct that holds selected fields keeps only those (at any depth, through list elements and
    map values); a list element or map key/value selected keeps the whole list or map. Order and
    ids are the schema's."""

    def prune(t: IcebergType) -> IcebergType | None:
        if isinstance(t, StructType):
            kept = [f for f in (pick(f) for f in t.fields()) if f is not None]
            return StructType(kept) if kept else None
        if isinstance(t, ListType):
            if t.element_id in ids:
                return t
            sub = prune(t.element_type)
            return None if sub is None else replace(t, element_type=sub)
        if isinstance(t, MapType):
            if t.key_id in ids or t.value_id in ids:
                return t
            if prune(t.key_type) is not None:
                return t
            sub = prune(t.value_type)
            return None if sub is None else replace(t, value_type=sub)
        return None

    def pick(f: NestedField) -> NestedField | None:
        if f.field_id in ids:
            return f
        sub = prune(f.type)
        return None if sub is None else replace(f, type=sub)

    return [f for f in (pick(f) for f in fields) if f is not None]


def assign_fresh_ids(schema: Schema, next_id: Callable[[], int] | None = None) -> Schema:
    """Reassign every field id the way the reference does when a table is created.

    Ids start at 1 (or come from ``next_id``). A struct's own fields are numbered before any of
    their children; a list's element and a map's key and value likewise come before what they
    contain. Identifier fields are carried over by name.
    """
    if next_id is None:
        counter = itertools.count(1)
        next_id = lambda: next(counter)  # noqa: E731

    def fresh(t: IcebergType) -> IcebergType:
        if isinstance(t, StructType):
            ids = [next_id() for _ in t.fields()]
            return StructType([
                NestedField(i, f.name, fresh(f.type), f.required, f.doc, f.initial_default,
                            f.write_default, f.has_initial_default, f.has_write_default)
                for i, f in zip(ids, t.fields())
            ])
        if isinstance(t, ListType):
            eid = next_id()
            return ListType(eid, fresh(t.element_type), t.element_required)
        if isinstance(t, MapType):
            kid = next_id()
            vid = next_id()
            return MapType(kid, fresh(t.key_type), vid, fresh(t.value_type), t.value_required)
        return t

    new_struct = fresh(schema.struct)
    assert isinstance(new_struct, StructType)
    ident_names = [schema.column_name(i) for i in schema.identifier_field_ids]
    new = Schema(new_struct.fields(), schema.schema_id, (), dict(schema.extra))
    ident = tuple(new.find_field(n).field_id for n in ident_names)
    return Schema(new.fields, schema.schema_id, ident, dict(schema.extra))
