"""One condition value as CNKI's advanced search reads it: in-field operators, quotes, parentheses.

Rules (docs/simulator.md, "In-field operators", gives the sources):

* A value wholly inside `"…"` or `'…'` is one literal term.
* `+` is OR, `*` is AND, `-` is AND NOT. A character is an operator only with whitespace on both
  sides ("前后要空一个字节"); otherwise it belongs to the surrounding word.
* `(…)` groups and needs no spaces. The help says precedence must be fixed with parentheses, so a
  level that mixes different operators without parentheses is ambiguous.
* Quoted parts are literal terms. An unquoted word that still holds `*`, `+` or `-` (an unspaced
  operator) is ambiguous; in a value that combines terms, so is an unquoted word holding
  whitespace, `/`, `%` or `=` (the help requires quotes for them when terms are combined).
* Ambiguous input (also: unbalanced quotes or parentheses, a missing operand, two operands with
  no operator between them) makes the whole value match nothing: the simulator is never kinder
  than either reading CNKI might choose.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum


class Logic(IntEnum):
    AND = 0
    OR = 1
    NOT = 2


@dataclass(frozen=True, slots=True)
class Term:
    text: str


@dataclass(frozen=True, slots=True)
class BoolOp:
    op: Logic
    left: ValueExpr
    right: ValueExpr


@dataclass(frozen=True, slots=True)
class Unclear:
    """An ambiguous part of a value: matches nothing; `inner` keeps what could be read (highlights)."""

    inner: ValueExpr | None = None


ValueExpr = Term | BoolOp | Unclear

QUOTES = ('"', "'")
_OPS = {"+": Logic.OR, "*": Logic.AND, "-": Logic.NOT}
_COMBINED_SPECIALS = frozenset("/%=")


def _is_quoted(value: str) -> bool:
    v = value.strip()
    return len(v) >= 2 and v[0] in QUOTES and v[-1] == v[0] and v[0] not in v[1:-1]


@dataclass(frozen=True, slots=True)
class _Tok:
    kind: str  # "w" word, "q" quoted word, "op", "(", ")", "bad" (unbalanced quote)
    text: str


def _spaced(v: str, i: int) -> bool:
    left = i > 0 and v[i - 1].isspace()
    right = i + 1 < len(v) and v[i + 1].isspace()
    return left and right


def _tokenize(v: str) -> list[_Tok]:
    tokens: list[_Tok] = []
    buf: list[str] = []

    def flush() -> None:
        word = "".join(buf).strip()
        buf.clear()
        if word:
            tokens.append(_Tok("w", word))

    i = 0
    while i < len(v):
        ch = v[i]
        if ch in QUOTES:
            end = v.find(ch, i + 1)
            flush()
            if end == -1:
                tokens.append(_Tok("bad", v[i + 1 :]))
                break
            tokens.append(_Tok("q", v[i + 1 : end]))
            i = end + 1
            continue
        if ch in "()":
            flush()
            tokens.append(_Tok(ch, ch))
        elif ch in _OPS and _spaced(v, i):
            flush()
            tokens.append(_Tok("op", ch))
        else:
            buf.append(ch)
        i += 1
    flush()
    return tokens


def _word(tok: _Tok, combined: bool) -> ValueExpr:
    if tok.kind == "q":
        return Term(tok.text)
    if tok.kind == "bad":
        return Unclear(Term(tok.text))
    text = tok.text
    if any(ch in _OPS for ch in text):
        return Unclear(Term(text))
    if combined and (any(ch.isspace() for ch in text) or any(ch in _COMBINED_SPECIALS for ch in text)):
        return Unclear(Term(text))
    return Term(text)


class _Parser:
    def __init__(self, tokens: list[_Tok]) -> None:
        self.tokens = tokens
        self.pos = 0
        self.combined = any(t.kind == "op" for t in tokens)
        self.unclear = False

    def peek(self) -> _Tok | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def expr(self) -> ValueExpr:
        left = self.operand()
        seen: set[str] = set()
        while True:
            tok = self.peek()
            if tok is None or tok.kind == ")":
                break
            if tok.kind != "op":  # two operands with no operator between them
                self.unclear = True
                self.pos += 1
                left = BoolOp(Logic.AND, left, self._as_operand(tok))
                continue
            self.pos += 1
            seen.add(tok.text)
            left = BoolOp(_OPS[tok.text], left, self.operand())
        if len(seen) > 1:  # precedence left to the reader: "优先级需用英文半角括号确定"
            return Unclear(left)
        return left

    def _as_operand(self, tok: _Tok) -> ValueExpr:
        if tok.kind == "(":
            inner = self.expr()
            self._close()
            return inner
        return _word(tok, self.combined) if tok.kind in ("w", "q", "bad") else Term("")

    def operand(self) -> ValueExpr:
        tok = self.peek()
        if tok is None or tok.kind in ("op", ")"):
            self.unclear = True  # missing operand
            return Term("")
        self.pos += 1
        return self._as_operand(tok)

    def _close(self) -> None:
        tok = self.peek()
        if tok is not None and tok.kind == ")":
            self.pos += 1
        else:
            self.unclear = True  # unbalanced "("

    def parse(self) -> ValueExpr:
        out = self.expr()
        while self.pos < len(self.tokens):  # a stray ")" and whatever follows it
            self.unclear = True
            self.pos += 1
            if self.pos < len(self.tokens):
                out = BoolOp(Logic.AND, out, self.expr())
        return Unclear(out) if self.unclear or _has_unclear(out) else out


def _has_unclear(expr: ValueExpr) -> bool:
    if isinstance(expr, Unclear):
        return True
    if isinstance(expr, BoolOp):
        return _has_unclear(expr.left) or _has_unclear(expr.right)
    return False


def parse_value(value: str) -> ValueExpr:
    """One condition value -> expression over literal terms (see the module docstring)."""
    v = value.strip()
    if _is_quoted(v):
        return Term(v[1:-1])
    return _Parser(_tokenize(v)).parse()


def positive_terms(expr: ValueExpr | None, positive: bool = True) -> list[str]:
    """Terms a match may contain (for highlights); ambiguous parts keep their readable terms."""
    if expr is None:
        return []
    if isinstance(expr, Term):
        return [expr.text] if positive and expr.text else []
    if isinstance(expr, Unclear):
        return positive_terms(expr.inner, positive)
    right_positive = positive if expr.op != Logic.NOT else False
    return positive_terms(expr.left, positive) + positive_terms(expr.right, right_positive)


def eval_value(expr: ValueExpr, pred: Callable[[str], bool]) -> bool:
    """Evaluate with `pred(term)` for literal terms; ambiguous parts are false."""
    if isinstance(expr, Term):
        return pred(expr.text)
    if isinstance(expr, Unclear):
        return False
    left = eval_value(expr.left, pred)
    if expr.op == Logic.AND:
        return left and eval_value(expr.right, pred)
    if expr.op == Logic.OR:
        return left or eval_value(expr.right, pred)
    return left and not eval_value(expr.right, pred)
