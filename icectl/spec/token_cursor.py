"""A cursor over a token list, shared by the two text grammars (filters in
:mod:`icectl.expr.parser`; types, schemas, partition and sort terms in :mod:`icectl.spec.parse`).
Each grammar has its own tokens and error wording; the cursor only walks them."""

from __future__ import annotations

from typing import Callable, Generic, Protocol, TypeVar

from icectl.errors import InvalidInput

__all__ = ["TokenCursor"]


class _Token(Protocol):
    @property
    def kind(self) -> str: ...

    @property
    def pos(self) -> int: ...


T = TypeVar("T", bound=_Token)


class TokenCursor(Generic[T]):
    """Tokens of ``src`` (each with ``kind``, ``text``, ``pos``; the last of kind ``"end"``),
    the current one at ``i``; ``fail(src, pos, msg)`` words an error at a position."""

    def __init__(self, src: str, toks: list[T], fail: Callable[[str, int, str], InvalidInput]):
        self.src = src
        self.toks = toks
        self.i = 0
        self._fail = fail

    @property
    def tok(self) -> T:
        return self.toks[self.i]

    def peek(self, k: int = 1) -> T:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def advance(self) -> T:
        t = self.toks[self.i]
        if t.kind != "end":
            self.i += 1
        return t

    def error(self, msg: str, tok: T | None = None) -> InvalidInput:
        return self._fail(self.src, (tok or self.tok).pos, msg)
