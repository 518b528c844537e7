"""Everything icectl writes to the terminal goes through here.

Results go to stdout, errors and progress to stderr. Text output is a rich rendering on a
terminal and plain, unwrapped, aligned text in a pipe (so no path is ever cut or folded).
``--json`` output is ``json.dumps(..., indent=2)`` of plain data whose keys are documented.
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any, Iterable, Sequence

if TYPE_CHECKING:  # rich is imported only when a terminal is written to (start-up time)
    from rich.console import Console


def _stdout_is_tty() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def _color_enabled() -> bool:
    return "NO_COLOR" not in os.environ and _stdout_is_tty()


def out_console() -> "Console":
    from rich.console import Console

    tty = _stdout_is_tty()
    return Console(
        file=sys.stdout,
        highlight=False,
        no_color=not _color_enabled(),
        force_terminal=tty,
        soft_wrap=not tty,
        width=None if tty else 10_000,
    )


def err(message: str) -> None:
    """A line on stderr (errors, warnings, progress)."""
    sys.stderr.write(message.rstrip("\n") + "\n")
    sys.stderr.flush()


def emit_json(data: Any) -> None:
    """The JSON view of a result on stdout, or the fields ``--field`` chose from it as text."""
    if _selected_fields is not None:
        emit_text_fields(data, _selected_fields, lenient=_fields_checked)
        return
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=json_default) + "\n")
    sys.stdout.flush()


def json_default(o: Any) -> Any:
    if isinstance(o, (bytes, bytearray)):
        return o.hex()
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    return str(o)


# -- --field: chosen values of the JSON view as plain text ------------------------------------------

_selected_fields: list[str] | None = None
_fields_checked = False  # the names were checked against the command's result types before it ran


def select_fields(names: Sequence[str] | None, checked: bool = False) -> None:
    """Make ``emit_json`` print these fields of the JSON view instead of the JSON (``--field``).
    ``checked``: the names were checked before the command ran (cli/result_fields.py), so a
    name the view lacks after the run prints as an empty value instead of failing the command
    (whose commit may have landed)."""
    global _selected_fields, _fields_checked
    _selected_fields = list(names) if names else None
    _fields_checked = bool(checked and names)


def fields_selected() -> bool:
    """Whether ``--field`` chose fields for :func:`emit_json` to print instead of the JSON."""
    return _selected_fields is not None


def emit_text_fields(data: Any, fields: Sequence[str], lenient: bool = False) -> None:
    """Print ``fields`` of a JSON view, one line per row, tab-separated (see :func:`field_lines`)."""
    lines = field_lines(data, fields, lenient)
    if lines:
        emit_text("\n".join(lines))


_MISSING = object()


def field_lines(data: Any, fields: Sequence[str], lenient: bool = False) -> list[str]:
    """The lines ``--field`` prints for a JSON view.

    A list view gives one line per element, an object view one line, null nothing. A field is a
    key of the view or a dotted path into nested objects (``summary.added-records``); a key that
    itself holds dots (a property name) is matched whole; a number picks a list element
    (``manifests.0.path``), any other name applied to a list picks it from every element. A value
    that is a list spreads over lines: line i holds element i of every list field (an empty list
    gives one line with an empty value) and the other fields repeat. Integers print exactly (all
    64 bits), null as the empty string, true/false as words, objects as compact JSON.

    ``lenient`` (the names were checked before the command ran): a name the view lacks gives
    empty values, and list fields of different lengths leave the shorter ones' cells empty,
    instead of an error.
    """
    from icectl.errors import InvalidInput

    rows = [] if data is None else data if isinstance(data, list) else [data]
    columns: list[list[Any]] = [[] for _ in fields]
    for i, path in enumerate(fields):
        found = False
        for row in rows:
            value = _resolve(row, path.split(".")) if path else _MISSING
            found = found or value is not _MISSING
            columns[i].append(None if value is _MISSING else value)
        if rows and not found and not lenient:
            raise InvalidInput(f"unknown field {path!r} (valid {_known_fields(rows, path)})")
    lines: list[str] = []
    for r in range(len(rows)):
        values = [columns[i][r] for i in range(len(fields))]
        lengths = {len(v) for v in values if isinstance(v, list)}
        if len(lengths) > 1 and not lenient:
            raise InvalidInput(f"the fields {', '.join(repr(f) for f in fields)} are lists of different lengths; "
                               "choose them in separate runs")
        n = max(lengths, default=0)
        for j in range(max(n, 1)):
            cells = [(v[j] if j < len(v) else None) if isinstance(v, list) else v for v in values]
            lines.append("\t".join(_field_text(c) for c in cells))
    return lines


def _resolve(value: Any, parts: list[str]) -> Any:
    """The value at a dotted path; ``_MISSING`` when a key does not exist."""
    if not parts:
        return value
    if value is None:
        return None
    if isinstance(value, dict):
        for n in range(len(parts), 0, -1):  # the longest key first: property names hold dots
            key = ".".join(parts[:n])
            if key in value:
                return _resolve(value[key], parts[n:])
        return _MISSING
    if isinstance(value, list):
        if parts[0].isdigit():
            k = int(parts[0])
            return _resolve(value[k], parts[1:]) if k < len(value) else None
        picked = [_resolve(v, parts) for v in value]
        if value and all(p is _MISSING for p in picked):
            return _MISSING
        return [None if p is _MISSING else p for p in picked]
    return _MISSING


def _known_fields(rows: list[Any], path: str) -> str:
    """Which keys exist where ``path`` went wrong, for the error message."""
    parts = path.split(".")
    prefix: list[str] = []
    level = rows
    while parts:
        objs = [v for v in level if isinstance(v, dict)]
        objs += [e for v in level if isinstance(v, list) for e in v if isinstance(e, dict)]
        keys = list(dict.fromkeys(k for o in objs for k in o))
        nxt = [o[parts[0]] for o in objs if parts[0] in o]
        if not nxt:
            where = f"fields of {'.'.join(prefix)}" if prefix else "fields"
            return f"{where}: {', '.join(keys)}" if keys else f"{where}: none"
        prefix.append(parts.pop(0))
        level = nxt
    return "fields: " + ", ".join(keys)


def _field_text(v: Any) -> str:
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, str):
        return v.replace("\t", " ").replace("\n", " ")
    if isinstance(v, (dict, list)):
        return json.dumps(v, ensure_ascii=False, separators=(",", ":"), default=json_default)
    return _cell(v)


def emit_text(text: str) -> None:
    sys.stdout.write(text.rstrip("\n") + "\n")
    sys.stdout.flush()


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (dict, list)):
        return json.dumps(v, ensure_ascii=False, separators=(", ", ": "), default=json_default)
    return str(v)


def emit_table(columns: Sequence[str], rows: Iterable[Sequence[Any]], title: str | None = None,
               text_cells: bool = False) -> None:
    """A table of results: rich on a terminal, plain aligned columns in a pipe. With
    ``text_cells`` the rows already hold the cells' text (see :func:`_cell`)."""
    rows = [tuple(r) for r in rows] if text_cells else [tuple(map(_cell, r)) for r in rows]
    if _stdout_is_tty():
        _rich_table(columns, rows, title)
        return
    if not set(map(len, rows)) <= {len(columns)}:  # short rows: their missing cells are empty
        rows = [tuple(r) + ("",) * (len(columns) - len(r)) for r in rows]
    widths = [max(len(c), max(map(len, col), default=0))
              for c, col in zip(columns, zip(*rows) if rows else [()] * len(columns))]
    # each cell left-justified to its column's width, two spaces apart, no trailing blanks
    fmt = "  ".join(f"%-{w}s" for w in widths).__mod__
    lines = [title] if title else []
    lines.append(fmt(tuple(columns)).rstrip())
    lines.extend(map(str.rstrip, map(fmt, rows)))
    emit_text("\n".join(lines))


def _rich_table(columns: Sequence[str], rows: list[tuple[str, ...]], title: str | None) -> None:
    """A table on a terminal. Ids, timestamps and other short tokens are never split over lines:
    long values (paths, summaries) fold to make room, and when even the tokens do not fit the
    terminal's width, every row is shown as a block of aligned "column  value" lines."""
    from rich import box
    from rich.table import Table as RichTable

    console = out_console()
    tokens = [_is_token_column([r[i] for r in rows]) for i in range(len(columns))]
    widths = [max([len(c), *(len(r[i]) for r in rows)]) for i, c in enumerate(columns)]
    need = sum(w if tok else min(w, FOLDED_MIN) for w, tok in zip(widths, tokens)) + 2 * len(columns)
    if rows and need > console.width:
        if title:
            console.print(title, markup=False, highlight=False)
        for n, r in enumerate(rows):
            grid = RichTable.grid(padding=(0, 2))
            grid.add_column(no_wrap=True)
            grid.add_column(overflow="fold")
            for c, v in zip(columns, r):
                grid.add_row(c, v)
            if n:
                console.print()
            console.print(grid)
        return
    t = RichTable(title=title, title_justify="left", show_lines=False, box=box.SIMPLE_HEAD,
                  show_edge=False, pad_edge=False)
    for c, w, tok in zip(columns, widths, tokens):
        if tok:
            t.add_column(c, no_wrap=True, overflow="ignore", min_width=w)
        else:
            t.add_column(c, overflow="fold")
    for r in rows:
        t.add_row(*r)
    console.print(t)


FOLDED_MIN = 8  # the narrowest a folding column (a path) gets before rows become blocks
TOKEN_MAX = 36  # a uuid; snapshot ids have up to 20 characters, ISO timestamps about 29


def _is_token_column(cells: Sequence[str]) -> bool:
    """A column of short, space-free values (ids, timestamps, counts, names): shown whole on a
    terminal, the other columns (paths, summaries) fold to make room."""
    return all(len(v) <= TOKEN_MAX and not any(ch.isspace() for ch in v) for v in cells)


def emit_pairs(pairs: Sequence[tuple[str, Any]], title: str | None = None) -> None:
    """Key/value lines ("location  /data/t"), aligned."""
    width = max((len(k) for k, _ in pairs), default=0)
    lines = [title] if title else []
    for k, v in pairs:
        lines.append(f"{k.ljust(width)}  {_cell(v)}")
    if _stdout_is_tty():
        out_console().print("\n".join(lines), markup=False)
    else:
        emit_text("\n".join(lines))
