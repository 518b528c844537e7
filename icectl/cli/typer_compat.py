"""The one place icectl reaches into typer's internals: its submodules (``typer.main``,
``typer.core``, ``typer._coercion``, ``typer._completion_classes``), the click it vendors
(``typer._click``) and the private attributes of its commands and parameters.

They hold for the one typer minor pyproject.toml pins (``tests/cli/test_app.py`` fails on an
install outside it); a typer upgrade changes this module and no other. Every other module of
``icectl/cli`` uses typer's public API only (``typer.Typer``, ``typer.Option``, ``typer.Exit``...),
which ``tests/test_layering.py`` checks. What is imported lazily here stays lazy (start-up time).
"""

from __future__ import annotations

from typing import Any, Callable

import typer
import typer.main
from typer.core import TyperGroup

__all__ = ["Group", "app_commands", "root_command", "coercion_builder", "runtime_coercion",
           "set_runtime_coercion", "set_argument_names", "bad_parameter", "usage_errors",
           "short_help", "current_context", "current_command_words", "current_options"]


def app_commands(app: typer.Typer) -> dict[str, Any]:
    """The click commands a Typer app holds, by name."""
    return dict(typer.main.get_group(app).commands)


def root_command(app: typer.Typer) -> Any:
    """The click command (or group) a Typer app runs as."""
    return typer.main.get_command(app)


# -- parameters: coercion and how --help shows them -------------------------------------------


def coercion_builder() -> Callable[[Any], Any] | None:
    """typer's builder of a parameter's runtime coercion (None on a typer without one)."""
    try:
        from typer._coercion import build_runtime_param
    except ImportError:
        return None
    return build_runtime_param


def runtime_coercion(param: Any) -> Any:
    """A parameter's runtime coercion: None until typer builds it, "absent" on a typer that has
    none."""
    return getattr(param, "_runtime_param", "absent")


def set_runtime_coercion(param: Any, coercion: Any) -> None:
    param._runtime_param = coercion


def set_argument_names(param: Any, usage_name: Callable[[], str], shown_name: Callable[[], str]) -> None:
    """How an argument is named in usage lines and in the help's argument list."""
    param._usage_display_name = usage_name
    param._rich_display_name = shown_name


def bad_parameter(message: str, ctx: Any, param: Any) -> Exception:
    """The usage error of a bad parameter value (click's BadParameter)."""
    from typer._click.exceptions import BadParameter

    return BadParameter(message, ctx=ctx, param=param)


def usage_errors() -> tuple[type, type, type, type]:
    """click's (ClickException, NoArgsIsHelpError, NoSuchOption, UsageError)."""
    from typer._click.exceptions import ClickException, NoArgsIsHelpError, NoSuchOption, UsageError

    return ClickException, NoArgsIsHelpError, NoSuchOption, UsageError


def short_help(text: str, limit: int) -> str:
    """A help text cut to a one-line summary of at most ``limit`` characters, as click does."""
    from typer._click.utils import make_default_short_help

    return make_default_short_help(text, limit)


# -- the running command ------------------------------------------------------------------------


def current_context() -> Any:
    """The running command's click context (None outside one)."""
    from typer._click.globals import get_current_context

    return get_current_context(silent=True)


def current_command_words() -> list[str]:
    """The running command's path without the program (``["schema", "add"]``); [] outside one."""
    ctx = current_context()
    return ctx.command_path.split()[1:] if ctx is not None else []


def current_options() -> dict[str, str]:
    """The running command's options: parameter name -> its first long option."""
    ctx = current_context()
    params = getattr(getattr(ctx, "command", None), "params", []) if ctx is not None else []
    out: dict[str, str] = {}
    for p in params:
        if getattr(p, "param_type_name", "") == "option" and p.name not in out:
            longs = [o for o in p.opts if o.startswith("--")]
            if longs:
                out[p.name] = longs[0]
    return out


# -- the root group ------------------------------------------------------------------------------


def _register_fish_completion() -> None:
    """fish: typer's script declares every completion "no files", so a TABLE or FILE argument
    would never complete to a path; icectl's script lets fish offer paths alongside the values
    icectl offers."""
    try:
        from typer._click.shell_completion import add_completion_class
        from typer._completion_classes import FishComplete
    except ImportError:  # pragma: no cover - another typer layout: keep its script
        return

    class _FishWithFiles(FishComplete):
        source_template = FishComplete.source_template.replace(" --no-files", "")

    add_completion_class(_FishWithFiles, "fish")


class Group(TyperGroup):
    """typer's group, with fish completion offering paths (typer's private completion hook)."""

    def _main_shell_completion(self, ctx_args: Any, prog_name: str, complete_var: Any = None) -> None:
        _register_fish_completion()
        return super()._main_shell_completion(ctx_args, prog_name, complete_var)
