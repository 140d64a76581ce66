"""Expression tree -> bounded DNF -> CNKI's QueryJson `Subject` group; research-search builders.

CNF-shaped parts (ORs of same-field leaves, e.g. a concept group's synonyms) are folded into one
row with CNKI's in-field `+` before the DNF is taken, and rows over 120 characters are split:
see `cnf.py`. The rules below apply to the DNF over those rows.

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
from collections.abc import Sequence
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
    QueryUnsupported,
    UnboundedQuery,
)
from cnki_mcp.query.cnf import (
    MAX_BRANCHES,
    MAX_QUERIES,
    TOO_MANY_BRANCHES_MESSAGE,
    Lit,
    Split,
    atom_dnf,
    bound,
    layout,
    simplify,
)
from cnki_mcp.query.expr import (
    MAX_OPERANDS,
    MAX_VALUE_CHARS,
    SUBJECT_EXACT_MESSAGE,
    Field,
    Leaf,
    Match,
    Node,
    parse_expression,
    quote_value,
)

__all__ = [
    "MAX_BRANCHES",
    "MAX_QUERIES",
    "MAX_TITLES",
    "TOO_MANY_BRANCHES_MESSAGE",
    "Branch",
    "CompiledQuery",
    "Lit",
    "compile_expression",
    "concept_expression",
    "feedback_expression",
    "fingerprint",
    "quote_value",
    "title_lookup_expression",
    "to_atom_dnf",
    "to_dnf",
    "year_filter",
]

MAX_TITLES = 10


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
    """What the site needs to run a structured search (see `GridRequest`).

    `subjects` holds one Subject group per query; their union is the expression. Usually there is
    one (`subject` is always the first); more when oversized rows had to be split (cnf.py)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    subject: dict[str, Any] = PydField(description="QueryJson group replacing the template's Subject group")
    subjects: list[dict[str, Any]] = PydField(description="one Subject group per query, first = subject")
    anchor: str = PydField(description="first positive leaf value, typed into the real form when capturing")
    branches: int = PydField(description="number of branch groups (ChildItems groups) over all queries")
    split: Split = PydField(default="none", description="how rows over 120 characters were split")
    fingerprint: str = PydField(description="stable hash of the canonical DNF; equivalent trees share it")

    @property
    def queries(self) -> int:
        return len(self.subjects)


# ---------------------------------------------------------------- DNF


def _order(conj: Sequence[Lit]) -> Branch:
    return Branch(tuple(lit for lit in conj if not lit.negated) + tuple(lit for lit in conj if lit.negated))


def _checked(conjs: list[tuple[Lit, ...]]) -> list[Branch]:
    if not conjs:
        raise InvalidExpression(
            "表达式自相矛盾（同一条件既要求包含又要求不含），不会匹配任何文献", reason="contradiction"
        )
    out = [_order(b) for b in conjs]
    for i, branch in enumerate(out):
        if not branch.positives:
            raise UnboundedQuery(
                "每个展开分支至少需要一个肯定条件（例如“A 或 非 B”无法检索）",
                branch=i,
                conditions=[_describe(lit) for lit in branch.literals],
            )
    return out


def to_dnf(expr: Leaf | Node) -> list[Branch]:
    """The expression as an OR of AND-branches of single leaves (see the module docstring).

    Raises QUERY_TOO_COMPLEX (> 32 branches), UNBOUNDED_QUERY (a branch without a positive
    literal) or INVALID_EXPRESSION with reason "contradiction" (nothing can match).
    """
    return _checked(bound(simplify(atom_dnf(expr, fold_phrase=False)), MAX_BRANCHES))


def to_atom_dnf(expr: Leaf | Node) -> list[Branch]:
    """The DNF over atoms (same-field ORs folded into one row, cnf.py): phrase ORs always, exact
    ORs only when needed to stay within 32 branches. Same errors as `to_dnf`."""
    try:
        conjs = bound(simplify(atom_dnf(expr)), MAX_BRANCHES)
    except QueryTooComplex:
        conjs = bound(simplify(atom_dnf(expr, fold_exact=True)), MAX_BRANCHES)
    return _checked(conjs)


def _describe(lit: Lit) -> str:
    kind = "精确" if lit.match == Match.EXACT else "模糊"
    value = "|".join(lit.values)
    return f"{'非 ' if lit.negated else ''}{lit.field.value}({kind}):{value}"


def fingerprint(branches: Sequence[Branch]) -> str:
    """Stable hash of the DNF, insensitive to literal order within a branch and branch order.

    Single-leaf DNFs hash as they always did ("dnf-v1"); a DNF with atoms hashes their sorted
    value sets ("dnf-v2")."""
    atoms = any(lit.alts for b in branches for lit in b.literals)
    if not atoms:
        canon: list[Any] = sorted(
            sorted([lit.field.value, lit.match.value, lit.value, lit.negated] for lit in b.literals)
            for b in branches
        )
        tag = "dnf-v1"
    else:
        canon = sorted(
            sorted([lit.field.value, lit.match.value, sorted(lit.values), lit.negated] for lit in b.literals)
            for b in branches
        )
        tag = "dnf-v2"
    text = json.dumps([tag, canon], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


# ---------------------------------------------------------------- QueryJson


def compile_expression(expr: Leaf | Node | dict[str, Any]) -> CompiledQuery:
    """A tree (or its plain JSON) -> Subject group(s), anchor, branch count, fingerprint."""
    tree = parse_expression(expr)  # re-validates trees built in code, and parses plain JSON
    for leaf in _leaves(tree):
        if leaf.field == Field.SUBJECT and leaf.match == Match.EXACT:  # parse rejects it; belt and braces
            raise InvalidMatch(SUBJECT_EXACT_MESSAGE, field=leaf.field.value)
    branches = to_atom_dnf(tree)
    try:  # equivalent trees share the fingerprint of their plain DNF whenever it is within bounds
        canonical = to_dnf(tree)
    except QueryTooComplex:
        canonical = branches
    shape = layout([b.literals for b in branches])
    return CompiledQuery(
        subject=shape.subjects[0],
        subjects=shape.subjects,
        anchor=branches[0].positives[0].value,
        branches=shape.branches,
        split=shape.split,
        fingerprint=fingerprint(canonical),
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


MIN_PHRASE_CHARS = 4  # a shorter stretch of a title lists too many other papers to read through


def lookup_phrase(title: str) -> str:
    """What an exact-title leaf asks CNKI for: the title itself when CNKI's 120-character box holds
    it (quoted where it must be); for a title holding both quote kinds, which no value can carry,
    its longest stretch holding one kind only; and of a phrase still too long, its longest head the
    box holds, cut between words in Latin text. CNKI's exact title match lists every title
    CONTAINING the phrase (site-rules.md §3.10): the paper is among the rows, and callers keep those
    whose whole title key is the title's."""
    phrase = title
    try:
        if len(quote_value(title)) <= MAX_VALUE_CHARS:
            return title
    except QueryUnsupported:
        stretches = [p.strip(" ,.;:：，。") for mark in ('"', "'") for p in title.split(mark)]
        phrase = max(stretches, key=len)
        if len(phrase) < MIN_PHRASE_CHARS:
            return title  # parse_expression refuses it (QUERY_UNSUPPORTED), naming the leaf
        if len(quote_value(phrase)) <= MAX_VALUE_CHARS:
            return phrase
    room = MAX_VALUE_CHARS - 2  # the quotes a value holding spaces or operators is sent in
    head = phrase[:room]
    if head[-1].isascii() and head[-1].isalnum() and phrase[room].isascii() and phrase[room].isalnum():
        word_start = head.rfind(" ")
        if word_start > room // 2:
            head = head[:word_start]
    return head.rstrip(" ,.;:-—–")


def title_lookup_expression(titles: Sequence[str]) -> Leaf | Node:
    """OR of up to 10 exact title leaves (one title = a single leaf, `lookup_phrase` of it);
    duplicate phrases sent once, and the limit counts the distinct phrases sent."""
    unique = list(dict.fromkeys(t.strip() for t in titles))
    if not unique or any(not t for t in unique):
        raise InvalidInput("题名不能为空")
    phrases = list(dict.fromkeys(lookup_phrase(t) for t in unique))
    if len(phrases) > MAX_TITLES:
        raise InvalidInput("一次最多定位 10 个题名", count=len(phrases))
    return parse_expression(_any_of(phrases, Field.TITLE, Match.EXACT))


def year_filter(year_from: int | None, year_to: int | None) -> dict[str, Any]:
    """The ControlGroup child for a publication-year range (site-rules.md §1.3; Operator is the NUMBER 7)."""
    item = {
        "Key": ".tit-date-box",
        "Title": "发表时间",
        "Logic": 0,
        "Field": "PT",
        "Operator": 7,
        "Value": f"{year_from:04d}-01-01" if year_from else "",
        "Value2": f"{year_to:04d}-12-31" if year_to else "",
        "options": {},
    }
    return {"Key": ".tit-date-box", "Title": "发表时间", "Logic": 0, "Items": [item], "ChildItems": []}
