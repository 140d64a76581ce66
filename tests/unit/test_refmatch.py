"""Verdicts for parsed references against CNKI records: verified, each kind of mismatch,
not found, ambiguous, unparsable; missing entry fields are warnings, never evidence."""

from __future__ import annotations

import pytest

from cnki_mcp.cite.refmatch import RecordView, judge
from cnki_mcp.cite.refparse import parse_reference

REAL = RecordView(
    record_ref="cnki:DFFX201903002",
    title="论自动驾驶汽车的产品责任",
    authors=["张三", "李四", "王五", "赵六"],
    source="东方法学",
    year=2019,
    volume="41",
    issue="03",
    pages="12-20",
    doi="10.1234/abc",
    doc_type="期刊",
)
OTHER = RecordView(record_ref="cnki:X1", title="论自动驾驶汽车的刑事责任", authors=["钱七"], source="法学研究", year=2020, doc_type="期刊")
GOOD = "张三, 李四, 王五, 等. 论自动驾驶汽车的产品责任[J]. 东方法学, 2019, 41(3): 12-20."


def test_an_exact_reference_is_verified() -> None:
    got = judge(parse_reference(GOOD), [OTHER, REAL])
    assert got.verdict == "verified" and got.record == REAL and got.fields == []


@pytest.mark.parametrize(
    ("entry", "fields"),
    [
        (GOOD.replace("2019", "2018"), ["year"]),
        (GOOD.replace("东方法学", "中外法学"), ["source"]),
        (GOOD.replace("41(3)", "42(3)"), ["volume"]),
        (GOOD.replace("41(3)", "41(4)"), ["issue"]),
        (GOOD.replace("12-20", "13-20"), ["pages"]),
        (GOOD.replace("张三, 李四", "张三, 孙八"), ["authors"]),
        (GOOD.replace("[J]", "[D]"), ["type"]),
        (GOOD.replace("产品责任", "产品之责任"), ["title"]),
        (GOOD + " DOI:10.9999/zzz.", ["doi"]),
    ],
)
def test_each_differing_field_is_a_mismatch_naming_it(entry: str, fields: list[str]) -> None:
    got = judge(parse_reference(entry), [REAL, OTHER])
    assert got.verdict == "mismatch"
    assert got.fields == fields
    assert got.record == REAL


def test_a_fabricated_title_is_not_found_even_with_a_real_author_and_journal() -> None:
    fake = "张三. 量子区块链赋能乡村振兴的法律路径[J]. 东方法学, 2019, 41(3): 12-20."
    assert judge(parse_reference(fake), [REAL, OTHER]).verdict == "not_found"


def test_no_candidates_is_not_found() -> None:
    assert judge(parse_reference(GOOD), []).verdict == "not_found"


def test_same_title_by_different_authors_without_authors_in_the_entry_is_ambiguous() -> None:
    twin = REAL.model_copy(update={"record_ref": "cnki:twin", "authors": ["周九"], "source": "东方法学"})
    entry = parse_reference("《论自动驾驶汽车的产品责任》，《东方法学》2019年第3期。")
    got = judge(entry, [REAL, twin])
    assert got.verdict == "ambiguous"
    assert {c.record_ref for c in got.candidates} == {"cnki:DFFX201903002", "cnki:twin"}


def test_a_record_lacking_the_fields_the_entry_gives_does_not_tie_with_the_one_holding_them() -> None:
    # the same title, authors and source without year, volume, issue or pages (a bare record):
    # counted as agreeing on all four, it tied with the full record and the entry was ambiguous
    bare = REAL.model_copy(
        update={"record_ref": "cnki:bare", "year": None, "volume": None, "issue": None, "pages": None, "doi": None}
    )
    for order in ([bare, REAL], [REAL, bare]):
        got = judge(parse_reference(GOOD), order)
        assert got.verdict == "verified" and got.record is not None and got.record.record_ref == REAL.record_ref


def test_authors_in_the_entry_decide_between_same_titled_records() -> None:
    twin = REAL.model_copy(update={"record_ref": "cnki:twin", "authors": ["周九"]})
    got = judge(parse_reference(GOOD), [twin, REAL])
    assert got.verdict == "verified" and got.record is not None and got.record.record_ref == REAL.record_ref


def test_missing_entry_fields_are_warnings_not_mismatches() -> None:
    got = judge(parse_reference("论自动驾驶汽车的产品责任[J]. 东方法学."), [REAL])
    assert got.verdict == "verified"
    assert any("缺项不等于伪造" in w for w in got.warnings)


def test_fields_the_record_lacks_are_reported_unchecked() -> None:
    bare = REAL.model_copy(update={"volume": None, "issue": None, "pages": None})
    got = judge(parse_reference(GOOD), [bare])
    assert got.verdict == "verified"
    assert any("未核对" in w and "pages" in w for w in got.warnings)


def test_a_garbled_title_with_author_year_source_agreeing_is_a_title_mismatch() -> None:
    entry = parse_reference("张三, 李四. 自动驾驶汽车产品责任问题研究[J]. 东方法学, 2019, 41(3): 12-20.")
    got = judge(entry, [REAL])
    assert got.verdict == "mismatch" and "title" in got.fields


def test_an_unparsable_entry_stays_unparsable() -> None:
    assert judge(parse_reference("随便写的一句话"), [REAL]).verdict == "unparsable"


def test_the_same_doi_identifies_the_record_whatever_the_title() -> None:
    entry = parse_reference("张三. Product liability of autonomous cars[J]. 东方法学, 2019. DOI:10.1234/ABC.")
    got = judge(entry, [REAL])
    assert got.record == REAL and got.verdict == "mismatch" and "title" in got.fields


WESTERN = RecordView(
    record_ref="cnki:W1",
    title="Modelling model compression of deep learning with graph-based methods",
    authors=["Tanaka, Yuki", "Smith, John", "Johnson, Emma"],
    source="IEEE Transactions on Neural Networks and Learning Systems",
    year=2024,
    volume="34",
    issue="5",
    pages="2909-2918",
    doc_type="外文期刊",
)
PINYIN = RecordView(
    record_ref="cnki:W2",
    title="Carbon emissions and driving factors: evidence from China",
    authors=["Wilson, Sarah", "Chen Jie", "Zhang Wei", "Wu Hao"],
    source="Journal of Cleaner Production",
    year=2020,
    doc_type="外文期刊",
)


@pytest.mark.parametrize(
    "entry",
    [
        "Tanaka, Y., Smith, J., & Johnson, E. (2024). Modelling model compression of deep learning with graph-based "
        "methods. IEEE Transactions on Neural Networks and Learning Systems, 34(5), 2909–2918.",
        "TANAKA Y, SMITH J, JOHNSON E. Modelling model compression of deep learning with graph-based methods[J]. "
        "IEEE Transactions on Neural Networks and Learning Systems, 2024, 34(5): 2909-2918.",
        "Tanaka Y, Smith J, Johnson E. Modelling model compression of deep learning with graph-based methods. "
        "IEEE Transactions on Neural Networks and Learning Systems. 2024;34(5):2909–18.",
    ],
)
def test_initials_name_the_records_full_western_names(entry: str) -> None:
    got = judge(parse_reference(entry), [WESTERN])
    assert (got.verdict, got.fields) == ("verified", [])


def test_pinyin_names_match_in_the_gbt_surname_first_form() -> None:
    entry = ("WILSON S, CHEN J, ZHANG W, et al. Carbon emissions and driving factors: evidence from China[J]. "
             "Journal of Cleaner Production, 2020.")
    assert judge(parse_reference(entry), [PINYIN]).verdict == "verified"


@pytest.mark.parametrize(
    "authors", ["Tanaka, K., Smith, J., & Johnson, E.", "Tanaka, Y., Smith, J., & Jones, E.", "Smith, J., Tanaka, Y., & Johnson, E."]
)
def test_a_wrong_initial_surname_or_order_is_an_authors_mismatch(authors: str) -> None:
    entry = f"{authors} (2024). Modelling model compression of deep learning with graph-based methods. Journal, 34(5)."
    got = judge(parse_reference(entry), [WESTERN.model_copy(update={"source": None})])
    assert (got.verdict, got.fields) == ("mismatch", ["authors"])


def test_authors_left_out_without_deng_are_an_authors_mismatch() -> None:
    three = REAL.model_copy(update={"authors": ["张三", "李四", "王五"]})
    short = GOOD.replace("张三, 李四, 王五, 等", "张三, 李四")
    got = judge(parse_reference(short), [three])
    assert (got.verdict, got.fields) == ("mismatch", ["authors"])
    assert got.diffs[0].entry == "张三; 李四" and got.diffs[0].record == "张三; 李四; 王五"
    with_deng = GOOD.replace("张三, 李四, 王五, 等", "张三, 李四, 等")
    assert judge(parse_reference(with_deng), [three]).verdict == "verified"


@pytest.mark.parametrize(("pages", "verdict"), [("2909–18", "verified"), ("2909–2918", "verified"), ("2909–17", "mismatch")])
def test_an_abbreviated_last_page_is_read_in_full(pages: str, verdict: str) -> None:
    entry = ("Tanaka Y, Smith J, Johnson E. Modelling model compression of deep learning with graph-based methods. "
             f"IEEE Transactions on Neural Networks and Learning Systems. 2024;34(5):{pages}.")
    assert judge(parse_reference(entry), [WESTERN]).verdict == verdict


@pytest.mark.parametrize(
    ("entry", "verdict", "fields"),
    [
        # Vancouver (NLM) abbreviates journal titles: the abbreviation names the record's journal
        ("Tanaka Y, Smith J, Johnson E. Modelling model compression of deep learning with graph-based methods. "
         "IEEE Trans Neural Netw Learn Syst. 2024;34(5):2909–18.", "verified", []),
        ("Wilson S, Chen J, Zhang W, Wu H. Carbon emissions and driving factors: evidence from China. "
         "J Clean Prod. 2020;30(11):259-73.", "verified", []),
        # another journal's abbreviation is still a source mismatch
        ("Wilson S, Chen J, Zhang W, Wu H. Carbon emissions and driving factors: evidence from China. "
         "J Affect Disord. 2020;30(11):259-73.", "mismatch", ["source"]),
    ],
)
def test_an_abbreviated_journal_title_names_the_records_journal(entry: str, verdict: str, fields: list[str]) -> None:
    record = next(r for r in (WESTERN, PINYIN) if r.title.split()[0] in entry)
    got = judge(parse_reference(entry), [record])
    assert (got.verdict, got.fields) == (verdict, fields)


NEWSPAPER = RecordView(
    record_ref="cnki:N1",
    title="违约金：从“有没有”到“好不好”",
    authors=["许涛", "侯超燕"],
    source="人民法院报",
    year=2023,
    pages="2",
    doc_type="报纸",
    date="2023-02-17",
)


@pytest.mark.parametrize(
    ("entry", "verdict", "fields"),
    [
        ("许涛, 侯超燕. 违约金：从“有没有”到“好不好”[N]. 人民法院报, 2023-02-17(2).", "verified", []),
        ("许涛, 侯超燕. 违约金：从“有没有”到“好不好”[N]. 人民法院报, 2023-03-17(2).", "mismatch", ["date"]),
        ("许涛、侯超燕：《违约金：从“有没有”到“好不好”》，《人民法院报》2023年2月7日。", "mismatch", ["date"]),
        # the 版次 written as 第N版: it was read as no page, so a wrong page passed
        ("许涛, 侯超燕. 违约金：从“有没有”到“好不好”[N]. 人民法院报, 2023-02-17(第2版).", "verified", []),
        ("许涛, 侯超燕. 违约金：从“有没有”到“好不好”[N]. 人民法院报, 2023-02-17（第5版）.", "mismatch", ["pages"]),
        ("许涛, 侯超燕. 违约金：从“有没有”到“好不好”[N]. 人民法院报, 2023-02-17(005).", "mismatch", ["pages"]),
    ],
)
def test_a_newspaper_articles_day_is_checked(entry: str, verdict: str, fields: list[str]) -> None:
    got = judge(parse_reference(entry), [NEWSPAPER])
    assert (got.verdict, got.fields) == (verdict, fields), got


def test_a_newspaper_listed_with_a_slashed_day_is_the_same_day() -> None:
    """CNKI's grid lists an older newspaper's day as 2004/06/29 (saved page
    kns8s-grid/pluginsx_search_result_4rows.html); a correct [N] entry's 2004-06-29 was a date
    mismatch against it. A record stored before the grid's dates were read as yyyy-mm-dd holds it so."""
    entry = "郭峰, 王广军, 娜仁. 乡镇统计的排头兵[N]. 中国信息报, 2004-06-29(16)."
    listed = RecordView(record_ref="cnki:ZGXX20040629ZZ16", title="乡镇统计的排头兵", authors=["郭峰", "王广军", "娜仁"],
                        source="中国信息报", year=2004, pages="16", doc_type="报纸", date="2004/06/29")  # fmt: skip
    assert (judge(parse_reference(entry), [listed]).verdict, judge(parse_reference(entry), [listed]).fields) == (
        "verified", [])  # fmt: skip
    wrong = judge(parse_reference(entry.replace("2004-06-29", "2004-06-28")), [listed])
    assert (wrong.verdict, wrong.fields) == ("mismatch", ["date"])


def test_an_entry_is_not_warned_for_leaving_out_what_the_record_has_none_of() -> None:
    # a yearbook article: CNKI gives no author, so an entry without one is complete
    yearbook = RecordView(record_ref="cnki:Y1", title="违约金调整规则发展概况", source="中国法律年鉴", year=2017,
                          pages="226", doc_type="年鉴")  # fmt: skip
    got = judge(parse_reference("违约金调整规则发展概况[M]//中国法律年鉴. 2017: 226."), [yearbook])
    assert (got.verdict, got.warnings) == ("verified", [])
    authored = yearbook.model_copy(update={"authors": ["张三"]})
    assert judge(parse_reference("违约金调整规则发展概况[M]//中国法律年鉴. 2017: 226."), [authored]).warnings != []


@pytest.mark.parametrize(
    "entry",
    [
        # GB/T 7714 for an online-first article: pages and no year yet, then the access date [引用日期]
        "范杰丽, 龚芳, 闫丹, 等. 约定违约金调整规则的法律规制研究[J/OL]. 法学评论: 1-12[2027-03-01]. "
        "https://link.cnki.net/urlid/42.1032.D.20260206.0849.002.",
        "范杰丽,龚芳,闫丹,等.约定违约金调整规则的法律规制研究[J/OL].法学评论,2026:1-12[2027-03-01].",
    ],
)
def test_an_online_first_entry_s_access_date_is_neither_its_year_nor_part_of_its_source(entry: str) -> None:
    parsed = parse_reference(entry)
    assert parsed.source == "法学评论" and parsed.pages == "1-12" and parsed.year in (None, 2026)
    record = RecordView(record_ref="cnki:CAPJ:FXPL20260206001", title="约定违约金调整规则的法律规制研究",
                        authors=["范杰丽", "龚芳", "闫丹", "邱秀怡"], source="法学评论", year=2026, doc_type="期刊")
    got = judge(parsed, [record])
    assert got.verdict == "verified" and got.fields == []


@pytest.mark.parametrize("dot", ["•", "‧", "∙", "⋅", "・", "·"])
def test_a_transliterated_name_written_with_another_dot_is_the_same_author(dot: str) -> None:
    # CNKI writes 阿依古丽·买买提; a Taiwanese IME gives ‧, a Japanese one ・, Word's bullet •
    record = RecordView(record_ref="cnki:MZJY201902001", title="新疆南疆农村双语教育研究", authors=["阿依古丽·买买提", "王小明"],
                        source="民族教育研究", year=2019, volume="30", issue="2", pages="1-9", doc_type="期刊")  # fmt: skip
    entry = f"阿依古丽{dot}买买提, 王小明. 新疆南疆农村双语教育研究[J]. 民族教育研究, 2019, 30(2): 1-9."
    got = judge(parse_reference(entry), [record])
    assert got.verdict == "verified" and got.fields == []


MASTERS = RecordView(
    record_ref="cnki:T1",
    title="违约赔偿金中调整规则的体系化构造研究",
    authors=["崔建"],
    source="复旦大学",
    year=2022,
    doc_type="硕士",
)


@pytest.mark.parametrize(
    ("entry", "verdict", "fields"),
    [
        ("崔建. 违约赔偿金中调整规则的体系化构造研究[D]. 上海: 复旦大学, 2022.", "verified", []),
        ("崔建. 违约赔偿金中调整规则的体系化构造研究[硕士学位论文]. 上海: 复旦大学, 2022.", "verified", []),
        # a master's thesis cited as a doctoral dissertation: it was verified (the genre was ignored)
        ("崔建. 违约赔偿金中调整规则的体系化构造研究[博士学位论文]. 上海: 复旦大学, 2022.", "mismatch", ["type"]),
        ("崔建. 违约赔偿金中调整规则的体系化构造研究. 2022. 复旦大学, 博士学位论文.", "mismatch", ["type"]),
        # APA 7 puts the school inside the genre's bracket: it was read as part of the title
        ("崔建. (2022). 违约赔偿金中调整规则的体系化构造研究 [硕士学位论文, 复旦大学].", "verified", []),
        ("崔建. (2022). 违约赔偿金中调整规则的体系化构造研究 [博士学位论文, 复旦大学].", "mismatch", ["type"]),
    ],
)
def test_a_thesis_cited_at_the_wrong_degree_level_is_a_type_mismatch(entry: str, verdict: str, fields: list[str]) -> None:
    got = judge(parse_reference(entry), [MASTERS])
    assert (got.verdict, got.fields) == (verdict, fields), got


def test_a_thesis_genre_inside_the_title_names_no_level() -> None:
    # 硕士论文写作指导 is a book's title, not a genre the entry gives
    book = RecordView(record_ref="cnki:B1", title="硕士论文写作指导", authors=["王某"], source="出版社", year=2020,
                      doc_type="图书")  # fmt: skip
    parsed = parse_reference("王某. 硕士论文写作指导[M]. 北京: 出版社, 2020.")
    assert parsed.degree is None
    assert judge(parsed, [book]).verdict == "verified"


@pytest.mark.parametrize(
    "entry",
    [
        "崔建. 违约赔偿金中调整规则的体系化构造研究[D/OL]. 上海: 复旦大学, 2022. 中国优秀博硕士学位论文全文数据库.",
        "崔建. 违约赔偿金中调整规则的体系化构造研究[D]. 上海: 复旦大学, 2022. (硕博论文)",
    ],
)
def test_a_database_naming_both_thesis_levels_names_no_level(entry: str) -> None:
    # 中国优秀博硕士学位论文全文数据库 holds 硕士学位论文: read as the level, a doctoral thesis cited from
    # it was a type mismatch (and a master's one only agreed by chance)
    parsed = parse_reference(entry)
    assert parsed.degree is None
    doctoral = MASTERS.model_copy(update={"doc_type": "博士"})
    assert (judge(parsed, [doctoral]).verdict, judge(parsed, [MASTERS]).verdict) == ("verified", "verified")
