"""Expression tree -> bounded DNF -> CNKI's QueryJson `Subject` group; research-search builders.

CNKI's advanced search combines form rows strictly left to right, so the only shape that keeps an
arbitrary boolean meaning is an OR of AND-groups: one ChildItems group per DNF branch (Logic 0 for
the first, 1 = OR for the rest), each holding its positive conditions (Logic 0 = AND) followed by
its negated ones (Logic 2 = AND NOT).

DNF rules:

* `not` is pushed to the leaves with De Morgan; double negation cancels.
* Within a branch identical literals are kept once; a branch holding a literal and its negation
  (same field, match and value) can never match and is dropped. A branch that contains every
  literal of another branch is absorbed by it (the OR already covers it).
* Intermediate expansions are bounded too, and the final DNF may have at most 32 branches
  (QUERY_TOO_COMPLEX "布尔展开超过 32 分支").
* Every branch needs a positive literal (UNBOUNDED_QUERY): CNKI cannot search "everything except".
* If every branch was dropped as contradictory the expression can match nothing; that is reported
  as INVALID_EXPRESSION with `details["reason"] == "contradiction"` rather than sending CNKI a query
  whose answer is known to be empty (it is not unbounded, so UNBOUNDED_QUERY would mislead).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic import Field as PydField

from cnki_mcp.errors import (
    InvalidExpression,
    InvalidInput,
    InvalidMatch,
    InvalidPlan,
    QueryTooComplex,
    UnboundedQuery,
)
from cnki_mcp.query.expr import (
    MAX_OPERANDS,
    SUBJECT_EXACT_MESSAGE,
    Field,
    Leaf,
    Match,
    Node,
    Op,
    parse_expression,
    quote_value,
)

__all__ = [
    "MAX_BRANCHES",
    "MAX_TITLES",
    "Branch",
    "CompiledQuery",
    "Lit",
    "compile_expression",
    "concept_expression",
    "feedback_expression",
    "fingerprint",
    "quote_value",
    "title_lookup_expression",
    "to_dnf",
]

MAX_BRANCHES = 32
_MAX_INTERMEDIATE = 256  # simplified partial expansions
_MAX_PRODUCT = 1024  # raw cross product computed in one step
MAX_TITLES = 10

TOO_MANY_BRANCHES_MESSAGE = "布尔展开超过 32 分支"

LOGIC_AND = 0
LOGIC_OR = 1
LOGIC_NOT = 2


@dataclass(frozen=True, slots=True)
class Lit:
    """A leaf, possibly negated: the unit of a DNF branch."""

    field: Field
    match: Match
    value: str
    negated: bool = False

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.field.value, self.match.value, self.value)

    def complement(self) -> Lit:
        return Lit(self.field, self.match, self.value, not self.negated)

    @property
    def operator(self) -> str:
        """CNKI's operator: subject always TOPRANK; phrase FUZZY; exact DEFAULT."""
        if self.field == Field.SUBJECT:
            return "TOPRANK"
        return "DEFAULT" if self.match == Match.EXACT else "FUZZY"


@dataclass(frozen=True, slots=True)
class Branch:
    """One AND-group of the DNF: positive literals first, then negated ones, each in tree order."""

    literals: tuple[Lit, ...]

    @property
    def positives(self) -> tuple[Lit, ...]:
        return tuple(lit for lit in self.literals if not lit.negated)

    @property
    def negatives(self) -> tuple[Lit, ...]:
        return tuple(lit for lit in self.literals if lit.negated)


class CompiledQuery(BaseModel):
    """What the site needs to run a structured search (see `GridRequest`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    subject: dict[str, Any] = PydField(description="QueryJson group replacing the template's Subject group")
    anchor: str = PydField(description="first positive leaf value, typed into the real form when capturing")
    branches: int = PydField(description="number of DNF branches (ChildItems groups)")
    fingerprint: str = PydField(description="stable hash of the canonical DNF; equivalent trees share it")


# ---------------------------------------------------------------- DNF


_Conj = tuple[Lit, ...]


def _conjoin(a: _Conj, b: _Conj) -> _Conj | None:
    """a AND b with duplicates removed; None when it holds a literal and its negation."""
    out = list(a)
    seen = set(a)
    for lit in b:
        if lit in seen:
            continue
        if lit.complement() in seen:
            return None
        out.append(lit)
        seen.add(lit)
    return tuple(out)


def _simplify(branches: Iterable[_Conj | None]) -> list[_Conj]:
    """Drop contradictions, duplicate branches and branches absorbed by a smaller one."""
    kept: list[_Conj] = []
    sets: list[frozenset[Lit]] = []
    for b in branches:
        if b is None:
            continue
        s = frozenset(b)
        if any(lit.complement() in s for lit in b):
            continue
        if any(other <= s for other in sets):  # duplicate, or absorbed by an earlier branch
            continue
        keep = [i for i, other in enumerate(sets) if not s < other]
        kept = [kept[i] for i in keep]
        sets = [sets[i] for i in keep]
        kept.append(b)
        sets.append(s)
    return kept


def _bound(branches: list[_Conj], limit: int) -> list[_Conj]:
    if len(branches) > limit:
        raise QueryTooComplex(TOO_MANY_BRANCHES_MESSAGE, branches=len(branches), max_branches=MAX_BRANCHES)
    return branches


def _dnf(expr: Leaf | Node, negate: bool) -> list[_Conj]:
    if isinstance(expr, Leaf):
        return [(Lit(expr.field, expr.match, expr.value, negate),)]
    if expr.op == Op.NOT:
        return _dnf(expr.items[0], not negate)
    parts = [_dnf(item, negate) for item in expr.items]
    conjunctive = (expr.op == Op.AND) != negate  # De Morgan: not(or) = and(not ...)
    if not conjunctive:
        return _bound(_simplify(b for part in parts for b in part), _MAX_INTERMEDIATE)
    acc: list[_Conj] = [()]
    for part in parts:
        if len(acc) * len(part) > _MAX_PRODUCT:
            raise QueryTooComplex(TOO_MANY_BRANCHES_MESSAGE, max_branches=MAX_BRANCHES)
        acc = _bound(_simplify(_conjoin(a, b) for a in acc for b in part), _MAX_INTERMEDIATE)
    return acc


def _order(conj: _Conj) -> Branch:
    return Branch(tuple(lit for lit in conj if not lit.negated) + tuple(lit for lit in conj if lit.negated))


def to_dnf(expr: Leaf | Node) -> list[Branch]:
    """The expression as an OR of AND-branches (see the module docstring for the rules).

    Raises QUERY_TOO_COMPLEX (> 32 branches), UNBOUNDED_QUERY (a branch without a positive
    literal) or INVALID_EXPRESSION with reason "contradiction" (nothing can match).
    """
    branches = _bound(_simplify(_dnf(expr, False)), MAX_BRANCHES)
    if not branches:
        raise InvalidExpression(
            "表达式自相矛盾（同一条件既要求包含又要求不含），不会匹配任何文献", reason="contradiction"
        )
    out = [_order(b) for b in branches]
    for i, branch in enumerate(out):
        if not branch.positives:
            raise UnboundedQuery(
                "每个展开分支至少需要一个肯定条件（例如“A 或 非 B”无法检索）",
                branch=i,
                conditions=[_describe(lit) for lit in branch.literals],
            )
    return out


def _describe(lit: Lit) -> str:
    kind = "精确" if lit.match == Match.EXACT else "模糊"
    return f"{'非 ' if lit.negated else ''}{lit.field.value}({kind}):{lit.value}"


def fingerprint(branches: Sequence[Branch]) -> str:
    """Stable hash of the DNF, insensitive to literal order within a branch and branch order."""
    canon = sorted(
        sorted([lit.field.value, lit.match.value, lit.value, lit.negated] for lit in b.literals)
        for b in branches
    )
    text = json.dumps(["dnf-v1", canon], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


# ---------------------------------------------------------------- QueryJson


def _item(lit: Lit) -> dict[str, Any]:
    return {
        "Key": "mcp",
        "Title": lit.field.value,
        "Logic": LOGIC_NOT if lit.negated else LOGIC_AND,
        "Field": lit.field.code,
        "Operator": lit.operator,
        "Value": quote_value(lit.value),
        "Value2": "",
        "options": {},
    }


def _group(branch: Branch, index: int) -> dict[str, Any]:
    return {
        "Key": "mcp",
        "Title": "",
        "Logic": LOGIC_AND if index == 0 else LOGIC_OR,
        "Items": [_item(lit) for lit in branch.literals],
        "ChildItems": [],
    }


def compile_expression(expr: Leaf | Node | dict[str, Any]) -> CompiledQuery:
    """A tree (or its plain JSON) -> the `Subject` QueryJson group, anchor, branch count, fingerprint."""
    tree = parse_expression(expr)  # re-validates trees built in code, and parses plain JSON
    for leaf in _leaves(tree):
        if leaf.field == Field.SUBJECT and leaf.match == Match.EXACT:  # parse rejects it; belt and braces
            raise InvalidMatch(SUBJECT_EXACT_MESSAGE, field=leaf.field.value)
    branches = to_dnf(tree)
    subject = {
        "Key": "Subject",
        "Title": "",
        "Logic": LOGIC_AND,
        "Items": [],
        "ChildItems": [_group(b, i) for i, b in enumerate(branches)],
    }
    return CompiledQuery(
        subject=subject,
        anchor=branches[0].positives[0].value,
        branches=len(branches),
        fingerprint=fingerprint(branches),
    )


def _leaves(expr: Leaf | Node) -> list[Leaf]:
    if isinstance(expr, Leaf):
        return [expr]
    return [leaf for item in expr.items for leaf in _leaves(item)]


# ---------------------------------------------------------------- research-search builders


def _any_of(terms: Sequence[str], fld: Field, match: Match) -> dict[str, Any]:
    leaves = [{"field": fld.value, "value": t, "match": match.value} for t in terms]
    return leaves[0] if len(leaves) == 1 else {"op": "or", "items": leaves}


def _concept_json(groups: Sequence[Sequence[str]], fld: Field) -> list[dict[str, Any]]:
    if not groups or any(not g for g in groups):
        raise InvalidPlan("概念组不能为空", groups=len(groups))
    return [_any_of(list(g), fld, Match.PHRASE) for g in groups]


def concept_expression(groups: Sequence[Sequence[str]], field: Field) -> Leaf | Node:
    """AND across concept groups, OR within a group, phrase leaves on `field`.

    A one-term group is the leaf itself; a single group is its OR (or its leaf).
    """
    parts = _concept_json(groups, field)
    return parse_expression(parts[0] if len(parts) == 1 else {"op": "and", "items": parts})


def feedback_expression(groups: Sequence[Sequence[str]], keyword: str) -> Leaf | Node:
    """The subject concept expression AND subject-phrase = keyword (a feedback channel)."""
    parts = _concept_json(groups, Field.SUBJECT)
    parts.append({"field": Field.SUBJECT.value, "value": keyword, "match": Match.PHRASE.value})
    if len(parts) > MAX_OPERANDS:
        raise InvalidPlan("概念组过多", groups=len(groups))
    return parse_expression({"op": "and", "items": parts})


def title_lookup_expression(titles: Sequence[str]) -> Leaf | Node:
    """OR of up to 10 exact title leaves (one title = a single leaf); duplicates sent once."""
    unique = list(dict.fromkeys(t.strip() for t in titles))
    if not unique or any(not t for t in unique):
        raise InvalidInput("题名不能为空")
    if len(unique) > MAX_TITLES:
        raise InvalidInput("一次最多定位 10 个题名", count=len(unique))
    return parse_expression(_any_of(unique, Field.TITLE, Match.EXACT))
