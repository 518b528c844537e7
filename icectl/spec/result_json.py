"""The JSON view of a result: one generic, field-driven ``to_json`` for every result dataclass.

A result class derives from :class:`JsonResult` and is a dataclass; its JSON view is one key per
field, in field order:

* the key is the field's name in kebab case (``snapshot_id`` -> ``snapshot-id``), unless the
  field says otherwise (``json_field(key=...)``);
* the value is the field's value made JSON-shaped by :func:`json_value` (tuples and lists become
  lists, mappings dicts, an object with its own ``to_json`` its view), unless the field gives
  its own conversion (``json_field(value=...)``; :func:`pairs` turns ``(a, b)`` tuples into
  objects with named members);
* ``json_field(omit=True)`` keeps a field out of the view (what the result carries for its
  caller, not for the user); ``flatten=True`` splices the field's view (an object) in its place.

A value the view shows but that the result computes from its other fields (a count, whether it
committed, the operation in its summary) is a :func:`derived` field: set once the dataclass is
built, never an argument, not compared. So the order of the fields is the order of the keys, and
a new field is in the view the moment it is declared.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Callable, Iterable

__all__ = ["JsonResult", "json_field", "derived", "json_value", "pairs", "kebab",
           "committed_operation", "failed_deletes", "refused_deletes", "skipped_in_other_tables"]

_KEY, _VALUE, _OMIT, _DERIVED = "json-key", "json-value", "json-omit", "json-derived"
_FLATTEN = "json-flatten"


def kebab(name: str) -> str:
    """The JSON key of a field name: ``parent_snapshot_id`` -> ``parent-snapshot-id``."""
    return name.replace("_", "-")


def json_value(v: Any) -> Any:
    """``v`` as JSON-shaped data: sequences as lists, mappings as dicts (their values converted
    too), an object with a ``to_json`` method as its view, anything else as it is."""
    if isinstance(v, (tuple, list)):
        return [json_value(x) for x in v]
    if isinstance(v, Mapping):
        return {k: json_value(x) for k, x in v.items()}
    to_json = getattr(v, "to_json", None)
    if callable(to_json) and not isinstance(v, type):
        return to_json()
    return v


def pairs(*names: str) -> Callable[[Iterable[tuple]], list[dict[str, Any]]]:
    """A conversion of a sequence of tuples into objects keyed by ``names``
    (``pairs("path", "error")``: ``(("a", "gone"),)`` -> ``[{"path": "a", "error": "gone"}]``)."""
    return lambda items: [dict(zip(names, t)) for t in items]


def _meta(key: str | None, value: Callable[[Any], Any] | None, omit: bool,
          flatten: bool) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    if key is not None:
        meta[_KEY] = key
    if value is not None:
        meta[_VALUE] = value
    if omit:
        meta[_OMIT] = True
    if flatten:
        meta[_FLATTEN] = True
    return meta


def json_field(*, key: str | None = None, value: Callable[[Any], Any] | None = None,
               omit: bool = False, flatten: bool = False, **kwargs: Any) -> Any:
    """A dataclass field (``dataclasses.field(**kwargs)``) whose JSON view is overridden: its
    ``key``, its ``value`` conversion, ``omit`` (not in the view) or ``flatten`` (its view, an
    object, spliced in its place: its keys become the result's)."""
    meta = dict(kwargs.pop("metadata", None) or {}) | _meta(key, value, omit, flatten)
    return dataclasses.field(metadata=meta, **kwargs)


def derived(compute: Callable[[Any], Any], *, key: str | None = None,
            flatten: bool = False) -> Any:
    """A field computed by ``compute(result)`` once the result is built (not an argument of
    the constructor, not compared, not in the repr); ``key`` and ``flatten`` as in
    :func:`json_field`."""
    meta = _meta(key, None, False, flatten) | {_DERIVED: compute}
    return dataclasses.field(init=False, repr=False, compare=False, metadata=meta)


# the fields every deleting result reports the same way: (path, error) of failed deletions,
# (path, reason) of files left for safety, (path, table) of files in another table's directory
def failed_deletes(**kwargs: Any) -> Any:
    return json_field(key="failed-deletes", value=pairs("path", "error"), **kwargs)


def refused_deletes(**kwargs: Any) -> Any:
    return json_field(key="refused-deletes", value=pairs("path", "reason"), **kwargs)


def skipped_in_other_tables(**kwargs: Any) -> Any:
    return json_field(key="skipped-in-other-tables", value=pairs("path", "table"), **kwargs)


def committed_operation(default: str | None = None) -> Any:
    """The derived ``operation`` of a result with ``committed`` and a snapshot ``summary``: the
    summary's operation (``default`` when it names none) once committed, else None."""
    return derived(lambda r: r.summary.get("operation", default) if r.committed else None)


class JsonResult:
    """Base of result dataclasses: :func:`derived` fields and the generic :meth:`to_json`."""

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            compute = f.metadata.get(_DERIVED)
            if compute is not None:
                object.__setattr__(self, f.name, compute(self))

    def to_json(self) -> dict[str, Any]:
        """One key per field, in field order (module docs)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            meta = f.metadata
            if meta.get(_OMIT):
                continue
            v = getattr(self, f.name)
            convert = meta.get(_VALUE)
            view = convert(v) if convert is not None else json_value(v)
            if meta.get(_FLATTEN):
                out.update(view)
            else:
                out[meta.get(_KEY) or kebab(f.name)] = view
        return out
