"""Figures a test module gathers while it runs (what a fuzzer tried, what signals did), shown in
pytest's terminal summary instead of printed by a test that cannot fail.

A module registers a callable with :func:`report`; when the session ends each callable is asked
for its text once (an xdist worker hands the texts to the controller, tests/conftest.py), so
the figures cover every test of the module that ran in that process.
"""

from __future__ import annotations

from typing import Callable

_SOURCES: list[tuple[str, Callable[[], str]]] = []


def report(title: str, text: Callable[[], str]) -> None:
    """Show ``text()`` under ``title`` in the terminal summary (registered once per title)."""
    if all(t != title for t, _ in _SOURCES):
        _SOURCES.append((title, text))


def collected() -> list[tuple[str, str]]:
    """(title, text) of every registered source, asked now."""
    return [(title, text()) for title, text in _SOURCES]
