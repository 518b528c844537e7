"""`icectl health TABLE --html PATH`: the option, its check before any work, and the writing of
the page (rendered by icectl.ops.health.html) through a temporary file in the same directory
renamed over PATH, so a reader never sees half a page and a failed run leaves PATH as it was."""

from __future__ import annotations

import os
from typing import Annotated, Any, Optional

import typer

from icectl.errors import InvalidInput

__all__ = ["HtmlOpt", "check_html_path", "write_html_report"]

HtmlOpt = Annotated[Optional[str], typer.Option(
    "--html", metavar="PATH",
    help="Also write the report as one self-contained HTML page with charts (inline SVG and CSS, "
         "nothing loaded from the network) to PATH, replacing the file there.")]


def check_html_path(path: str | None, table: str | None) -> None:
    """Refuse, before any work, an --html PATH that cannot be written (a directory, or a file in
    a directory that does not exist) or that has no one TABLE to show."""
    if path is None:
        return
    if table is None:
        raise InvalidInput("--html draws one table: give TABLE")
    if path == "" or os.path.isdir(path):
        raise InvalidInput(f"--html {path!r} is a directory, not a file")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise InvalidInput(f"--html {path}: the directory {parent} does not exist")


def write_html_report(path: str, report: Any) -> None:
    """Render ``report`` (a HealthReport) and write the page to ``path`` atomically."""
    from icectl.cli.rows_out import write_file_atomically
    from icectl.ops.health.html import render_html

    text = render_html(report)

    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)

    write_file_atomically(path, write)
