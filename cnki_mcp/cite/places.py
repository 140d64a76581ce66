"""Degree-granting institution -> city, for the `出版地` of theses (GB/T 7714-2015 `出版地: 出版者`).

CNKI shows a thesis's degree-granting institution (学位授予单位) but never its city. The
table is packaged data (docs/citations.md): `data/institution_places.tsv`, generated from
the Ministry of Education's list of institutions by scripts/gen_institution_places.py, and
`data/institution_places_extra.tsv`, hand-maintained rows for research institutes and
former names. It is read once, on the first lookup (never at import time).

Names are compared after folding full-width parentheses and spaces. A name the table
does not know is tried again (1) with a trailing parenthesised part removed when that part
names a city (`华北电力大学(保定)` -> 保定, the campus), and (2) without it otherwise
(`中国科学院大学(中国科学院物理研究所)` -> 中国科学院大学 -> 北京: the degree and the thesis
are the university's).
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

_TABLES = ("institution_places.tsv", "institution_places_extra.tsv")
_TRAILING_PAREN = re.compile(r"^(?P<base>.+?)\((?P<inner>[^()]+)\)$")


def fold(name: str) -> str:
    """The comparison form of an institution name: ASCII parentheses, no spaces."""
    return re.sub(r"\s+", "", name).replace("（", "(").replace("）", ")")


def parse_table(text: str) -> dict[str, str]:
    """`name<TAB>city[<TAB>basis]` lines; `#` starts a comment line."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, city = line.split("\t")[:2]
        out[fold(name)] = city.strip()
    return out


@cache
def _table() -> dict[str, str]:
    folder = resources.files("cnki_mcp.cite") / "data"
    merged: dict[str, str] = {}
    for name in _TABLES:
        merged.update(parse_table((folder / name).read_text(encoding="utf-8")))
    return merged


@cache
def _cities() -> frozenset[str]:
    return frozenset(_table().values())


def table_size() -> int:
    return len(_table())


def institution_city(name: str | None) -> str | None:
    """The city of a degree-granting institution, or None when the table does not know it."""
    if not name:
        return None
    key = fold(name)
    table = _table()
    if key in table:
        return table[key]
    m = _TRAILING_PAREN.match(key)
    if not m:
        return None
    inner = m.group("inner")
    if inner in _cities() or inner.removesuffix("市") in _cities():
        return inner.removesuffix("市")
    return table.get(m.group("base"))
