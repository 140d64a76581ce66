"""Quantities, sample counts and temperatures in a research question (DESIGN.md §Modules, `query/segment.py`).

A quantity narrows the concept written after it and is no concept of its own: 60岁以上老年人,
3-6岁儿童, 超过60岁老年人, 6个月以下婴儿, 5%葡萄糖. A percentage that names nothing after it (超过5%的股权质押,
资产负债率超过70%的企业) is dropped (`segment._bounded_quantities`). A temperature is one term (25℃).
"""

from __future__ import annotations

import re
from collections.abc import Callable

# A temperature (25 ℃ is 25 °C after NFKC, and ° is no term character): one term, written as Chinese
# records write it (25℃), not 25 AND C; with its sign (-20℃, 零下20℃) and as a range (25~35℃, 25-35℃,
# 25℃~35℃), no bare number left as a concept
_DEGREES = r"(?:零下|(?<![A-Za-z0-9.])[-−])?\d+(?:\.\d+)?"
TEMPERATURE_RE = re.compile(rf"((?:{_DEGREES}[ \t]?(?:°C)?[ \t]?[~\-−至到][ \t]?)?{_DEGREES}[ \t]?°C)")

# Measure words counting a sample (120例患者, 200名大学生, 3所高校, 20只大鼠): how many were studied,
# which narrows no concept a search can ask for
_COUNTS = "例|名|所|家|篇|项|只|株"
# Measure words of a quantity, the longest first (个月 before 月)
_MEASURES = (
    "周岁|个月|小时|分钟|万元|亿元|万人|微克|毫克|千克|公斤|毫升|平方米|平方公里|公里|千米|厘米|毫米"
    "|岁|级|月|年|周|天|日|次|层|倍|人|元|克|吨|米|" + _COUNTS
)
_NUMBER = r"\d+(?:\.\d+)?"
# a range of numbers (3-6岁, 3~6岁 (～ after NFKC), 3至6岁, 3到6个月)
_RANGE = rf"{_NUMBER}[ \t]?(?:[-~—–]|至|到)[ \t]?{_NUMBER}"
_PERCENT = rf"(?:{_RANGE}|{_NUMBER})[ \t]?%|百分之[零一二三四五六七八九十百两点]+"
# A number range before its measure word, or a percentage, read before a Latin run takes 3-6 as a
# name (3-6 AND 岁儿童) or % is lost (5 AND 股权质押): the range waits for the measure word after it
# as a number does; the percentage is a token of its own
QUANTITY_TOKEN_RE = re.compile(rf"({_PERCENT}|{_RANGE}(?=[ \t]?(?:{_MEASURES})))")
# Bounds written before a quantity (超过60岁, 不满18周岁, 低于5%): part of it, as 以上/以下 after it are
_LEAD_BOUNDS = (
    "不低于|不少于|不超过|不高于|不大于|不小于|不多于|超过|高于|低于|大于|小于|不足|不到|不满|未满|年满|多于|少于"
)
LEAD_BOUNDS = frozenset(_LEAD_BOUNDS.split("|"))
# A quantity written in Han text: a number (or a range) and its measure word (a Chinese numeral only
# with 级, 岁, 周岁 or 个月: 百年, 十年 are words) or a percentage, with the bound before it and the bound
# 以上/以下 (及以上) after it that `segment._bounded_quantities` joins to it (60岁, 二级以上,
# 3个月以下, 60岁及以上, 超过60岁, 3-6岁, 5%)
_QUANTITY_RE = re.compile(
    rf"(?:{_LEAD_BOUNDS})?(?:(?:{_RANGE}|{_NUMBER})(?:{_MEASURES})|[一二三四五六七八九十两]+(?:周岁|个月|[级岁])|{_PERCENT})"
    r"(?:及?以[上下])?"
)
_COUNT_RE = re.compile(rf"(?:{_LEAD_BOUNDS})?(?:{_RANGE}|{_NUMBER})(?:{_COUNTS})(?:及?以[上下])?")
_PERCENT_RE = re.compile(rf"(?:{_LEAD_BOUNDS})?(?:{_PERCENT})(?:及?以[上下])?")
_MEASURE_RE = re.compile(_MEASURES)
BOUNDS = frozenset({"以上", "以下"})


def quantity(word: str) -> bool:
    """Whether a word is a quantity (`_QUANTITY_RE`): it narrows the concept written after it
    (60岁以上老年人) and is no concept of its own (`query/plan.py`: no alternative, no half)."""
    return bool(_QUANTITY_RE.fullmatch(word))


def percentage(word: str) -> bool:
    """Whether a word is a percentage (5%, 超过70%, 百分之五): a concept only with the word it is
    written against (5%葡萄糖); alone it names nothing."""
    return bool(_PERCENT_RE.fullmatch(word))


def sample_count(word: str) -> bool:
    """Whether a word counts a sample (120例, 200名, 超过100家): no concept, and it narrows none (the
    name after it is the concept: 120例患者 is 患者)."""
    return bool(_COUNT_RE.fullmatch(word))


def measure_word(number: str, piece: str, cut: Callable[[str], list[str]]) -> str:
    """The measure word starting the Han text written right after a number or range, when the
    segmenter cut it off as a word of its own before another word (岁/老年人, 个/月/以下, 年/生存率):
    60岁老年人 is the quantity 60岁 and 老年人, not one word 60岁老年人. "" when the measure word is
    part of a longer word (年级, 次方) or a lone character follows it (周/龄/小鼠, 年/的)."""
    m = _MEASURE_RE.match(piece)
    if m is None or not quantity(number + m.group(0)) or len(piece) == m.end():
        return ""
    at = 0
    for word in cut(piece):
        at += len(word)
        if at == m.end():
            rest = piece[at:]
            return m.group(0) if len(next((w for w in cut(rest) if w.strip()), "")) > 1 else ""
        if at > m.end():
            return ""
    return ""
