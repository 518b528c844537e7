"""``--field`` names checked before a command runs, against the fields its result type has.

A command that changes a table prints its result after the commit, so a misspelt ``--field``
found while printing would fail a command whose commit already landed (and a retry would commit
again). Such a command names its result types (``handle_errors(returns=...)``); before its body
runs, every ``--field`` is checked against the JSON view of each type, built here from a
placeholder instance of the result dataclass (every field an empty value of its annotated type),
so the fields known are exactly the keys the type's ``to_json`` writes, with no list to keep in
step. Below a key whose placeholder value is open (an empty object such as ``summary``, an empty
list such as ``files``, or null), any name is accepted: what it holds is known only after the
run, and a name missing then prints as an empty value.
"""

from __future__ import annotations

import dataclasses
import sys
import typing
from collections.abc import Mapping as AbcMapping
from collections.abc import Sequence as AbcSequence
from functools import lru_cache
from typing import Any, Sequence

from icectl.errors import InvalidInput

__all__ = ["result_views", "check_fields"]


def _metadata_placeholder() -> Any:
    from icectl.spec.metadata import new_table_metadata
    from icectl.spec.schema import Schema
    from icectl.spec.types import LONG, NestedField

    md = new_table_metadata(Schema((NestedField(1, "id", LONG),)), location="placeholder://table")
    return dataclasses.replace(md, properties={})  # properties are open: any name is a field


# non-dataclass types a result may hold, with a placeholder of each (by name: imported lazily)
_DOMAIN_PLACEHOLDERS = {"TableMetadata": _metadata_placeholder}


def _placeholder(tp: Any) -> Any:
    if isinstance(tp, str):  # an annotation naming a type imported only for type checking
        make = _DOMAIN_PLACEHOLDERS.get(tp.split("|")[0].strip().split(".")[-1])
        return make() if make is not None else None
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Union or type(tp).__name__ == "UnionType":
        rest = [a for a in args if a is not type(None)]
        return _placeholder(rest[0]) if rest else None
    if origin is not None:
        if isinstance(origin, type) and issubclass(origin, (dict, AbcMapping)):
            return {}
        if isinstance(origin, type) and issubclass(origin, (list, tuple, set, frozenset, AbcSequence)):
            return () if origin in (tuple, AbcSequence) else origin()
        return None
    if tp in (int, float, str, bool, bytes, tuple, list, dict, set, frozenset):
        return tp()
    make = _DOMAIN_PLACEHOLDERS.get(getattr(tp, "__name__", ""))
    if make is not None:
        return make()
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _instance(tp)
    return None


def _field_types(cls: type) -> dict[str, Any]:
    """The resolved annotation of each field (its text where a name cannot be resolved here)."""
    try:
        return typing.get_type_hints(cls)
    except (NameError, TypeError):
        pass
    out: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        namespace = vars(sys.modules.get(klass.__module__, object()))
        for name, text in getattr(klass, "__annotations__", {}).items():
            try:
                out[name] = eval(text, dict(namespace)) if isinstance(text, str) else text  # noqa: S307
            except Exception:  # noqa: BLE001 - a name imported only for type checking: its text
                out[name] = text
    return out


def _instance(cls: type) -> Any:
    types = _field_types(cls)
    return cls(**{f.name: _placeholder(types.get(f.name)) for f in dataclasses.fields(cls) if f.init})


@lru_cache(maxsize=None)
def _view(spec: str) -> Any:
    module, _, name = spec.partition(":")
    __import__(module)
    cls = getattr(sys.modules[module], name)
    return _instance(cls).to_json()


def result_views(specs: Sequence[str]) -> list[Any]:
    """The placeholder JSON view of each result type (``"icectl.ops.write.rows:WriteResult"``)."""
    return [_view(s) for s in specs]


def _accepts(view: Any, parts: list[str]) -> bool:
    """Whether the path ``parts`` may name something in a view shaped like ``view``."""
    if not parts or view is None:
        return True
    if isinstance(view, dict):
        if not view:
            return True  # an open object (a snapshot summary, properties): known only after the run
        for n in range(len(parts), 0, -1):  # the longest key first: property names hold dots
            key = ".".join(parts[:n])
            if key in view:
                return _accepts(view[key], parts[n:])
        return False
    if isinstance(view, (list, tuple)):
        if parts[0].isdigit():
            parts = parts[1:]
        return not view or any(_accepts(v, parts) for v in view)
    return False  # a path into a number or a string


def _keys(view: Any, parts: list[str]) -> list[str]:
    """The names valid where ``parts`` stops matching ``view``, for the error message."""
    level, last = view, view if isinstance(view, dict) else {}
    for name in parts:
        if isinstance(level, list) and level:
            level = level[0]
            if isinstance(level, dict):
                last = level
        if not isinstance(level, dict) or name not in level:
            break
        level = level[name]
        if isinstance(level, dict):
            last = level
    return list(last)


def check_fields(fields: Sequence[str], views: Sequence[Any]) -> None:
    """Refuse a ``--field`` that no view of the command's result types has (InvalidInput)."""
    for path in fields:
        parts = path.split(".") if path else []
        if parts and any(_accepts(v, parts) for v in views):
            continue
        known = list(dict.fromkeys(k for v in views for k in _keys(v, parts)))
        raise InvalidInput(f"unknown field {path!r} (valid fields: {', '.join(known) or 'none'})",
                           argument="fields")
