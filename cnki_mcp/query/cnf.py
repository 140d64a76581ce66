"""CNF-aware compilation: OR-sets of same-field leaves become one row value with CNKI's in-field `+`.

A concept plan is a CNF (AND over groups, OR inside a group). Expanding it to DNF multiplies the
groups' sizes (3 groups x 5 synonyms = 125 branches), so before the DNF is built every OR of
positive leaves on the same field and match is folded into one *atom*: a literal whose row value is
`a + b + c` (CNKI's in-field OR; terms quoted by `quote_value` so that their own characters are
never read as operators, DESIGN.md "Query compilation"). The DNF is then taken over atoms, so a CNF
has one branch whose items are the rows, joined by AND.

Rows hold at most 120 characters (docs/simulator.md, "In-field operators"). An atom whose value
does not fit is cut into the fewest chunks that do, and its branch is expressed as follows:

1. chunk expansion: each oversized atom becomes an OR of its chunks, i.e. its branch becomes one
   branch per chunk combination (atoms are positive: `not (a or b)` is sent as two NOT rows);
2. when that gives at most 32 branches the query stays one Subject group (the usual DNF shape);
3. up to `MAX_QUERIES` x 32 branches it is split into the fewest separate queries (Subject groups)
   whose union is the plan; the pipeline runs them as extra pages of the same channel;
4. beyond that the oversized atom stays one element: a nested group whose items are its chunks
   joined by OR (one query).

Exact-match leaves are folded only when the plain DNF would exceed 32 branches, so that every
expression that compiled before compiles to the same QueryJson as before.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from cnki_mcp.errors import QueryTooComplex
from cnki_mcp.query.expr import MAX_VALUE_CHARS, Field, Leaf, Match, Node, Op, quote_value

MAX_BRANCHES = 32
MAX_QUERIES = 4  # split queries per channel before falling back to nested chunk groups
_MAX_INTERMEDIATE = 256
_MAX_PRODUCT = 1024

TOO_MANY_BRANCHES_MESSAGE = "布尔展开超过 32 分支"
OR_SEPARATOR = " + "  # CNKI's in-field OR needs a space on both sides ("前后要空一个字节")

LOGIC_AND = 0
LOGIC_OR = 1
LOGIC_NOT = 2


@dataclass(frozen=True, slots=True)
class Lit:
    """A leaf, possibly negated; with `alts` it is an atom: value OR alt1 OR alt2 on one field."""

    field: Field
    match: Match
    value: str
    negated: bool = False
    alts: tuple[str, ...] = ()

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.field.value, self.match.value, self.value)

    @property
    def values(self) -> tuple[str, ...]:
        return (self.value, *self.alts)

    def complement(self) -> Lit:
        return Lit(self.field, self.match, self.value, not self.negated, self.alts)

    @property
    def operator(self) -> str:
        """CNKI's operator: subject always TOPRANK; phrase FUZZY; exact DEFAULT."""
        if self.field == Field.SUBJECT:
            return "TOPRANK"
        return "DEFAULT" if self.match == Match.EXACT else "FUZZY"

    @property
    def row_value(self) -> str:
        """The value as sent: quoted terms joined by the in-field OR."""
        return row_value(self.values)


def row_value(values: Sequence[str]) -> str:
    return OR_SEPARATOR.join(quote_value(v) for v in values)


def chunks(values: Sequence[str], limit: int = MAX_VALUE_CHARS) -> list[tuple[str, ...]]:
    """The values packed, in order, into the fewest row values of at most `limit` characters.

    Greedy packing is optimal here: it never starts a new chunk while the next value still fits.
    Every single quoted value fits (the parser refuses longer leaves)."""
    out: list[list[str]] = []
    length = 0
    for v in values:
        size = len(quote_value(v))
        if out and length + len(OR_SEPARATOR) + size <= limit:
            out[-1].append(v)
            length += len(OR_SEPARATOR) + size
        else:
            out.append([v])
            length = size
    return [tuple(c) for c in out]


def _with_values(lit: Lit, values: Sequence[str]) -> Lit:
    return Lit(lit.field, lit.match, values[0], lit.negated, tuple(values[1:]))


# ---------------------------------------------------------------- DNF over atoms


Conj = tuple[Lit, ...]


def _contradictory(conj: Iterable[Lit]) -> bool:
    """True when no record can satisfy the conjunction (values are independent terms)."""
    lits = list(conj)
    negated: dict[tuple[Field, Match], set[str]] = {}
    for lit in lits:
        if lit.negated:
            negated.setdefault((lit.field, lit.match), set()).update(lit.values)
    return any(
        not lit.negated and set(lit.values) <= negated.get((lit.field, lit.match), set()) for lit in lits
    )


def _conjoin(a: Conj, b: Conj) -> Conj | None:
    out = list(a)
    seen = set(a)
    for lit in b:
        if lit not in seen:
            out.append(lit)
            seen.add(lit)
    return None if _contradictory(out) else tuple(out)


def simplify(branches: Iterable[Conj | None]) -> list[Conj]:
    """Drop contradictions, duplicate branches and branches absorbed by a smaller one."""
    kept: list[Conj] = []
    sets: list[frozenset[Lit]] = []
    for b in branches:
        if b is None or _contradictory(b):
            continue
        s = frozenset(b)
        if any(other <= s for other in sets):
            continue
        keep = [i for i, other in enumerate(sets) if not s < other]
        kept = [kept[i] for i in keep]
        sets = [sets[i] for i in keep]
        kept.append(b)
        sets.append(s)
    return kept


def bound(branches: list[Conj], limit: int) -> list[Conj]:
    if len(branches) > limit:
        raise QueryTooComplex(TOO_MANY_BRANCHES_MESSAGE, branches=len(branches), max_branches=MAX_BRANCHES)
    return branches


def _disjuncts(expr: Node, negate: bool) -> list[Leaf | Node]:
    """The children of a disjunctive node, nested ORs flattened (only without negation)."""
    out: list[Leaf | Node] = []
    for item in expr.items:
        if not negate and isinstance(item, Node) and item.op == Op.OR:
            out.extend(_disjuncts(item, negate))
        else:
            out.append(item)
    return out


def atom_dnf(
    expr: Leaf | Node, negate: bool = False, *, fold_phrase: bool = True, fold_exact: bool = False
) -> list[Conj]:
    """The expression as an OR of AND-branches of atoms (bounded like the plain DNF).

    With neither fold flag it is the plain literal DNF."""
    if isinstance(expr, Leaf):
        return [(Lit(expr.field, expr.match, expr.value, negate),)]
    kw = {"fold_phrase": fold_phrase, "fold_exact": fold_exact}
    if expr.op == Op.NOT:
        return atom_dnf(expr.items[0], not negate, **kw)
    conjunctive = (expr.op == Op.AND) != negate
    if not conjunctive:
        folded: dict[tuple[Field, Match], list[str]] = {}
        parts: list[list[Conj]] = []
        slots: list[tuple[Field, Match] | None] = []
        for item in _disjuncts(expr, negate):
            if (
                isinstance(item, Leaf)
                and not negate
                and (fold_exact if item.match == Match.EXACT else fold_phrase)
            ):
                key = (item.field, item.match)
                if key not in folded:
                    folded[key] = []
                    slots.append(key)
                    parts.append([])
                if item.value not in folded[key]:
                    folded[key].append(item.value)
                continue
            slots.append(None)
            parts.append(atom_dnf(item, negate, **kw))
        out: list[Conj] = []
        for slot, part in zip(slots, parts, strict=True):
            if slot is None:
                out.extend(part)
            else:
                values = folded[slot]
                out.append((Lit(slot[0], slot[1], values[0], False, tuple(values[1:])),))
        return bound(simplify(out), _MAX_INTERMEDIATE)
    acc: list[Conj] = [()]
    for item in expr.items:
        part = atom_dnf(item, negate, **kw)
        if len(acc) * len(part) > _MAX_PRODUCT:
            raise QueryTooComplex(TOO_MANY_BRANCHES_MESSAGE, max_branches=MAX_BRANCHES)
        acc = bound(simplify(_conjoin(a, b) for a in acc for b in part), _MAX_INTERMEDIATE)
    return acc


# ---------------------------------------------------------------- rows and Subject groups


def _item(lit: Lit) -> dict[str, Any]:
    return {
        "Key": "mcp",
        "Title": lit.field.value,
        "Logic": LOGIC_NOT if lit.negated else LOGIC_AND,
        "Field": lit.field.code,
        "Operator": lit.operator,
        "Value": lit.row_value,
        "Value2": "",
        "options": {},
    }


def _group(
    items: list[dict[str, Any]], index: int, children: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {
        "Key": "mcp",
        "Title": "",
        "Logic": LOGIC_AND if index == 0 else LOGIC_OR,
        "Items": items,
        "ChildItems": children or [],
    }


def subject_group(groups: list[dict[str, Any]]) -> dict[str, Any]:
    return {"Key": "Subject", "Title": "", "Logic": LOGIC_AND, "Items": [], "ChildItems": groups}


def _fits(lit: Lit) -> bool:
    return len(lit.row_value) <= MAX_VALUE_CHARS


def _ordered(conj: Sequence[Lit]) -> tuple[Lit, ...]:
    return tuple(lit for lit in conj if not lit.negated) + tuple(lit for lit in conj if lit.negated)


def _expanded(branch: Sequence[Lit]) -> list[tuple[Lit, ...]]:
    """Strategy 1: every oversized atom cut into chunks, multiplying the branch."""
    fixed: list[Lit] = []
    choices: list[list[Lit]] = []
    for lit in branch:
        if _fits(lit):  # negated literals always fit: atoms are only ever positive
            fixed.append(lit)
        else:
            choices.append([_with_values(lit, c) for c in chunks(lit.values)])
    if not choices:
        return [_ordered(fixed)]
    return [_ordered([*combo, *fixed]) for combo in itertools.product(*choices)]


def _nested_group(branch: Sequence[Lit], index: int) -> dict[str, Any]:
    """Strategy 4: oversized atoms become child groups of chunk items joined by OR.

    A level's first element has its Logic ignored (docs/simulator.md, "Query semantics"), and
    Items come before ChildItems; so when no positive row fits in Items, the NOT rows move after
    the chunk groups, each as a child group with Logic 2 (AND NOT)."""
    fitting = [lit for lit in _ordered(branch) if _fits(lit)]
    children: list[dict[str, Any]] = []
    for lit in branch:
        if not _fits(lit):
            parts = [_item(_with_values(lit, c)) for c in chunks(lit.values)]
            for i, part in enumerate(parts):
                part["Logic"] = LOGIC_AND if i == 0 else LOGIC_OR
            children.append({"Key": "mcp", "Title": "", "Logic": LOGIC_AND, "Items": parts, "ChildItems": []})
    if any(not lit.negated for lit in fitting):
        return _group([_item(lit) for lit in fitting], index, children)
    for lit in fitting:  # only NOT rows fit: each becomes an AND NOT group after the chunk groups
        row = _item(lit) | {"Logic": LOGIC_AND}
        children.append({"Key": "mcp", "Title": "", "Logic": LOGIC_NOT, "Items": [row], "ChildItems": []})
    return _group([], index, children)


Split = Literal["none", "expanded", "queries", "nested"]
"""How rows over 120 characters were sent: none needed; strategies 1-2; 3; 4."""


@dataclass(frozen=True, slots=True)
class Layout:
    """The Subject groups of one compiled expression: one per query, their union is the expression."""

    subjects: list[dict[str, Any]]
    branches: int  # branch groups over all subjects
    split: Split


def _expansion_size(branch: Sequence[Lit]) -> int:
    return math.prod(len(chunks(lit.values)) for lit in branch if not _fits(lit))


def layout(branches: Sequence[Conj]) -> Layout:
    """Rows for the atom branches (see the module docstring for the four strategies)."""
    oversized = any(not _fits(lit) for b in branches for lit in b)
    if sum(_expansion_size(b) for b in branches) > MAX_BRANCHES * MAX_QUERIES:
        groups = [_nested_group(b, i) for i, b in enumerate(branches)]
        return Layout([subject_group(groups)], len(branches), "nested")
    expanded = [b for branch in branches for b in _expanded(branch)]
    if len(expanded) <= MAX_BRANCHES:
        groups = [_group([_item(lit) for lit in b], i) for i, b in enumerate(expanded)]
        return Layout([subject_group(groups)], len(expanded), "none" if not oversized else "expanded")
    # more than 32 and at most MAX_QUERIES x 32 branches: the fewest queries of 32 branches each
    subjects = []
    for start in range(0, len(expanded), MAX_BRANCHES):
        part = expanded[start : start + MAX_BRANCHES]
        subjects.append(subject_group([_group([_item(lit) for lit in b], i) for i, b in enumerate(part)]))
    return Layout(subjects, len(expanded), "queries")
