"""Partition spec evolution as a pure computation (spec "Partition Evolution").

:class:`SpecUpdate` collects additions, removals and renames of partition fields against a
table's default spec and builds the new spec with the reference's rules
(``BaseUpdatePartitionSpec``):

- v1: fields are never removed or reordered; a removed field becomes a ``void`` field with the
  same id and name, and new fields go at the end with ids counting up from the last one, so ids
  stay sequential from 1000.
- v2 and later: removed fields disappear; new field ids come from ``last-partition-id``; a field
  whose source and transform (and name, when one is given) match a field of any earlier spec
  gets that field's id and name back, so an id never names two different fields.
- Re-adding a field removed in the same update cancels the removal; a void field whose name a new
  field takes is renamed ``<name>_<field id>``.
- New fields are named as Spark's ``ALTER TABLE ... ADD PARTITION FIELD`` names them
  (``id_bucket_8``, ``name_trunc_4``, ``ts_day``).

:func:`update_table_spec` adds the result to the table metadata, reusing an existing spec with
the same fields (source, transform and name, in order) instead of adding a copy.
"""

from __future__ import annotations

from dataclasses import replace

from icectl.errors import InvalidInput, NotFound, UnsupportedFeature, ValidationError
from icectl.spec.metadata import TableMetadata, add_spec
from icectl.spec.parse import PartitionTerm, parse_partition_terms
from icectl.spec.partitioning import (
    PARTITION_DATA_ID_START,
    PartitionField,
    PartitionSpec,
    check_term_transform,
    resolve_source_column,
)
from icectl.spec.schema import Schema
from icectl.spec.transforms import VOID, TimeTransform, Transform

__all__ = ["SpecUpdate", "update_table_spec", "evolution_partition_name", "parse_one_term"]


def evolution_partition_name(column: str, transform: Transform) -> str:
    """The default name of a field added to an existing spec (``ALTER TABLE ADD PARTITION FIELD``)."""
    return transform.partition_name(column, evolution=True)


def parse_one_term(text: str) -> PartitionTerm:
    terms = parse_partition_terms(text)
    if len(terms) != 1:
        raise InvalidInput(f"expected one partition term, got {len(terms)}: {text!r}")
    return terms[0]


class SpecUpdate:
    """Pending changes to the default partition spec of ``md`` (a TableMetadata)."""

    def __init__(self, md: TableMetadata):
        self.md = md
        self.format_version = md.format_version
        self.spec = md.spec
        self.schema: Schema = md.schema
        self.last_partition_id = md.last_partition_id
        for f in self.spec.fields:
            if not f.transform.is_known:
                raise UnsupportedFeature(f"cannot update a partition spec with unknown transform: {f}")
        self._by_name = {f.name: f for f in self.spec.fields}
        self._by_transform = {(f.source_id, str(f.transform)): f for f in self.spec.fields}
        self._adds: list[PartitionField] = []
        self._added_time: dict[int, PartitionField] = {}
        self._added_by_transform: dict[tuple[int, str], PartitionField] = {}
        self._added_by_name: dict[str, PartitionField] = {}
        self._deletes: set[int] = set()
        self._renames: dict[str, str] = {}

    # -- helpers -------------------------------------------------------------------------------

    def _resolve(self, term: PartitionTerm) -> tuple[int, str, Transform]:
        source_id, column, src = resolve_source_column(self.schema, term.column, "partition")
        check_term_transform(column, src.type, term.transform, "partition")
        return source_id, column, term.transform

    def _recycle_or_create(self, source_id: int, transform: Transform, name: str | None) -> PartitionField:
        if self.format_version >= 2:
            for spec in self.md.specs:
                for f in spec.fields:
                    if f.source_id == source_id and f.transform == transform \
                            and (name is None or f.name == name):
                        return f
        self.last_partition_id += 1
        return PartitionField(source_id, self.last_partition_id, name or "", transform)

    # -- changes -------------------------------------------------------------------------------

    def add_field(self, term: PartitionTerm | str, name: str | None = None) -> "SpecUpdate":
        if isinstance(term, str):
            term = parse_one_term(term)
        if name is None:
            name = term.name
        if name is not None and name in self._added_by_name:
            raise ValidationError(f"cannot add duplicate partition field: {name!r}")
        source_id, column, transform = self._resolve(term)
        key = (source_id, str(transform))
        existing = self._by_transform.get(key)
        if existing is not None and existing.field_id in self._deletes and existing.transform == transform:
            # re-adding a field removed in this update: keep it
            self._deletes.discard(existing.field_id)
            if name is not None and name != existing.name:
                self.rename_field(existing.name, name)
            return self
        if existing is not None and not (existing.field_id in self._deletes):
            raise ValidationError(
                f"cannot add duplicate partition field {name or column}={term.transform}({column}): "
                f"conflicts with {existing.name!r} ({existing.transform})")
        if key in self._added_by_transform:
            raise ValidationError(
                f"cannot add duplicate partition field {term.transform}({column}): already added")
        new = self._recycle_or_create(source_id, transform, name)
        if not new.name:
            new = replace(new, name=evolution_partition_name(self.schema.column_name(source_id), transform))
        if isinstance(transform, TimeTransform):
            other = self._added_time.get(source_id)
            if other is not None:
                raise ValidationError(
                    f"cannot add redundant partition field {new.name!r} ({transform}): conflicts "
                    f"with {other.name!r} ({other.transform})")
            self._added_time[source_id] = new
        self._added_by_transform[key] = new
        clash = self._by_name.get(new.name)
        if clash is not None and clash.field_id not in self._deletes:
            if clash.transform.is_void:
                self.rename_field(clash.name, f"{clash.name}_{clash.field_id}")
            else:
                raise ValidationError(f"cannot add duplicate partition field name: {new.name!r}")
        elif clash is not None:
            self._renames[clash.name] = f"{clash.name}_{clash.field_id}"
        if new.name in self._added_by_name:
            raise ValidationError(f"cannot add duplicate partition field name: {new.name!r}")
        self._added_by_name[new.name] = new
        self._adds.append(new)
        return self

    def remove_field(self, name_or_term: str | PartitionTerm) -> "SpecUpdate":
        """Remove by partition field name, or (when no field has that name) by term text."""
        if isinstance(name_or_term, str) and name_or_term in self._by_name:
            name = name_or_term
            if name in self._added_by_name:
                raise ValidationError(f"cannot remove newly added field: {name!r}")
            if name in self._renames:
                raise ValidationError(f"cannot rename and remove partition field: {name!r}")
            self._deletes.add(self._by_name[name].field_id)
            return self
        if isinstance(name_or_term, str):
            name_or_term = parse_one_term(name_or_term)
        source_id, column, transform = self._resolve(name_or_term)
        key = (source_id, str(transform))
        if key in self._added_by_transform:
            raise ValidationError(f"cannot remove newly added field: {transform}({column})")
        f = self._by_transform.get(key)
        if f is None:
            raise NotFound(f"cannot find partition field to remove: {transform}({column})")
        if f.name in self._renames:
            raise ValidationError(f"cannot rename and remove partition field: {f.name!r}")
        self._deletes.add(f.field_id)
        return self

    def rename_field(self, name: str, new_name: str) -> "SpecUpdate":
        if not new_name:
            raise InvalidInput("a partition field name must not be empty")
        clash = self._by_name.get(new_name)
        if clash is not None and clash.transform.is_void and clash.name != name:
            self.rename_field(clash.name, f"{clash.name}_{clash.field_id}")
        if name in self._added_by_name:
            raise ValidationError(f"cannot rename newly added partition field: {name!r}")
        f = self._by_name.get(name)
        if f is None:
            raise NotFound(f"cannot find partition field to rename: {name!r}")
        if f.field_id in self._deletes:
            raise ValidationError(f"cannot remove and rename partition field: {name!r}")
        self._renames[name] = new_name
        return self

    def replace_field(self, name_or_term: str, new_term: PartitionTerm | str,
                      new_name: str | None = None) -> "SpecUpdate":
        """Remove a field and add another in one change (Spark's REPLACE PARTITION FIELD)."""
        self.remove_field(name_or_term)
        return self.add_field(new_term, new_name)

    # -- applying ------------------------------------------------------------------------------

    def apply(self) -> PartitionSpec:
        fields: list[PartitionField] = []
        for f in self.spec.fields:
            name = self._renames.get(f.name, f.name)
            if f.field_id not in self._deletes:
                fields.append(replace(f, name=name))
            elif self.format_version < 2:
                fields.append(replace(f, name=name, transform=VOID))
        fields.extend(self._adds)
        spec = PartitionSpec(self.spec.spec_id, tuple(fields))
        _validate(spec, self.schema, self.format_version)
        return spec


def _validate(spec: PartitionSpec, schema: Schema, format_version: int) -> None:
    names: set[str] = set()
    for f in spec.fields:
        if not f.name:
            raise ValidationError("cannot use an empty partition field name")
        if f.name in names:
            raise ValidationError(f"cannot use partition name more than once: {f.name!r}")
        names.add(f.name)
        col = schema.find_field_or_none(f.name)
        if col is not None and col.field_id != f.source_id:
            raise ValidationError(
                f"cannot name partition field {f.name!r}: it is the name of a different column")
        if col is not None and not (f.transform.is_identity or f.transform.is_void):
            raise ValidationError(
                f"cannot create partition field {f.name!r} ({f.transform}): the name is a column of the schema")
        if not f.transform.is_void:
            src = schema.find_field_or_none(f.source_id)
            if src is None:
                raise ValidationError(f"cannot find source column for partition field: {f}")
    if format_version < 2:
        for i, f in enumerate(spec.fields):
            if f.field_id != PARTITION_DATA_ID_START + i:
                raise ValidationError(
                    f"v1 partition specs need sequential field ids from {PARTITION_DATA_ID_START}: {spec}")


def update_table_spec(md: TableMetadata, update: SpecUpdate, *, timestamp_ms: int | None = None) -> TableMetadata:
    """Table metadata with the updated spec as the default (an equivalent existing spec is reused)."""
    new = update.apply()
    for existing in md.specs:
        if existing.compatible_with(new):
            new = existing
            break
    return add_spec(md, new, timestamp_ms=timestamp_ms)
