"""`icectl cache info|clear`: the persistent cache of decoded manifests."""

from __future__ import annotations

from typing import Annotated

import typer

from icectl.cli.common import JsonOpt, handle_errors
from icectl.cli.runner import apply_no_cache  # noqa: F401 - re-exported
from icectl.cli.output import emit_json, emit_pairs

cache_app = typer.Typer(
    help="""Inspect or empty the cache of decoded manifests that `icectl plan` and `icectl scan`
share across runs.

The cache lives in $ICECTL_CACHE_DIR, else $XDG_CACHE_HOME/icectl, else ~/.cache/icectl,
bounded by ICECTL_CACHE_MAX bytes (default 1G; suffixes K, M, G). Entries are keyed by the
manifest's path, length and modification time, so a changed manifest is never served stale.
ICECTL_NO_CACHE=1 (or --no-cache) bypasses it.

Examples:

\b
  icectl cache info
  icectl cache clear --json
""",
    no_args_is_help=True, rich_markup_mode=None)


@cache_app.command("info", help="Show the cache directory, its entry count, size and bound.\n\nExample: icectl cache info --json")
@handle_errors(returns="icectl.io.manifest.cache:CacheInfo")
def cache_info(json_out: JsonOpt = False) -> None:
    from icectl.io.manifest.cache import info

    result = info()
    view = result.to_json()
    if json_out:
        emit_json(view)
        return
    emit_pairs(list(view.items()))


@cache_app.command("clear", help="Remove every cache entry; print how many were removed.\n\nExample: icectl cache clear")
@handle_errors(returns="icectl.io.manifest.cache:CacheCleared")
def cache_clear(json_out: JsonOpt = False) -> None:
    from icectl.io.manifest.cache import clear

    result = clear()
    view = result.to_json()
    if json_out:
        emit_json(view)
        return
    emit_pairs(list(view.items()))


def register(app: typer.Typer) -> None:
    app.add_typer(cache_app, name="cache")


NoCacheOpt = Annotated[bool, typer.Option(
    "--no-cache", help="Do not read or write the persistent manifest cache (as ICECTL_NO_CACHE=1).")]
