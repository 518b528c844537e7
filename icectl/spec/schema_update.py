"""Schema evolution as a pure computation (spec "Schema Evolution").

:class:`SchemaUpdate` collects changes against one schema -- add, drop, rename, move, promote,
make optional, set a doc, set identifier fields, union by name -- and :meth:`SchemaUpdate.apply`
produces the new schema. It follows the reference's ``SchemaUpdate`` semantics: new field ids
count up from the table's last column id in the order columns are added (a nested type's own ids
after the column's), added columns are optional unless they are required with a default (v3),
fields keep their ids through renames and moves, a field moves only within its struct, and map
keys and list elements cannot be dropped.

Applying the result to table metadata is :func:`icectl.spec.schema_metadata.update_table_schema`.

Names that differ only in case (``id`` and ``ID``) clash unless the update is made with
``case_sensitive_names``: Spark resolves columns case-insensitively by default, so such a pair
makes every query of the table ambiguous there.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Iterable

from icectl.errors import InvalidInput, NotFound, ValidationError
from icectl.spec.schema import Schema, walk_fields
from icectl.spec.types import (
    DOUBLE,
    FLOAT,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    is_promotion_allowed,
)

__all__ = ["SchemaUpdate", "SchemaUpdateResult", "ROOT_ID", "case_clashes", "check_case_clashes"]

ROOT_ID = -1  # the parent id of top-level columns

@dataclass(frozen=True)
class _Move:
    field_id: int
    kind: str  # "first", "before", "after"
    reference_id: int | None = None


@dataclass(frozen=True)
class SchemaUpdateResult:
    """The new schema and what changed, by field id."""

    schema: Schema
    last_column_id: int
    updated: dict[int, NestedField] = field(default_factory=dict)  # changed or added fields
    added: dict[int, list[int]] = field(default_factory=dict)  # parent id -> added field ids
    deleted: tuple[int, ...] = ()
    renamed: dict[int, str] = field(default_factory=dict)  # field id -> new name


def _fresh_type(t: IcebergType, next_id) -> IcebergType:
    """Give a nested type new ids: a struct's fields first, then their children (as the reference)."""
    if isinstance(t, StructType):
        ids = [next_id() for _ in t.fields()]
        return StructType([replace(f, field_id=i, type=_fresh_type(f.type, next_id))
                           for i, f in zip(ids, t.fields())])
    if isinstance(t, ListType):
        eid = next_id()
        return ListType(eid, _fresh_type(t.element_type, next_id), t.element_required)
    if isinstance(t, MapType):
        kid = next_id()
        vid = next_id()
        return MapType(kid, _fresh_type(t.key_type, next_id), vid,
                       _fresh_type(t.value_type, next_id), t.value_required)
    return t


class SchemaUpdate:
    """Pending changes to one schema. Methods return ``self`` so changes can be chained.

    Column names are dotted paths (``loc.lat``; list elements and map values may be addressed
    with or without ``element``/``value``). Unknown columns raise NotFound; forbidden changes
    ValidationError.
    """

    def __init__(self, schema: Schema, last_column_id: int, format_version: int = 2,
                 case_sensitive: bool = True, *, case_sensitive_names: bool = False):
        self.schema = schema
        self.case_sensitive_names = case_sensitive_names
        self.last_column_id = max(last_column_id, schema.highest_field_id())
        self.format_version = format_version
        self.case_sensitive = case_sensitive
        self._parents: dict[int, int] = {}
        for _, f, parent in walk_fields(schema.struct):
            if parent is not None:
                self._parents[f.field_id] = parent
        self._deletes: list[int] = []
        self._updates: dict[int, NestedField] = {}
        self._added: dict[int, list[int]] = {}
        self._added_names: dict[str, int] = {}
        self._moves: dict[int, list[_Move]] = {}
        self._identifier_names: list[str] = list(schema.identifier_field_names())

    # -- lookups -------------------------------------------------------------------------------

    def _key(self, name: str) -> str:
        return name if self.case_sensitive else name.lower()

    def _find(self, name: str) -> NestedField | None:
        return self.schema.find_field_or_none(name, self.case_sensitive)

    def _find_for_update(self, name: str) -> NestedField | None:
        f = self._find(name)
        if f is not None:
            return self._updates.get(f.field_id, f)
        added = self._added_names.get(self._key(name))
        return None if added is None else self._updates[added]

    def _find_for_move(self, name: str) -> int | None:
        added = self._added_names.get(self._key(name))
        if added is not None:
            return added
        f = self._find(name)
        return None if f is None else f.field_id

    def _next_id(self) -> int:
        self.last_column_id += 1
        return self.last_column_id

    def _full_name(self, field_id: int) -> str:
        for name, fid in self._added_names.items():
            if fid == field_id:
                return name
        return self.schema.column_name(field_id)

    # -- changes -------------------------------------------------------------------------------

    def add_column(self, parent: str | None, name: str, type_: IcebergType, doc: str | None = None,
                   required: bool = False, default: Any = None) -> "SchemaUpdate":
        """Add a column to the table (``parent`` None) or to the struct ``parent``.

        ``default`` is the JSON single-value form (spec Appendix D); it becomes both the
        initial and the write default. A required column needs one.
        """
        if not name:
            raise InvalidInput("a column name must not be empty")
        parent_id = ROOT_ID
        if parent is not None:
            pf = self._find(parent)
            if pf is None:
                raise NotFound(f"cannot find parent struct: {parent}")
            if isinstance(pf.type, MapType):
                pf = pf.type.value_field
            elif isinstance(pf.type, ListType):
                pf = pf.type.element_field
            if not isinstance(pf.type, StructType):
                raise ValidationError(f"cannot add to non-struct column: {parent}: {pf.type}")
            parent_id = pf.field_id
            if parent_id in self._deletes:
                raise ValidationError(f"cannot add to a column that will be dropped: {parent}")
            current = self._find(f"{parent}.{name}")
            full_name = f"{self.schema.column_name(parent_id)}.{name}"
        else:
            current = self._find(name)
            full_name = name
        if current is not None and current.field_id not in self._deletes:
            raise ValidationError(f"cannot add column, name already exists: {full_name}")
        if self._key(full_name) in self._added_names:
            raise ValidationError(f"cannot add column, name already added: {full_name}")
        if required and default is None:
            raise ValidationError(
                f"incompatible change: cannot add required column without a default value: {full_name}")
        if default is not None and not isinstance(type_, PrimitiveType):
            raise InvalidInput(f"a default value is only supported for primitive columns: {full_name}")
        new_id = self._next_id()
        self._added_names[self._key(full_name)] = new_id
        if parent_id != ROOT_ID:
            self._parents[new_id] = parent_id
        fresh = _fresh_type(type_, self._next_id)
        has_default = default is not None
        new_field = NestedField(new_id, name, fresh, required, doc,
                                initial_default=default, write_default=default,
                                has_initial_default=has_default, has_write_default=has_default)
        self._updates[new_id] = new_field
        self._added.setdefault(parent_id, []).append(new_id)
        return self

    def drop_column(self, name: str) -> "SchemaUpdate":
        f = self._find(name)
        if f is None:
            raise NotFound(f"cannot drop missing column: {name}")
        if f.field_id in self._added:
            raise ValidationError(f"cannot drop a column that has additions: {name}")
        if f.field_id in self._updates:
            raise ValidationError(f"cannot drop a column that has updates: {name}")
        if f.field_id not in self._deletes:
            self._deletes.append(f.field_id)
        return self

    def rename_column(self, name: str, new_name: str) -> "SchemaUpdate":
        f = self._find(name)
        if f is None:
            raise NotFound(f"cannot rename missing column: {name}")
        if not new_name:
            raise InvalidInput("cannot rename a column to an empty name")
        if "." in new_name:
            raise InvalidInput(f"a new column name cannot contain '.': {new_name!r} (give only the last part)")
        if f.field_id in self._deletes:
            raise ValidationError(f"cannot rename a column that will be dropped: {name}")
        base = self._updates.get(f.field_id, f)
        self._updates[f.field_id] = replace(base, name=new_name)
        full_old = self.schema.column_name(f.field_id)
        if full_old in self._identifier_names:
            prefix = full_old.rsplit(".", 1)[0] + "." if "." in full_old else ""
            self._identifier_names = [prefix + new_name if n == full_old else n
                                      for n in self._identifier_names]
        return self

    def make_optional(self, name: str) -> "SchemaUpdate":
        f = self._find_for_update(name)
        if f is None:
            raise NotFound(f"cannot update missing column: {name}")
        if not f.required:
            return self
        if f.field_id in self._deletes:
            raise ValidationError(f"cannot update a column that will be dropped: {name}")
        self._updates[f.field_id] = replace(f, required=False)
        return self

    def require_column(self, name: str) -> "SchemaUpdate":
        """Only allowed for a column added in this update with a default (as the reference)."""
        f = self._find_for_update(name)
        if f is None:
            raise NotFound(f"cannot update missing column: {name}")
        if f.required:
            return self
        if not (self._key(name) in self._added_names and f.initial_default is not None):
            raise ValidationError(f"cannot change column nullability: {name}: optional -> required")
        self._updates[f.field_id] = replace(f, required=True)
        return self

    def update_column(self, name: str, new_type: IcebergType) -> "SchemaUpdate":
        """Promote a column's type (int->long, float->double, wider decimal, v3 date->timestamp)."""
        f = self._find_for_update(name)
        if f is None:
            raise NotFound(f"cannot update missing column: {name}")
        if f.field_id in self._deletes:
            raise ValidationError(f"cannot update a column that will be dropped: {name}")
        if f.type == new_type:
            return self
        if not isinstance(new_type, PrimitiveType) or not isinstance(f.type, PrimitiveType) \
                or not is_promotion_allowed(f.type, new_type, self.format_version):
            raise ValidationError(f"cannot change column type: {name}: {f.type} -> {new_type}")
        self._updates[f.field_id] = replace(f, type=new_type)
        return self

    def update_doc(self, name: str, doc: str | None) -> "SchemaUpdate":
        f = self._find_for_update(name)
        if f is None:
            raise NotFound(f"cannot update missing column: {name}")
        if f.field_id in self._deletes:
            raise ValidationError(f"cannot update a column that will be dropped: {name}")
        if f.doc == doc:
            return self
        self._updates[f.field_id] = replace(f, doc=doc)
        return self

    def move_first(self, name: str) -> "SchemaUpdate":
        fid = self._find_for_move(name)
        if fid is None:
            raise NotFound(f"cannot move missing column: {name}")
        self._move(name, _Move(fid, "first"))
        return self

    def move_before(self, name: str, before: str) -> "SchemaUpdate":
        return self._move_relative(name, before, "before")

    def move_after(self, name: str, after: str) -> "SchemaUpdate":
        return self._move_relative(name, after, "after")

    def _move_relative(self, name: str, ref: str, kind: str) -> "SchemaUpdate":
        fid = self._find_for_move(name)
        if fid is None:
            raise NotFound(f"cannot move missing column: {name}")
        rid = self._find_for_move(ref)
        if rid is None:
            raise NotFound(f"cannot move {name} {kind} missing column: {ref}")
        if rid == fid:
            raise ValidationError(f"cannot move {name} {kind} itself")
        self._move(name, _Move(fid, kind, rid))
        return self

    def _move(self, name: str, move: _Move) -> None:
        parent = self._parents.get(move.field_id)
        if parent is not None:
            pf = self.schema.find_field_or_none(parent)
            ptype = pf.type if pf is not None else None
            if not isinstance(ptype, StructType):
                raise ValidationError(f"cannot move fields in non-struct type: {ptype}")
        if move.kind != "first" and self._parents.get(move.reference_id) != parent:
            raise ValidationError(f"cannot move field {name} to a different struct")
        self._moves.setdefault(ROOT_ID if parent is None else parent, []).append(move)

    def set_identifier_fields(self, names: Iterable[str]) -> "SchemaUpdate":
        self._identifier_names = list(dict.fromkeys(names))
        return self

    def union_by_name(self, other: Schema | StructType) -> "SchemaUpdate":
        """Add the columns ``other`` has and this schema lacks; widen types and nullability
        where ``other`` needs it (the reference's ``unionByNameWith``)."""
        struct = other.struct if isinstance(other, Schema) else other
        self._union_struct(struct, None)
        return self

    def _union_struct(self, struct: StructType, parent: str | None) -> None:
        for f in struct.fields():
            path = f.name if parent is None else f"{parent}.{f.name}"
            existing = self._find(path)
            if existing is None:
                self.add_column(parent, f.name, f.type, f.doc)
                continue
            self._union_field(f.type, existing, path)
            if f.optional and existing.required:
                self.make_optional(path)
            if f.doc is not None and f.doc != existing.doc:
                self.update_doc(path, f.doc)

    def _union_field(self, new_t: IcebergType, existing: NestedField, path: str) -> None:
        old_t = existing.type
        if isinstance(new_t, PrimitiveType) and isinstance(old_t, PrimitiveType):
            if new_t == old_t:
                return
            if is_promotion_allowed(old_t, new_t, self.format_version):
                self.update_column(path, new_t)
            elif is_promotion_allowed(new_t, old_t, self.format_version):
                return  # the table's type is already wider
            else:
                raise ValidationError(f"cannot change column type: {path}: {old_t} -> {new_t}")
            return
        if isinstance(new_t, StructType) and isinstance(old_t, StructType):
            self._union_struct(new_t, path)
            return
        if isinstance(new_t, ListType) and isinstance(old_t, ListType):
            elem_path = f"{path}.element"
            self._union_field(new_t.element_type, old_t.element_field, elem_path)
            if not new_t.element_required and old_t.element_required:
                self.make_optional(elem_path)
            return
        if isinstance(new_t, MapType) and isinstance(old_t, MapType):
            if new_t.key_type != old_t.key_type:
                if not isinstance(new_t.key_type, StructType):
                    raise ValidationError(f"cannot change map key type: {path}: {old_t.key_type} -> {new_t.key_type}")
            self._union_field(new_t.value_type, old_t.value_field, f"{path}.value")
            if not new_t.value_required and old_t.value_required:
                self.make_optional(f"{path}.value")
            return
        raise ValidationError(f"cannot change column type: {path}: {old_t} -> {new_t}")

    # -- applying ------------------------------------------------------------------------------

    def apply(self) -> Schema:
        return self.result().schema

    def result(self) -> SchemaUpdateResult:
        schema = self.schema
        by_name = lambda n: schema.find_field_or_none(n, self.case_sensitive)  # noqa: E731
        # identifier fields cannot be dropped (nor can their parents)
        for name in self._identifier_names:
            f = by_name(name)
            if f is None:
                continue
            if f.field_id in self._deletes:
                raise ValidationError(
                    f"cannot drop identifier field {name!r}: change the identifier fields first")
            p = self._parents.get(f.field_id)
            while p is not None:
                if p in self._deletes:
                    raise ValidationError(
                        f"cannot drop {schema.column_name(p)!r}: it holds identifier field {name!r}")
                p = self._parents.get(p)
        fields = self._apply_struct(schema.fields, ROOT_ID, "")
        new = Schema(tuple(fields), schema.schema_id, (), dict(schema.extra))
        _check_unique_names(new.struct, "")
        if not self.case_sensitive_names:
            check_case_clashes(new.struct, before=schema.struct)
        ids: list[int] = []
        for name in self._identifier_names:
            f = new.find_field_or_none(name, self.case_sensitive)
            if f is None:
                raise NotFound(f"cannot use {name!r} as an identifier field: not found in the schema")
            _validate_identifier_field(new, f)
            if f.field_id not in ids:
                ids.append(f.field_id)
        new = Schema(new.fields, schema.schema_id, tuple(ids), dict(schema.extra))
        renamed = {fid: u.name for fid, u in self._updates.items()
                   if schema.find_field_or_none(fid) is not None
                   and schema.find_field(fid).name != u.name}
        return SchemaUpdateResult(new, self.last_column_id, dict(self._updates),
                                  {k: list(v) for k, v in self._added.items()},
                                  tuple(self._deletes), renamed)

    def _apply_struct(self, fields: Iterable[NestedField], parent_id: int, path: str) -> list[NestedField]:
        out: list[NestedField] = []
        for f in fields:
            if f.field_id in self._deletes:
                continue
            upd = self._updates.get(f.field_id, f)
            name = f"{path}.{f.name}" if path else f.name
            t = self._apply_type(f, name)
            if upd.type != f.type and isinstance(f.type, PrimitiveType):
                t = upd.type
            out.append(replace(upd, type=t))
        for fid in self._added.get(parent_id, []):
            out.append(self._updates[fid])
        for mv in self._moves.get(parent_id, []):
            cur = next(x for x in out if x.field_id == mv.field_id)
            out.remove(cur)
            if mv.kind == "first":
                out.insert(0, cur)
            else:
                ref = next(i for i, x in enumerate(out) if x.field_id == mv.reference_id)
                out.insert(ref if mv.kind == "before" else ref + 1, cur)
        return out

    def _apply_type(self, f: NestedField, path: str) -> IcebergType:
        t = f.type
        if isinstance(t, StructType):
            return StructType(self._apply_struct(t.fields(), f.field_id, path))
        if isinstance(t, ListType):
            ef = t.element_field
            if ef.field_id in self._deletes:
                raise ValidationError(f"cannot drop the element of list {path}")
            et = self._apply_type(ef, f"{path}.element")
            upd = self._updates.get(ef.field_id)
            required = t.element_required
            if upd is not None:
                if isinstance(ef.type, PrimitiveType) and upd.type != ef.type:
                    et = upd.type
                required = upd.required
            return ListType(t.element_id, et, required)
        if isinstance(t, MapType):
            kid = t.key_id
            if kid in self._deletes:
                raise ValidationError(f"cannot drop the keys of map {path}")
            if kid in self._updates:
                raise ValidationError(f"cannot update the keys of map {path}")
            if kid in self._added or self._touches(t.key_type):
                raise ValidationError(f"cannot change the keys of map {path}")
            vf = t.value_field
            if vf.field_id in self._deletes:
                raise ValidationError(f"cannot drop the values of map {path}")
            vt = self._apply_type(vf, f"{path}.value")
            upd = self._updates.get(vf.field_id)
            required = t.value_required
            if upd is not None:
                if isinstance(vf.type, PrimitiveType) and upd.type != vf.type:
                    vt = upd.type
                required = upd.required
            return MapType(t.key_id, t.key_type, t.value_id, vt, required)
        return t

    def _touches(self, t: IcebergType) -> bool:
        for _, f, _p in walk_fields(StructType([NestedField(0, "k", t)])):
            if f.field_id and (f.field_id in self._deletes or f.field_id in self._updates
                               or f.field_id in self._added or f.field_id in self._moves):
                return True
        return False


def _check_unique_names(struct: StructType, path: str) -> None:
    seen: set[str] = set()
    for f in struct.fields():
        if f.name in seen:
            where = f"{path}.{f.name}" if path else f.name
            raise ValidationError(f"name clash: more than one column named {where!r}")
        seen.add(f.name)
    for f in struct.fields():
        sub = f"{path}.{f.name}" if path else f.name
        t = f.type
        while isinstance(t, (ListType, MapType)):
            t = t.element_type if isinstance(t, ListType) else t.value_type
        if isinstance(t, StructType):
            _check_unique_names(t, sub)


def case_clashes(struct: StructType, path: str = "") -> dict[str, list[str]]:
    """Names within one struct that differ only in case: lower-cased path -> the full names."""
    out: dict[str, list[str]] = {}
    groups: dict[str, list[str]] = {}
    for f in struct.fields():
        full = f"{path}.{f.name}" if path else f.name
        groups.setdefault(f.name.lower(), []).append(full)
        t = f.type
        while isinstance(t, (ListType, MapType)):
            t = t.element_type if isinstance(t, ListType) else t.value_type
        if isinstance(t, StructType):
            out.update(case_clashes(t, full))
    for key, names in groups.items():
        if len(names) > 1:
            out[f"{path.lower()}.{key}" if path else key] = names
    return out


def check_case_clashes(struct: StructType, before: StructType | None = None) -> None:
    """ValidationError when ``struct`` has names differing only in case that ``before`` (the
    schema being changed) did not have: Spark resolves names case-insensitively by default, so
    queries of the table would become ambiguous."""
    old = case_clashes(before) if before is not None else {}
    new = {k: v for k, v in case_clashes(struct).items() if k not in old}
    if new:
        names = next(iter(new.values()))
        raise ValidationError(
            f"name clash: {' and '.join(repr(n) for n in names)} differ only in case, which Spark "
            f"reads as the same column (use case-sensitive names explicitly to allow it)")


def _validate_identifier_field(schema: Schema, f: NestedField) -> None:
    name = schema.column_name(f.field_id)
    if not isinstance(f.type, PrimitiveType):
        raise ValidationError(f"cannot use {name!r} as an identifier field: not a primitive type")
    if not f.required:
        raise ValidationError(f"cannot use {name!r} as an identifier field: not a required field")
    if f.type in (FLOAT, DOUBLE):
        raise ValidationError(f"cannot use {name!r} as an identifier field: must not be float or double")
    p = schema.parent_id(f.field_id)
    while p is not None:
        pf = schema.find_field(p)
        if not isinstance(pf.type, StructType):
            raise ValidationError(
                f"cannot use {name!r} as an identifier field: it is nested in {schema.column_name(p)!r}, "
                f"a {type(pf.type).__name__.replace('Type', '').lower()}")
        if not pf.required:
            raise ValidationError(
                f"cannot use {name!r} as an identifier field: it is nested in an optional field "
                f"{schema.column_name(p)!r}")
        p = schema.parent_id(p)
