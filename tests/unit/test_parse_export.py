"""CNKI's EndNote export, from the batch ShowExport answer (HTML list) and from saved export
text (the real capture in tests/fixtures/cnki-real/export)."""

from __future__ import annotations

from cnki_mcp.parse.export import parse_export
from tests.conftest import read_real

SHOW_EXPORT = (
    "<ul class='literature-list'><li> %0 Journal Article<br> %A 贾玲 <br> %+ 晋中市太谷区北洸乡人民政府;<br>"
    " %T 抗旱转基因小麦的研究进展<br> %J 种子科技<br> %D 2023<br> %V 41<br>%N 17<br> %K 小麦;抗旱;转基因<br>"
    " %X 摘要一<br>%P 11-14<br> %@ 1005-2690<br> %U https: //link.cnki.net/doi/10.19904/j.cnki.cn14-1160/s.2023.17.004<br>"
    " %R 10.19904/j.cnki.cn14-1160/s.2023.17.004<br> %W CNKI<br> </li><li> %0 Journal Article<br> %A 刘志宏<br>"
    " %A 田媛<br> %+深圳市农业科技促进中心;暨南大学食品科学与工程系;<br> %T 水稻转基因育种的研究进展与应用现状<br>"
    " %J 中国种业<br> %D 2023<br> %V <br> %N 09<br> %K 转基因育种;水稻<br>%P 11-17<br> %W CNKI<br> </li></ul>"
    "<input id='hidMode' type='hidden' value='BATCH_DOWNLOAD,EXPORT,CLIPYBOARD,PRINT'>"
)


def test_batch_answer_yields_one_record_per_list_item_with_volume_issue_pages() -> None:
    first, second = parse_export(SHOW_EXPORT)
    assert (first.title, first.authors, first.source, first.year) == ("抗旱转基因小麦的研究进展", ["贾玲"], "种子科技", 2023)
    assert (first.volume, first.issue, first.pages) == ("41", "17", "11-14")
    assert first.doi == "10.19904/j.cnki.cn14-1160/s.2023.17.004"
    assert first.url == "https://link.cnki.net/doi/10.19904/j.cnki.cn14-1160/s.2023.17.004"
    assert first.keywords == ["小麦", "抗旱", "转基因"] and first.institutions == ["晋中市太谷区北洸乡人民政府"]
    assert second.authors == ["刘志宏", "田媛"] and second.volume is None and second.issue == "09"
    assert second.institutions == ["深圳市农业科技促进中心", "暨南大学食品科学与工程系"]


def test_saved_refer_text_reads_every_record_of_the_real_capture() -> None:
    records = parse_export(read_real("export/cmsax_endnote_refer.txt"))
    assert len(records) == 40
    theses = [r for r in records if r.ref_type == "Thesis"]
    assert theses and all(r.thesis_level in ("博士", "硕士") for r in theses)
    assert all(r.source for r in theses)  # the school (%I)
    first = records[0]
    assert first.title.startswith("Fairclough 三维分析模型下的话语分析")
    assert first.keywords[:2] == ["Fairclough 三维分析模型", "话语分析"]
    assert (first.year, first.issue, first.pages, first.issn, first.cn) == (2019, "03", "1", "1009-9522", "36-1247/Z")


def test_an_item_without_a_title_is_skipped() -> None:
    assert parse_export("<ul><li>%0 Journal Article<br>%A 甲<br></li></ul>") == []
