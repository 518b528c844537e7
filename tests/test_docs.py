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


def test_exit_codes_are_documented() -> None:
    for kind in errors.ERROR_KINDS:
        assert re.search(rf"^\| {kind.exit_code} \|", README, re.M), f"README lacks exit code {kind.exit_code}"
        assert re.search(rf"^\.B {kind.exit_code}$", MAN, re.M), f"man page lacks exit code {kind.exit_code}"
    for code in (errors.EXIT_CHECK_FAILED, errors.EXIT_INTERNAL, errors.EXIT_INTERRUPTED):
        assert re.search(rf"^\| {code} \|", README, re.M)
        assert re.search(rf"^\.B {code}$", MAN, re.M)
    # the root --help names every code too
    from icectl.cli.app import HELP

    codes = [k.exit_code for k in errors.ERROR_KINDS if k.exit_code > 1]
    for code in codes + [errors.EXIT_CHECK_FAILED, errors.EXIT_INTERNAL, errors.EXIT_INTERRUPTED]:
        assert re.search(rf"(?<!\d){code} [a-z]", HELP), f"root --help lacks exit code {code}"


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
