"""Rendering a scan plan's files without per-file Python objects (`icectl plan --json/--format`).

``json.dumps(view, indent=2)`` of a 200,000-file plan runs the pure-Python encoder (the C
encoder has no indentation) over 200,000 dicts: seconds for what is a fixed layout. Here the
``files`` list of the plan document is produced from the decoded manifest columns directly: the
strings are escaped by the C escaper, integers formatted by ``int.__repr__``, and everything that
repeats (a partition and its path, a residual, an empty delete list) is rendered once and reused.
The text produced is byte for byte what ``json.dumps(report.to_json(), indent=2,
ensure_ascii=False)`` produces (tests compare both), so ``--json`` keeps one stable document.

The rendering is a stream of string chunks (one per manifest's files), so a caller writes as it
goes; :func:`file_lines` gives the same file objects one per line (JSON Lines).
"""

from __future__ import annotations

import json
from itertools import repeat
from operator import itemgetter
from typing import Any, Callable, Iterable, Iterator

__all__ = ["document_chunks", "file_lines", "json_text"]

try:  # the C escaper json.dumps(..., ensure_ascii=False) uses
    from _json import encode_basestring as _escape
except ImportError:  # pragma: no cover - CPython always has it
    from json.encoder import py_encode_basestring as _escape  # type: ignore[attr-defined]

_int_repr = int.__repr__

# one file object of the indented document ("files" is a list at depth 1: items at 4 spaces)
_FILE_INDENTED = (
    '    {\n      "path": %s,\n      "file-format": %s,\n      "spec-id": %s,\n'
    '      "partition": %s,\n      "record-count": %s,\n      "file-size-in-bytes": %s,\n'
    '      "data-sequence-number": %s,\n      "residual": %s,\n      "delete-files": %s\n    }')
# the same object on one line, as json.dumps(obj, ensure_ascii=False) writes it
_FILE_LINE = (
    '{"path": %s, "file-format": %s, "spec-id": %s, "partition": %s, "record-count": %s, '
    '"file-size-in-bytes": %s, "data-sequence-number": %s, "residual": %s, "delete-files": %s}')


def json_text(value: Any, indent: int | None, depth: int = 0,
              default: Callable[[Any], Any] | None = None) -> str:
    """``json.dumps(value)`` as it appears nested ``depth`` levels deep in an indented document
    (lines after the first shifted; JSON strings never hold a raw newline)."""
    text = json.dumps(value, indent=indent, ensure_ascii=False, default=default)
    if indent and depth and "\n" in text:
        text = text.replace("\n", "\n" + " " * (indent * depth))
    return text


def _scalar(v: Any, default: Callable[[Any], Any] | None) -> str:
    t = type(v)
    if t is int:
        return _int_repr(v)
    if t is str:
        return _escape(v)
    return json.dumps(v, ensure_ascii=False, default=default)


class _Fragments:
    """Rendered pieces shared between files: per partition, residual and delete list."""

    def __init__(self, partition: Callable[[int, tuple], tuple[dict[str, Any], str]],
                 delete_view: Callable[[Any], dict[str, Any]], indent: int | None,
                 default: Callable[[Any], Any] | None):
        self._partition = partition
        self._delete_view = delete_view
        self._indent = indent
        self._default = default
        self._parts: dict[tuple, str] = {}
        self._residuals: dict[int, tuple[Any, str]] = {}
        self._formats: dict[Any, str] = {}

    def partition(self, spec_id: int, key: tuple, values: tuple) -> str:
        """``<partition json>,<sep>"partition-path": "<path>"`` for the file templates."""
        k = (spec_id, key)
        got = self._parts.get(k)
        if got is None:
            pj, ppath = self._partition(spec_id, values)
            sep = ",\n      " if self._indent else ", "
            got = (json_text(pj, self._indent, 3, self._default) + sep + '"partition-path": '
                   + _scalar(ppath, self._default))
            self._parts[k] = got
        return got

    def residual(self, expr: Any) -> str:
        got = self._residuals.get(id(expr))
        if got is None:
            got = self._residuals[id(expr)] = (expr, _escape(str(expr)))  # keeps expr alive
        return got[1]

    def file_format(self, v: Any) -> str:
        got = self._formats.get(v)
        if got is None:
            got = self._formats[v] = _scalar(v, self._default)
        return got

    def deletes(self, deletes: tuple) -> str:
        if not deletes:
            return "[]"
        return json_text([self._delete_view(d) for d in deletes], self._indent, 3, self._default)


def _pick(col: Any, idx: list[int], whole: bool) -> Any:
    """``[col[i] for i in idx]`` (the column itself when ``idx`` is all of it)."""
    if whole:
        return col
    if len(idx) == 1:
        return [col[idx[0]]]
    return itemgetter(*idx)(col)


def _ints(values: Any, default: Callable[[Any], Any] | None) -> list[str]:
    """Each value (ints, maybe None) as JSON, by one C-encoder call over the column."""
    if not values:
        return []
    if _PLAIN.issuperset(map(type, values)):
        out = json.dumps(values if type(values) is list else list(values))[1:-1].split(", ")
        if len(out) == len(values):
            return out
    return [_scalar(v, default) for v in values]


_PLAIN = frozenset((int, bool, type(None)))


def _partitions(frag: _Fragments, spec_id: int, parts: list, idx: list[int],
                whole: bool) -> list[str]:
    from icectl.expr.evaluators import partition_key

    columns = [_pick(c, idx, whole) for c in parts]
    rows = list(zip(*columns)) if columns else [()] * len(idx)
    if any(float in set(map(type, c)) for c in columns):
        return [frag.partition(spec_id, partition_key(v), v) for v in rows]
    seen: dict[tuple, str] = {}
    out = []
    for v in rows:
        got = seen.get(v)
        if got is None:
            got = seen[v] = frag.partition(spec_id, v, v)
        out.append(got)
    return out


def _rows(files: Iterable[Any], frag: _Fragments,
          default: Callable[[Any], Any] | None) -> Iterator[Iterator[tuple]]:
    """Per run of files from one decoded manifest (never empty), the template arguments of
    each file."""
    from icectl.scan.plan_result import deletes_of, residual_of, row_of, runs

    for cols, fs in runs(files):
        idx = list(map(row_of, fs))
        whole = len(idx) == cols.count and idx == list(range(cols.count))
        spec_id = fs[0].spec_id
        paths = _pick(cols.file_path, idx, whole)
        try:
            path = list(map(_escape, paths))
        except TypeError:
            path = [_scalar(p, default) for p in paths]
        formats = _pick(cols.file_format, idx, whole)
        if len(set(formats)) == 1:
            fmt: Any = repeat(frag.file_format(formats[0]), len(idx))
        else:
            fmt = [frag.file_format(v) for v in formats]
        part = _partitions(frag, spec_id, cols.partitions, idx, whole)
        records = _ints(_pick(cols.record_count, idx, whole), default)
        sizes = _ints(_pick(cols.file_size_in_bytes, idx, whole), default)
        seqs = _ints(_pick(cols.data_sequence_number, idx, whole), default)
        residuals = list(map(residual_of, fs))
        if len(set(map(id, residuals))) == 1:
            residual: Any = repeat(frag.residual(residuals[0]), len(fs))
        else:
            residual = [frag.residual(r) for r in residuals]
        if any(map(deletes_of, fs)):
            dels: Any = [frag.deletes(d) for d in map(deletes_of, fs)]
        else:
            dels = repeat("[]", len(fs))
        yield zip(path, fmt, repeat(_int_repr(spec_id)), part, records, sizes, seqs, residual,
                  dels)


def document_chunks(view: dict[str, Any], files: Iterable[Any],
                    partition: Callable[[int, tuple], tuple[dict[str, Any], str]],
                    delete_view: Callable[[Any], dict[str, Any]],
                    default: Callable[[Any], Any] | None = None) -> Iterator[str]:
    """The text of ``json.dumps(view | {"files": <files>}, indent=2, ensure_ascii=False)``, in
    chunks. ``view`` is the plan document without ``files``; its keys after ``summary`` (such
    as ``explain``) follow the files, as in the document."""
    head = {k: v for k, v in view.items()}
    tail_keys = [k for k in head if _after_files(k)]
    tail = {k: head.pop(k) for k in tail_keys}
    text = json.dumps(head, indent=2, ensure_ascii=False, default=default)
    yield text[:-2]  # without "\n}"
    yield ',\n  "files": ['
    frag = _Fragments(partition, delete_view, 2, default)
    first = True
    fill = _FILE_INDENTED.__mod__
    for rows in _rows(files, frag, default):
        yield ("\n" if first else ",\n") + ",\n".join(map(fill, rows))
        first = False
    yield "]" if first else "\n  ]"
    for k, v in tail.items():
        yield ",\n  " + _escape(k) + ": " + json_text(v, 2, 1, default)
    yield "\n}"


def _after_files(key: str) -> bool:
    return key == "explain"


def file_lines(files: Iterable[Any],
               partition: Callable[[int, tuple], tuple[dict[str, Any], str]],
               delete_view: Callable[[Any], dict[str, Any]],
               default: Callable[[Any], Any] | None = None) -> Iterator[str]:
    """Each planned file as one line of JSON (the ``files`` objects of the plan document), in
    chunks of whole lines ending with a newline."""
    frag = _Fragments(partition, delete_view, None, default)
    fill = _FILE_LINE.__mod__
    for rows in _rows(files, frag, default):
        yield "\n".join(map(fill, rows)) + "\n"
