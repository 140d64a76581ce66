"""Identity keys, record refs, the same-paper rule, the detail check, merge rules, PublicURL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from cnki_mcp.errors import IdentityAmbiguous
from cnki_mcp.identity import (
    IdentityKeys,
    Paper,
    author_key,
    bibliography_key,
    detail_matches,
    doi_key,
    index_keys,
    merge,
    native_key,
    public_url,
    record_ref,
    same_observation,
    same_paper,
    source_key,
    title_key,
)
from cnki_mcp.models import Author, DetailPage, GridPage, GridRow, NativeId
from cnki_mcp.site.reading import DetailTabs
from cnki_mcp.works import duplicate_works, final_of, same_work
from tests.paper_samples import sample_detail, sample_row

T0 = datetime(2026, 1, 1, tzinfo=UTC)
ABSTRACT = "https://kns.cnki.net/kcms2/article/abstract?v=TOKEN123&dbname=CJFDLAST2024&filename=ABC"


def _row(**kw: object) -> GridRow:
    return sample_row(**{"detail_url": ABSTRACT, **kw})


def _detail(**kw: object) -> DetailPage:
    return sample_detail(**{"keywords": ["深度学习", "医学影像"], **kw})


@pytest.mark.parametrize(
    ("a", "b"),
    [("C++ 程序设计", "C# 程序设计"), ("A B", "AB"), ("版本 1.2 发布", "版本 12 发布")],
)
def test_title_key_keeps_meaningful_differences_apart(a: str, b: str) -> None:
    assert title_key(a) != title_key(b)


def test_title_key_folds_case_whitespace_and_spaces_around_punctuation() -> None:
    assert title_key("  Deep\u3000 Learning ： 综述 ") == title_key("deep learning：综述")
    assert title_key("《法学评论》 研究 （上）") == "《法学评论》研究（上）"
    assert title_key("") == ""
    assert title_key(None) == ""


def test_source_and_doi_keys_normalise_presentation_only() -> None:
    assert source_key(" 计算机学报（英文版）。 ") == "计算机学报(英文版)"
    assert source_key("Journal of X.") == "journal of x"
    assert doi_key("https://doi.org/10.1234/ABC") == "10.1234/abc"
    assert doi_key("DOI: 10.1234/abc") == "10.1234/abc"
    assert doi_key("http://doi.org/10.1234/abc") == doi_key("10.1234/ABC")


def test_author_key_strips_role_suffixes() -> None:
    assert author_key("林倩(文)") == author_key("林倩")
    assert author_key("胡馨元（编）") == "胡馨元"
    assert author_key("张三") != author_key("张四")


def test_native_key_is_the_filename_qualified_by_the_database_family() -> None:
    # CNKI's product codes for one paper differ between list and detail (online-first CAPJ in
    # the grid, CJFQ / CJFDLAST2026 on the kcms2 detail page); only the FILENAME is stable.
    journal = "JOURNAL:JSJX202403001"
    assert native_key(NativeId(dbname="cjfdlast2024", filename="jsjx202403001")) == journal
    assert native_key(NativeId(dbcode="CJFD", filename="JSJX202403001")) == journal
    assert native_key(NativeId(dbname="CAPJ", filename="JSJX202403001")) == journal
    assert native_key(NativeId(dbcode="CJFQ", dbname="CJFDLAST2026", filename="JSJX202403001")) == journal
    assert native_key(NativeId(dbname="CJFN", filename="JSJX202403001")) == journal
    assert native_key(NativeId(dbcode="CDMD", filename="1024001.nh")) == "THESIS:1024001.NH"
    assert native_key(NativeId(dbname="CMFD202401", filename="1024001.nh")) == "THESIS:1024001.NH"
    # Unknown or absent family: the filename alone.
    assert native_key(NativeId(dbname="WWJD", filename="x1")) == "X1"
    assert native_key(NativeId(filename="X")) == "X"
    assert native_key(NativeId(dbcode="CJFD")) == ""
    assert native_key(None) == ""


def test_online_first_grid_row_and_its_detail_page_are_one_paper() -> None:
    # Real evidence: kns8s grid `a.icon-collect[data-dbname="CAPJ"]`, 2026 kcms2 detail
    # paramdbcode CJFQ, paramdbname CJFDLAST2026, paramfilename SHIT202602024.
    listed = Paper.from_grid_row(_row(native=NativeId(dbname="CAPJ", filename="SHIT202602024")), T0)
    page = _detail(native=NativeId(dbcode="CJFQ", dbname="CJFDLAST2026", filename="SHIT202602024"))
    assert detail_matches(listed, page)
    detailed = Paper.from_detail(page, None, T0)
    assert same_paper(listed, detailed)
    assert detailed.record_ref == listed.record_ref


def test_same_filename_in_two_known_families_or_two_filenames_conflict() -> None:
    journal = Paper.from_grid_row(_row(native=NativeId(dbname="CJFD", filename="X1")), T0)
    thesis = _detail(native=NativeId(dbcode="CMFD", filename="X1"))
    assert not detail_matches(journal, thesis)
    assert not same_paper(journal, Paper.from_detail(thesis, None, T0))
    assert not detail_matches(journal, _detail(native=NativeId(dbcode="CAPJ", filename="X2")))
    # An unknown family never contradicts a known one: the filename decides.
    assert detail_matches(journal, _detail(native=NativeId(dbcode="ZZZZ", filename="x1")))
    assert same_paper(IdentityKeys(native="X1"), IdentityKeys(native="JOURNAL:X1"))
    assert not same_paper(IdentityKeys(native="X2"), IdentityKeys(native="JOURNAL:X1"))


def test_bibliography_key_needs_all_four_parts() -> None:
    assert bibliography_key("T", ["A"], "S", 2024)
    assert bibliography_key("T", [], "S", 2024) == ""
    assert bibliography_key("T", ["A"], None, 2024) == ""
    assert bibliography_key("T", ["A"], "S", None) == ""
    assert bibliography_key("", ["A"], "S", 2024) == ""
    assert bibliography_key("T", ["A(文)"], "S。", 2024) == bibliography_key("t", ["A"], "s", 2024)


def test_record_ref_uses_the_strongest_key() -> None:
    full = IdentityKeys(native="CJFD:X", doi="10.1/x", bib="b" * 32, title="t", locator="u")
    ref = record_ref(full)
    assert ref.startswith("rec_") and len(ref) == 28
    assert set(ref[4:]) <= set("0123456789abcdef")  # lower-case hex: the form the tools' schemas accept
    # Native wins over everything below it.
    assert record_ref(IdentityKeys(native="CJFD:X")) == ref
    # Without native, DOI decides; without both, the bibliography key; then title + locator.
    assert record_ref(IdentityKeys(doi="10.1/x", bib="b" * 32)) == record_ref(IdentityKeys(doi="10.1/x"))
    assert record_ref(IdentityKeys(doi="10.1/x")) != ref
    assert record_ref(IdentityKeys(bib="b" * 32, title="t")) == record_ref(IdentityKeys(bib="b" * 32))
    assert record_ref(IdentityKeys(title="t", locator="u1")) != record_ref(
        IdentityKeys(title="t", locator="u2")
    )


def test_weak_records_are_one_observation_only_at_the_same_url_never_by_title_alone() -> None:
    weak = IdentityKeys(title="t", locator="u1")
    assert same_observation(weak, IdentityKeys(title="t", locator="u1"))
    assert not same_observation(weak, IdentityKeys(title="t", locator="u2"))  # title alone: never
    assert not same_observation(weak, IdentityKeys(title="t2", locator="u1"))
    assert not same_observation(IdentityKeys(title="t"), IdentityKeys(title="t"))  # no URL, no match
    strong = IdentityKeys(doi="10.1/x", title="t", locator="u1")
    assert not same_observation(strong, IdentityKeys(title="t", locator="u1"))
    assert not same_paper(weak, IdentityKeys(title="t", locator="u1"))


def test_index_keys_name_their_kind() -> None:
    keys = IdentityKeys(native="JOURNAL:X", doi="10.1/x", bib="ab", title="t")
    # The native index key is the filename: a record seen with an unknown family is found too.
    assert index_keys(keys) == ["native:X", "doi:10.1/x", "bib:ab", "title:t"]
    assert index_keys(IdentityKeys(native="X")) == ["native:X"]
    assert index_keys(IdentityKeys(title="t")) == ["title:t"]


def test_same_title_different_authors_are_different_papers() -> None:
    a = Paper.from_grid_row(_row(native=NativeId(), detail_url=None), T0)
    b = Paper.from_grid_row(_row(native=NativeId(), detail_url=None, authors=["王五"]), T0)
    assert a.keys().title == b.keys().title
    assert not same_paper(a, b)
    assert a.record_ref != b.record_ref


def test_title_alone_is_never_enough() -> None:
    a = Paper.from_grid_row(_row(native=NativeId(), source=None, detail_url="https://kns.cnki.net/a"), T0)
    b = Paper.from_grid_row(_row(native=NativeId(), source=None, detail_url="https://kns.cnki.net/a"), T0)
    assert a.keys().title == b.keys().title
    assert not same_paper(a, b)


def test_same_doi_with_different_title_formatting_is_the_same_paper() -> None:
    a = Paper.from_detail(
        _detail(title="Deep  Learning: A Survey", native=NativeId(), doi="10.1/ABC"), None, T0
    )
    b = Paper.from_detail(
        _detail(title="deep learning : a survey", native=NativeId(), doi="https://doi.org/10.1/abc"), None, T0
    )
    assert same_paper(a, b)
    assert a.record_ref == b.record_ref


def test_conflicting_doi_or_native_key_separates_papers() -> None:
    a = IdentityKeys(native="CJFD:X", doi="10.1/a", bib="b")
    assert not same_paper(a, IdentityKeys(native="CJFD:X", doi="10.1/b", bib="b"))
    assert not same_paper(a, IdentityKeys(native="CJFD:Y", bib="b"))
    assert same_paper(a, IdentityKeys(native="CJFD:X"))
    assert same_paper(IdentityKeys(bib="b"), IdentityKeys(bib="b"))
    assert not same_paper(IdentityKeys(doi="10.1/a"), IdentityKeys(native="CJFD:X"))


def test_detail_matches_requires_title_first_author_and_source_and_no_conflict() -> None:
    requested = Paper.from_grid_row(_row(), T0)
    assert detail_matches(requested, _detail())
    assert detail_matches(requested, _detail(authors=[Author(name="张三(文)")]))
    assert detail_matches(requested, _detail(authors=[]))
    assert not detail_matches(requested, _detail(title="深度学习在医学影像中的应用研究"))
    assert not detail_matches(requested, _detail(authors=[Author(name="王五")]))
    assert not detail_matches(requested, _detail(native=NativeId(dbcode="CJFD", filename="OTHER")))
    assert not detail_matches(requested, _detail(native=NativeId(dbcode="CMFD", filename="JSJX202403001")))
    assert not detail_matches(requested, _detail(source="软件学报"))
    with_doi = requested.model_copy(update={"doi": "10.9/zzz"})
    assert not detail_matches(with_doi, _detail())


def test_merge_list_after_detail_keeps_confirmed_values_but_takes_fresh_counts() -> None:
    confirmed = Paper.from_detail(_detail(), "https://kns.cnki.net/kcms2/article/abstract?v=old", T0)
    later = T0 + timedelta(days=1)
    row = Paper.from_grid_row(
        _row(
            title="深度学习在医学影像中的应用（摘要）",
            authors=["张三等"],
            source="计算机学报网络版",
            date="2025-01-01",
            year=2025,
            cited=9,
            downloads=0,
        ),
        later,
    )
    merged = merge(confirmed, row, "list")
    assert merged.title == confirmed.title
    assert merged.author_names() == ["张三", "李四"]
    assert merged.source == "计算机学报"
    assert merged.date == "2024-03-15"
    assert merged.year == 2024
    assert merged.cited == 9
    assert merged.downloads == 0  # zero is a value, not an empty one
    assert merged.locator == ABSTRACT  # fresher detail token
    assert merged.record_ref == confirmed.record_ref
    assert merged.detail_confirmed
    assert merged.observed_at == later
    assert merged.detail_observed_at == T0


def test_merge_list_after_detail_keeps_the_confirmed_native_id_and_fills_only_its_gaps() -> None:
    confirmed = Paper.from_detail(_detail(), "https://kns.cnki.net/kcms2/article/abstract?v=old", T0)
    assert confirmed.native == NativeId(dbcode="CJFD", filename="JSJX202403001")
    online_first = _row(native=NativeId(dbcode="CAPJ", dbname="CAPJLAST2024", filename="JSJX202403001"))
    merged = merge(confirmed, Paper.from_grid_row(online_first, T0 + timedelta(days=1)), "list")
    assert merged.native == NativeId(dbcode="CJFD", dbname="CAPJLAST2024", filename="JSJX202403001")
    listed = Paper.from_grid_row(_row(native=NativeId(dbcode="CJFD", filename="JSJX202403001")), T0)
    unconfirmed = merge(listed, Paper.from_grid_row(online_first, T0), "list")
    assert unconfirmed.native.dbcode == "CAPJ"  # nothing confirmed: the newer list row wins


def test_merge_of_a_newer_detail_page_replaces_confirmed_values() -> None:
    confirmed = Paper.from_detail(_detail(), "https://kns.cnki.net/kcms2/article/abstract?v=old", T0)
    later = T0 + timedelta(days=1)
    newer = Paper.from_detail(
        _detail(date="2024-04-01", pages="10-20", native=NativeId(dbcode="CJFQ", filename="JSJX202403001")),
        None,
        later,
    )
    merged = merge(confirmed, newer, "detail")
    assert (merged.date, merged.pages, merged.native.dbcode) == ("2024-04-01", "10-20", "CJFQ")
    assert merged.detail_confirmed and merged.detail_observed_at == later
    assert merged.record_ref == confirmed.record_ref


def test_merge_never_replaces_with_empty_values() -> None:
    row = Paper.from_grid_row(_row(abstract="列表摘要"), T0)
    empty = Paper.from_grid_row(
        _row(authors=[], source=None, date=None, year=None, cited=None, abstract=""), T0
    )
    merged = merge(row, empty, "list")
    assert merged.author_names() == ["张三", "李四"]
    assert merged.source == "计算机学报"
    assert merged.year == 2024
    assert merged.cited == 3
    assert merged.abstract == "列表摘要"


def test_merge_detail_after_list_overrides_and_confirms() -> None:
    row = Paper.from_grid_row(_row(authors=["张三(文)"]), T0)
    merged = merge(row, Paper.from_detail(_detail(), None, T0), "detail")
    assert merged.detail_confirmed
    assert merged.author_names() == ["张三", "李四"]
    assert merged.doi == "10.1234/jsjx.2024.001"
    assert merged.date == "2024-03-15"
    assert merged.locator == ABSTRACT  # a detail without a locator keeps the known one
    assert merged.native.filename == "JSJX202403001"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (ABSTRACT, True),  # the `v` token is allowed by the rule
        ("https://kns.cnki.net/KCMS2/Article/Abstract?v=1", True),
        ("http://kns.cnki.net/kcms2/article/abstract?v=1", False),
        ("https://kns.cnki.net/kcms2/article/abstract?v=1&token=s", False),
        ("https://kns.cnki.net/kcms2/article/abstract?v=1&ticket=s", False),
        ("https://kns.cnki.net/kcms2/article/abstract?SessionId=s", False),
        ("https://kns.cnki.net/kcms2/article/abstract?user_password=s", False),
        ("https://kns.cnki.net/kcms2/article/abstract?X-Signature=s", False),
        ("https://kns.cnki.net/reader/xml?invoice=a&nonce=b", False),
        ("https://evil.example/kcms2/article/abstract?v=1", False),
        ("https://cnki.net.evil.example/abstract", False),
        ("https://navi.cnki.net/knavi/detail", False),
        (None, False),
    ],
)
def test_only_https_kns_urls_without_secrets_are_shown(url: str | None, shown: bool) -> None:
    assert (public_url(url) is not None) is shown


def test_public_url_accepts_an_explicit_extra_origin() -> None:
    sim = "http://127.0.0.1:8765/kcms2/article/abstract?v=1"
    assert public_url(sim) is None
    assert public_url(sim, ("http://127.0.0.1:8765",)) == sim


def test_paper_public_dict_hides_the_locator() -> None:
    paper = Paper.from_grid_row(_row(), T0)
    assert paper.locator == ABSTRACT
    assert "locator" not in paper.public_dict()
    assert paper.public_dict()["public_url"] == ABSTRACT


async def test_relocating_a_stored_paper_whose_title_finds_two_papers_names_both_and_the_paper() -> None:
    rows = [
        GridRow(title="同名论文", detail_url=f"https://kns.cnki.net/kcms2/article/abstract?v=d{k}",
                native=NativeId(dbname="CJFD", filename=f"DUP{k}"), authors=["同名作者"], source=s, year=y)
        for k, s, y in ((1, "中外法学", 2022), (2, "中国法学", 2013))
    ]  # fmt: skip

    async def grid(request: object, op: object = None) -> GridPage:
        return GridPage(rows=rows, total=2, page=1)

    site = SimpleNamespace(endpoints=None, grid=grid)
    tabs = DetailTabs(site, None, None, None, None)  # type: ignore[arg-type]
    paper = Paper(record_ref="rec_x", title="同名论文", authors=[])
    with pytest.raises(IdentityAmbiguous) as info:
        await tabs.relocate(paper, None)
    details = info.value.details
    assert details["record_ref"] == "rec_x" and details["count"] == 2
    assert [(c["source"], c["year"], c["filename"]) for c in details["candidates"]] == [
        ("中外法学", 2022, "DUP1"), ("中国法学", 2013, "DUP2")
    ]  # fmt: skip


async def test_relocating_a_stored_paper_takes_the_row_of_its_own_file_name_among_namesakes() -> None:
    # CNKI lists a work's online-first record (CAPJ) and its final one in the issue under one title
    rows = [
        GridRow(title="同名论文", detail_url=f"https://kns.cnki.net/kcms2/article/abstract?v=d{k}",
                native=NativeId(dbname=db, filename=name), authors=["同名作者"], source="中外法学", year=2022)
        for k, db, name in ((1, "CAPJLAST", "ZWFX20220110001"), (2, "CJFD2022", "ZWFX202202003"))
    ]  # fmt: skip

    async def grid(request: object, op: object = None) -> GridPage:
        return GridPage(rows=rows, total=2, page=1)

    tabs = DetailTabs(SimpleNamespace(endpoints=None, grid=grid), None, None, None, None)  # type: ignore[arg-type]
    for filename, url in (("ZWFX20220110001", rows[0].detail_url), ("zwfx202202003", rows[1].detail_url)):
        native = NativeId(dbcode="CJFQ", filename=filename)
        paper = Paper(record_ref="rec_x", title="同名论文", authors=[Author(name="同名作者")], native=native)
        assert await tabs.relocate(paper, None) == url


def _work(ref: str, authors: list[str], source: str, year: int, **kw: object) -> Paper:
    return Paper(
        record_ref=ref, title=str(kw.pop("title", "约定违约金酌减规则研究")), authors=[Author(name=a) for a in authors],
        source=source, year=year, **kw,  # type: ignore[arg-type]
    )  # fmt: skip


def test_same_work_needs_the_title_and_the_authors_in_order() -> None:
    article = _work("a", ["贾楠", "夏思萍"], "现代法学", 2014, issue="6")
    assert same_work(article, _work("b", ["贾楠", "夏思萍"], "中国社会科学文摘", 2015))  # a reprint
    assert same_work(article, _work("c", ["贾楠"], "哈尔滨工业大学", 2013))  # the thesis before it
    assert same_work(article, _work("d", ["贾楠(文)", "夏思萍"], "现代法学", 2014))
    assert not same_work(article, _work("e", ["夏思萍", "贾楠"], "现代法学", 2014))
    assert not same_work(article, _work("f", ["王杰"], "法学研究", 2016))  # a same-title pair
    assert not same_work(article, _work("g", ["贾楠", "夏思萍"], "现代法学", 2014, title="约定违约金研究"))
    # notices and yearbook entries name no author: a title alone never makes one work
    assert not same_work(_work("h", [], "法学研究", 2016), _work("i", [], "东方法学", 2016))
    # one periodical years apart: a column's recurring title, not a second record of one paper
    assert not same_work(_work("j", ["陈明"], "法治日报", 2014), _work("k", ["陈明"], "法治日报", 2019))
    # a house byline is no author: one call for papers in two journals is two notices
    call = {"title": "“违约金举证责任”专题征稿启事"}
    assert not same_work(_work("n", ["本刊编辑部"], "法商研究", 2025, **call), _work("o", ["本刊编辑部"], "法学研究", 2025, **call))
    assert not same_work(_work("p", ["本报评论员"], "法治日报", 2014), _work("q", ["本报评论员"], "人民法院报", 2014))
    assert same_work(_work("l", ["范杰丽"], "法学评论", 2025), _work("m", ["范杰丽"], "法学评论", 2026))


def test_duplicate_works_keep_the_first_record_and_the_final_over_the_online_first() -> None:
    online = _work("online", ["范杰丽", "龚芳"], "法学评论", 2026, native=NativeId(dbname="CAPJLAST", filename="FXPL20260206005"))
    final = _work("final", ["范杰丽", "龚芳"], "法学评论", 2026, issue="2", pages="101-118",
                  native=NativeId(dbcode="CJFD", filename="FXPL202602005"))  # fmt: skip
    reprint = _work("reprint", ["范杰丽", "龚芳"], "新华文摘", 2026, issue="9")
    other = _work("other", ["王杰"], "法学研究", 2016)
    assert duplicate_works([online, reprint, final, other]) == {"reprint": "final", "online": "final"}
    assert duplicate_works([final, online, reprint]) == {"online": "final", "reprint": "final"}
    assert duplicate_works([reprint, online, final]) == {"online": "reprint", "final": "reprint"}
    assert duplicate_works([other, _work("x", [], "法学研究", 2016)]) == {}


def test_same_title_and_author_years_apart_or_twice_in_print_in_one_periodical_are_two_works() -> None:
    title = {"title": "浅谈小学数学课堂教学"}
    # a common name's generic title in another periodical nine years on is another paper
    assert not same_work(_work("a", ["王丽"], "读与写", 2009, issue="3", **title), _work("b", ["王丽", "张强"], "中国校外教育", 2018, issue="12", **title))
    # four years on is another paper; within three years it is still a reprint or the article
    # after its thesis
    assert not same_work(_work("g", ["王丽"], "华东师范大学", 2014, **title), _work("h", ["王丽", "张强"], "中国校外教育", 2018, issue="12", **title))
    assert same_work(_work("c", ["王丽"], "华东师范大学", 2015, **title), _work("d", ["王丽", "张强"], "中国校外教育", 2018, issue="12", **title))
    # one editor's 卷首语 in two issues of one journal in one year: both in print, two columns
    column = {"title": "卷首语"}
    assert not same_work(_work("e", ["李明"], "经济研究", 2020, issue="1", **column), _work("f", ["李明"], "经济研究", 2020, issue="6", **column))


def test_a_work_whose_final_record_would_not_be_selected_keeps_its_online_first_record() -> None:
    # The final record replaced the online-first one before selection; ranked low (abstract unread,
    # a deep hit) it was not selected, and the work the ranking put near the top was lost.
    from cnki_mcp.rank import Candidate, Hit, RelevanceRescueRanker, SourceQuality, select_works

    groups = [["违约金"], ["酌减"]]
    title, abstract = "违约金的司法调整", "本文讨论约定违约金过高时的酌减规则与违约金酌减的举证。"
    cssci = SourceQuality(("CSSCI",), 3.0)
    cands = [
        Candidate("online", title, abstract, ("违约金", "酌减"), "期刊", 2026, 0, (Hit("q1", 2),), cssci),
        Candidate("final", title, "", (), "期刊", 2026, 3, (Hit("q1", 40),), cssci),
        *(Candidate(f"o{i}", f"违约金酌减研究{i}", abstract, ("违约金", "酌减"), "期刊", 2020, 5, (Hit("q1", i + 3),)) for i in range(12)),
    ]
    ranker = RelevanceRescueRanker()
    ranked = ranker.rank(cands, groups, 2026)
    papers = {c.ref: _work(c.ref, [f"作者{c.ref}"], f"刊{c.ref}", c.year, title=c.title) for c in cands[2:]}
    papers["online"] = _work("online", ["范杰丽"], "法学评论", 2026, title=title, native=NativeId(dbname="CAPJLAST", filename="X"))
    papers["final"] = _work("final", ["范杰丽"], "法学评论", 2026, title=title, issue="2", pages="101-118", native=NativeId(dbcode="CJFD", filename="Y"))  # fmt: skip
    assert "online" in {r.ref for r in ranker.select(ranked, 100)}  # the work is selected without folding

    selected, dupes = select_works(ranked, papers, lambda listed: ranker.select(listed, 100))
    chosen = {r.ref for r in selected}
    assert "online" in chosen and dupes == {"final": "online"}
    # a final record that is selected on its own still takes the online-first record's place
    high = [r for r in ranked if r.ref != "final"] + [r for r in ranked if r.ref == "final"]
    selected, dupes = select_works(high, papers, lambda listed: list(listed[:100]))
    assert "final" in {r.ref for r in selected} and dupes == {"online": "final"}


def test_a_title_names_a_works_final_record_only_over_its_online_first_records() -> None:
    capj, cjfd = NativeId(dbname="CAPJLAST", filename="A1"), NativeId(dbname="CJFD2026", filename="A2")
    online = _work("rec_1", ["宋澄"], "法学评论", 2026, native=capj)
    final = _work("rec_2", ["宋澄"], "法学评论", 2026, native=cjfd, issue="2")
    assert final_of([online, final]) is final and final_of([final, online]) is final
    in_print = final.model_copy(update={"record_ref": "rec_3", "native": NativeId(dbname="CJFD2026", filename="A3")})
    elsewhere = final.model_copy(update={"source": "中国法学"})
    other_author = online.model_copy(update={"authors": [Author(name="陆明")]})
    assert final_of([online, final, in_print]) is None  # two records in print: the caller chooses
    assert final_of([online, elsewhere]) is None  # the same title in another periodical
    assert final_of([other_author, final]) is None
    assert final_of([final]) is None and final_of([online, online.model_copy(update={"record_ref": "rec_4"})]) is None
