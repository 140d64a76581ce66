"""Exports as other software reads them: BibTeX through bibtexparser, RIS through rispy (and the
tags Zotero's RIS import maps), CSL-JSON names, the formatted styles' author forms."""

from __future__ import annotations

import json
from typing import Any

import bibtexparser
import pytest
import rispy
from bibtexparser import middlewares

from cnki_mcp.cite import export
from cnki_mcp.cite.names import parse_name


def foreign(authors: list[str], **fields: Any) -> dict[str, Any]:
    return {"record_ref": "o1", "title": "Global burden of 369 diseases", "authors": authors,
            "doc_type": "外文期刊", "source": "The Lancet", "year": 2020, **fields}


ORGANISATIONS = [
    "World Health Organization",
    "GBD 2019 Diseases and Injuries Collaborators",
    "Department of Medicine, Peking University",
    "Smith & Jones Consulting",
]


@pytest.mark.parametrize("org", ORGANISATIONS)
def test_a_latin_organisation_author_is_kept_whole_in_every_format(org: str) -> None:
    """A group author is no family name plus initials: `Organization, W. H.`, `ORGANIZATION W H`,
    BibTeX `Collaborators, GBD 2019 Diseases and Injuries` (read as two authors at the `and`)."""
    record = foreign([org, "John Smith"])
    assert parse_name(org).literal

    lib = bibtexparser.parse_string(
        export([record], "bibtex").text,
        # names split before decoding: the decoder removes the braces that keep a name whole
        append_middleware=[middlewares.SeparateCoAuthors(), middlewares.LatexDecodingMiddleware()],
    )
    assert not lib.failed_blocks
    names = [a.strip("{}").replace("\\&", "&") for a in lib.entries[0]["author"]]  # the list is not decoded
    assert names == [org, "Smith, John"]  # braced: one name, not split at `and`

    (ris,) = rispy.loads(export([record], "ris").text)
    assert ris["authors"] == [org, "Smith, John"]  # no comma: Zotero's RIS import takes it whole

    (item,) = json.loads(export([record], "csl_json").text)
    assert item["author"] == [{"literal": org}, {"family": "Smith", "given": "John"}]

    assert export([record], "apa").text.startswith(f"{org}, & Smith, J. (2020).")
    assert export([record], "gbt7714").text.startswith(f"[1] {org}, SMITH J. Global burden")


@pytest.mark.parametrize("person", ["Anna van der Berg", "Andrea Groupe", "Sandra Anderson", "Li Wei"])
def test_a_person_named_near_an_organisation_word_is_still_a_person(person: str) -> None:
    name = parse_name(person)
    assert not name.literal and name.given


@pytest.mark.parametrize(
    ("person", "family", "given"),
    [
        ("Bureau, Jean", "Bureau", "Jean"),
        ("Hospital, Pedro", "Hospital", "Pedro"),
        ("O'Neil-Center, Mary", "O'Neil-Center", "Mary"),
        ("Group, J.-P.", "Group", "J.-P."),
        ("Van Der Centre, A. B.", "Van Der Centre", "A. B."),
    ],
)
def test_a_person_written_family_comma_given_is_a_person_whatever_the_surname(
    person: str, family: str, given: str
) -> None:
    """Bureau, Hospital, Center are real surnames: `Bureau, Jean` was one literal organisation
    (BibTeX `{Bureau, Jean}`, EndNote `Bureau,, Jean,`, no initials in APA or GB/T)."""
    name = parse_name(person)
    assert (name.literal, name.family, name.given) == (False, family, given)
    record = foreign([person])
    (entry,) = bibtexparser.parse_string(export([record], "bibtex").text).entries
    assert entry["author"] == f"{family}, {given}"
    (item,) = json.loads(export([record], "csl_json").text)
    assert item["author"] == [{"family": family, "given": given}]


def test_persons_joined_by_and_in_one_author_are_each_an_author() -> None:
    record = foreign(["Smith, J. and Jones, K.", "Lee, Anna & Park, M."])
    (item,) = json.loads(export([record], "csl_json").text)
    assert item["author"] == [
        {"family": "Smith", "given": "J."}, {"family": "Jones", "given": "K."},
        {"family": "Lee", "given": "Anna"}, {"family": "Park", "given": "M."},
    ]  # fmt: skip
    (ris,) = rispy.loads(export([record], "ris").text)
    assert ris["authors"] == ["Smith, J.", "Jones, K.", "Lee, Anna", "Park, M."]


def test_bibtex_titles_brace_the_words_whose_case_styles_would_lower() -> None:
    """plain.bst and its kin write a title in sentence case: an unbraced `COVID-19 and ESG` comes
    out `Covid-19 and esg`. Words with a capital after their first letter are braced (Zotero's rule)."""
    title = "COVID-19 and ESG Disclosure in China: Evidence from the A-Share Market of mRNA Firms"
    records = [foreign(["Jie CHEN"], title=title), foreign(["张三"], title="基于ESG的研究", record_ref="o2")]
    raw = bibtexparser.parse_string(export(records, "bibtex").text)
    assert [e["title"] for e in raw.entries] == [
        "{COVID-19} and {ESG} Disclosure in China: Evidence from the A-Share Market of {mRNA} Firms",
        "{基于ESG的研究}",
    ]
    decoded = bibtexparser.parse_string(
        export(records, "bibtex").text, append_middleware=[middlewares.LatexDecodingMiddleware()]
    )
    assert [e["title"] for e in decoded.entries] == [title, "基于ESG的研究"]


def test_ris_conference_paper_names_its_proceedings_in_c3() -> None:
    """The RIS spec's CONF has T2 Conference Name and C3 Proceedings Title; Zotero's RIS import maps
    them to conferenceName and proceedingsTitle. The proceedings title is C3 (and still T2, which
    JabRef and Mendeley read as the booktitle)."""
    paper = {"record_ref": "c1", "title": "违约金调整规则的反思与重构", "authors": ["陶欣一"], "doc_type": "会议",
             "source": "中国法学会民法学研究会年会论文集", "conference": "中国法学会民法学研究会2016年年会",
             "year": 2016, "pages": "286-295"}
    (entry,) = rispy.loads(export([paper], "ris").text)
    assert entry["type_of_reference"] == "CONF"
    assert entry["custom3"] == "中国法学会民法学研究会年会论文集"  # rispy's name for C3
    assert entry["secondary_title"] == "中国法学会民法学研究会年会论文集"
    (journal,) = rispy.loads(export([foreign(["John Smith"])], "ris").text)
    assert "custom3" not in journal


def test_markdown_export_links_a_paper_by_its_doi() -> None:
    """A CNKI paper has no stable URL (its kcms2 link expires and is dropped) but often a DOI: the
    Markdown list linked nothing where link_references and APA use https://doi.org/<doi>."""
    paper = {"record_ref": "d1", "title": "违约金惩罚性功能的困境与出路", "authors": ["姜雨欣"], "doc_type": "期刊",
             "source": "法商研究", "year": 2022, "doi": "10.3969/j.cnki.fsyj.2022.01.001"}
    assert export([paper], "markdown").text == (
        "- [违约金惩罚性功能的困境与出路](https://doi.org/10.3969/j.cnki.fsyj.2022.01.001) — 姜雨欣, 法商研究, 2022\n"
    )
    odd = export([foreign(["John Smith"], doi="10.1016/S1474-4422(22)00050-1")], "markdown").text
    assert "(https://doi.org/10.1016/S1474-4422%2822%2900050-1)" in odd  # parentheses kept out of the link's end


def _brace_depths(text: str) -> list[int]:
    """BibTeX's count: every brace, escaped or not."""
    depth, out = 0, []
    for ch in text:
        depth += (ch == "{") - (ch == "}")
        out.append(depth)
    return out


@pytest.mark.parametrize("text", ["x ∈ {1, 2, …", "lone } brace", "a {b} c } d { e", "}{", "{x}"])
def test_a_lone_brace_does_not_leave_a_bibtex_field_open(text: str) -> None:
    """An abstract cut inside `{1, 2, …}` has a brace without its partner: BibTeX counts `\\{` too,
    so the field stayed open and biber, pybtex and bibtexparser 1 read on into the next entry."""
    records = [foreign(["John Smith"], title=f"T {text}", abstract=text, record_ref="b1"),
               foreign(["Anna Berg"], title="Next paper", record_ref="b2")]
    bib = export(records, "bibtex").text
    for line in bib.splitlines():
        if line.startswith(("  title", "  abstract")):
            value = line.split(" = ", 1)[1].rstrip(",")
            depths = _brace_depths(value)
            assert min(depths[:-1]) > 0 and depths[-1] == 0, line  # the field's own braces close it, last
    lib = bibtexparser.parse_string(bib, append_middleware=[middlewares.LatexDecodingMiddleware()])
    assert [e.key for e in lib.entries] == ["smith2020t", "berg2020next"]
    assert lib.entries[0]["abstract"] == text


def test_bibtex_parts_of_one_scope_keep_the_whole_exports_keys() -> None:
    """Keys clashing in one export get a, b suffixes; exported in parts (offset/limit, the advice
    for an export over 64 KB) each part gave its paper the bare key, so the parts put together
    held `zhang2021jiyu` twice, for two papers, and neither matched the whole export's key."""
    a = {"record_ref": "a", "title": "基于深度学习的图像识别", "authors": ["张三"], "doc_type": "期刊", "year": 2021}
    b = {"record_ref": "b", "title": "基于深度学习的文本分类", "authors": ["张伟"], "doc_type": "期刊", "year": 2021}
    c = {"record_ref": "c", "title": "其他研究", "authors": ["李四"], "doc_type": "期刊", "year": 2020}

    def keys(text: str) -> list[str]:
        return [e.key for e in bibtexparser.parse_string(text).entries]

    whole = keys(export([a, b, c], "bibtex").text)
    assert whole == ["zhang2021jiyua", "zhang2021jiyub", "li2020qita"]
    parts = [keys(export(part, "bibtex", key_scope=[a, b, c]).text) for part in ([a], [b, c])]
    assert parts == [whole[:1], whole[1:]]
    assert keys(export([a], "bibtex").text) == ["zhang2021jiyu"]  # alone, without a scope


def test_a_paper_the_scope_lists_twice_keeps_the_whole_exports_key_in_a_part() -> None:
    """Two result rows whose refs resolve to one merged paper: the one-call export renders it once
    (`he2021jiyu`), the part counted it twice and wrote `he2021jiyub`."""
    rec = {"record_ref": "r1", "title": "基于深度学习的研究", "authors": ["何明"], "year": 2021, "doc_type": "期刊"}
    other = {"record_ref": "r2", "title": "另一篇", "authors": ["李四"], "year": 2020, "doc_type": "期刊"}

    def keys(text: str) -> list[str]:
        return [e.key for e in bibtexparser.parse_string(text).entries]

    whole = keys(export([rec, other], "bibtex").text)  # render_export renders a paper once
    assert whole[0] == "he2021jiyu"
    parts = [keys(export(part, "bibtex", key_scope=[rec, other, rec]).text) for part in ([rec], [other])]
    assert parts == [whole[:1], whole[1:]]


def test_endnote_marks_an_organisation_author_as_corporate() -> None:
    """EndNote inverts `World Health Organization` into `Organization, World Health` unless the name
    ends with a comma (its rule for corporate authors; commas inside are doubled)."""
    authors = ["World Health Organization", "Department of Medicine, Peking University", "John Smith", "张三"]
    text = export([foreign(authors)], "endnote").text
    assert [line[3:] for line in text.splitlines() if line.startswith("%A ")] == [
        "World Health Organization,", "Department of Medicine,, Peking University,", "John Smith", "张三",
    ]


def test_markdown_escapes_the_tildes_github_strikes_through() -> None:
    """cmark-gfm (GitHub) renders `2~3岁与5~6岁` as 2<del>3岁与5</del>6岁: single tildes strike through."""
    paper = {"record_ref": "t1", "title": "2~3岁与5~6岁儿童的语言发展", "authors": ["张三"], "doc_type": "期刊",
             "source": "学前教育研究", "year": 2020}
    assert export([paper], "markdown").text.startswith(r"- 2\~3岁与5\~6岁儿童的语言发展 — 张三")
