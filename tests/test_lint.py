"""pyflakes finds nothing in ``icectl/``, ``tests/`` and ``bench/``: no unused import or variable,
no undefined name, no placeholder-less f-string. A finding is allowed only on a statement whose
first line says ``# noqa`` with the reason (a re-export, a pytest fixture imported by name)."""

from __future__ import annotations

from pathlib import Path

from pyflakes import api, messages, reporter

ROOT = Path(__file__).resolve().parent.parent
TREES = ("icectl", "tests", "bench")


class _Collect(reporter.Reporter):
    def __init__(self) -> None:
        self.found: list[tuple[str, int, str]] = []

    def flake(self, message: messages.Message) -> None:
        self.found.append((message.filename, message.lineno, str(message)))

    def syntaxError(self, filename, msg, lineno, offset, text) -> None:  # noqa: N802 - pyflakes
        self.found.append((filename, lineno, f"syntax error: {msg}"))

    def unexpectedError(self, filename, msg) -> None:  # noqa: N802 - pyflakes
        self.found.append((filename, 0, f"unexpected error: {msg}"))


def findings(paths: list[Path]) -> list[str]:
    """pyflakes' findings in ``paths``, less those on a line marked ``# noqa``."""
    collect = _Collect()
    for p in paths:
        api.checkPath(str(p), collect)
    out = []
    for filename, lineno, text in collect.found:
        lines = Path(filename).read_text().splitlines()
        if 0 < lineno <= len(lines) and "# noqa" in lines[lineno - 1]:
            continue
        out.append(text)
    return out


def test_pyflakes_finds_nothing() -> None:
    paths = sorted(p for tree in TREES for p in (ROOT / tree).rglob("*.py"))
    assert len(paths) > 100
    assert findings(paths) == []


def test_a_finding_is_reported_unless_marked(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import os\nimport sys  # noqa: F401 - re-exported\nx = f'plain'\n")
    got = findings([bad])
    assert len(got) == 2, got
    assert "'os' imported but unused" in got[0] and "placeholders" in got[1]
