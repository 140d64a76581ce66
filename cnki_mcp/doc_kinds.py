"""Document kinds as people write them and the CNKI document types each names: the one table that
a question's wish for a document type (`query/written.py`), search_library's `document_types`
(`pipeline/library.py`) and a reference's thesis genre (`cite/refparse.py`) read."""

from __future__ import annotations

import re
from collections.abc import Iterable

DOCTORAL = "博士"
MASTER = "硕士"
THESES = "学位论文"  # CNKI's word (some lists' label) for every thesis: both levels
LEVELS = (MASTER, DOCTORAL)  # the levels THESES names, in the order a question's wish lists them

# The names CNKI and GB/T 7714 give a thesis of one level (博士学位论文), and the ones people write most
THESIS_NAMES = {DOCTORAL: ("博士学位论文", "博士论文"), MASTER: ("硕士学位论文", "硕士论文")}
# Names of both levels: what people write (硕博论文) and CNKI's own (中国优秀博硕士学位论文全文数据库)
BOTH_LEVEL_NAMES = (
    "硕博士学位论文", "硕博学位论文", "硕博士论文", "硕博论文",
    "博硕士学位论文", "博硕学位论文", "博硕士论文", "博硕论文",
)  # fmt: skip
# Chinese names of a kind -> CNKI's document type (THESES: both levels)
WRITTEN_NAMES: dict[str, str] = {
    **{name: level for level, names in THESIS_NAMES.items() for name in names},
    **dict.fromkeys((*BOTH_LEVEL_NAMES, THESES), THESES),
    "期刊论文": "期刊", "期刊文章": "期刊", "会议论文": "会议", "报纸文章": "报纸",
    # CNKI's own tab label for journals; foreign-language papers, which CNKI lists as 外文期刊
    "学术期刊": "期刊", "学术期刊论文": "期刊", "外文文献": "外文期刊", "英文文献": "外文期刊",
    "外文期刊论文": "外文期刊", "英文期刊论文": "外文期刊",
}  # fmt: skip
# English names (lower case, singular, and the plurals naming both thesis levels) -> CNKI's type
ENGLISH_NAMES: dict[str, str] = {
    "journal": "期刊", "article": "期刊", "journal article": "期刊", "foreign journal": "外文期刊",
    "doctoral": DOCTORAL, "phd": DOCTORAL, "dissertation": DOCTORAL, "doctoral dissertation": DOCTORAL,
    "doctoral thesis": DOCTORAL, "phd thesis": DOCTORAL, "phd dissertation": DOCTORAL,
    "master": MASTER, "masters": MASTER, "master's": MASTER, "thesis": MASTER, "master thesis": MASTER,
    "master's thesis": MASTER, "masters thesis": MASTER,
    # plural and unqualified, as a question's wish reads them: both levels
    "theses": THESES, "dissertations": THESES,
    "conference": "会议", "proceedings": "会议", "conference paper": "会议", "newspaper": "报纸",
    "yearbook": "年鉴", "book": "图书", "standard": "标准", "patent": "专利",
}  # fmt: skip
KIND_ALIASES: dict[str, str] = WRITTEN_NAMES | ENGLISH_NAMES


def names_pattern(names: Iterable[str]) -> str:
    """A regex alternation of `names`, the longest first (博硕士学位论文 before 硕士学位论文)."""
    return "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))


def cnki_types(kind: str) -> tuple[str, ...]:
    """The CNKI types a document type stands for: THESES is both levels, any other itself."""
    return LEVELS if kind == THESES else (kind,)
