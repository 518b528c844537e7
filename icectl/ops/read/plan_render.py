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
from functools import partial
from itertools import chain, repeat
from operator import itemgetter
from typing import Any, Callable, Iterable, Iterator

__all__ = ["document_parts", "file_lines", "json_text", "part_chunks", "per_partition"]

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
_INDENTED_PIECES = _FILE_INDENTED.split("%s")
_LINE_PIECES = _FILE_LINE.split("%s")


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


class _Ints(list):
    """A column of Python ints (no None, no bool), formatted by ``%d`` in :func:`_fill`."""


class _Raw(list):
    """A column of strings that need no JSON escaping, quoted by the template in :func:`_fill`."""


def _ints(values: Any, default: Callable[[Any], Any] | None) -> list | str:
    """A column of ints (maybe None) for :func:`_fill`: one JSON string when every value is the
    same, an :class:`_Ints` when all are ints, else the JSON text of each value."""
    if not values:
        return []
    first = values[0]
    if values.count(first) == len(values):
        return _scalar(first, default)
    if _INT_TYPES.issuperset(map(type, values)):  # exactly int: a bool would print as 1
        return _Ints(values)
    return [_scalar(v, default) for v in values]


_INT_TYPES = frozenset((int,))
# every byte but those the JSON string escaper changes (control characters, '"' and '\\'): a
# column whose UTF-8 text has nothing else is written as it is, in quotes
_PLAIN_BYTES = bytes(b for b in range(256) if b >= 0x20 and b not in (0x22, 0x5C))


def _strings(values: Any, default: Callable[[Any], Any] | None) -> list:
    """A column of strings as JSON strings for :func:`_fill` (an unescaped :class:`_Raw` when no
    value needs escaping: the template adds the quotes)."""
    try:
        if not "".join(values).encode("utf-8", "surrogatepass").translate(None, _PLAIN_BYTES):
            return _Raw(values)
        return list(map(_escape, values))
    except TypeError:  # a None among them
        return [_scalar(v, default) for v in values]


def per_partition(columns: list, n: int, render: Callable[[tuple, tuple], str]) -> list[str] | str:
    """``render(key, values)`` for the partition of each of ``n`` files (``columns``: one list
    per partition field), called once per distinct partition; one string when every file has
    the same. The key is the values, or :func:`partition_key` of them when a float is among
    them (-0.0 and 0.0 are different partitions, NaN is one)."""
    from icectl.spec.partition_identity import partition_key

    if n == 0:
        return []
    rows = list(zip(*columns)) if columns else [()] * n
    floats = any(float in set(map(type, c)) for c in columns)
    if not floats and all(c.count(c[0]) == len(c) for c in columns):
        return render(rows[0], rows[0])
    seen: dict[tuple, str] = {}
    out = []
    for k, v in zip(map(partition_key, rows) if floats else rows, rows):
        got = seen.get(k)
        if got is None:
            got = seen[k] = render(k, v)
        out.append(got)
    return out


def _same(values: list[str]) -> list[str] | str:
    return values[0] if values and values.count(values[0]) == len(values) else values


def _columns(run: Any, frag: _Fragments, default: Callable[[Any], Any] | None) -> list:
    """The nine template values of the files of one run (a FileRun): for each, one string
    when every file has the same, else a list with one string per file."""
    cols, idx = run.cols, run.idx
    whole = run.whole
    path = _strings(_pick(cols.file_path, idx, whole), default)
    formats = _pick(cols.file_format, idx, whole)
    if formats.count(formats[0]) == len(formats):
        fmt: Any = frag.file_format(formats[0])
    else:
        fmt = [frag.file_format(v) for v in formats]
    part = per_partition([_pick(c, idx, whole) for c in cols.partitions], len(idx),
                         partial(frag.partition, run.spec_id))
    records = _ints(_pick(cols.record_count, idx, whole), default)
    sizes = _ints(_pick(cols.file_size_in_bytes, idx, whole), default)
    seqs = _ints(_pick(cols.data_sequence_number, idx, whole), default)
    if run.uniform:
        residual: Any = frag.residual(run.residual)
        dels: Any = "[]"
    else:
        files = run.files
        residual = _same([frag.residual(f.residual) for f in files])
        dels = _same([frag.deletes(f.deletes) for f in files])
    return [path, fmt, _int_repr(run.spec_id), part, records, sizes, seqs, residual, dels]


def _fill(pieces: list[str], values: list, sep: str) -> str:
    """The template (its literal ``pieces`` around the slots) filled for every file and joined
    by ``sep``: one ``%`` over a format string of all the files, so integers and strings are
    written by C code without a string object per value. A value is one string for every file
    (folded into the format), or a column: :class:`_Ints` (``%d``), :class:`_Raw` (``"%s"``) or
    JSON texts (``%s``). The first value (the paths) is always a column."""
    row = [pieces[0].replace("%", "%%")]
    columns = []
    for v, lit in zip(values, pieces[1:]):
        if type(v) is str:
            row.append(v.replace("%", "%%"))
        else:
            row.append('"%s"' if type(v) is _Raw else "%d" if type(v) is _Ints else "%s")
            columns.append(v)
        row.append(lit.replace("%", "%%"))
    n = len(columns[0])
    fmt = sep.join(repeat("".join(row), n))
    if len(columns) == 1:
        return fmt % tuple(columns[0])
    return fmt % tuple(chain.from_iterable(zip(*columns)))


def part_chunks(head: str, pieces: list[tuple[int, Callable[[], str]]], tail: str) -> Iterator[str]:
    """The chunks of a document given as :func:`document_parts` gives it, rendered in order."""
    yield head
    for _, render in pieces:
        yield render()
    yield tail


def document_parts(view: dict[str, Any], file_runs: Iterable[Any],
                   partition: Callable[[int, tuple], tuple[dict[str, Any], str]],
                   delete_view: Callable[[Any], dict[str, Any]],
                   default: Callable[[Any], Any] | None = None,
                   ) -> tuple[str, list[tuple[int, Callable[[], str]]], str]:
    """The text of ``json.dumps(view | {"files": <files>}, indent=2, ensure_ascii=False)`` as
    its head, one piece per run of files
    (``(number of files, render)``: ``render()`` gives the piece's text, separator included)
    and its tail, so the pieces can be rendered anywhere, in order. ``view`` is the plan
    document without ``files``; its keys after ``summary`` (such as ``explain``) follow the
    files, as in the document."""
    head = {k: v for k, v in view.items()}
    tail_keys = [k for k in head if _after_files(k)]
    after = {k: head.pop(k) for k in tail_keys}
    text = json.dumps(head, indent=2, ensure_ascii=False, default=default)
    frag = _Fragments(partition, delete_view, 2, default)
    runs = [r for r in file_runs if len(r)]
    pieces = [(len(run), partial(_piece, run, frag, default, "\n" if i == 0 else ",\n"))
              for i, run in enumerate(runs)]
    tail = "]" if not runs else "\n  ]"
    for k, v in after.items():
        tail += ",\n  " + _escape(k) + ": " + json_text(v, 2, 1, default)
    return text[:-2] + ',\n  "files": [', pieces, tail + "\n}"  # (head without its "\n}")


def _piece(run: Any, frag: _Fragments, default: Callable[[Any], Any] | None, sep: str) -> str:
    return sep + _fill(_INDENTED_PIECES, _columns(run, frag, default), ",\n")


def _after_files(key: str) -> bool:
    return key == "explain"


def file_lines(file_runs: Iterable[Any],
               partition: Callable[[int, tuple], tuple[dict[str, Any], str]],
               delete_view: Callable[[Any], dict[str, Any]],
               default: Callable[[Any], Any] | None = None) -> Iterator[str]:
    """Each planned file as one line of JSON (the ``files`` objects of the plan document), in
    chunks of whole lines ending with a newline."""
    frag = _Fragments(partition, delete_view, None, default)
    for run in file_runs:
        if len(run):
            yield _fill(_LINE_PIECES, _columns(run, frag, default), "\n") + "\n"
