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
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=_json_default) + "\n")
    sys.stdout.flush()


def _json_default(o: Any) -> Any:
    if isinstance(o, (bytes, bytearray)):
        return o.hex()
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    return str(o)


def emit_text(text: str) -> None:
    sys.stdout.write(text.rstrip("\n") + "\n")
    sys.stdout.flush()


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (dict, list)):
        return json.dumps(v, ensure_ascii=False, separators=(", ", ": "), default=_json_default)
    return str(v)


def emit_table(columns: Sequence[str], rows: Iterable[Sequence[Any]], title: str | None = None) -> None:
    """A table of results: rich on a terminal, plain aligned columns in a pipe."""
    rows = [[_cell(v) for v in r] for r in rows]
    if _stdout_is_tty():
        from rich.table import Table as RichTable

        t = RichTable(title=title, title_justify="left", show_lines=False)
        for c in columns:
            t.add_column(c, overflow="fold")
        for r in rows:
            t.add_row(*r)
        out_console().print(t)
        return
    lines = []
    if title:
        lines.append(title)
    widths = [len(c) for c in columns]
    for r in rows:
        for i, v in enumerate(r):
            widths[i] = max(widths[i], len(v))
    fmt = lambda r: "  ".join(v.ljust(widths[i]) for i, v in enumerate(r)).rstrip()  # noqa: E731
    lines.append(fmt(list(columns)))
    lines.extend(fmt(r) for r in rows)
    emit_text("\n".join(lines))


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
