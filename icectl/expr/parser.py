"""The filter language: text -> unbound expression.

See :data:`FILTER_HELP` for the grammar users see. Errors are :class:`InvalidInput` with a
one-line message ``invalid filter at position N: <problem>, near '<text>'`` (N counts characters
from 1); the exception also carries ``position`` (1-based) for callers that want a caret.
"""

from __future__ import annotations

import math
import re
import uuid as _uuid
from typing import NamedTuple
from decimal import Decimal, InvalidOperation

from icectl.errors import InvalidInput
from icectl.expr.expressions import (
    FALSE,
    KEYWORDS,
    TRUE,
    Expression,
    Literal,
    Operation,
    Predicate,
    and_,
    not_,
    or_,
)
from icectl.spec.token_cursor import TokenCursor
from icectl.spec.values import parse_date, parse_time, parse_timestamp

__all__ = ["parse_filter", "FILTER_HELP"]

FILTER_HELP = """\
Filter expressions (--filter):
  comparison   col = v (or col == v), col != v (or <>), col < v, col <= v, col > v,
               col >= v; the value may come first (5 < id means id > 5)
  sets         col in (v1, v2, ...), col not in (...)
  ranges       col between lo and hi, col not between lo and hi (bounds included)
  nulls, NaN   col is null, col is not null, col is nan, col is not nan
  prefixes     col starts with 'abc', col not starts with 'abc', col like 'abc%',
               col not like 'abc%' (only prefix patterns: one trailing %; \\% and \\_ match
               % and _ themselves; a pattern without % means equality)
  logic        not e, e and e, e or e, ( e ); not binds tighter than and, and than or;
               true and false are the constant filters; filters may be of any length
               and nesting depth; an empty filter is an error
  columns      names as in the schema, letters of any script included (catégorie, 类别);
               nested struct fields by dotted path (point.x, at any depth; not fields
               inside lists or maps); struct, list and map columns take only is null and
               is not null; quote other names with "double quotes" or `backticks`
               ("my col", `order`); matched case-insensitively unless --case-sensitive is
               given
  literals     integers (42, -7), decimals (12.50, exact), floats (1e3, 2.5e-1), strings in
               single quotes ('it''s'), true/false, date '2024-01-02',
               time '10:15:00', timestamp '2024-01-02 10:00:00' (no zone; also
               timestamp_ntz '...'), timestamptz '2024-01-02 10:00:00+01:00' (converted to
               UTC; none means UTC), uuid 'f79c3e09-677c-4bbd-a479-3f349cb785e7',
               binary X'0a0b', double 'Infinity' (or float '...'), decimal '12.50'
  coercion     a plain string is converted to the column's type: '2024-01-02' against a date,
               '2024-01-02 10:00:00' against a timestamp, uuids, decimals; an integer fits any
               numeric, date (days) or timestamp (microseconds) column; a date literal fits a
               timestamp column (midnight); a literal the column's type cannot hold is
               refused (3000000000 for an int, 1.234 for a decimal(9,2): exit code 2)
  keywords     case-insensitive; comparisons with null or NaN are refused (use is null /
               is nan); is nan needs a float or double column, starts with a string column
  examples     "day >= '2024-01-01' and day < '2024-02-01'", "id in (1, 2, 3) or name like 'ab%'",
               "not (status = 'done') and ts > timestamptz '2024-01-02 00:00:00+00:00'"
"""


class _Tok(NamedTuple):
    kind: str  # ident, qident, num, str, bin, op, end
    text: str  # value: identifier, number text, string contents, hex digits, operator
    pos: int  # 0-based offset
    end: int  # 0-based offset after the token


_OPS = ("<=", ">=", "<>", "!=", "==", "=", "<", ">", "(", ")", ",", ".", "-", "+")
_NUM_RE = re.compile(r"([0-9]+)(\.[0-9]*)?([eE][+-]?[0-9]+)?")
_OP_RE = re.compile("|".join(re.escape(op) for op in _OPS))


def _fail(src: str, pos: int, msg: str) -> InvalidInput:
    if pos >= len(src):
        near = "end of input"
    else:
        shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in src[pos:pos + 20])
        near = "'" + shown + ("..." if len(src) > pos + 20 else "") + "'"
    err = InvalidInput(f"invalid filter at position {pos + 1}: {msg}, near {near}", argument="filter")
    err.position = pos + 1  # type: ignore[attr-defined]
    return err


# one pattern for every token; the first alternative that matches wins
_TOKEN_RE = re.compile("|".join([
    r"(?P<space>\s+)",
    r"(?P<num>[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?)",
    r"(?P<str>'[^']*(?:''[^']*)*')",
    r'(?P<qident>"[^"]*(?:""[^"]*)*"|`[^`]*(?:``[^`]*)*`)',
    r"(?P<bin>[xX]'[^']*(?:''[^']*)*')",
    r"(?P<ident>(?=[^\W\d])[\w$]+)",
    r"(?P<op>" + _OP_RE.pattern + ")",
]))


def _tokenize(src: str) -> list[_Tok]:
    """The tokens of ``src``: one match of one compiled pattern per token, so time is linear."""
    toks: list[_Tok] = []
    add = toks.append
    match = _TOKEN_RE.match
    i, n = 0, len(src)
    while i < n:
        m = match(src, i)
        kind = m.lastgroup if m is not None else None
        if kind is None or (kind == "ident" and not (src[i].isalpha() or src[i] == "_")):
            _tokenize_error(src, i)
        j = m.end()  # type: ignore[union-attr]
        if kind == "space":
            i = j
            continue
        text = m.group(0)  # type: ignore[union-attr]
        if kind == "num":
            if j < n and (src[j].isalnum() or src[j] == "_"):
                raise _fail(src, i, "invalid number")
        elif kind == "str":
            text = text[1:-1].replace("''", "'")
        elif kind == "qident":
            q = text[0]
            text = text[1:-1].replace(q + q, q)
            if not text:
                raise _fail(src, i, "empty quoted name")
        elif kind == "bin":
            text = re.sub(r"\s+", "", text[2:-1])
            if not re.fullmatch(r"(?:[0-9A-Fa-f]{2})*", text):
                raise _fail(src, i, "binary literal needs an even number of hex digits")
        add(_Tok(kind, text, i, j))  # type: ignore[arg-type]
        i = j
    add(_Tok("end", "", n, n))
    return toks


def _tokenize_error(src: str, i: int) -> None:
    c = src[i]
    if c == "'" or (c in "xX" and src[i + 1:i + 2] == "'"):
        what = "string" if c == "'" else "binary literal"
        raise _fail(src, i, f"unterminated {what}")
    if c in "\"`":
        raise _fail(src, i, "unterminated quoted name")
    raise _fail(src, i, f"unexpected character {c!r}")


_CMP = {"=": Operation.EQ, "==": Operation.EQ, "!=": Operation.NOT_EQ, "<>": Operation.NOT_EQ,
        "<": Operation.LT, "<=": Operation.LT_EQ, ">": Operation.GT, ">=": Operation.GT_EQ}
_TYPED = {"date", "time", "timestamp", "timestamp_ntz", "timestamptz", "uuid", "double",
          "float", "decimal"}
_RESERVED = KEYWORDS


class _Parser(TokenCursor[_Tok]):
    def __init__(self, src: str):
        super().__init__(src, _tokenize(src), _fail)

    def at_word(self, *words: str, tok: _Tok | None = None) -> bool:
        t = tok or self.tok
        return t.kind == "ident" and t.text.lower() in words

    def at_op(self, *ops: str) -> bool:
        return self.tok.kind == "op" and self.tok.text in ops

    def expect_word(self, word: str, context: str) -> _Tok:
        if not self.at_word(word):
            raise self.error(f"expected {word.upper()} {context}")
        return self.advance()

    def expect_op(self, op: str, context: str) -> _Tok:
        if not self.at_op(op):
            raise self.error(f"expected '{op}' {context}")
        return self.advance()

    # -- grammar -------------------------------------------------------------------------------

    def parse(self) -> Expression:
        """The whole filter. Parentheses open frames on an explicit stack instead of recursing,
        so nesting depth and chain length are limited by memory only."""
        if self.tok.kind == "end":
            raise self.error("empty filter")
        frames = [_Frame(None, 0)]
        while True:
            nots = 0
            while self.at_word("not"):
                self.advance()
                nots += 1
            if self.at_op("("):
                frames.append(_Frame(self.advance(), nots))
                continue
            e = _negated(self.operand(), nots)
            while True:  # after an operand: AND, OR, ')' or the end
                frame = frames[-1]
                frame.ands.append(e)
                if self.at_word("and"):
                    self.advance()
                    break
                if self.at_word("or"):
                    self.advance()
                    frame.end_and()
                    break
                if frame.open is None:
                    return self._finish(frame)
                if not self.at_op(")"):
                    raise self.error("expected ')' to close the '(' at position "
                                     f"{frame.open.pos + 1}")
                self.advance()
                frames.pop()
                e = _negated(frame.result(), frame.nots)

    def _finish(self, frame: "_Frame") -> Expression:
        if self.tok.kind != "end":
            if self.at_op(")"):
                raise self.error("unbalanced ')'")
            raise self.error("expected AND, OR or the end of the filter")
        return frame.result()

    def operand(self) -> Expression:
        """A constant or one predicate (BETWEEN gives two)."""
        t = self.tok
        if self.at_word("true", "false") and not self._next_is_cmp():
            self.advance()
            return TRUE if t.text.lower() == "true" else FALSE
        if self._at_literal_start():
            return self.literal_first()
        if t.kind == "end":
            raise self.error("expected a column name or '('")
        return self.predicate(self.column())

    def _next_is_cmp(self) -> bool:
        nxt = self.peek()
        return nxt.kind == "op" and nxt.text in _CMP

    def _at_literal_start(self) -> bool:
        t = self.tok
        if t.kind in ("num", "str", "bin"):
            return True
        if t.kind == "op" and t.text in "-+" and self.peek().kind == "num":
            return True
        if t.kind == "ident":
            low = t.text.lower()
            if low in _TYPED and self.peek().kind == "str":
                return True
            if low in ("true", "false", "null"):
                return True
        return False

    def literal_first(self) -> Expression:
        lit = self.literal("a value")
        if not (self.tok.kind == "op" and self.tok.text in _CMP):
            raise self.error("expected a comparison operator after the value")
        op = _CMP[self.advance().text].flip()
        col = self.column()
        return Predicate(op, col, (lit,))

    def column(self) -> str:
        parts = [self.name_part()]
        while self.at_op("."):
            self.advance()
            parts.append(self.name_part())
        return ".".join(parts)

    def name_part(self) -> str:
        t = self.tok
        if t.kind == "qident":
            self.advance()
            return t.text
        if t.kind == "ident":
            if t.text.lower() in _RESERVED:
                raise self.error(f"expected a column name, found the keyword {t.text.upper()} "
                                 "(quote a column with this name as \"...\")")
            self.advance()
            return t.text
        raise self.error("expected a column name")

    def predicate(self, col: str) -> Expression:
        t = self.tok
        if t.kind == "op" and t.text in _CMP:
            self.advance()
            return Predicate(_CMP[t.text], col, (self.literal(f"a value after '{t.text}'"),))
        if self.at_word("is"):
            self.advance()
            negated = False
            if self.at_word("not"):
                self.advance()
                negated = True
            if self.at_word("null"):
                self.advance()
                return Predicate(Operation.NOT_NULL if negated else Operation.IS_NULL, col)
            if self.at_word("nan"):
                self.advance()
                return Predicate(Operation.NOT_NAN if negated else Operation.IS_NAN, col)
            raise self.error("expected NULL or NAN after IS" + (" NOT" if negated else ""))
        negated = False
        if self.at_word("not"):
            self.advance()
            negated = True
        if self.at_word("in"):
            self.advance()
            self.expect_op("(", "after IN")
            if self.at_op(")"):
                raise self.error("expected at least one value in the IN list")
            lits = [self.literal("a value in the IN list")]
            while self.at_op(","):
                self.advance()
                lits.append(self.literal("a value in the IN list"))
            self.expect_op(")", "or ',' in the IN list")
            return Predicate(Operation.NOT_IN if negated else Operation.IN, col, tuple(lits))
        if self.at_word("between"):
            self.advance()
            lo = self.literal("the lower bound after BETWEEN")
            self.expect_word("and", "between the BETWEEN bounds")
            hi = self.literal("the upper bound after BETWEEN AND")
            if negated:
                return or_(Predicate(Operation.LT, col, (lo,)), Predicate(Operation.GT, col, (hi,)))
            return and_(Predicate(Operation.GT_EQ, col, (lo,)), Predicate(Operation.LT_EQ, col, (hi,)))
        if self.at_word("starts"):
            self.advance()
            self.expect_word("with", "after STARTS")
            s = self.tok
            if s.kind != "str":
                raise self.error("expected a quoted string after STARTS WITH")
            self.advance()
            op = Operation.NOT_STARTS_WITH if negated else Operation.STARTS_WITH
            return Predicate(op, col, (Literal("string", s.text),))
        if self.at_word("like"):
            self.advance()
            s = self.tok
            if s.kind != "str":
                raise self.error("expected a quoted pattern after LIKE")
            self.advance()
            prefix, is_prefix = self._like_prefix(s)
            if is_prefix:
                op = Operation.NOT_STARTS_WITH if negated else Operation.STARTS_WITH
            else:
                op = Operation.NOT_EQ if negated else Operation.EQ
            return Predicate(op, col, (Literal("string", prefix),))
        if negated:
            raise self.error("expected IN, BETWEEN, LIKE or STARTS WITH after NOT")
        if t.kind == "end":
            raise self.error(f"expected an operator after the column {col!r}")
        raise self.error("expected an operator (=, !=, <, <=, >, >=, IN, BETWEEN, IS, LIKE, "
                         "STARTS WITH)")

    def _like_prefix(self, tok: _Tok) -> tuple[str, bool]:
        pat = tok.text
        out: list[str] = []
        i = 0
        while i < len(pat):
            c = pat[i]
            if c == "\\" and i + 1 < len(pat) and pat[i + 1] in "%_\\":
                out.append(pat[i + 1])
                i += 2
                continue
            if c == "%":
                if i == len(pat) - 1:
                    return "".join(out), True
                raise _fail(self.src, tok.pos, "only prefix patterns are supported in LIKE "
                            "(one % at the end, like 'abc%')")
            if c == "_":
                raise _fail(self.src, tok.pos, "'_' wildcards are not supported in LIKE "
                            "(write \\_ for a literal underscore)")
            out.append(c)
            i += 1
        return "".join(out), False

    def literal(self, what: str) -> Literal:
        t = self.tok
        if t.kind == "op" and t.text in "-+" and self.peek().kind == "num":
            self.advance()
            lit = self._number(self.advance())
            if t.text == "-":
                neg = lit.value.copy_negate() if isinstance(lit.value, Decimal) else -lit.value
                lit = Literal(lit.kind, neg)
            return lit
        if t.kind == "num":
            return self._number(self.advance())
        if t.kind == "str":
            self.advance()
            return Literal("string", t.text)
        if t.kind == "bin":
            self.advance()
            return Literal("binary", bytes.fromhex(t.text))
        if t.kind == "ident":
            low = t.text.lower()
            if low in ("true", "false"):
                self.advance()
                return Literal("boolean", low == "true")
            if low == "null":
                raise self.error("comparisons with NULL are never true; use IS NULL or "
                                 "IS NOT NULL")
            if low == "nan":
                raise self.error("comparisons with NaN are refused; use IS NAN or IS NOT NAN")
            if low in _TYPED and self.peek().kind == "str":
                self.advance()
                s = self.advance()
                return self._typed(low, s)
        if t.kind == "end":
            raise self.error(f"expected {what}")
        raise self.error(f"expected {what} (a number, a 'string', true/false, or a typed "
                         "literal like date '2024-01-02')")

    def _number(self, t: _Tok) -> Literal:
        m = _NUM_RE.fullmatch(t.text)
        assert m
        if m.group(3):
            v = float(t.text)
            if math.isinf(v):
                raise self.error("number out of range", t)
            return Literal("float", v)
        if m.group(2):
            return Literal("decimal", Decimal(t.text))
        return Literal("integer", int(t.text))

    def _typed(self, kind: str, s: _Tok) -> Literal:
        text = s.text
        try:
            if kind == "date":
                return Literal("date", parse_date(text))
            if kind == "time":
                return Literal("time", parse_time(text))
            if kind in ("timestamp", "timestamp_ntz"):
                return Literal("timestamp", parse_timestamp(text, nanos=True, tz=False))
            if kind == "timestamptz":
                return Literal("timestamptz", parse_timestamp(text, nanos=True, tz=True))
            if kind == "uuid":
                if not re.fullmatch(r"\s*[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                                    r"[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\s*", text):
                    raise ValueError("expected a uuid like f79c3e09-677c-4bbd-a479-3f349cb785e7")
                return Literal("uuid", _uuid.UUID(text.strip()))
            if kind in ("double", "float"):
                low = text.strip().lower()
                if low in ("nan", "+nan", "-nan"):
                    raise ValueError("NaN is refused; use IS NAN or IS NOT NAN")
                if low in ("inf", "+inf", "infinity", "+infinity"):
                    return Literal("float", math.inf)
                if low in ("-inf", "-infinity"):
                    return Literal("float", -math.inf)
                if not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", low):
                    raise ValueError("expected a number")
                return Literal("float", float(low))
            if kind == "decimal":
                if not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)", text.strip()):
                    raise ValueError("expected a decimal number like 12.50")
                return Literal("decimal", Decimal(text.strip()))
        except (ValueError, InvalidOperation) as e:
            raise _fail(self.src, s.pos, f"invalid {kind} literal: {e}") from None
        raise AssertionError(kind)


class _Frame:
    """One parenthesised group being parsed: its OR terms, the AND terms of the current one,
    the opening token and the NOTs in front of it."""

    __slots__ = ("open", "nots", "ors", "ands")

    def __init__(self, open_tok: _Tok | None, nots: int):
        self.open = open_tok
        self.nots = nots
        self.ors: list[Expression] = []
        self.ands: list[Expression] = []

    def end_and(self) -> None:
        self.ors.append(and_(*self.ands))
        self.ands = []

    def result(self) -> Expression:
        self.end_and()
        return or_(*self.ors)


def _negated(e: Expression, nots: int) -> Expression:
    """``e`` under ``nots`` NOTs: an even number cancels out."""
    return not_(e) if nots % 2 else e


def parse_filter(text: str) -> Expression:
    """Parse filter text into an unbound expression (see :data:`FILTER_HELP`)."""
    if not isinstance(text, str):
        raise InvalidInput(f"a filter must be text, e.g. \"id > 5\", not {type(text).__name__}",
                           argument="filter")
    if not text.strip():  # never a full scan by mistake
        raise _fail("", 0, "empty filter (give a condition, or no filter to select every row)")
    return _Parser(text).parse()
