"""专业检索 (expert search) expressions as the kns8s expert page sends them: one string in an item
`{Field: "EXPERT", Operator: 0, Value: <expression>}` of the Subject group.

Syntax read here (docs/simulator.md, "Expert search", gives the sources and what stays uncertain):

* A clause is `CODE op value`: `op` is `=` (exact for name/keyword fields, phrase for prose fields),
  `%` (fuzzy), `%=` (relevance, for SU); YE and CF also take `>`, `>=`, `<`, `<=` with a number.
  Spaces around `op` are optional; codes are case-insensitive.
* A value is a term (`'…'`, `"…"` or a bare word), or terms joined by the in-field operators
  `*` (AND), `+` (OR), `-` (NOT), with parentheses; in-field operators combine left to right
  (`('A' + 'B') * 'C' - 'D'` = ((A OR B) AND C) AND NOT D, as in the help's example).
* Clauses are joined by `AND`, `OR`, `NOT` (case-insensitive, spaced), combined left to right with
  equal precedence; parentheses group clauses.
* `YE BETWEEN (…)` is answered like an empty result (the site's risk control; see the docs).

The parser is pure: it returns a tree of `Clause`/`Join` nodes or raises `ExpertError`. The
evaluator lives with the QueryJson model (`query.py`), which turns each clause into a condition.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from cnki_mcp.sim.value import BoolOp, Logic, Term, ValueExpr

__all__ = [
    "Clause",
    "ExpertError",
    "ExpertErrorKind",
    "Join",
    "Match",
    "canonical_value",
    "parse_expert",
]

# Field codes of the expert page (the help's list: SU TKA TI KY AB FT AU FI RP AF FU CO RF CLC LY
# (JN) DOI YE CF, plus SN CN IB that the simulator's corpus cannot answer).
FIELD_CODES = frozenset(
    {"SU", "TKA", "TI", "KY", "AB", "FT", "AU", "FI", "RP", "AF", "FU", "CO", "RF", "CLC", "LY", "JN",
     "DOI", "YE", "CF", "SN", "CN", "IB"}
)  # fmt: skip
NUMERIC_CODES = frozenset({"YE", "CF"})
MAX_LENGTH = 2000  # a guard against runaway input, not a documented CNKI limit


class Match(StrEnum):
    EXACT = "="
    FUZZY = "%"
    RELEVANT = "%="
    GT = ">"
    GE = ">="
    LT = "<"
    LE = "<="


class ExpertErrorKind(StrEnum):
    SYNTAX = "syntax"  # the grid answers 检索条件格式有误
    BETWEEN = "between"  # the grid answers like an empty result (risk control)


class ExpertError(ValueError):
    def __init__(self, kind: ExpertErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True, slots=True)
class Clause:
    code: str  # upper-case field code
    match: Match
    value: ValueExpr  # a number's text for the comparison matches


@dataclass(frozen=True, slots=True)
class Join:
    """`items[0] <logics[0]> items[1] <logics[1]> …`, left to right (first logic unused: AND)."""

    items: tuple[Clause | Join, ...]
    logics: tuple[Logic, ...]


ExpertExpr = Clause | Join

_LOGIC_WORDS = {"AND": Logic.AND, "OR": Logic.OR, "NOT": Logic.NOT}
_VALUE_OPS = {"*": Logic.AND, "+": Logic.OR, "-": Logic.NOT}
_QUOTES = "'\""


@dataclass(frozen=True, slots=True)
class _Tok:
    kind: str  # "q" quoted, "w" word, "(", ")", "op" value operator, "match", "logic"
    text: str
    pos: int


def _syntax(message: str) -> ExpertError:
    return ExpertError(ExpertErrorKind.SYNTAX, message)


def _tokenize(text: str) -> list[_Tok]:
    out: list[_Tok] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
            continue
        if ch in _QUOTES:
            end = text.find(ch, i + 1)
            if end == -1:
                raise _syntax(f"unclosed quote at {i}")
            out.append(_Tok("q", text[i + 1 : end], i))
            i = end + 1
            continue
        if ch in "()":
            out.append(_Tok(ch, ch, i))
            i += 1
            continue
        if ch in "%=<>":
            two = text[i : i + 2]
            if two in ("%=", ">=", "<="):
                out.append(_Tok("match", two, i))
                i += 2
            else:
                out.append(_Tok("match", ch, i))
                i += 1
            continue
        if ch in _VALUE_OPS:
            out.append(_Tok("op", ch, i))
            i += 1
            continue
        j = i
        while j < n and not text[j].isspace() and text[j] not in "()'\"%=<>*+":
            j += 1
        if j == i:  # a `-` inside a word is handled below; anything else is one char
            j = i + 1
        word = text[i:j]
        up = word.upper()
        if up in _LOGIC_WORDS:
            out.append(_Tok("logic", up, i))
        else:
            out.append(_Tok("w", word, i))
        i = j
    return out


class _Parser:
    def __init__(self, tokens: list[_Tok]) -> None:
        self.toks = tokens
        self.pos = 0

    def peek(self, k: int = 0) -> _Tok | None:
        i = self.pos + k
        return self.toks[i] if i < len(self.toks) else None

    def take(self) -> _Tok:
        tok = self.peek()
        if tok is None:
            raise _syntax("unexpected end of expression")
        self.pos += 1
        return tok

    # expression := operand (LOGIC operand)*
    def expression(self) -> ExpertExpr:
        items: list[ExpertExpr] = [self.operand()]
        logics: list[Logic] = [Logic.AND]
        while (tok := self.peek()) is not None and tok.kind == "logic":
            self.pos += 1
            logics.append(_LOGIC_WORDS[tok.text])
            items.append(self.operand())
        if len(items) == 1:
            return items[0]
        return Join(tuple(items), tuple(logics))

    def operand(self) -> ExpertExpr:
        tok = self.take()
        if tok.kind == "(":
            inner = self.expression()
            close = self.take()
            if close.kind != ")":
                raise _syntax(f"expected ')' at {close.pos}")
            return inner
        if tok.kind == "w":
            return self.clause(tok)
        raise _syntax(f"expected a field code at {tok.pos}")

    def clause(self, code_tok: _Tok) -> Clause:
        code = code_tok.text.upper()
        if code not in FIELD_CODES:
            raise _syntax(f"unknown field code {code_tok.text!r}")
        nxt = self.take()
        if nxt.kind == "w" and nxt.text.upper() == "BETWEEN":
            raise ExpertError(ExpertErrorKind.BETWEEN, "BETWEEN is refused")
        if nxt.kind != "match":
            raise _syntax(f"expected a match operator after {code} at {nxt.pos}")
        match = Match(nxt.text)
        numeric = match in (Match.GT, Match.GE, Match.LT, Match.LE)
        if numeric and code not in NUMERIC_CODES:
            raise _syntax(f"{match.value} only applies to YE and CF")
        value = self.value()
        if code in NUMERIC_CODES:
            if not isinstance(value, Term) or not value.text.strip().isdigit():
                raise _syntax(f"{code} takes a number")
            if match in (Match.FUZZY, Match.RELEVANT):
                raise _syntax(f"{code} takes =, >, >=, < or <=")
        return Clause(code, match, value)

    # value := vterm (VOP vterm)*   — left to right
    def value(self) -> ValueExpr:
        left = self.vterm()
        while (tok := self.peek()) is not None and tok.kind == "op":
            self.pos += 1
            left = BoolOp(_VALUE_OPS[tok.text], left, self.vterm())
        return left

    def vterm(self) -> ValueExpr:
        tok = self.take()
        if tok.kind == "q":
            if not tok.text.strip():
                raise _syntax(f"empty term at {tok.pos}")
            return Term(tok.text)
        if tok.kind == "w":
            return Term(tok.text)
        if tok.kind == "(":
            inner = self.value()
            close = self.take()
            if close.kind != ")":
                raise _syntax(f"expected ')' at {close.pos}")
            return inner
        raise _syntax(f"expected a search term at {tok.pos}")


def parse_expert(text: str) -> ExpertExpr:
    """An expert expression -> clause tree. Raises ExpertError (kind SYNTAX or BETWEEN)."""
    src = text.strip()
    if not src:
        raise _syntax("empty expression")
    if len(src) > MAX_LENGTH:
        raise _syntax("expression too long")
    parser = _Parser(_tokenize(src))
    tree = parser.expression()
    if parser.peek() is not None:
        tok = parser.peek()
        assert tok is not None
        raise _syntax(f"unexpected {tok.text!r} at {tok.pos}")
    return tree


def canonical_value(expr: ValueExpr) -> str:
    """The value as an advanced-search box would read it: every term quoted, every pair bracketed,
    so `value.parse_value` evaluates it exactly as the expert parser grouped it."""
    if isinstance(expr, Term):
        q = "'" if "'" not in expr.text else '"'
        return f"{q}{expr.text}{q}"
    if isinstance(expr, BoolOp):
        sym = {Logic.AND: "*", Logic.OR: "+", Logic.NOT: "-"}[expr.op]
        return f"({canonical_value(expr.left)} {sym} {canonical_value(expr.right)})"
    return "''"
