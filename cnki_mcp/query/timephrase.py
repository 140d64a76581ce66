"""Publication-time phrases in a research question -> a year range (DESIGN.md §Modules, `query/`).

`extract_years(text, now_year)` finds phrases such as 2020年以来, 近五年, 2019—2023年, 2015年以前,
今年 and returns the text with each phrase replaced by a space plus the year range they ask for.
The current year is passed in: this package never reads the clock.

Rules, tried in this order (one range per question: the first phrase found wins; any other time
phrase is removed from the text all the same):
- `A—B年` / `A年至B年` / `A到B年` / `(从)A年开始到B年` (any dash, 至, 到, ~): year_from A, year_to B
  (swapped if reversed);
- `A年以来` / `自A年` / `从A年开始` / `A年至今|迄今|到现在|到目前` / `A年以后|之后|后|起` (a `至今`
  after them is part of the phrase; `A年及以后` too): year_from A (also `A年代以来`, a decade from its
  first year, and `A年底|年初|上半年…以来`, from that year); `A年以来至B年`: the range A–B;
- `A年以前|之前|前`: year_to A − 1; `A年及以前|及之前`: year_to A; `截至A年` / `截止(到)A年(底)` /
  `到|至|直到A年为止`: year_to A (a bare `到A年` names a target and stays in the topic);
- `A年前后|左右` is around A, no range: `A年` stays in the topic as a bare year does;
- `近N年` / `最近N年` / `过去N年` (N in digits or Chinese numerals, or a span `3-5`, `三到五`: its
  larger end; two numerals side by side, `两三` / `三五`, a span too; `十余` / `十多` / `十来` / `十几`:
  N + 5, 15; `四十多`: 45): year_from now − N — the N full years before the current one plus the current,
  partial year; `近半年`: year_from now − 1 (the window always holds the last six months);
- `A年发表|刊发|刊登|刊载(的)` / `发表|刊发|刊登|刊载于|在A年`: that single year, as English `published in A`
  (a range or 以来 phrase around it is read by the rules above first: `2020—2022年发表的`);
- `今年` / `去年`: that single year; `近年来` / `近年` / `近几年` / `这几年` / `近些年` give no range
  and are removed as boilerplate.
The same in English, case-insensitive, whole words (an English question, or a Chinese one with an
English time phrase):
- `from A to|until|through B`, `between A and B`: year_from A, year_to B; a bare `A to|through|until B`
  only at the question's start or end (punctuation aside), a dash `A–B` anywhere (as 2015—2020年),
  neither after a capitalised word, which names a product or an edition (`green finance 2015 to
  2020` is a range; `SQL Server 2008 to 2012 upgrade`, `Five-Year Plan 2016–2020` are topics); a bare `A and B` is two years of the topic, never
  a range (`Beijing Olympics 2008 and 2022`);
- `published in|during A`: that single year (a bare `in 2020` stays in the topic, as 2008年 does);
- `since A`, `from A (on|onwards)`, `A onwards`: year_from A; `after A`: year_from A + 1;
- `before|prior to A`: year_to A − 1; `until|up to|through A`: year_to A, unless a year stands just
  before it (`Windows 2000 through 2003`: the bare range a name refused);
- `(in|over|during|within) the last|past|previous N years` (N in digits or one … twenty):
  year_from now − N, as 近N年 (`the last|past year`: N = 1); `this year`: the current year; `last year` (without `the`): the year
  before; `in recent years`, `recently` give no range and are removed. None of these is read when
  `of` or a possessive `'s` follows (`in the last year of life`, `the last five years of the Qing`,
  `last year's policy`: the topic) or a possessive determiner precedes (`in their last year`).
A year after `now_year` is a target in the topic (2030年前碳达峰), never a publication filter, so it
is left in the text; a bare `2008年` (no range word) is part of the topic too.
"""

from __future__ import annotations

import re
from typing import NamedTuple

_YEAR = r"((?:19|20)\d{2})"
_DASH = r"\s*(?:[-‐‑‒–—―~～]+|至|到)\s*"
_NUM = r"([0-9]{1,2}|[一二两三四五六七八九十]{1,3})"

# `2015年前后` / `2020年左右`: around that year (the 2015 crash), no window: the year stays in the topic
_AROUND_RE = re.compile(rf"{_YEAR}\s*年\s*(?:前后|左右)")
# 底 / 末 / 止 after a year end the phrase only where no word goes on (2020年底的, 2020年止，): in
# 2020年底层民众, 2020年止咳药物, 2020年末梢 they begin the next word
_WORD_ENDS = r"(?=的|[^\u4e00-\u9fff]|$)"
_YEAR_END = r"(?:(?:底|末)(?=为止|止|的|[^\u4e00-\u9fff]|$))?"
_UNTIL_END = rf"(?:为止|止{_WORD_ENDS})"
_RANGE_RE = re.compile(
    rf"(?:从|自)?{_YEAR}\s*年?(?:以来|起|开始)?{_DASH}{_YEAR}\s*年?{_YEAR_END}(?:间|期间|{_UNTIL_END})?"
)
_UNTIL_NOW = r"(?:以来|至今|迄今|到现在|至现在|到今天|到目前为止|到目前|至目前|以后|之后"
# a part of the year before 以来 (2019年底以来, 2020年上半年以来) and 至今 after 以后/起 (2015年起至今)
_YEAR_WORD = r"(?:年代|年(?:底|末|初|上半年|下半年)?)"
_STILL = r"(?:\s*(?:至今|迄今|到现在|到目前为止|到目前|以来))?"
_SINCE_RE = re.compile(
    rf"(?:从|自){_YEAR}\s*{_YEAR_WORD}?(?:开始)?{_UNTIL_NOW}|起|来)?{_STILL}"
    rf"|{_YEAR}\s*{_YEAR_WORD}?\s*及?\s*{_UNTIL_NOW}|后|起){_STILL}"
)
_BEFORE_RE = re.compile(rf"{_YEAR}\s*年?\s*(?:以前|之前|前)")
_UP_TO_RE = re.compile(rf"{_YEAR}\s*年?\s*及\s*(?:其)?(?:以前|之前)")
# 截至2023年 / 截止到2020年底 / 到2023年为止: up to that year. A bare 到|至 YEAR年 without 为止|止 is
# left alone: 到2020年全面建成小康社会 names a target, not a publication window.
_UNTIL_CN_RE = re.compile(
    rf"(?:截至|截止(?:到|至)?)\s*{_YEAR}\s*年?{_YEAR_END}\s*{_UNTIL_END}?"
    rf"|(?:直到|到|至)\s*{_YEAR}\s*年?{_YEAR_END}\s*{_UNTIL_END}"
)
# 近两三年 / 近三五年: two numerals side by side are a span (its larger end); 近十余年 / 近十多年 /
# 近十来年 / 近四十几年: more than N, read as N + 5 (十余年: 15, 四十多年: 45; under ten N + 1)
_RECENT_RE = re.compile(
    rf"(?:近|最近|过去|近来)\s*(?:[0-9一二两三四五六七八九十]{{1,3}}\s*(?:[-~～‐‑–—]|到|至)\s*)?{_NUM}"
    r"\s*([余多来几])?\s*(?:个)?\s*年(?:来|间|内|以来)?"
)
# 2023年发表的 / 发表于2023年: published that year (not after another year or a dash: the end of a
# range the range rule did not read is no single year)
_PUBLISHED = r"(?:发表|刊发|刊登|刊载)"
_PUBLISHED_IN_RE = re.compile(
    rf"(?<![0-9年\-‐‑‒–—―~～至到])\s*{_YEAR}\s*年\s*{_PUBLISHED}(?:的)?|{_PUBLISHED}(?:于|在)\s*{_YEAR}\s*年(?:的)?"
)
_HALF_YEAR_RE = re.compile(r"(?:近|最近|过去)\s*半\s*年(?:来|间|内|以来)?")
_THIS_YEAR_RE = re.compile(r"今年(?:以来)?")
_LAST_YEAR_RE = re.compile(r"去年(?:以来)?")
# Vague time words (no window). A 年 word is one only where 年 ends it: 这些年轻人, 这几年级学生,
# 附近年龄 hold 年 inside another word (年轻, 年级, 年龄 ...). 来/以来 after it is part of the phrase
# (这些年来农村... left 来农村). 最近 is "nearest" as well as "recently": never inside a term of
# that sense (K最近邻, 最近邻插值, 迭代最近点, 最近公共祖先, 最近发展区) nor right after a Latin
# letter or digit (k-最近邻).
_YEAR_INSIDE_WORD = "轻级龄纪代度份鉴会画薪终报限均化华"
_NEAREST_SENSE = "邻|点|公共|祖先|发展区|距离|似|插值|匹配|中心"
_VAGUE_RE = re.compile(
    r"(?:(?<!附)近几十年|最近几十年|最近几年|最近些年|(?<!附)近几年|这几年|这些年|(?<!附)近些年|(?<!附)近年)"
    rf"(?![{_YEAR_INSIDE_WORD}])(?:以来|来)?"
    rf"|(?<!附)近期|(?<![A-Za-z0-9_-])最近(?!\s*(?:{_NEAREST_SENSE}))"
)

_EN_WORDS = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen"
_EN_WORDS += " sixteen seventeen eighteen nineteen twenty"
_EN_NUMBERS = {word: n for n, word in enumerate(_EN_WORDS.split(), 1)}
_EN_NUM = rf"(\d{{1,2}}|{'|'.join(_EN_NUMBERS)})"
_EN_TO = r"\s*(?:[-‐‑‒–—―~～]+|\b(?:to|until|till|through|thru)\b)\s*"
_I = re.IGNORECASE
# `from A to B` / `between A and B` anywhere; a bare `A to B` only at the question's start or end
# and not after a capitalised word (`_NAME_BEFORE_RE`: a product or edition, SQL Server 2008 to 2012)
_EN_RANGE_RE = re.compile(
    rf"\b(?:from\s+{_YEAR}{_EN_TO}|between\s+{_YEAR}\s*(?:[-‐‑‒–—―~～]+|\band\b)\s*){_YEAR}\b", _I
)
_EN_BARE_RANGE_RE = re.compile(rf"\b{_YEAR}{_EN_TO}{_YEAR}\b", _I)
_EDGE = " \t\u3000.?!。？！,，;；:：()（）"
_NAME_BEFORE_RE = re.compile(r"\b[A-Z][a-z][\w.-]*\s*$")
_YEAR_BEFORE_RE = re.compile(r"\b(?:19|20)\d{2}\s*$")
# not a time window when `of` / a possessive follows (the last year of life, last year's policy)
# or a possessive determiner precedes (in their last year)
_EN_NOT_WINDOW = r"(?!\s+of\b|['’]s\b)"
_EN_NOT_THEIRS = r"(?<!\btheir )(?<!\bhis )(?<!\bher )(?<!\bits )(?<!\bour )(?<!\bmy )(?<!\byour )"
_EN_SINCE_RE = re.compile(
    rf"\b(?:since\s+(?:the\s+year\s+)?{_YEAR}|from\s+{_YEAR}(?:\s+(?:on|onwards?))?|{_YEAR}\s+onwards?)\b", _I
)
_EN_AFTER_RE = re.compile(rf"\bafter\s+{_YEAR}\b", _I)
_EN_BEFORE_RE = re.compile(rf"\b(?:before|prior\s+to)\s+{_YEAR}\b", _I)
_EN_UNTIL_RE = re.compile(rf"\b(?:until|till|up\s+to|through)\s+{_YEAR}\b", _I)
_EN_RECENT_RE = re.compile(
    rf"\b(?:(?:in|over|during|within|for)\s+)?(?:the\s+)?(?:last|past|previous|recent)\s+{_EN_NUM}\s+years?\b"
    + _EN_NOT_WINDOW,
    _I,
)
_EN_PAST_YEAR_RE = re.compile(
    r"\b(?:(?:in|over|during|within)\s+)?the\s+(?:last|past|previous)\s+year\b" + _EN_NOT_WINDOW, _I
)
_EN_PUBLISHED_IN_RE = re.compile(rf"\bpublished\s+(?:in|during)\s+{_YEAR}\b", _I)
_EN_THIS_YEAR_RE = re.compile(r"\bthis\s+year\b" + _EN_NOT_WINDOW, _I)
_EN_LAST_YEAR_RE = re.compile(_EN_NOT_THEIRS + r"(?<!\bthe )\b(?:last|previous)\s+year\b" + _EN_NOT_WINDOW, _I)
_EN_VAGUE_RE = re.compile(
    r"\b(?:(?:in|over|during)\s+)?(?:the\s+)?recent\s+(?:years|decades?)\b|\brecently\b", _I
)

_DIGITS = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}


class YearRange(NamedTuple):
    """The question text without its time phrases, and the range they ask for (None = open)."""

    text: str
    year_from: int | None
    year_to: int | None


def chinese_number(text: str) -> int | None:
    """1–99 written in digits or Chinese numerals (五, 十, 十五, 二十, 两); None otherwise."""
    if text.isdigit():
        return int(text)
    if "十" not in text:
        return _DIGITS.get(text) if len(text) == 1 else None
    head, _, tail = text.partition("十")
    tens = 1 if not head else _DIGITS.get(head)
    ones = 0 if not tail else _DIGITS.get(tail)
    if tens is None or ones is None or len(head) > 1 or len(tail) > 1:
        return None
    return tens * 10 + ones


def _numeral_span(text: str) -> int | None:
    """The larger end of two Chinese numerals side by side, 两三 / 三五 / 七八: 3 / 5 / 8."""
    if len(text) != 2:
        return None
    low, high = (_DIGITS.get(c) for c in text)
    return high if low and high and low < high <= low + 2 else None


def extract_years(text: str, now_year: int) -> YearRange:
    """Remove publication-time phrases from `text` and return the year range they ask for."""
    found: list[tuple[int, int | None, int | None]] = []  # (position, from, to)

    def cut(pattern: re.Pattern[str], decide: object) -> None:
        nonlocal text

        def repl(m: re.Match[str]) -> str:
            got = decide(m)  # type: ignore[operator]
            if got is None:
                return m.group(0)
            found.append((m.start(), *got))
            return " "

        text = pattern.sub(repl, text)

    def past(year: int) -> bool:
        return year <= now_year

    def by_range(m: re.Match[str]) -> tuple[int, int] | None:
        a, b = (int(g) for g in m.groups() if g)
        a, b = min(a, b), max(a, b)
        return (a, b) if past(a) else None

    def by_bare_range(m: re.Match[str]) -> tuple[int, int] | None:
        return None if _NAME_BEFORE_RE.search(m.string, 0, m.start()) else by_range(m)

    def by_edge_range(m: re.Match[str]) -> tuple[int, int] | None:
        edge = not m.string[: m.start()].strip(_EDGE) or not m.string[m.end() :].strip(_EDGE)
        return by_bare_range(m) if edge else None

    def by_since(m: re.Match[str]) -> tuple[int, None] | None:
        year = int(m.group(1) or m.group(2))
        return (year, None) if past(year) else None

    def by_since_en(m: re.Match[str]) -> tuple[int, None] | None:
        year = int(next(g for g in m.groups() if g))
        return (year, None) if past(year) else None

    def by_before(m: re.Match[str]) -> tuple[None, int] | None:
        year = int(m.group(1))
        return (None, year - 1) if past(year) else None

    def by_up_to(m: re.Match[str]) -> tuple[None, int] | None:
        year = int(m.group(1))
        return (None, year) if past(year) else None

    def by_recent(m: re.Match[str]) -> tuple[int, None] | None:
        n = chinese_number(m.group(1)) or _numeral_span(m.group(1))
        if not n:
            return None
        return (now_year - (n + (5 if n >= 10 else 1) if m.group(2) else n), None)

    def by_up_to_any(m: re.Match[str]) -> tuple[None, int] | None:
        year = int(m.group(1) or m.group(2))
        return (None, year) if past(year) else None

    def by_published(m: re.Match[str]) -> tuple[int, int] | None:
        year = int(m.group(1) or m.group(2))
        return (year, year) if past(year) else None

    def by_after(m: re.Match[str]) -> tuple[int, None] | None:
        year = int(m.group(1))
        return (year + 1, None) if year < now_year else None

    def by_until(m: re.Match[str]) -> tuple[None, int] | None:
        # `YEAR through YEAR` left by the range rules (after a name: Windows 2000 through 2003) is
        # the name's versions, not a publication window ending at the second
        if _YEAR_BEFORE_RE.search(m.string, 0, m.start()):
            return None
        year = int(m.group(1))
        return (None, year) if past(year) else None

    def by_recent_en(m: re.Match[str]) -> tuple[int, None] | None:
        word = m.group(1).lower()
        n = int(word) if word.isdigit() else _EN_NUMBERS[word]
        return (now_year - n, None) if n else None

    text = _AROUND_RE.sub(lambda m: m.group(1) + "年", text)
    cut(_EN_PUBLISHED_IN_RE, lambda m: (int(m.group(1)), int(m.group(1))) if past(int(m.group(1))) else None)
    cut(_EN_RANGE_RE, by_range)
    cut(_EN_BARE_RANGE_RE, by_edge_range)
    cut(_RANGE_RE, by_bare_range)
    cut(_EN_SINCE_RE, lambda m: by_since_en(m))
    cut(_SINCE_RE, by_since)
    cut(_EN_AFTER_RE, by_after)
    cut(_EN_BEFORE_RE, by_before)
    cut(_UP_TO_RE, by_up_to)
    cut(_BEFORE_RE, by_before)
    cut(_UNTIL_CN_RE, lambda m: by_up_to_any(m))
    cut(_PUBLISHED_IN_RE, by_published)
    cut(_EN_UNTIL_RE, by_until)
    cut(_EN_RECENT_RE, by_recent_en)
    cut(_EN_PAST_YEAR_RE, lambda m: (now_year - 1, None))
    cut(_RECENT_RE, by_recent)
    cut(_HALF_YEAR_RE, lambda m: (now_year - 1, None))
    cut(_EN_THIS_YEAR_RE, lambda m: (now_year, now_year))
    cut(_EN_LAST_YEAR_RE, lambda m: (now_year - 1, now_year - 1))
    text = _EN_VAGUE_RE.sub(" ", text)
    cut(_THIS_YEAR_RE, lambda m: (now_year, now_year))
    cut(
        _LAST_YEAR_RE,
        lambda m: (now_year - 1, now_year - 1) if "以来" not in m.group(0) else (now_year - 1, None),
    )
    text = _VAGUE_RE.sub(" ", text)
    if not found:
        return YearRange(text, None, None)
    _, year_from, year_to = found[0]
    return YearRange(text, year_from, year_to)
