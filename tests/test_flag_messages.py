"""Library code names things, not command-line flags: no string outside icectl/cli says `--x`.

An error of the library is about a value (the partition value, the input format, the columns to
read); when the CLI's option helps the user, the library says which argument of its call the
error is about (``IcectlError.argument``) or which keyword lifts a refusal (``override``), and
the CLI names its own option (icectl/cli/common.py ``cli_message``). Docstrings may mention
flags (they document how the CLI uses the code); string values may not, except those listed
in ALLOWED with the reason.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "icectl"
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")

# (module under icectl/, flag) -> why it may stay
ALLOWED = {
    ("expr/parser.py", "--filter"): "FILTER_HELP is the grammar's help text, printed by `plan --help` "
                                    "and `scan --help`, not an error message",
    ("expr/parser.py", "--case-sensitive"): "the same help text",
    **{("ops/health/fixes.py", flag): "a health verdict's fixing command is an argument list of the "
                                      "command line (its JSON contract), not a message"
       for flag in ("--delete-file-threshold", "--deletes", "--strategy", "--sort-order",
                    "--clean-expired-metadata", "--delete")},
    **{("ops/health/html_page.py", prop): "a CSS custom property of the report's style sheet (CSS "
                                           "spells them with two dashes), not a flag"
       for prop in ("--bad", "--bar", "--due", "--ink", "--line", "--mute", "--ok", "--rest", "--target")},
}


def docstring_nodes(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                out.add(id(first.value))
    return out


def flags_in(source: str) -> list[tuple[int, str]]:
    """(line, flag) of every `--flag` in a string value of ``source`` (docstrings excepted)."""
    tree = ast.parse(source)
    docs = docstring_nodes(tree)
    return [(node.lineno, flag) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
            for flag in FLAG.findall(node.value)]


def library_modules() -> list[Path]:
    return [p for p in sorted(PKG.rglob("*.py")) if p.relative_to(PKG).parts[0] != "cli"]


def test_no_library_string_names_a_flag() -> None:
    found = []
    for path in library_modules():
        rel = path.relative_to(PKG).as_posix()
        for line, flag in flags_in(path.read_text(encoding="utf-8")):
            if (rel, flag) not in ALLOWED:
                found.append(f"icectl/{rel}:{line} names {flag}")
    assert not found, "\n".join(found)


def test_the_allow_list_holds_only_what_is_still_there() -> None:
    present = {(p.relative_to(PKG).as_posix(), flag) for p in library_modules()
               for _, flag in flags_in(p.read_text(encoding="utf-8"))}
    stale = sorted(set(ALLOWED) - present)
    assert not stale, f"remove from ALLOWED (no longer found): {stale}"


@pytest.mark.parametrize("source, flags", [
    ('raise InvalidInput("use --format parquet")', ["--format"]),
    ('raise InvalidInput(f"{x}: give --partition {name}=VALUE")', ["--partition"]),
    ('def f():\n    """Used by ``--explain``."""\n    return 1\n', []),
    ('x = "a well-known -- dash, 2--3"', []),
])
def test_the_checker_finds_flags_in_strings_not_in_docstrings(source: str, flags: list[str]) -> None:
    assert [f for _, f in flags_in(source)] == flags
