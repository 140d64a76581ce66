"""Search syntax people type into a research question (DESIGN.md §Modules, `query/`).

Researchers and their AI clients write CNKI or web-search habits into the question of `search`:
`违约金 OR 违约赔偿金 酌减`, `数字经济 NOT 就业`, `机器学习 -股票`, `SU=人工智能 AND KY=教育`,
`作者：王小明`, `自然语言处理（NLP）`. Segmented as prose, the operators became concept terms (NOT
even turned the excluded word into a required concept) and field prefixes stuck to the terms.
`read_written` reads them before the question is segmented (`plan.plan_question`):

- `A OR B` (also a spaced `|`) makes the whitespace words it joins one concept group of
  alternatives; `AND` (also a spaced `*` or `&`) separates concepts; CNKI's `+` (OR) and spaced
  `-` (NOT) are read as such only in a question that also uses its `*`: elsewhere a spaced `+`
  (`人工智能 + 教育`) or dash (`数字乡村建设 - 以浙江为例`) separates concepts;
- `NOT B` or `-B` excludes B. The research search cannot exclude, so B is left out of
  the plan and the plan's warning names structured_search (`op: not`);
- a CNKI field code (`SU=`, `TI%`, `KY=` …) or a field label with a colon (`作者：`, `关键词:`) is not a
  term (also in English: `Author:`, `Title:`, `Journal:`): the prefix is removed and the warning says the field was not applied; so is a journal named
  as where the papers appeared (`发表在《管理世界》上`, `《管理世界》期刊`), which the subject search
  cannot restrict;
- `term（ACRONYM）`: a Latin acronym (5G and 5-FU too) in brackets right after a term is that term's alternative
  (`acronyms`), never a concept of its own nor part of the term; an English expansion whose words'
  initials spell the acronym (`research and development (R&D)`) is replaced by the acronym in the
  text and becomes the alternative of every term naming it (`expansions`);
- a document type or source tier asked for (`违约金酌减 博士论文`, `…的CSSCI期刊论文`) is not a concept
  (no paper's text names it): it is removed and the warning names search_library's document_types /
  source_tiers for the search's results (`wishes`). Only a wish about the results is read so: a part
  of its own (between spaces, commas or list marks) or after 的 at the question's end; a bare tier
  (CSSCI, SCI, 北大核心 …) only beside a document-type wish (SCI is also 脊髓损伤, spinal cord injury:
  `治疗急性SCI`, `SCI 康复护理`); written against the word before it without 的 (`高校SCI论文`,
  `人文社科核心期刊`, `研究生学位论文`) or at the start (`学位论文抄袭检测`) it is the topic and stays.
  Written in English (`theses on …`, `doctoral dissertations about …`, `CSSCI papers on …`, `… in
  core journals`) a wish is read wherever it stands but after `of` / `about` (`evaluation of core
  journals`, `quality of conference papers`: the topic); a tier only before journals, papers or articles.

Operators are read only as whole whitespace words in capitals (`OR`, not `or`, which English prose
uses); the text is expected NFKC-normalised (full-width brackets and colons are ASCII by then).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from cnki_mcp.doc_kinds import (
    DOCTORAL,
    ENGLISH_NAMES,
    MASTER,
    THESES,
    WRITTEN_NAMES,
    cnki_types,
    names_pattern,
)
from cnki_mcp.models import DocType
from cnki_mcp.query.expr import TIER_WORDS, unquote
from cnki_mcp.query.segment import HAN_CHAR

_OR_WORDS = frozenset({"OR", "|", "||"})
_AND_WORDS = frozenset({"AND", "*", "&", "&&"})
_NOT_WORDS = frozenset({"NOT"})
# CNKI's expert operators `+` (OR) and `-` (NOT) count as such only beside its `*` (AND): in
# Chinese prose a spaced `+` joins (`人工智能 + 教育`, the 互联网+ idiom) and a spaced `-` is a
# dash before a subtitle (`数字乡村建设 - 以浙江为例`)
_CNKI_OR, _CNKI_NOT, _CNKI_AND = "+", "-", "*"
_CODE_RE = re.compile(
    r"(?<![A-Za-z0-9])(SU|TI|KY|AB|AU|FI|RP|AF|LY|DOI|FU|FT|RF|CLC|ST|TKA|SN|YE)\s*(?:%=|=|%)\s*"
)
_LABEL_RE = re.compile(
    r"(主题|篇名|题名|标题|关键词|摘要|篇关摘|第一作者|通讯作者|作者单位|作者|单位|机构|文献来源|来源|期刊|基金|全文|参考文献|分类号"
    r"|(?<![A-Za-z])(?i:first author|authors?|title|keywords?|abstract|journal|source|affiliation|institution)"
    r"(?=\s*[:=]))\s*[:=]\s*"
)
# A journal named as where the papers appeared (发表在《管理世界》上, 《管理世界》期刊): a source
# restriction, not a topic (CNKI's 主题 does not search the source). A 《…》 without such words
# (《民法典》第585条) stays a concept.
_SOURCE_RE = re.compile(
    r"(?:发表在|发表于|刊登在|刊登于|刊载在|刊载于|刊发在|刊发于|载于)\s*《([^《》]{1,60})》(?:\s*上)?"
    r"|《([^《》]{1,60})》\s*(?:期刊|杂志)(?:\s*上)?"
    r"|《([^《》]{1,60})》\s*上(?=\s*(?:发表|刊登|刊发|刊载|的))"
)
# The acronym starts with a letter, or with a digit or two and a capital (第五代移动通信（5G）,
# 5-氟尿嘧啶（5-FU）, 三维打印（3D打印）is no acronym); years (2020), doses (100mg) and list marks (1) are none
_ACRONYM_RE = re.compile(
    r"\(\s*((?:[A-Za-z]|\d{1,2}-?[A-Z])[A-Za-z0-9\-+./]*(?: [A-Za-z0-9\-+./]+){0,3})\s*\)"
)
# A document type or source tier wished for (违约金酌减 博士论文, …的CSSCI期刊论文): the subject search
# restricts neither, and as a concept the words emptied the search (no paper's text says 博士论文).
# Read as a wish only as a part of its own or after 的 at the question's end (`read_wishes`).
_TIER = "(?:" + "|".join(TIER_WORDS) + ")"
# the kinds as written (博士学位论文, 硕博论文, 期刊论文: doc_kinds.WRITTEN_NAMES)
_KIND = f"(?:{names_pattern(WRITTEN_NAMES)})"
# a tier standing alone, without 期刊/论文 after it: not EI nor 核心 (common in other words)
_BARE_TIER_RE = re.compile("|".join(t for t in TIER_WORDS if t not in ("EI", "核心")))
_WISH = rf"(?:{_TIER}(?:来源)?(?:期刊论文|期刊|论文|文章)|{_KIND}|{_BARE_TIER_RE.pattern})"
_ASKING = r"(?:有哪些|有什么)?"
_SEPARATORS = r"\s,，、;；"
_WISH_PART_RE = re.compile(rf"({_WISH})\s*{_ASKING}")
_WISH_END_RE = re.compile(
    rf"(?:(?:相关|方面)?的|(?<=[{_SEPARATORS}]))\s*({_WISH})\s*{_ASKING}[\s。？?！!.，,、;；]*$"
)
# A wish asked for in a part of its own at the question's end (…，要SCI的; …，最好是CSSCI的; …，只看核心期刊;
# …，最好是CSSCI或北大核心的): the asking words say it is a wish, so a bare tier counts on its own here
_WISH_ASKED_RE = re.compile(
    rf"(?<=[{_SEPARATORS}])\s*(?:最好是|最好|要求是|只要|只看|主要看|需要|要|仅限于?|限于?)\s*"
    r"(?:[\u4e00-\u9fff]{1,4}?[学类])?"  # a discipline the topic already names (主要看法学核心期刊)
    rf"({_WISH}(?:\s*(?:或者|或是|或|和|及|与|、|/)\s*{_WISH})*)"
    rf"(?:的|上的)?(?:文献|论文|文章)?\s*[\s。？?！!.，,、;；]*$"
)
_WISH_RE = re.compile(_WISH)
_PART_RE = re.compile(rf"[^{_SEPARATORS}]+")
_TYPE_NAMES = frozenset(t.value for t in DocType)
_TIER_NAMES = {"中文核心": "北大核心", "南大核心": "CSSCI", "C刊": "CSSCI来源期刊"}  # 核心 alone is any core list (rank.tier_matches: 北大核心, CSSCI, CSCD, AMI核心 …)
# The same wishes written in English (theses on …, CSSCI papers on …, … in core journals): read
# wherever they stand, a document type always, a tier only before journals / papers / articles.
_EN_WISH_RE = re.compile(
    r"\b(?:(?P<tier>CSSCI|SSCI|SCI-?E?|CSCD|EI|core)(?:[- ](?:indexed|listed|source))?\s+"
    r"(?P<tkind>journals?|(?:journal\s+)?(?:papers|articles))"
    r"|(?P<degree>masters?(?:['’]s?)?|doctoral|doctorate|ph\.?d\.?)\s+(?:theses|thesis|dissertations?)"
    r"|(?P<kind>theses|dissertations|journal\s+(?:articles|papers)|conference\s+(?:papers|proceedings)"
    r"|newspaper\s+articles))(?![\w-])",
    re.IGNORECASE,
)
# `of` / `about` before an English wish makes it the topic (evaluation of core journals, quality of
# conference papers), as 的 before a Chinese one at the question's end does not
_EN_TOPIC_BEFORE_RE = re.compile(
    r"\b(?:of|about|regarding|concerning)\s+(?:(?:the|these|those|their|its|such)\s+)?$", re.IGNORECASE
)
_EDGE = " \t\u3000,;:.?!，、；：。？！\"'“”‘’()（）【】《》「」『』"


@dataclass(frozen=True, slots=True)
class Written:
    """The question read for typed syntax.

    `parts`: in order, text to plan as before (str) and OR alternatives (tuple, one group each);
    `excluded`: words after NOT / `-`; `fields`: field prefixes removed (SU=, 作者:);
    `acronyms`: (text before the bracket, acronym) pairs, the acronym being an alternative of the
    concept that text ends with; `wishes`: document types and source tiers asked for (博士论文,
    CSSCI期刊), which the research search cannot restrict; `expansions`: (acronym, its English
    expansion) for an expansion written before the bracketed acronym (`research and development
    (R&D)`): the text keeps the acronym in its place, the plan adds the expansion as an alternative."""

    parts: list[str | tuple[str, ...]]
    excluded: list[str] = field(default_factory=list)
    fields: list[str] = field(default_factory=list)
    acronyms: list[tuple[str, str]] = field(default_factory=list)
    wishes: list[str] = field(default_factory=list)
    expansions: list[tuple[str, str]] = field(default_factory=list)


def _clean(word: str) -> str:
    return unquote(word.strip(_EDGE)).strip(_EDGE)


def _excluded_word(token: str) -> str | None:
    """`-股票` / `-stock`: the excluded word, else None (`-1`, `--`, `-` alone are not exclusions)."""
    if len(token) > 1 and token[0] == "-" and (HAN_CHAR.match(token[1]) or token[1].isalpha()):
        return token[1:]
    return None


def _has_topic(text: str) -> bool:
    return any(HAN_CHAR.match(ch) or ch.isalnum() for ch in text)


def read_wishes(text: str) -> tuple[str, list[str]]:
    """The question without the document types and source tiers it asks for, and those wishes.

    A wish is a part of its own (between spaces, commas or list marks: `违约金酌减 博士论文`) or
    follows 的 at the question's end (`…的CSSCI期刊论文有哪些`); a bare tier (CSSCI, SCI, 北大核心)
    counts only when a wish naming a document type is found too (`违约金酌减 期刊论文 CSSCI`), since
    alone it may be the topic (SCI: spinal cord injury). English wishes (`_EN_WISH_RE`: theses,
    doctoral dissertations, journal articles, CSSCI papers, core journals) are read wherever they
    stand, except after `of` / `about` (`evaluation of core journals`: the topic). Nothing is taken
    that would leave no topic."""
    written = text
    found: list[tuple[int, int, str]] = [
        (m.start(), m.end(), m.group(0))
        for m in _EN_WISH_RE.finditer(text)
        if not _EN_TOPIC_BEFORE_RE.search(text, 0, m.start())
    ]
    for start, end, _ in found:  # (start, end, wish): the English ones first, blanked for the rest
        text = text[:start] + " " * (end - start) + text[end:]
    rest = text
    asked = False
    if (m := _WISH_ASKED_RE.search(rest)) and _has_topic(rest[: m.start()]):
        found.extend((m.start(), len(rest), wish) for wish in _WISH_RE.findall(m.group(1)))
        rest, asked = rest[: m.start()], True
    while (m := _WISH_END_RE.search(rest)) and _has_topic(rest[: m.start()]):
        found.append((m.start(), len(rest), m.group(1)))
        rest = rest[: m.start()]
    for part in _PART_RE.finditer(rest):
        whole = _WISH_PART_RE.fullmatch(part.group(0).strip(_EDGE))
        if whole:
            found.append((part.start(), part.end(), whole.group(1)))
    if not asked and all(_BARE_TIER_RE.fullmatch(wish) for _, _, wish in found):
        return written, []
    found.sort()
    pieces: list[str] = []
    at = 0
    for start, end, _ in found:
        pieces.append(text[at:start])
        at = end
    left = " ".join([*pieces, text[at:]])
    if not _has_topic(left):
        return written, []
    return left, list(dict.fromkeys(wish for _, _, wish in found))


def _english_filters(m: re.Match[str], types: list[str], tiers: list[str]) -> None:
    """search_library's types and tiers for an English wish (`_EN_WISH_RE`)."""
    if m.group("tier"):
        tier = m.group("tier").upper()
        tiers.append("核心" if tier == "CORE" else "SCI" if tier.startswith("SCI") else tier)
        if m.group("tkind").lower().startswith("journal"):
            types.append("期刊")
    elif m.group("degree"):
        types.append(MASTER if m.group("degree").lower().startswith("master") else DOCTORAL)
    else:  # theses, dissertations, journal …, conference …, newspaper …: its first word
        types.extend(cnki_types(ENGLISH_NAMES[m.group("kind").split()[0].lower()]))


def wish_filters(wishes: list[str]) -> tuple[list[str], list[str]]:
    """(document_types, source_tiers) of search_library for the wishes (博士论文 -> 博士, CSSCI期刊
    -> 期刊 and CSSCI)."""
    types: list[str] = []
    tiers: list[str] = []
    for wish in wishes:
        english = _EN_WISH_RE.fullmatch(wish)
        if english:
            _english_filters(english, types, tiers)
            continue
        tier = re.match(_TIER, wish)
        if tier:
            tiers.append(_TIER_NAMES.get(tier.group(0), tier.group(0)))
            wish = wish[tier.end() :].removeprefix("来源")
        kind = WRITTEN_NAMES.get(wish, wish)  # or what a tier wish names: 期刊, 论文, 文章
        if kind == THESES or kind in _TYPE_NAMES:
            types.extend(cnki_types(kind))
    return list(dict.fromkeys(types)), list(dict.fromkeys(tiers))


# An English expansion written before its bracketed acronym: `research and development (R&D)`,
# `environmental, social and governance (ESG)`, `small and medium-sized enterprises (SMEs)`. Its
# words' initials spell the acronym (connectives such as and / of may be skipped); read as prose,
# the commas and `and` made every word a concept of its own and the search found nothing.
_EN_ACRONYM_RE = re.compile(r"\(\s*([A-Z][A-Za-z&]{1,9})\s*\)")
_EN_TOKEN_RE = re.compile(r"[A-Za-z][A-Za-z\-]*|[^\sA-Za-z,]")
_CONNECTIVES = frozenset({"and", "of", "for", "the", "in", "on", "&"})


def _expansion_start(before: str, acronym: str) -> int | None:
    """Where the words before a bracket whose initials spell `acronym` start (None: no such words)."""
    letters = [c.lower() for c in acronym.rstrip("s") if c.isalpha()] if acronym[-1] == "s" else []
    letters = letters or [c.lower() for c in acronym if c.isalpha()]
    tokens = list(_EN_TOKEN_RE.finditer(before))
    at, words = len(letters) - 1, 0
    for token in reversed(tokens):
        word = token.group(0)
        if not word[0].isalpha() and word != "&":
            return None
        if word[0].lower() == letters[at]:
            at, words = at - 1, words + 1
            if at < 0:
                return token.start() if words >= 2 else None
        elif word.lower() not in _CONNECTIVES:
            return None
    return None


def english_expansions(text: str) -> tuple[str, list[tuple[str, str]]]:
    """The text with each English expansion written before its bracketed acronym replaced by the
    acronym, and the (acronym, expansion) pairs (`Written.expansions`)."""
    found: list[tuple[str, str]] = []
    while True:
        for m in _EN_ACRONYM_RE.finditer(text):
            start = _expansion_start(text[: m.start()], m.group(1))
            if start is not None:
                expansion = " ".join(text[start : m.start()].replace(",", " ").split())
                found.append((m.group(1), expansion))
                text = f"{text[:start]}{m.group(1)}{text[m.end():]}"
                break
        else:
            return text, found


def read_written(text: str) -> Written:
    """Read operators, field prefixes and bracketed acronyms out of a question (module docstring)."""
    text, wishes = read_wishes(text)
    fields: list[str] = []

    def drop_field(m: re.Match[str]) -> str:
        fields.append(m.group(0).strip())
        return " "

    def drop_source(m: re.Match[str]) -> str:
        fields.append(f"《{m.group(1) or m.group(2) or m.group(3)}》")
        return " "

    text = _LABEL_RE.sub(drop_field, _CODE_RE.sub(drop_field, _SOURCE_RE.sub(drop_source, text)))
    acronyms: list[tuple[str, str]] = []

    def drop_acronym(m: re.Match[str]) -> str:
        acronyms.append((m.string[: m.start()], m.group(1)))
        return " "

    text, expansions = english_expansions(text)
    text = _ACRONYM_RE.sub(drop_acronym, text)
    tokens = text.split()
    cnki = _CNKI_AND in tokens
    or_words = _OR_WORDS | {_CNKI_OR} if cnki else _OR_WORDS
    and_words = _AND_WORDS if cnki else _AND_WORDS | {_CNKI_OR, _CNKI_NOT}  # a prose `+` or dash separates
    not_words = _NOT_WORDS | {_CNKI_NOT} if cnki else _NOT_WORDS
    if not any(t in or_words or t in and_words or t in not_words or _excluded_word(t) for t in tokens):
        return Written([text], fields=fields, acronyms=acronyms, wishes=wishes, expansions=expansions)
    parts: list[str | tuple[str, ...]] = []
    excluded: list[str] = []
    current: list[str] = []

    def flush() -> None:
        if current:
            parts.append(" ".join(current))
            current.clear()

    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token in not_words:
            if i + 1 < len(tokens) and tokens[i + 1] not in or_words | and_words | not_words:
                excluded.append(_clean(tokens[i + 1]))
                i += 1
            i += 1
            continue
        word = _excluded_word(token)
        if word is not None:
            excluded.append(_clean(word))
            i += 1
            continue
        if token in and_words or token in or_words:  # an AND, or an OR without a left operand
            flush()
            i += 1
            continue
        chain = [token]
        j = i + 1
        while j + 1 < len(tokens) and tokens[j] in or_words and tokens[j + 1] not in or_words | and_words | not_words:
            chain.append(tokens[j + 1])
            j += 2
        alternatives = tuple(dict.fromkeys(w for w in map(_clean, chain) if w))
        if len(chain) > 1 and alternatives:
            flush()
            parts.append(alternatives)
        else:
            current.append(token)
        i = j if len(chain) > 1 else i + 1
    flush()
    return Written(parts, [w for w in excluded if w], fields, acronyms, wishes, expansions)


def written_warnings(written: Written) -> list[str]:
    """What the plan says about the syntax it did not apply (exclusions, field prefixes)."""
    out: list[str] = []
    if written.excluded:
        out.append(
            f"研究检索不能排除词语，已忽略 NOT/-：{'、'.join(written.excluded)}；"
            "需要排除时请用 structured_search（op: not）"
        )
    if written.fields:
        out.append(
            f"研究检索不按字段或来源限定，已去掉：{'、'.join(dict.fromkeys(written.fields))}；"
            "按作者、来源（刊名）、篇名等字段检索请用 structured_search"
        )
    if written.wishes:
        types, tiers = wish_filters(written.wishes)
        filters = [f"document_types={types}"] if types else []
        filters += [f"source_tiers={tiers}"] if tiers else []
        out.append(
            f"研究检索不按文献类型或来源级别筛选，已从概念中去掉：{'、'.join(written.wishes)}；"
            "各篇的 doc_type 与 tiers 见 search_results(view='compact')；检索完成后可用 "
            f"search_library(query=主题词, search_id=本次的 search_id, {', '.join(filters)}) 在结果中筛选"
        )
    return out
