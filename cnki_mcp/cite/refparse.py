"""Reference strings as people paste them -> entries -> fields (pure).

`split_entries(text)` cuts a pasted reference list into entries: numbered `[1]` `［1］` `【1】` `〔1〕` `1.`
`1、` `1)` `(1)` `（1）` `①`, bulleted `•` `-` `*`, or one entry per line; a line that starts with none
of these while the list is numbered continues the previous entry (a wrapped line) unless that
entry already ended with a full stop after its year; in any list a line indented further than the
list (a hanging indent), following a line that stops mid-reference (`刊名,`) or holding only the
entry's DOI or link continues it, as does a line closing a 《 the entry left open, and so, in an unnumbered list, does a line after one a PDF
copy cut short (stopping on a character before its year or inside an APA title). A heading line (`参考文献`, `References：`, a short label such as
`中文文献：`) is not an entry. A line ends at any break `str.splitlines` knows (Word's manual break
\v, U+2028, a PDF's \f as well as \n and \r), and invisible format characters (BOM, soft hyphen,
zero-width space: `identity.visible`) are dropped first.

`parse_reference(text)` reads one entry in the shapes reference lists take, among them every
style export_citations writes:

* GB/T 7714: `作者, 作者, 等. 题名[J]. 刊名, 2019, 41(3): 12-20. DOI:…` (also `[D]` theses with
  `地点: 学校, 年`, `[C]//会议录` and `[M]` books), with full-width or half-width punctuation;
  Latin names as `SMITH J`; a title containing 《》 (`《民法典》第585条的适用`) is kept whole;
* APA: `作者, 作者, & 作者. (2019). 题名. 刊名, 41(3), 12–20.` and `Zhang, S., & Li, M. (2019).`;
* MLA and Chicago: `作者, et al. “题名.” 刊名, vol. 41, no. 3, 2019, pp. 12–20.` and
  `作者, and 作者. 2019. “题名.” 刊名 41 (3): 12–20.` (title in quotation marks);
* Vancouver and other period-separated lists: `作者. 题名. 刊名. 2019;41(3):12–20. doi:…`;
* Harvard: `作者, 作者, 2019. 题名. 刊名 41 (3), 12–20.`, and Chicago author-date without quotation marks;
* free Chinese style: `作者：《题名》，《刊名》2019年第3期（第12-20页）`, author-date
  (`作者，2019：《题名》，《刊名》第3期`), a bare `《题名》`, and a title containing 《》 standing first
  (`《民法典》第585条的适用，作者，刊名2022年第6期`).

A thesis genre (`[博士学位论文]`) is not part of the title, nor a place (`[武汉]: 武汉大学`) part of
the source; DOIs and links are never read as pages or years. A Markdown link `[《题名》](https://…)`
reads as its text: link_references writes them into the list it is given. A field that is not there stays
None: missing parts are never treated as evidence of anything (docs/DESIGN.md §References). An
entry without a readable title is `unparsable` with a reason.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import asdict
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from cnki_mcp.cite.model import HAN
from cnki_mcp.cite.names import COMPOUND_SURNAMES
from cnki_mcp.cite.refshapes import (
    NAME_DOTS,
    NotAPaper,
    chinese_marks,
    doi_only,
    join_lines,
    markdown_line,
    not_a_paper,
)
from cnki_mcp.doc_kinds import BOTH_LEVEL_NAMES, DOCTORAL, MASTER, THESES, THESIS_NAMES, names_pattern
from cnki_mcp.identity import decode_entities, visible

RefStyle = Literal["gbt7714", "apa", "quoted", "free", "plain", "markdown", "doi"]
TYPE_CODES = ("J", "D", "C", "M", "N", "P", "S", "R", "G", "A", "Z", "EB", "DB", "CP")

# Full-width forms people type in Chinese lists -> ASCII, for structure only (the title keeps
# its own characters: 《》 and Chinese punctuation inside a title are not touched there).
_FULLWIDTH = str.maketrans(
    {"．": ".", "，": ",", "：": ":", "；": ";", "（": "(", "）": ")", "［": "[", "］": "]",
     "／": "/", "－": "-", "—": "-", "–": "-", "～": "-", "〜": "-", "　": " ", "＂": '"'}
)
_MARKER = re.compile(
    r"^\s*(?:[\[［【〔]\s*\d{1,3}\s*[\]］】〕]|[(（]\s*\d{1,3}\s*[)）]|\d{1,3}\s*(?:[.．、](?!\d)|[)）])|[①-⑳]|[•·\-*▪◦])\s*"
)
_HEADING = re.compile(
    r"^\s*(?:(?:主要)?(?:参考文献|参考资料|引用文献|references?|bibliography|works\s+cited|literature\s+cited)"
    r"\s*[:：]?|[^\d.,，。、\[\]［］()（）《》“”\"]{1,20}[:：])\s*$",  # or a short label: `中文文献：` `Books:`
    re.I,
)
_DOI = re.compile(r"(?:doi\s*[:：]?\s*|https?://(?:dx\.)?doi\.org/)(10\.\d{4,9}/[^\s,，;；。]+)", re.I)
_LINK = re.compile(r"(?:\bdoi\s*[:：]\s*|https?://)\S+", re.I)
# `[label](url)` with a web URL, as link_references writes it (its label Markdown-escaped); read
# as written, the author before it took its `[` and a DOI link's DOI its `)`
_MD_LINK = re.compile(r"\[((?:[^\[\]\\\n]|\\.)+)\]\(\s*(?:https?://|www\.)[^()\s]*\s*\)", re.I)
_MD_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_YEAR = re.compile(r"(?<!\d)(19[5-9]\d|20[0-4]\d)(?!\d)")
_BARE_YEAR = re.compile(r"(?:19[5-9]\d|20[0-4]\d)[a-z]?|n\.\s*d")
_TYPE = re.compile(r"\[\s*(" + "|".join(TYPE_CODES) + r")(?:\s*/\s*OL)?\s*\]", re.I)
_GENRES = (
    *THESIS_NAMES[DOCTORAL], *THESIS_NAMES[MASTER], THESES,
    # as the English citation styles write them (APA, Chicago), abbreviations too
    "Doctoral dissertation", "Doctoral thesis", "Master's thesis", "Masters thesis", "PhD thesis", "PhD diss",
    "Thesis", "Dissertation",
)
_GENRE = "|".join(re.escape(g) for g in _GENRES)
# The level a genre names (`[博士学位论文]`, `Master's thesis`, `(Doctoral dissertation, 学校)`).
_DEGREE = (
    (DOCTORAL, re.compile(names_pattern(THESIS_NAMES[DOCTORAL]) + r"|Doctoral (?:dissertation|thesis)|Ph\.?\s?D\.? (?:thesis|diss)", re.I)),
    (MASTER, re.compile(names_pattern(THESIS_NAMES[MASTER]) + r"|Master'?s? (?:thesis|dissertation)", re.I)),
)  # fmt: skip
# Words naming both levels (CNKI's 中国优秀博硕士学位论文全文数据库, 硕博论文): no level; 博硕士学位论文
# holds 硕士学位论文, so a doctoral thesis cited from that database was read as a master's
_BOTH_LEVELS = re.compile(names_pattern(BOTH_LEVEL_NAMES))
# APA 7 puts the school inside the bracket (`[Doctoral dissertation, 武汉大学]`), APA 6 a bare genre in
# parentheses (`(Doctoral dissertation)`): neither is part of the title
_TITLE_GENRE = re.compile(rf"\s*(?:\[\s*(?:{_GENRE})(?:\s*,[^\]]*)?\s*\]|\(\s*(?:{_GENRE})\s*\))|\s*\[Internet\]", re.I)
# One initial or several (`J.`, `J. D.`, `J.-D.`, `J D`); never a capitalised surname (`CHEN J`).
_INITIALS = re.compile(r"[A-Z](?:\.|(?![A-Za-z]))(?:\s*-?\s*[A-Z](?:\.|(?![A-Za-z])))*")
_ETAL = re.compile(r"\s*(?:,\s*)?(?:等|et\s+al\.?)\s*\.?$", re.I)
# MLA and Chicago: a title in quotation marks ending with the style's period, right after the
# authors (`作者. “题名.”`) or the year (`作者. 2019. “题名.”`).
_QUOTED = re.compile(r"(?:^|(?<=\.)\s+)[“\"](?P<title>[^“”\"]+?[.?!。？！])[”\"](?=\s|$)")


class ParsedReference(BaseModel):
    """One entry as read; None where the entry does not say."""

    model_config = ConfigDict(frozen=True)

    raw: str
    style: RefStyle | None = None
    authors: list[str] = Field(default_factory=list)
    authors_truncated: bool = False  # the list ends with 等 / et al.: later authors left out on purpose
    title: str | None = None
    source: str | None = None  # journal, school, proceedings, publisher or newspaper
    place: str | None = None  # 出版地 of a thesis, book or proceedings, as written
    publisher: str | None = None  # 出版者 of proceedings or of the book a chapter is in, as written
    year: int | None = None
    volume: str | None = None
    issue: str | None = None
    pages: str | None = None
    doi: str | None = None
    date: str | None = None  # a newspaper article's day as written, `yyyy-mm-dd`
    type_code: str | None = None  # J D C M N ... as written, upper case
    degree: str | None = None  # 博士 / 硕士: the thesis level a genre outside the title names
    unparsable: str | None = None  # the reason, when no title could be read
    not_a_paper: NotAPaper | None = None  # a law, standard or classic by its name: not looked up


# Full stops inside a reference that PDF copies break lines after: the authors' `等.` / `et al.`
# and the type code's `[J].` / `[D/OL].`
_MID_STOP = re.compile(r"(?:等|\bet\s+al)\s*[.．。]$|\[[A-Za-z]{1,2}(?:/OL)?\]\s*[.．。]$")
_LINK_LINE = re.compile(r"^\s*(?:doi\s*[:：]|https?://|www\.)", re.I)
_HAS_LINK = re.compile(r"doi\s*[:：]|https?://|www\.|\b10\.\d{4,9}/", re.I)
# A line ending with one of these stops mid-reference: the next line carries on (a wrapped line).
_OPEN_END = (",", "，", ":", "：", ";", "；", "、", "&", "(", "（", "-", "–", "—")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def split_entries(text: str) -> list[str]:
    """The entries of a pasted list (see the module docstring)."""
    # every line break a copy can hold (Word's manual break \v, a page's \f, U+2028 from web pages
    # and PDF tools, not only \n and \r); invisible characters dropped (a BOM before `[1]` hid the number)
    lines = [ln.rstrip() for ln in visible(text).splitlines()]
    lines = [ln for ln in lines if ln.strip() and not _HEADING.match(ln)]
    if not lines:
        return []
    marked = [bool(_MARKER.match(ln)) for ln in lines]
    numbered = any(marked)
    base = min(_indent(ln) for ln in lines)
    entries: list[str] = []
    for line, is_marker in zip(lines, marked, strict=True):
        # An unmarked line continues the previous entry (a wrapped line): in a numbered list
        # unless that entry already ended like a finished reference (a final full stop, not one
        # of the stops text copied from a PDF breaks lines after, `等.` or `[J].`, before any
        # year: `崔建远. 合同法[M]. 北京: 法律出版社.` has no year and is finished) and the line is not
        # indented further than the list (a hanging indent); in an unnumbered list when the entry
        # so far stops mid-reference (`刊名,`), or has not ended and the line is indented further.
        # Otherwise it starts an entry: one per line.
        last = entries[-1].rstrip() if entries else ""
        ended = last.endswith((".", "。", "．"))
        indented = _indent(line) > base
        if _closes_title(last, line):
            wrapped = True  # a 《title》 broken by the line break: `《基于深度学习的` + `图像识别研究》，…`
        elif _LINK_LINE.match(line):
            # no reference starts with its DOI or link: a long one wrapped onto a line of its own,
            # unless the entry before has one already (a list of DOIs or links, one per line)
            wrapped = not _HAS_LINK.search(last)
        elif numbered:
            wrapped = not ended or indented or (_MID_STOP.search(last) is not None and not _YEAR.search(last))
        else:
            wrapped = last.endswith(_OPEN_END) or (indented and not ended) or _cut_short(last, line)
        if is_marker or not entries or not wrapped:
            entries.append(_MARKER.sub("", line, count=1).strip())
        else:
            joiner = "" if _is_cjk_end(entries[-1]) and _is_cjk_start(line.strip()) else " "
            entries[-1] = entries[-1] + joiner + line.strip()
    return [e for e in entries if e]


def _closes_title(entry: str, line: str) -> bool:
    """`entry` leaves a 《 open and `line` closes it before opening another."""
    close, reopen = line.find("》"), line.find("《")
    return entry.count("《") > entry.count("》") and close >= 0 and (reopen < 0 or close < reopen)


# APA: the year in parentheses and a title not yet ended by its full stop (`(2025). A review of`)
_APA_OPEN_TITLE = re.compile(r"\(\s*(?:19[5-9]\d|20[0-4]\d)[a-z]?\s*\)\s*\.\s*[^.]*$")


_TITLE_MARK = re.compile(_TYPE.pattern + r"|[(（]\s*(?:19[5-9]\d|20[0-4]\d)[a-z]?\s*[)）]|《", re.I)


# A line that opens as an entry does: Chinese names (2-5 characters, joined by , 、, 等 after
# them) ended by a full stop (`张三. `, `张三, 李四. `), or a Latin `Surname, I.` (`Li, N. (2020)`)
_AUTHOR_START = re.compile(
    r"^\s*(?:[\u4e00-\u9fff·]{2,5}(?:\s*[,，、]\s*[\u4e00-\u9fff·]{2,5})*(?:\s*等)?\s*[.．。]\s*\S"
    r"|[A-Z][A-Za-z'’-]+,\s*(?:[A-Z]\.\s*-?\s*)+(?:[,(&]|$))"
)
_FIELD_END = re.compile(r"[.．。:：]\s*\S")
# a field ended by a full stop: not a subtitle's colon, nor the point of a number (工业4.0)
_FULL_STOP = re.compile(r"(?<!\d)[.．。](?!\d)\s*\S")


def _cut_short(entry: str, line: str) -> bool:
    """An unnumbered entry a hard line break cut short (a PDF's wrapped line whose hanging indent
    the copy lost: `…[J]. 现代法` + `学, 2014, 27(6): 75-99.`): it stops on a letter or character,
    with no link, before its year or inside an APA title, and the next line brings no second type
    code, APA year or 《title》 when the entry has one (`崔建远. 合同法[M]. 北京: 法律出版社` without a year
    is followed by the next entry). A next line opening with authors is the next entry when it
    brings a type code, APA year or 《title》 of its own, or when the entry has ended two fields
    already (`王五. 合同法总论. 北京: 法律出版社` + `赵六. …`); a title cut short before its last words
    (`贾楠. 约定违约金酌减规则之法律` + `规制研究. 现代法学, 2014`) is still joined."""
    if not entry[-1:].isalnum() or _HAS_LINK.search(entry) or (_TITLE_MARK.search(entry) and _TITLE_MARK.search(line)):
        return False
    if not _FIELD_END.search(entry):
        return False  # no field ended yet (`作者. `, `作者：`): a line of text before the list, not a reference
    if _AUTHOR_START.match(line) and (_TITLE_MARK.search(line) or len(_FULL_STOP.findall(entry)) >= 2):
        return False
    return _YEAR.search(entry) is None or _APA_OPEN_TITLE.search(entry) is not None


def _is_cjk_end(text: str) -> bool:
    return bool(text) and unicodedata.east_asian_width(text[-1]) in ("W", "F")


def _is_cjk_start(text: str) -> bool:
    return bool(text) and unicodedata.east_asian_width(text[0]) in ("W", "F")


# NFKC makes the full-width ～ of a page range (75～99) an ASCII ~: a dash between digits only, so a
# DOI or link keeps its own ~ (…1097-4636~x)
_TILDE_RANGE = re.compile(r"(?<=\d)(\s*)~(?=\s*\d)")


def _norm(text: str) -> str:
    folded = unicodedata.normalize("NFKC", text).translate(_FULLWIDTH)
    return re.sub(r"\s+", " ", _TILDE_RANGE.sub(r"\1-", folded)).strip()


def _as_written(raw: str, title: str) -> str:
    """`title` (read from the normalised entry) spelt as the entry spells it: `_norm` folds
    full-width punctuation (`：` `——` `（）`) for reading the structure, but CNKI's titles carry
    their own, so the title is cut from `raw` at the same place. `title` itself when not found."""
    pieces: list[str] = []
    origin: list[int] = []  # the index in `raw` of each normalised character
    for index, char in enumerate(raw):
        for out in unicodedata.normalize("NFKC", char).translate(_FULLWIDTH):
            if out.isspace():
                if pieces and pieces[-1] == " ":
                    continue
                out = " "
            pieces.append(out)
            origin.append(index)
    at = "".join(pieces).find(title)
    if at < 0 or not title:
        return title
    written = raw[origin[at] : origin[at + len(title) - 1] + 1]
    return re.sub(r"\s+", " ", written).strip() or title


def title_spellings(title: str) -> list[str]:
    """The spellings to look a title up by: as written, then folded when that differs: NFKC
    (full-width letters and digits, sub- and superscripts: `ＣＯ２`, `CO₂` -> `CO2`, as CNKI's text
    of `CO<sub>2</sub>` reads), full-width punctuation to ASCII (`违约金：从…` -> `违约金:从…`),
    HTML entities decoded (`R&amp;D` -> `R&D`) and a foreign name's dot written · ."""
    folded = _norm(decode_entities(title).translate(NAME_DOTS))
    return list(dict.fromkeys([title, folded, chinese_marks(title)]))


def _strip_links(text: str) -> str:
    """The text without DOIs and URLs, whose digits are neither pages nor years."""
    return _LINK.sub(" ", text)


def _latin_authors(seg: str) -> list[str]:
    """`Zhang, S., & Li, M.` (APA), `Tanaka, Yuki, and John Smith` (MLA, Chicago),
    `WILSON S, CHEN J` (GB/T), `Tanaka Y, Smith J` (Vancouver) -> one string per person."""
    seg = re.sub(r"\s*&\s*|,?\s+and\s+", ", ", seg)
    parts = [p.strip() for p in seg.split(",") if p.strip()]
    names: list[str] = []
    i = 0
    while i < len(parts):
        part, nxt = parts[i], parts[i + 1] if i + 1 < len(parts) else None
        # `Surname, Initials` always pairs; `Surname, Given` pairs when the surname is one word
        # and so is the given name, or it is the first author (MLA and Chicago invert only it).
        pairs = nxt is not None and (
            bool(_INITIALS.fullmatch(nxt)) or (" " not in part and (" " not in nxt or i == 0))
        )
        if nxt is not None and pairs:
            given = nxt if not _INITIALS.fullmatch(nxt) or nxt.endswith(".") else nxt + "."
            names.append(f"{part}, {given}")
            i += 2
        else:
            names.append(part)
            i += 1
    return names


def _authors(segment: str) -> tuple[list[str], bool]:
    """The names of an author segment and whether it ends with 等 / et al."""
    seg = segment.strip().rstrip(".:：").strip()
    m = _ETAL.search(seg)
    truncated = m is not None
    if m is not None:
        seg = seg[: m.start()]
    seg = re.sub(r"\s*[(（]?(?:主编|编著|编|著|译)[)）]?$", "", seg)
    if not seg:
        return [], truncated
    if re.search(r"[A-Za-z]", seg) and not re.search(r"[\u4e00-\u9fff]", seg):
        names = _latin_authors(seg)
    else:
        names = [re.sub(r"^(?:&|and\s)\s*", "", p.strip()) for p in re.split(r"[,;、，；]|\s{2,}", seg)]
        names = [n for name in names for n in _spaced_han_names(name)]
    # A bracketed placeholder (`[作者未取得]`) stands for no author.
    return [n for n in names if n and not re.fullmatch(r"[\[［].*[\]］]", n)], truncated


def _spaced_han_names(text: str) -> list[str]:
    """`姜雨欣 谢国思` (names apart by one space) is two names; `欧阳 修`, `司马 相如` (a compound
    surname spaced from its given name) is one."""
    parts = text.split()
    if len(parts) == 2 and parts[0] in COMPOUND_SURNAMES:
        return [text]
    if len(parts) > 1 and all(re.fullmatch(r"[\u4e00-\u9fff·]{2,}", p) for p in parts):
        return parts
    return [text]


def _bare_title(title: str) -> str:
    """A title written wholly inside 《》 without them; 《》 inside a title stay."""
    m = re.fullmatch(r"\s*《([^《》]+)》\s*", title)
    return (m.group(1) if m else title).strip()


# An English translation in square brackets after a Chinese title (APA 7 §9.38, MLA: `违约金…的
# 困境与出路 [The dilemma of …]`): the title CNKI holds is the Chinese one.
_TRANSLATED = re.compile(r"\s*\[[A-Za-z][^\[\]]*\s[^\[\]]*\]\s*$")


def _title_of(text: str) -> str:
    """A title as written, without a trailing period, a thesis genre or [Internet], nor an English
    translation in brackets after a Chinese title."""
    title = _bare_title(_TITLE_GENRE.sub("", text.strip()).rstrip(".。").strip())
    m = _TRANSLATED.search(title)
    if m and HAN.search(title[: m.start()]):
        title = title[: m.start()].rstrip(".。 ")
    return title


_RANGE = r"\d{1,5}\s*-\s*\d{1,5}(?:\s*\+\s*\d{1,5})*|\d{1,5}\+\d{1,5}|\d{1,5}"  # `12-15+20`: continued on p. 20
_ACCESS_DATE = re.compile(r"\[\s*(?:19|20)\d\d-\d{1,2}-\d{1,2}\s*\]")


# A supplement issue as lists write it (`增刊1`, `增刊第1期`, `Suppl 1`, `Suppl. 1`); CNKI writes `S1`.
_SUPPLEMENT = r"(?:增刊\s*第?|suppl(?:ement)?\.?)\s*\d{1,2}"


def _supplement_issue(text: str) -> str:
    """`增刊1`, `增刊第1期`, `Suppl. 1` -> `S1` (CNKI's spelling); any other issue with its spaces dropped."""
    m = re.fullmatch(r"(?:增刊\s*第?|suppl(?:ement)?\.?)\s*(\d{1,2})", text.strip(), re.I)
    return f"S{int(m.group(1))}" if m else text.replace(" ", "")


def _volume_issue_pages(tail: str) -> tuple[str | None, str | None, str | None]:
    """`41(3): 12-20` (GB/T), `41(3), 12-20` (APA), `2019年第3期，第12-20页` (free style),
    `vol. 41, no. 3, … pp. 12-20` (MLA), `;41(3):12-20` (Vancouver)."""
    tail = _strip_links(tail)
    volume = issue = pages = None
    m = re.search(
        rf"(?<![\d(-])(\d{{1,4}})?\s*\(\s*({_SUPPLEMENT}|[A-Za-z]?\d{{1,3}}[A-Za-z]?(?:\s*[-/]\s*\d{{1,3}})?)\s*\)", tail, re.I
    )
    if m:
        volume, issue = m.group(1), _supplement_issue(m.group(2))
        if volume is not None and _YEAR.fullmatch(volume):
            volume = None  # `2020(2)`: a journal without volumes, year and issue
    m = re.search(rf"(?:年\s*)?({_SUPPLEMENT})\s*期?|第\s*(\d{{1,3}})\s*期|\bno\.\s*([A-Za-z]?\d{{1,4}}[A-Za-z]?)", tail, re.I)
    if m and issue is None:
        issue = _supplement_issue(m.group(1)) if m.group(1) else m.group(2) or m.group(3)
    # `Vol. 27` as `vol. 27`; GB/T's `年, 卷: 页` for a journal without issues (`2014, 27: 75-99`)
    m = re.search(rf"第\s*(\d{{1,4}})\s*卷|\bvol\.\s*([A-Za-z]?\d{{1,4}})|{_YEAR.pattern}\s*,\s*(\d{{1,4}})\s*:\s*\d", tail, re.I)
    if m and volume is None:
        volume = m.group(1) or m.group(2) or m.group(4)
    for pattern in (
        rf":\s*({_RANGE})\s*(?:\.|$|[,;])",  # GB/T: after the colon
        rf"第\s*({_RANGE})\s*页",  # free style
        rf"\)\s*,\s*({_RANGE})\s*(?:\.|$|[,;])",  # APA: after "41(3),"
        rf"\bpp?\.\s*({_RANGE})",
    ):
        m = re.search(pattern, tail, re.I)
        if m:
            pages = re.sub(r"\s+", "", m.group(1))
            break
    return volume, issue, pages


_DAY = re.compile(r"(?<!\d)((?:19[5-9]|20[0-4])\d)\s*(?:-|年)\s*(\d{1,2})\s*(?:-|月)\s*(\d{1,2})(?!\d)")


def _day(text: str) -> str | None:
    """The first full date (`2023-02-17`, `2022年6月1日`) as `yyyy-mm-dd`, when it is a real day."""
    m = _DAY.search(_strip_links(text))
    if m is None:
        return None
    year, month, day = (int(g) for g in m.groups())
    return f"{year:04d}-{month:02d}-{day:02d}" if 1 <= month <= 12 and 1 <= day <= 31 else None


def _year(text: str) -> int | None:
    years = _YEAR.findall(_strip_links(text))
    return int(years[0]) if years else None


def _placeless(text: str, *, publisher: bool = True) -> tuple[str | None, str]:
    """`[武汉]: 武汉大学` / `北京: 法律出版社` -> (place, the rest); a placeholder place is None.
    With `publisher=False` (a container that may be a journal, `Journal of X: Y`) an unbracketed
    place counts only before `publisher, year` / `publisher; year`."""
    m = re.match(r"^\s*(\[[^\]]{1,20}\]|[^:,.;\d\[\]]{1,20}):\s*(?=\S)", text)
    if not m or not (publisher or m.group(1).startswith("[") or re.search(r"[,;]\s*(?:19|20)\d\d", text)):
        return None, text
    place = m.group(1).strip()
    unknown = place.startswith("[") and ("不详" in place or place.lower() in ("[s.l.]", "[s. l.]"))
    return (None if unknown else place.strip("[]").strip()), text[m.end() :]


# `出版地: 出版者` after the proceedings or yearbook a part is in (`论文集. 武汉: 出版社, 2016`);
# `年鉴. 2017: 226` is a year and a page, not a place and a publisher.
_PUBLISHED = re.compile(r"^(?:(?P<proc>[^.]+)\.\s*)?(?P<place>[^:,.]{1,20}):\s*(?P<pub>[^,.]+)")
# A standard's or patent's number after its title (GB/T 7714-2015 §8.x: `题名: 标准编号[S]`, `题名: 专利号[P]`):
# GB/T 7714—2015, ISO 690:2010, DB11/T 1234-2015, 200610171314.3, CN1234567A, ZL 200610171314.3.
_DOC_NUMBER = re.compile(r"\s*:\s*(?:[A-Z]{1,6}(?:/[A-Z]{1,2})?\s*)?\d[\dA-Z.\-/: ]*$")


def _published(tail: str) -> re.Match[str] | None:
    if ":" not in tail.split(",")[0]:
        return None
    m = _PUBLISHED.match(tail)
    return None if m is None or _BARE_YEAR.fullmatch(m.group("place").strip()) else m


# GB/T 7714-2015 §4.2/§4.4: a book's `版本项` and other responsibility (`2版`, `陈生铮, 译`) stand
# between its title and `出版地: 出版者`; neither is a source.
_EDITION = re.compile(
    r"^(?:第?\s*[\d一二三四五六七八九十]+\s*版|修订版|增订版|修订本|增订本|\d+(?:st|nd|rd|th)\s+ed(?:ition)?|rev(?:ised)?\s+ed)$",
    re.I,
)
_ROLE = re.compile(r"^[^:]{1,60}?[,，\s]\s*等?(?:译|编译|编|主编|编著|校注|译注|trans|tr|eds?)$", re.I)
# The publication part of a book or proceedings: `出版地: 出版者`, `地点, 年`, or a year standing first.
_PUBLICATION = re.compile(
    r"^(?:\[[^\]]{1,20}\]|[^:,.;\d\[\]]{1,20})\s*:\s*\S|^[^,:]{0,20},\s*(?:19[5-9]\d|20[0-4]\d)(?!\d)"
    r"|^(?:19[5-9]\d|20[0-4]\d)(?![\d年])"
)


def _container_tail(tail: str, part_of: bool) -> str:
    """The tail of a book or proceedings entry with what is not its source left out: an edition
    and a translator or editor statement; and, in a part of one (`[C]//`, `[M]//`), the editor
    that comes before the container's title (`//中国力学学会. 第3届…会议论文集. 天津: …`,
    GB/T 7714-2015 §8.3), when two title-like parts stand before the publication part."""
    parts = re.split(r"\.(?!\d)\s*", tail)
    at = next((k for k, part in enumerate(parts) if _PUBLICATION.match(part.strip())), len(parts))
    kept = [p for p in parts[:at] if not (_EDITION.match(p.strip()) or _ROLE.match(p.strip()))]
    if part_of and len([p for p in kept if p.strip()]) == 2:
        kept = kept[1:]
    if len(kept) == at:
        return tail
    return ". ".join(p.strip() for p in [*kept, *parts[at:]] if p.strip())


def _parse_gbt(raw: str, text: str, code_match: re.Match[str]) -> ParsedReference | None:
    head, tail = text[: code_match.start()], text[code_match.end() :]
    # head: "作者, 作者, 等. 题名"; the title is after the first ". " that ends the author list.
    m = re.match(r"^(?P<authors>[^.]{1,200}?)\.\s*(?P<title>.+)$", head.strip())
    if m and not re.search(r"\d", m.group("authors")):
        (authors, truncated), title = _authors(m.group("authors")), m.group("title").strip()
    else:
        (authors, truncated), title = ([], False), head.strip()
    code = code_match.group(1).upper()
    # `[2027-03-01]`: the day the author read it online ([引用日期]), never the publication date
    tail = _ACCESS_DATE.sub("", tail).lstrip(" .")
    part_of = tail.startswith("//")
    if part_of:
        tail = tail[2:]
    source = place = publisher = None
    container = _container_tail(tail, part_of) if code in ("M", "C", "S", "R") else tail
    if code == "D":
        m = re.match(r"^(?:(?P<place>[^:,.]{1,20}):\s*)?(?P<school>[^,.]+)", tail)
        source = m.group("school").strip() if m else None
        place, _ = _placeless(tail)
    elif code in ("M", "C", "S", "R") and (m := _published(container)) is not None:
        source = (m.group("proc") or m.group("pub")).strip()
        place, _ = _placeless(container[m.start("place") :])
        if m.group("proc") and not re.fullmatch(r"\[[^\]]*\]", m.group("pub").strip()):
            publisher = m.group("pub").strip()  # `论文集. 武汉: 出版社`; not `[出版者不详]`
    else:
        if code in ("EB", "DB", "CP"):  # `[EB/OL]. (发表日期)[引用日期]. URL`: neither date nor link is a source
            container = re.sub(r"^(?:\s*\(\s*[\d\s\-./]+\)\s*\.?)?", "", _strip_links(tail)).strip()
        m = re.match(r"^([^,.]+?)\s*(?=,|\.|$)", container)
        # an online-first article has pages and no year yet: `刊名: 1-12[2027-03-01]`
        source = re.sub(rf"\s*:\s*(?:{_RANGE})$", "", m.group(1)).strip() if m else None
        if source is not None and (_BARE_YEAR.fullmatch(source) or _DAY.fullmatch(source)):
            source = None  # `题名[J]. 2019.`, a patent's `题名[P]. 2006-12-13.`: a date, no source given
    if code in ("S", "P"):  # `题名: GB/T 7714—2015[S]`, `题名: 200610171314.3[P]`: the number is not the title
        title = _DOC_NUMBER.sub("", title)
    volume, issue, pages = _volume_issue_pages(tail)
    date = None
    if code == "N":  # newspapers: 年-月-日(版次); the parenthesis is the page, not an issue
        # written `(2)`, `(002)` or `(第2版)`; the last was read as no page, so a wrong one passed
        m = re.search(r"\d{4}-\d{1,2}-\d{1,2}\s*\(\s*(?:第\s*)?(\d{1,3})\s*(?:版\s*)?\)", tail)
        volume, issue, pages = None, None, (m.group(1) if m else None)
        date = _day(tail)
    return ParsedReference(
        raw=raw,
        style="gbt7714",
        authors=authors,
        authors_truncated=truncated,
        title=_bare_title(title.rstrip(".")) or None,
        source=source or None,
        place=place,
        publisher=publisher,
        year=_year(tail),
        volume=volume,
        issue=issue,
        pages=pages,
        doi=_doi(text),
        date=date,
        type_code=code,
    )


def _source_of(container: str) -> str | None:
    """The journal, school or publisher a container part starts with (`刊名, vol. 3` -> 刊名)."""
    text = re.sub(r"^\s*In:?\s+", "", container)  # a part of a book: `In: 年鉴` (NLM), `In 年鉴` (APA, Chicago)
    text = re.sub(rf"^\s*(?:{_GENRE})\s*,\s*", "", text, flags=re.I)
    _, text = _placeless(text, publisher=False)
    m = re.match(r"^(.+?)\s*(?=,|;|\.\s|\.$|\s\(pp?\.|$)", text.strip())  # APA: `In 年鉴 (p. 226)`
    if not m:
        return None
    source = re.sub(r"\s*\[[^\]]*\]$", "", m.group(1)).strip()  # MLA: `论文集 [北京]`
    return None if not source or _BARE_YEAR.fullmatch(source) or re.match(r"^https?:", source) else source


def _end_pages(tail: str) -> str | None:
    """Pages standing last after a comma (`法治日报, 8.`, `论文集, 286–295.`)."""
    m = re.search(rf",\s*({_RANGE})\s*\.?\s*$", _strip_links(tail).strip())
    if m is None or _YEAR.fullmatch(m.group(1)):
        return None
    return re.sub(r"\s+", "", m.group(1))


def _parse_apa(raw: str, text: str, year_match: re.Match[str]) -> ParsedReference:
    authors, truncated = _authors(text[: year_match.start()])
    rest = text[year_match.end() :].lstrip(" .。")
    # fields end with `. `, or with 。 in an APA entry written with Chinese punctuation (APA 中文格式:
    # `姜雨欣、谢国思（2022）。题名。刊名，33（1），179–187。`)
    m = re.match(r"^(?P<title>.+?[^A-Z])(?:\.\s+|。\s*)(?P<tail>.*)$", rest)
    title, tail = (m.group("title"), m.group("tail")) if m else (rest.rstrip("."), "")
    tail = re.sub(r"。\s*$", ".", tail)
    source = None
    tail = re.sub(r"^In\s+", "", tail)  # a chapter: `In 年鉴 (p. 226)` (APA 7 §10.3)
    sm = re.match(r"^([^,.。]+?)\s*(?=,|\.|。|\s\(pp?\.|$)", tail)
    if sm and not re.match(r"^https?:|^doi", sm.group(1), re.I):
        source = sm.group(1).strip()
    volume, issue, pages = _volume_issue_pages(tail)
    return ParsedReference(
        raw=raw,
        style="apa",
        authors=authors,
        authors_truncated=truncated,
        title=_title_of(title) or None,
        source=source,
        year=int(year_match.group(1)),
        volume=volume,
        issue=issue,
        pages=pages or _end_pages(tail),
        doi=_doi(text),
    )


def _parse_quoted(raw: str, text: str, quote: re.Match[str]) -> ParsedReference:
    """MLA (`作者. “题名.” 刊名, vol. 3, no. 2, 2019, pp. 1–9.`) and Chicago author-date
    (`作者. 2019. “题名.” 刊名 3 (2): 1–9.`)."""
    before = text[: quote.start()].strip()
    year = None
    ym = re.search(r"(?:^|(?<=\.))\s*((?:19[5-9]\d|20[0-4]\d)[a-z]?|n\.\s*d)\.?\s*$", before)
    if ym is not None:
        year = _year(ym.group(1))
        before = before[: ym.start()]
    authors, truncated = _authors(before)
    after = text[quote.end() :].strip()
    after = re.sub(r"^Paper presented\b[^.]*\.\s*", "", after)  # Chicago: the meeting, not the source
    volume, issue, pages = _volume_issue_pages(after)
    journal = re.match(r"^(?P<src>[^,]+?)\s+(?P<vol>\d{1,4})\s*(?:\((?P<paren>[^)]*)\))?\s*(?::|\.|$)", after)
    if journal is None:  # Chicago notes-bibliography: `刊名 33, no. 1 (2022): 179–87`
        journal = re.match(r"^(?P<src>[^,]+?)\s+(?P<vol>\d{1,4})(?P<paren>)\s*,\s*no\.", after)
        journal = None if journal is not None and _YEAR.fullmatch(journal.group("vol")) else journal
    if journal is not None:  # Chicago: `刊名 41 (3): 12–20`, `刊名 41 (May): 12–20`
        source = journal.group("src").strip()
        volume = journal.group("vol")
        paren = journal.group("paren") or ""
        issue = paren if re.fullmatch(r"[A-Za-z]?\d{1,4}[A-Za-z]?", paren) else issue
    else:
        source = _source_of(after)
    return ParsedReference(
        raw=raw,
        style="quoted",
        authors=authors,
        authors_truncated=truncated,
        title=_title_of(quote.group("title")) or None,
        source=source,
        year=year or _year(after),
        volume=volume,
        issue=issue,
        pages=pages or _end_pages(after),
        doi=_doi(text),
    )


def _free_shape(raw: str) -> bool:
    """Is the first 《》 the whole title (`作者：《题名》，《刊》…`, `《题名》`) rather than part
    of one (`作者. 《民法典》第585条的适用[J]`)?"""
    start = raw.index("《")
    end = raw.find("》", start)
    if end < 0 or re.search(r"[.。．]", raw[:start]) or len(raw[:start]) > 60:
        return False
    after = raw[end + 1 :].lstrip()
    return not after or not after[0].isalnum()


def _parse_free(raw: str, text: str) -> ParsedReference | None:
    titles = re.findall(r"《([^《》]+)》", raw)
    if not titles:
        return None
    before = re.sub(r"[:：,，]\s*$", "", raw[: raw.index("《")].strip())
    # author-date (经济研究, 管理世界: `作者、作者，2014：《题名》，《刊名》第6期`): the year ends the authors
    dated = re.search(r"[,，\s]*[(（]?\s*((?:19[5-9]\d|20[0-4]\d))[a-z]?\s*[)）]?$", before)
    if dated is not None and dated.start() > 0:
        before = before[: dated.start()]
    authors, truncated = _authors(before)
    tail = _norm(raw[raw.index(titles[0]) + len(titles[0]) + 1 :])
    source = titles[1] if len(titles) > 1 else None
    volume, issue, pages = _volume_issue_pages(tail)
    date = _day(tail) if re.search(r"\d\s*日", tail) else None  # `2022年6月1日`: a newspaper's day
    return ParsedReference(
        raw=raw,
        style="free",
        date=date,
        authors=authors,
        authors_truncated=truncated,
        title=titles[0].strip(),
        source=source,
        year=_year(tail) or (int(dated.group(1)) if dated is not None and dated.start() > 0 else None),
        volume=volume,
        issue=issue,
        pages=pages,
        doi=_doi(raw),
    )


_JOURNAL_NUMBERS = re.compile(
    r"^(?P<src>[^,:;]*?[^\d\s,:;])\s+(?P<vol>\d{1,4})\s*(?:\(\s*(?P<issue>[A-Za-z]?\d{1,3}[A-Za-z]?)\s*\))?\s*(?:[:,]\s*\S.*)?$"
)


def _parse_plain(raw: str, text: str) -> ParsedReference | None:
    """`作者. 题名. 来源, 年` without a type code: Vancouver (`刊名. 2019;41(3):12-20`), MLA and
    Chicago books and theses (`作者. 题名. 2014. 学校, 博士学位论文.`, `作者. 2017. 题名. 出版者.`)."""
    parts = [p.strip() for p in re.split(r"\.\s+|\.(?=[\u4e00-\u9fff])", text) if p.strip()]
    year_part = None
    if parts and (dated := re.search(r",\s*((?:19[5-9]\d|20[0-4]\d))[a-z]?$", parts[0])) is not None:
        year_part = int(dated.group(1))  # Harvard: `作者, 作者, 2014. 题名. 刊名 27 (6), 75–99.`
        parts[0] = parts[0][: dated.start()]
    if len(parts) < 2 or re.search(r"\d", parts[0]) or len(parts[0]) > 60:
        return None
    rest = parts[1:]
    if len(rest) > 1 and _BARE_YEAR.fullmatch(rest[0]):  # Chicago: `作者. 2017. 题名.`
        year_part = _year(rest.pop(0))
    title_part = rest[0]
    after = text[text.index(title_part) + len(title_part) :].lstrip(" .")
    source_part = next((p for p in rest[1:] if not _BARE_YEAR.fullmatch(p.rstrip("."))), None)
    place = None
    source = None
    volume, issue, pages = _volume_issue_pages(after)
    if source_part is not None:
        place, _ = _placeless(re.sub(r"^\s*In:\s*", "", source_part), publisher=False)
        source = _source_of(source_part)
        # Chicago author-date and Harvard without quotation marks: `刊名 27(6): 75–99`, `刊名 27 (6), 75–99`
        journal = _JOURNAL_NUMBERS.match(source_part)
        if journal is not None and not _YEAR.fullmatch(journal.group("vol")):
            source, volume = journal.group("src").strip(), journal.group("vol")
            issue = journal.group("issue") or issue
    authors, truncated = _authors(parts[0])
    return ParsedReference(
        raw=raw,
        style="plain",
        authors=authors,
        authors_truncated=truncated,
        title=_title_of(title_part) or None,
        source=source,
        place=place,
        year=_year(after) or year_part,
        volume=volume,
        issue=issue,
        pages=pages or _end_pages(after),
        doi=_doi(text),
    )


def _doi(text: str) -> str | None:
    m = _DOI.search(text)
    return m.group(1).rstrip(".").lower() if m else None


def _link_text(text: str) -> str:
    """`text` with each Markdown link to a web page replaced by its label, unescaped."""
    return _MD_LINK.sub(lambda m: _MD_ESCAPE.sub(r"\1", m.group(1)), text)


def parse_reference(entry: str) -> ParsedReference:
    """The fields of one entry (see the module docstring)."""
    original = join_lines(entry)  # a title wrapped inside one entry (`《基于深度学习的\n图像识别研究》`)
    raw = _link_text(original)
    if not raw:
        return ParsedReference(raw=entry, unparsable="空条目")
    body = _MARKER.sub("", raw, count=1)
    if (doi := doi_only(body)) is not None:
        return ParsedReference(raw=raw, style="doi", doi=doi)
    text = _norm(body)
    parsed = _parse(raw, text)
    md = None if _TYPE.search(text) or _QUOTED.search(text) else markdown_line(original, body)
    if md is not None and (md.as_exported or parsed.unparsable):
        parsed = ParsedReference(raw=raw, style="markdown", **asdict(md))
    if parsed.title and not parsed.unparsable:
        kind = not_a_paper(parsed.title, text, authors=bool(parsed.authors))
        return parsed.model_copy(
            update={"title": _as_written(body, parsed.title), "degree": _degree(text, parsed.title), "not_a_paper": kind}
        )
    return parsed


def _degree(text: str, title: str) -> str | None:
    """博士 or 硕士 when the entry names a thesis genre outside its title (a title such as
    硕士论文写作指导 names none); None when it names neither or both."""
    at = text.find(title)
    if at >= 0:
        rest = text[:at] + text[at + len(title) :]
    else:  # the title is not spelt as the entry reads: only a bracketed genre counts
        rest = " ".join(m.group(0) for m in _TITLE_GENRE.finditer(text))
    rest = _BOTH_LEVELS.sub(" ", rest)
    found = {level for level, pattern in _DEGREE if pattern.search(rest)}
    return found.pop() if len(found) == 1 else None


def _parse(raw: str, text: str) -> ParsedReference:
    code = _TYPE.search(text)
    if code is not None:
        parsed = _parse_gbt(raw, text, code)
        if parsed is not None and parsed.title:
            return parsed
    quote = _QUOTED.search(text)
    if quote is not None:
        return _parse_quoted(raw, text, quote)
    if "《" in raw and _free_shape(raw):
        free = _parse_free(raw, text)
        if free is not None:
            return free
    year = re.search(r"\(\s*(19[5-9]\d|20[0-4]\d)[a-z]?(?:\s*,[^)]*)?\s*\)", text)
    if year is not None and year.start() > 0:
        return _parse_apa(raw, text, year)
    plain = _parse_plain(raw, text)
    if plain is not None and plain.title:
        return plain
    if "《" in raw:
        # a title containing 《》 standing first (`《民法典》第585条的适用，作者，刊2022年第6期`) or alone
        first = re.split(r"[,;]", text.rstrip(".。 "), maxsplit=1)
        if "《" in first[0] and not re.search(r"[.:]", first[0]):
            tail = first[1] if len(first) > 1 else ""
            return ParsedReference(raw=raw, style="free", title=_bare_title(first[0]), year=_year(tail))
        free = _parse_free(raw, text)
        if free is not None:
            return free
    return ParsedReference(raw=raw, unparsable="读不出题名：既没有文献类型标识 [J]/[D]/…，也没有《题名》或 (年份)")


def parse_references(text: str | None = None, references: list[str] | None = None) -> list[ParsedReference]:
    """Entries from a pasted list or from a list of strings (one entry each)."""
    # an entity is the client's escaping, not the reference's text (`R&amp;D投入…` is R&D)
    entries = [visible(r) for r in references] if references is not None else split_entries(text or "")
    entries = [decode_entities(e) for e in entries]
    return [parse_reference(e) for e in entries]
