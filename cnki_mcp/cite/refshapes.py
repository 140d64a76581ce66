"""Reference shapes that are not a citation style (pure; read by `cite.refparse`):

* a line break inside one entry (a title wrapped in a `references` item, `《基于深度学习的\\n
  图像识别研究》`): joined as `split_entries` joins wrapped lines, without a space between two
  Han characters (`join_lines`);
* a line that is only a DOI (`https://doi.org/10.…`, `doi:10.…`, `DOI：10.…`, a bare `10.…/…`):
  looked up by its DOI (`doi_only`);
* a line of the product's own Markdown export (export_citations format=markdown, `cite.tabular`):
  `[题名](https://doi.org/…) — 作者; 作者, 来源, 年` or `题名 — 作者, 来源, 年` (`markdown_line`);
* a title naming a law or regulation (`民法典`, `中华人民共和国著作权法`, `计算机软件保护条例`, a
  judicial interpretation), a standard (`GB/T 7714—2015`) or a classic (`论语`, `史记·项羽本纪`):
  CNKI lists papers about them, never the thing itself, so looking them up spends requests on a
  certain and misleading not_found (`not_a_paper`).

and the spellings CNKI gives what a list writes otherwise: a foreign name's dot (`NAME_DOTS`), and a
title typed on an English keyboard with CNKI's marks (`chinese_marks`).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import unquote

from cnki_mcp.cite.model import HAN

_BREAK = re.compile(r"[ \t\r]*\n\s*")


def _wide(char: str) -> bool:
    return unicodedata.east_asian_width(char) in ("W", "F")


def join_lines(text: str) -> str:
    """`text` with each line break (and the spaces around it) joined: nothing between two wide
    (Han, full-width) characters, one space otherwise."""
    def joiner(m: re.Match[str]) -> str:
        before, after = m.string[m.start() - 1 : m.start()], m.string[m.end() : m.end() + 1]
        return "" if before and after and _wide(before) and _wide(after) else " "

    return _BREAK.sub(joiner, text.strip())


_DOI_ONLY = re.compile(
    r"(?:doi\s*[:：]?\s*|https?://(?:dx\.)?doi\.org/)?(10\.\d{4,9}/[^\s,，;；]+?)[.。]?", re.I
)


def doi_only(text: str) -> str | None:
    """The DOI, lower case, when `text` is nothing but a DOI or its resolver link."""
    m = _DOI_ONLY.fullmatch(text.strip())
    return unquote(m.group(1)).lower() if m else None


# export_citations' Markdown line (`cite.tabular.markdown_line`), its link already read as its label:
# `题名 — 作者; 作者, 来源, 年`. The authors are joined by `; `, the parts by `, `; any may be missing.
_MD_SEPARATOR = " — "
_MD_ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")
_MD_DOI_LINK = re.compile(r"\]\(\s*https?://(?:dx\.)?doi\.org/(10\.\d{4,9}/[^\s()]+)\s*\)", re.I)
_MD_YEAR = re.compile(r"(?:19|20)\d\d")
_PERSON = re.compile(r"[\u4e00-\u9fff·]{2,3}|[A-Z][A-Za-z'’.\-]+(?: [A-Z][A-Za-z'’.\-]*){1,3}")


# What starts a citation style's entry, never an exported title: `Smith, J. (2019).`, `王明. `.
_STYLE_HEAD = re.compile(r"\((?:19|20)\d\d[a-z]?\)|^[^.。]{1,80}[.。]\s")


@dataclass(frozen=True)
class MarkdownLine:
    title: str
    authors: list[str] = field(default_factory=list)
    source: str | None = None
    year: int | None = None
    doi: str | None = None

    @property
    def as_exported(self) -> bool:
        """Whether the line reads as the export writes it, ending in its year with a title that
        does not start as a style's entry does: a style's entry with a spaced dash in its title
        (`Smith, J. (2019). Teaching writing — what works. …`, `王明. 数字经济 — 理论与实践. …`)
        splits at the dash too, into a title holding its authors."""
        return self.year is not None and _STYLE_HEAD.search(self.title) is None


def markdown_line(original: str, text: str) -> MarkdownLine | None:
    """`text` (the entry with its Markdown links read as their labels) as a line of the
    product's Markdown export; `original` still holds the link, whose DOI is the record's.
    None when it has another shape."""
    if _MD_SEPARATOR not in text:
        return None
    head, tail = text.rsplit(_MD_SEPARATOR, 1)
    if "《" in tail:  # `作者 — 《题名》，《刊名》`: a free-style entry
        return None
    title = _MD_ESCAPED.sub(r"\1", head).strip()
    tail = _MD_ESCAPED.sub(r"\1", tail).strip().rstrip(".")
    if not title or not tail:
        return None
    *others, last = tail.split("; ")  # every author but the last stands before a `; `
    year = None
    if (dated := re.fullmatch(r"(.*?)(?:, )?((?:19|20)\d\d)", last)) is not None:
        last, year = dated.group(1), int(dated.group(2))
    authors = [a.strip() for a in others]
    source = None
    if last:
        name, _, rest = last.rpartition(", ") if (others or ", " in last) else ("", "", last)
        if name:
            authors.append(name.strip())
            source = rest.strip() or None
        elif others or _PERSON.fullmatch(rest):  # one part: a name when it reads as one
            authors.append(rest.strip())
        else:
            source = rest.strip()
    if any(not a for a in authors) or (year is None and not authors and source is None):
        return None
    link = _MD_DOI_LINK.search(original)
    doi = unquote(link.group(1)).lower() if link else None
    return MarkdownLine(title=title, authors=authors, source=source, year=year, doi=doi)


NotAPaper = Literal["law", "standard", "classic"]

# A law, regulation or judicial interpretation by its name: the state's full name before it, a
# name ending as only such texts end (法典, 条例, 实施细则, 若干规定, 暂行办法, 通则, 总则, 的解释),
# an issuing body's `关于…的决定/解释/规定/通知/意见/批复`, or a common short name.
_LAW = re.compile(
    r"(?:中华人民共和国[^\W\d_的]{1,30}(?:法|法典|条例|规定|办法|细则|决定)"
    r"|[^\W\d_的]{1,30}(?:法典|条例|实施细则|实施办法|若干规定|暂行规定|暂行办法|管理办法|管理规定|通则|总则)"
    r"|(?:最高人民法院|最高人民检察院|国务院|全国人民代表大会(?:常务委员会)?)(?:办公厅)?关于.{2,80}"
    r"(?:的决定|的解释|的规定|的通知|的意见|的批复))"
    r"(?:[(（][^()（）]{1,20}[)）])?"  # `（2018年修正）`, `（试行）`
)
# The short names of laws; a book by an author may bear one (`崔建远. 合同法[M]`): only an entry
# without authors is taken for the law.
_SHORT_LAW = re.compile(
    r"(?:民|刑|宪|商|经济|行政|民事诉讼|刑事诉讼|行政诉讼|合同|物权|担保|侵权责任|婚姻|继承|公司|证券|破产|保险|"
    r"票据|信托|劳动|劳动合同|著作权|专利|商标|反垄断|反不正当竞争|消费者权益保护|个人信息保护|数据安全|网络安全|"
    r"电子商务|民法|立法|监察|国家安全|环境保护|土地管理|城乡规划|行政许可|行政处罚|行政复议|国家赔偿|仲裁|"
    r"律师|法官|检察官|治安管理处罚|道路交通安全|食品安全|药品管理|教育|高等教育|义务教育|未成年人保护|"
    r"妇女权益保障|老年人权益保障|慈善|民办教育促进|外商投资|对外贸易|海商|民用航空|森林|草原|水|矿产资源|"
    r"税收征收管理|个人所得税|企业所得税|预算|审计|统计|会计|银行业监督管理|商业银行|中国人民银行)法"
    r"(?:[(（][^()（）]{1,20}[)）])?"
)
# A standard's number: GB/T 7714—2015, GB 50016-2014, ISO 690:2010, DB11/T 1234-2015, JGJ 3-2010.
_STANDARD = re.compile(
    r"\b(?:GB(?:/[TZ])?|GJB|ISO(?:/IEC)?|IEC|JGJ|JTG|HJ|YY|QB|SL|DL(?:/T)?|DB\d{2}(?:/T)?|T/[A-Z]{2,8})"
    r"\s*\d[\d.]*\s*(?:[-—–:]\s*(?:19|20)\d\d)?\b"
)
# Classics CNKI lists papers about, never the work (a chapter after ·: 论语·学而, 史记·项羽本纪).
_CLASSIC_NAMES = (
    "论语 孟子 大学 中庸 诗经 尚书 礼记 周礼 仪礼 周易 易经 春秋 左传 公羊传 穀梁传 谷梁传 孝经 尔雅 "
    "道德经 老子 庄子 荀子 韩非子 墨子 管子 孙子兵法 吕氏春秋 淮南子 列子 山海经 楚辞 战国策 国语 "
    "史记 汉书 后汉书 三国志 资治通鉴 贞观政要 世说新语 水经注 文心雕龙 说文解字 "
    "黄帝内经 伤寒论 金匮要略 本草纲目 天工开物 梦溪笔谈 齐民要术 "
    "红楼梦 三国演义 水浒传 西游记 儒林外史 聊斋志异 金瓶梅 牡丹亭 西厢记 窦娥冤 唐律疏议 大清律例"
)
_CLASSICS = frozenset(_CLASSIC_NAMES.split())


# An entry cited as a journal article, thesis, proceedings paper, newspaper article, chapter or
# patent is one, whatever its title names (`李明. 浅谈新修订的纪律处分条例[J]`).
_PAPER_CODE = re.compile(r"\[\s*[JDCNAP](?:\s*/\s*OL)?\s*\]", re.I)
# Words of a paper's title about a law or a classic (`论民法总则`, `论语研究`), not its name.
_ABOUT = re.compile(r"^(?:试|浅|略|简|再|评|析)?论(?!语)|研究|探析|分析|述评|思考|评析|释评|译注|新解|导读")


def not_a_paper(title: str, entry: str = "", *, authors: bool = False) -> NotAPaper | None:
    """What `title` names when it is not a paper's title (see the module docstring): a title
    whose whole is such a name, or an entry (`entry`) citing a standard by its number; a law's
    short name only when the entry names no `authors`."""
    name = re.sub(r"\s+", "", title.strip().strip("《》"))
    if _ABOUT.search(name) or _PAPER_CODE.search(entry):
        return None
    if _LAW.fullmatch(name) or (not authors and _SHORT_LAW.fullmatch(name)):
        return "law"
    if name.split("·", 1)[0] in _CLASSICS:
        return "classic"
    # a standard: cited as one (`[S]`), by its number beside the title, or by its number alone;
    # a paper's title may name one (`基于GB/T 7714—2015的著录研究`)
    if re.search(r"\[\s*S\s*\]", entry) or _STANDARD.search(entry.replace(title, " ")) or _STANDARD.fullmatch(title.strip()):
        return "standard"
    return None


NOT_A_PAPER_REASON: dict[NotAPaper, str] = {
    "law": "法律法规、司法解释名称：知网收录研究它的论文，不收录法规本身；未查找知网，请对照国家法律法规数据库等官方文本核对",
    "standard": "标准：未按论文查找知网；请对照全国标准信息公共服务平台等核对标准号、名称与年份",
    "classic": "古籍经典名称：知网收录研究它的论文，不收录原著；未查找知网，请对照所引版本核对",
}


# The dots people put between the parts of a foreign name (列夫•托尔斯泰 with a bullet, ‧ from a
# Taiwanese IME, ・ from a Japanese one): CNKI's titles write the middle dot ·.
NAME_DOTS = str.maketrans(dict.fromkeys("•‧・･∙⋅", "·"))


_LONE_DASH = re.compile(r"(?<![—―])(?:[—―]|--)(?![—―-])|――")


def _subtitle_dash(m: re.Match[str]) -> str:
    """—— for a lone dash, except one between digits: a range (`1978—2018`, `2000—2020年`) CNKI's
    own titles write with one dash, so its —— spelling would never match."""
    text, start, end = m.string, m.start(), m.end()
    if start > 0 and end < len(text) and text[start - 1].isdigit() and text[end].isdigit():
        return m.group()
    return "——"


def chinese_marks(title: str) -> str:
    """A Chinese title typed on an English keyboard spelt with the marks CNKI's titles carry:
    straight double quotes in pairs as “…” and a lone dash (`—`, `--`) as ——, except between
    digits (`基于"互联网+"的…—以某高校为例` -> `基于“互联网+”的…——以某高校为例`; `(1978—2018)`
    stays). Other titles as given."""
    if not HAN.search(title):
        return title
    text = _LONE_DASH.sub(_subtitle_dash, title)
    if text.count('"') >= 2 and text.count('"') % 2 == 0:
        parts = text.split('"')
        text = parts[0] + "".join(("“" if i % 2 else "”") + part for i, part in enumerate(parts[1:], 1))
    return text
