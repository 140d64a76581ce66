"""Every real page in tests/fixtures/cnki-real: the parser it belongs to and the fields it must yield.

`doctor --pages` prints the same survey for pages a user saves from the live site; a field missing
here means a parser stopped reading something a person sees on that page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cnki_mcp.cli import main as main_mod
from cnki_mcp.cli.parse_cmd import survey_page
from tests.conftest import REAL_PAGES, read_real, write_real

GRID_ROW = {"ordinal", "title", "detail_url", "native", "authors", "source", "date", "year", "total", "page"}
KNS8S_ROW = GRID_ROW | {"source_url", "doc_type", "downloads", "page_count"}

# relative path -> (kind, fields that must be read, error code or None)
EXPECTED: dict[str, tuple[str, set[str], str | None]] = {
    "captcha/pluginsx_verify_blockpuzzle_rendered_2026.html": ("gate", {"verdict:challenge"}, None),
    "detail-kcms-old/journalcrawler_detail_cjfd_2017.html": (
        "detail",
        {"title", "authors", "institutions", "source", "year", "issue", "abstract", "keywords", "funds",
         "classification", "downloads", "pdf_url", "caj_url"},
        None,
    ),
    "detail-kcms-old/roliygu_detail_cdfd_2017.html": (
        "detail",
        {"title", "authors", "institutions", "abstract", "classification", "supervisor", "downloads", "page_count"},
        None,
    ),
    "detail-kcms-old/roliygu_detail_cjfd_2017.html": (
        "detail",
        {"title", "authors", "institutions", "source", "year", "issue", "pages", "doi", "excerpt", "downloads",
         "page_count"},
        None,
    ),
    "detail-kcms-old/smalltt_detail_cdfd_2015.html": (
        "detail",
        {"title", "authors", "abstract", "keywords", "classification", "supervisor", "downloads", "cited"},
        None,
    ),
    "detail-kcms2/pluginsx_detail_kcms2_2026.html": (
        "detail",
        {"title", "authors", "institutions", "source", "source_url", "doc_type", "online_date", "year", "issue",
         "pages", "doi", "abstract", "keywords", "funds", "classification", "album", "topic", "native", "downloads",
         "reader_url", "pdf_url", "caj_url"},
        None,
    ),
    "export/byc_endnote_refer.txt": ("gate", {"verdict:clear"}, None),
    "export/cmsax_endnote_refer.txt": ("gate", {"verdict:clear"}, None),
    "export/pluginsx_dm8_export_page_gbt7714_2026.html": (
        "gate",
        {"verdict:clear", "identity.ready", "identity.personal", "identity.personal_name"},
        None,
    ),
    "home-login/pluginsx_kns8s_personal_home_2026.html": ("gate", {"verdict:clear", "identity.ready"}, None),
    "home-login/pluginsx_www_home_saved_2026.html": (
        "gate",
        {"verdict:clear", "identity.ready", "identity.personal", "identity.personal_name"},
        None,
    ),
    # an issue table of contents: no parser reads it (the product never opens it)
    "journal-navi/journalcrawler_navi_issue_toc_2017.html": ("gate", {"verdict:clear"}, None),
    "journal-navi/journalcrawler_navi_search_guanlishijie_2017.html": (
        "journal-list",
        {"name", "translated_titles", "composite_if", "aggregate_if", "issn", "cn", "sponsor"},
        None,
    ),
    "journal-navi/journalcrawler_navi_search_jingjiguanli_2017.html": (
        "journal-list",
        {"name", "translated_titles", "former_titles", "composite_if", "aggregate_if", "issn", "cn", "sponsor"},
        None,
    ),
    # the 2018 list-mode journal list (`ul.list_tab`) is not a layout the product reads
    "journal-navi/spico197_navi_journal_list_2018.html": ("journal-list", set(), "SOURCE_SCHEMA_UNSUPPORTED"),
    # a patent grid re-flowed by its uploader, and a bare selected-literature tbody: no parser claims them
    "kns-old-grid/alfxjx_patent_grid_prettified_2020.html": ("gate", {"verdict:clear"}, None),
    "kns-old-grid/asianroad_brief_simple_2017.html": ("grid", set(), "PARSER_UNSUPPORTED"),  # script-written titles
    "kns-old-grid/lty_selected_docs_tbody_2020.html": ("gate", {"verdict:clear"}, None),
    "kns-old-grid/roliygu_brief_scdb_2017.html": ("grid", GRID_ROW | {"source_url", "doc_type", "cited"}, None),
    "kns-old-grid/summerwu_brief_shouyi_20rows.html": ("grid", GRID_ROW | {"online_first", "downloads"}, None),
    "kns-old-grid/summerwu_brief_waikezhengzong.html": ("grid", GRID_ROW | {"online_first", "downloads"}, None),
    "kns-old-grid/summerwu_brief_zero_results.html": ("grid", {"total", "zero_results"}, None),
    "kns-old-grid/yanxianchen_brief_2018.html": ("grid", GRID_ROW | {"cited", "downloads"}, None),
    "kns8-grid-2022-2023/sa1utyeggs_kns8_brief_grid_empty_tbody.html": ("grid", {"total", "page", "page_count"}, None),
    "kns8s-grid/kaffu_search_shell_raw.html": ("gate", {"verdict:clear"}, None),  # rows arrive by AJAX
    "kns8s-grid/kaffu_waam_p1.html": ("grid", KNS8S_ROW | {"online_first"}, None),
    "kns8s-grid/pluginsx_search_result_4rows.html": ("grid", KNS8S_ROW, None),
    "kns8s-grid/pluginsx_shuziwenwu_p1.html": ("grid", KNS8S_ROW, None),
    # other CNKI-operated sites (cnki.com.cn): outside the product's scope, nothing to read
    "other-cnki-sites/biogod_search_cnki_com_cn_listresult_journal.html": ("gate", {"verdict:clear"}, None),
    "other-cnki-sites/biogod_search_cnki_com_cn_listresult_thesis.html": ("gate", {"verdict:clear"}, None),
    "other-cnki-sites/pkuimyy_cnki_com_cn_article_gbk_2020.html": ("gate", {"verdict:clear"}, None),
    "reader/pluginsx_bar_htmlread_paywall_2026.html": ("gate", {"verdict:denied"}, None),
}


def test_every_stored_real_page_has_an_expectation() -> None:
    stored = {str(p.relative_to(REAL_PAGES))[: -len(".gz")] for p in REAL_PAGES.rglob("*.gz")}
    assert stored == set(EXPECTED)


@pytest.mark.parametrize("relative", sorted(EXPECTED))
def test_real_page_yields_its_fields(relative: str) -> None:
    kind, fields, error = EXPECTED[relative]
    report = survey_page(read_real(relative), relative)
    assert report.kind == kind
    assert report.error == error
    assert report.ok is (error is None)
    assert fields <= set(report.read), sorted(fields - set(report.read))


def test_the_kns8s_grid_reads_every_author_of_every_row() -> None:
    report = survey_page(read_real("kns8s-grid/kaffu_waam_p1.html"), "p1")
    assert report.items == 20 and report.read["authors"] == 20 and report.read["title"] == 20


def test_doctor_pages_reports_each_saved_page_and_exits_1_on_a_refused_one(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    write_real("kns8s-grid/kaffu_waam_p1.html", tmp_path)
    write_real("detail-kcms2/pluginsx_detail_kcms2_2026.html", tmp_path)
    assert main_mod.main(["doctor", "--pages", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "OK    kaffu_waam_p1.html  [grid]  20 条" in out
    assert "authors 20/20" in out and "2/2 页解析成功" in out
    (tmp_path / "changed.html").write_text(
        "<table class='result-table-list'><tbody><tr><td>1</td></tr></tbody></table>", encoding="utf-8"
    )
    assert main_mod.main(["doctor", "--pages", str(tmp_path), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is False
    by_file = {p["file"]: p for p in data["pages"]}
    assert by_file["changed.html"]["error"] == "PARSER_UNSUPPORTED"
    assert "doi" in by_file["pluginsx_detail_kcms2_2026.html"]["read"]


def test_doctor_pages_on_a_missing_folder_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main_mod.main(["doctor", "--pages", str(tmp_path / "nope")]) == 2
    assert capsys.readouterr().err.startswith("错误 INVALID_ARGUMENT")  # the CLI's typed-error line


def test_doctor_pages_on_a_folder_without_pages_says_so_and_is_not_ok(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main_mod.main(["doctor", "--pages", str(tmp_path), "--json"]) == 1
    assert json.loads(capsys.readouterr().out) == {"ok": False, "pages": []}  # exit and payload agree


def test_doctor_pages_says_when_no_parser_recognised_a_page(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A detail page whose layout the parsers no longer know is surveyed as a page without a gate
    (exit 0: a saved home page is one too); the line under it says what that means."""
    from cnki_mcp.cli.parse_cmd import UNRECOGNISED_NOTE

    page = read_real("detail-kcms2/pluginsx_detail_kcms2_2026.html")
    for marker in ("wx-tit", "wxTitle", "ChDivSummary", "catalog_ABSTRACT", "ChDivKeyWord"):
        page = page.replace(marker, marker + "-2027")
    (tmp_path / "detail.html").write_text(page, encoding="utf-8")
    write_real("kns8s-grid/kaffu_waam_p1.html", tmp_path)
    assert main_mod.main(["doctor", "--pages", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    detail, grid = out.split("OK    kaffu_waam_p1.html")
    assert "[gate]" in detail and UNRECOGNISED_NOTE in detail
    assert UNRECOGNISED_NOTE not in grid


def test_doctor_pages_reports_a_page_it_cannot_read_and_surveys_the_rest(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A saved page without read permission (or an I/O error) ended the survey in a traceback."""
    write_real("kns8s-grid/kaffu_waam_p1.html", tmp_path)
    (tmp_path / "locked.html").write_text("<html></html>", encoding="utf-8")
    read_bytes = Path.read_bytes

    def refuse_locked(self: Path) -> bytes:
        if self.name == "locked.html":
            raise PermissionError(13, "Permission denied", str(self))
        return read_bytes(self)

    monkeypatch.setattr(Path, "read_bytes", refuse_locked)
    assert main_mod.main(["doctor", "--pages", str(tmp_path), "--json"]) == 1
    by_file = {p["file"]: p for p in json.loads(capsys.readouterr().out)["pages"]}
    assert by_file["locked.html"]["ok"] is False and by_file["locked.html"]["error"] == "INVALID_ARGUMENT"
    assert by_file["kaffu_waam_p1.html"]["ok"] is True
