"""README.md, man/icectl.1 and completions/ stay in step with the CLI."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from icectl import errors
from icectl.cli.app import app

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
MAN = (ROOT / "man" / "icectl.1").read_text(encoding="utf-8").replace("\\-", "-").replace("\\e", "\\")


def command_tree():
    """Every command and group, loaded (the root group imports command modules only on demand;
    walking ``commands.items()`` imports them all)."""
    root = typer.main.get_command(app)

    def walk(cmd, path):
        yield path, cmd
        for name, sub in sorted(getattr(cmd, "commands", {}).items()):
            yield from walk(sub, path + [name])

    return list(walk(root, []))


def test_the_tree_holds_every_registered_command() -> None:
    from icectl.cli.app import COMMANDS

    top = {p[0] for p, _ in command_tree() if len(p) == 1}
    assert top == set(COMMANDS)
    assert len(command_tree()) > len(COMMANDS)  # the groups' subcommands are there too


def long_options(cmd) -> set[str]:
    out = set()
    for p in cmd.params:
        for o in list(getattr(p, "opts", [])) + list(getattr(p, "secondary_opts", [])):
            if o.startswith("--"):
                out.add(o)
    return out


def fenced_blocks(text: str) -> list[str]:
    return re.findall(r"```sh\n(.*?)\n```", text, re.S)


def test_every_command_and_option_is_documented() -> None:
    missing = []
    for path, cmd in command_tree():
        for o in long_options(cmd):
            if o in ("--help",):
                continue
            for name, doc in (("README.md", README), ("man/icectl.1", MAN)):
                if o not in doc:
                    missing.append(f"{name}: option {o} of `icectl {' '.join(path)}`")
        if path:
            leaf = path[-1]
            for name, doc in (("README.md", README), ("man/icectl.1", MAN)):
                if not re.search(rf"(?<![\w-]){re.escape(leaf)}(?![\w-])", doc):
                    missing.append(f"{name}: command `icectl {' '.join(path)}`")
    assert not missing, "\n".join(missing)


def test_documented_commands_exist() -> None:
    known = {" ".join(p) for p, _ in command_tree() if p}
    for m in re.finditer(r"^### `icectl ([a-z-]+(?: [a-z-]+)?)", README, re.M):
        words = m.group(1).split()
        assert words[0] in {k.split()[0] for k in known}, m.group(0)
    for m in re.finditer(r'^\.SS "icectl ([a-z-]+)', MAN, re.M):
        assert m.group(1) in {k.split()[0] for k in known}, m.group(0)


def _readme_exit_codes() -> list[tuple[int, str]]:
    section = README[README.index("## Exit codes"):]
    section = section[: section.index("\n## ", 3)]
    return [(int(m.group(1)), m.group(2).strip()) for m in re.finditer(r"^\| (\d+) \| (.*?) \|$", section, re.M)]


def _man_exit_codes() -> list[tuple[int, str]]:
    section = MAN[MAN.index(".SH EXIT STATUS"):]
    section = section[: section.index("\n.SH ", 3)]
    return [(int(m.group(1)), " ".join(m.group(2).split()))
            for m in re.finditer(r"^\.TP\n\.B (\d+)\n(.*?)(?=\n\.TP|\n\.PP|\Z)", section, re.M | re.S)]


def _help_exit_codes() -> list[tuple[int, str]]:
    from icectl.cli.app import HELP

    section = HELP[HELP.index("Exit codes:"):]
    return [(int(m.group(1)), m.group(2).strip()) for m in re.finditer(r"^  (\d+) +(.+)$", section, re.M)]


def test_exit_codes_are_documented() -> None:
    """`icectl --help`, README and the man page show the same, complete exit-code table: the one
    in icectl/errors.py, which every error kind's code is in."""
    table = [(code, meaning) for code, _kind, meaning in errors.EXIT_CODES]
    assert _help_exit_codes() == table
    assert _readme_exit_codes() == table
    assert _man_exit_codes() == table
    codes = {code for code, _ in table}
    for kind in errors.ERROR_KINDS:
        assert kind.exit_code in codes and errors.kind_of_exit_code(kind.exit_code) == kind.kind
    for code in (errors.EXIT_OK, errors.EXIT_USAGE, errors.EXIT_CHECK_FAILED, errors.EXIT_INTERNAL,
                 errors.EXIT_INTERRUPTED):
        assert code in codes


def test_the_root_help_shows_the_exit_codes_as_written() -> None:
    r = subprocess.run([sys.executable, "-m", "icectl", "--help"], capture_output=True, text=True,
                       timeout=60, env={**os.environ, "COLUMNS": "80"})
    assert r.returncode == 0
    for code, _kind, meaning in errors.EXIT_CODES:
        assert re.search(rf"^ +{code} +{re.escape(meaning)}$", r.stdout, re.M), (code, r.stdout)


# -- the man page's SYNOPSIS -------------------------------------------------------------------

def leaf_commands() -> list[tuple[list[str], object]]:
    return [(p, c) for p, c in command_tree() if p and not getattr(c, "commands", None)]


def man_synopsis() -> dict[str, set[str]]:
    """Command path -> the long options its SYNOPSIS entry names."""
    section = MAN[MAN.index(".SH SYNOPSIS"):MAN.index(".SH DESCRIPTION")]
    entries: dict[str, set[str]] = {}
    current = None
    for line in section.splitlines():
        m = re.match(r"^\.B icectl ([a-z][a-z -]*)$", line)
        if m:
            current = m.group(1).strip()
            assert current not in entries, f"SYNOPSIS lists `icectl {current}` twice"
            entries[current] = set()
        elif current is not None:
            entries[current] |= set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", line))
    return entries


def test_man_synopsis_lists_every_command_with_its_options() -> None:
    synopsis = man_synopsis()
    problems = []
    for path, cmd in leaf_commands():
        name = " ".join(path)
        options = long_options(cmd) - {"--help"}
        if name not in synopsis:
            problems.append(f"SYNOPSIS lacks `icectl {name}` (options: {' '.join(sorted(options))})")
            continue
        if synopsis[name] != options:
            problems.append(f"SYNOPSIS of `icectl {name}`: missing {sorted(options - synopsis[name])}, "
                            f"unknown {sorted(synopsis[name] - options)}")
    known = {" ".join(p) for p, _ in leaf_commands()}
    problems += [f"SYNOPSIS lists `icectl {n}`, which is no command" for n in sorted(set(synopsis) - known)]
    assert not problems, "\n".join(problems)


# -- --help --------------------------------------------------------------------------------------

def rendered_help(path: list[str], cmd) -> str:
    import typer._click as click

    root = typer.main.get_command(app)
    ctx = click.Context(root, info_name="icectl", terminal_width=80, max_content_width=80)
    for name in path:
        parent = ctx.command
        ctx = click.Context(parent.commands[name], info_name=name, parent=ctx,
                            terminal_width=80, max_content_width=80)
    return ctx.get_help()


def example_commands(help_text: str) -> list[str]:
    lines = [ln.strip() for ln in help_text.splitlines()]
    out = [ln for ln in lines if re.match(r"^(icectl|find|cat) .*", ln)]
    out += [ln[len("Example: "):] for ln in lines if ln.startswith("Example: icectl ")]
    return out


def test_help_shows_every_example_whole_on_its_own_line_and_types_as_words() -> None:
    problems = []
    for path, cmd in command_tree():
        if not path:
            continue
        text = rendered_help(path, cmd)
        shown = [ln.strip() for ln in text.splitlines()]
        for example in example_commands(cmd.help or ""):
            if example not in shown:
                problems.append(f"`icectl {' '.join(path)} --help` cuts or joins the example {example!r}")
        bad = re.findall(r"<(?:str|int|float|bool|path|file|dir|datetime|int range|float range|list\[[^\]]*\])>", text)
        if bad:
            problems.append(f"`icectl {' '.join(path)} --help` shows types {sorted(set(bad))}")
        if re.search(r"\{[A-Z]+\}|\[\[", text.splitlines()[0]):
            problems.append(f"`icectl {' '.join(path)} --help` usage line: {text.splitlines()[0]}")
    assert not problems, "\n".join(problems)


def test_option_help_names_only_options_of_its_command() -> None:
    """The Options section of each command's --help mentions only that command's options."""
    problems = []
    for path, cmd in leaf_commands():
        text = rendered_help(path, cmd)
        options = text[text.index("Options:"):] if "Options:" in text else ""
        own = long_options(cmd) | {"--help"}
        for flag in sorted(set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", options)) - own):
            problems.append(f"`icectl {' '.join(path)} --help` names {flag}, which it does not have")
    assert not problems, "\n".join(problems)


def test_inspect_snapshot_help_names_its_own_options() -> None:
    r = subprocess.run([sys.executable, "-m", "icectl", "inspect", "snapshot", "--help"], capture_output=True,
                       text=True, timeout=60, env={**os.environ, "COLUMNS": "80"})
    assert r.returncode == 0
    cmd = dict(command_tree_map())["inspect snapshot"]
    for flag in set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", r.stdout)):
        assert flag in long_options(cmd) or flag == "--help", flag
    assert "INTEGER" in r.stdout and "<int>" not in r.stdout


def command_tree_map() -> list[tuple[str, object]]:
    return [(" ".join(p), c) for p, c in command_tree()]


# -- the filter grammar ----------------------------------------------------------------------------

def test_filter_grammar_is_documented_as_the_parser_accepts_it() -> None:
    """README and the man page carry the grammar's help text, and it names every operator and
    keyword the parser accepts."""
    from icectl.expr import parser

    help_lines = [ln.strip() for ln in parser.FILTER_HELP.splitlines() if ln.strip()]
    readme = [ln.strip() for ln in README.splitlines()]
    man = [ln.strip() for ln in MAN.replace("\\&", "").splitlines()]
    for line in help_lines:
        assert line in readme, f"README lacks the filter grammar line {line!r}"
        assert line in man, f"man page lacks the filter grammar line {line!r}"
    for op in set(parser._OPS) | set(parser._CMP):
        if op in (".", "-", "+", ",", "(", ")"):
            continue
        assert re.search(rf"(?<![<>=!]){re.escape(op)}(?![<>=])", parser.FILTER_HELP), f"operator {op} undocumented"
    assert "binary X'" in parser.FILTER_HELP
    for word in set(parser._RESERVED) | set(parser._TYPED) | {"nan", "starts", "with"}:
        assert re.search(rf"(?<![\w]){re.escape(word)}(?![\w])", parser.FILTER_HELP), f"{word!r} undocumented"
    for word in ("in", "not in", "between", "is null", "is not null", "is nan", "is not nan", "starts with",
                 "not starts with", "like", "not like", "and", "or", "not", "true", "false"):
        assert re.search(rf"(?<![\w]){word}(?![\w])", parser.FILTER_HELP), f"{word!r} undocumented"


def test_readme_says_a_new_branch_starts_from_mains_head() -> None:
    section = README[README.index("### `icectl append"):README.index("### `icectl write")]
    assert re.search(r"--branch[^.]*does not exist[^.]*main's (current )?(head|snapshot)", " ".join(section.split())), \
        "README's append section must say where a new --branch starts"


def test_readme_keeps_the_two_commands_at_the_top_and_ci_runs_the_test_command() -> None:
    blocks = fenced_blocks(README)
    example, tests = blocks[0], blocks[1]
    assert "icectl create" in example and "icectl inspect" in example
    assert ".[test]" in tests and "pytest" in tests
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert tests in ci, ".ci/run must run exactly README's test command"


def test_readme_example_runs(tmp_path: Path) -> None:
    """The example command, minus the install step, run as written against this checkout."""
    example = fenced_blocks(README)[0]
    steps = [s.strip() for s in example.split(" && ")]
    steps = [s for s in steps if "venv" not in s.split()[0:3] or "icectl" in s]
    steps = [s for s in steps if not s.startswith("python3 -m venv") and "pip install" not in s]
    script = " && ".join(s.replace(".venv/bin/icectl", f"{shlex.quote(sys.executable)} -m icectl") for s in steps)
    env = dict(os.environ, TMPDIR=str(tmp_path))
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "bucket(8, id) AS id_bucket" in r.stdout
    assert "tags.element" in r.stdout
    # `icectl write` put the three CSV rows into one snapshot, one file per partition
    assert re.search(r"^rows-written\s+3$", r.stdout, re.M), r.stdout
    assert re.search(r"^total-records\s+3$", r.stdout, re.M), r.stdout
    files = re.findall(r"^data\s+(ts_day=\S+/id_bucket=\d)\s+(\d+)\s", r.stdout, re.M)
    assert sorted(files) == [("ts_day=2024-01-02/id_bucket=4", "1"), ("ts_day=2024-01-03/id_bucket=3", "1"),
                             ("ts_day=2024-01-03/id_bucket=4", "1")], r.stdout


SHELLS = ("bash", "zsh", "fish")


@pytest.mark.parametrize("shell", SHELLS)
def test_completion_scripts_match_the_cli(shell: str) -> None:
    env = dict(os.environ, _ICECTL_COMPLETE=f"source_{shell}")
    r = subprocess.run([sys.executable, "-m", "icectl"], capture_output=True, text=True, env=env, timeout=60)
    # typer names the program after argv[0]; the installed entry point is `icectl`
    generated = r.stdout
    committed = (ROOT / "completions" / f"icectl.{shell}").read_text(encoding="utf-8")
    assert committed.strip() == generated.strip().replace("__main__.py", "icectl"), \
        f"completions/icectl.{shell} is stale: regenerate with _ICECTL_COMPLETE=source_{shell} icectl"


def test_completion_offers_current_commands() -> None:
    def complete(words: str) -> list[str]:
        # the word being completed is the last one; a trailing space starts a new, empty one
        cword = len(words.split()) - (0 if words.endswith(" ") else 1)
        env = dict(os.environ, _ICECTL_COMPLETE="complete_bash", COMP_WORDS=words, COMP_CWORD=str(cword))
        r = subprocess.run([sys.executable, "-m", "icectl"], capture_output=True, text=True, env=env, timeout=60)
        return r.stdout.split()

    assert complete("icectl insp") == ["inspect"]
    views = complete("icectl inspect ")
    for path, _ in command_tree():
        if len(path) == 2 and path[0] == "inspect":
            assert path[1] in views
