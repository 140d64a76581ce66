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


def test_a_thesis_abstract_keeps_the_paragraphs_on_its_following_lines() -> None:
    # The real capture writes a thesis abstract's later paragraphs on lines of their own, blank
    # lines between them: they are the same abstract, not new records.
    records = {r.title: r for r in parse_export(read_real("export/cmsax_endnote_refer.txt"))}
    speech = records["基于深度学习的语音识别应用研究"]
    assert speech.abstract is not None
    paragraphs = speech.abstract.split("\n")
    assert paragraphs[0].startswith("随着智能家居") and len(paragraphs) == 7
    assert paragraphs[1] == "1、基于深度神经网络的声学特征提取研究"
    assert paragraphs[-1].endswith("并对三种方法进行了比较分析。")


def test_an_abstract_written_on_the_lines_after_a_bare_x_tag_is_read() -> None:
    records = {r.title: r for r in parse_export(read_real("export/cmsax_endnote_refer.txt"))}
    for title, opening in (
        ("文本聚类分析效果评价及文本表示研究", "随着计算机技术的不断发展与应用"),
        ("复杂网络理论与应用研究", "本研究的主要动机是结合具体的复杂网络对象实例"),
    ):
        abstract = records[title].abstract
        assert abstract is not None and abstract.startswith(opening)
        assert "%W" not in abstract and records[title].thesis_level in ("博士", "硕士")
    # every record of the capture that has an %X tag followed by text keeps an abstract
    assert sum(1 for r in records.values() if r.abstract) == 36


def test_a_batch_answer_item_keeps_the_lines_that_continue_its_abstract() -> None:
    # The same real record as a ShowExport list item, its lines separated by <br>.
    text = read_real("export/cmsax_endnote_refer.txt").replace("\r\n", "\n")
    start = text.index("%0 Thesis")
    record = text[start : text.index("%W CNKI", start) + len("%W CNKI")]
    (item,) = parse_export("<ul class='literature-list'><li>" + "<br>".join(record.split("\n")) + "</li></ul>")
    assert item.title == "基于深度学习的语音识别应用研究" and item.publisher
    assert item.abstract is not None and item.abstract.endswith("并对三种方法进行了比较分析。")
    assert item.abstract.count("\n") == 6


def test_the_simulators_export_writes_some_thesis_abstracts_after_a_bare_x_and_they_are_read() -> None:
    from cnki_mcp.sim.corpus import Corpus
    from cnki_mcp.sim.export import render_show_export

    theses = [r for r in Corpus.load().records if r.type in ("博士", "硕士") and r.abstract]
    answer = render_show_export(theses)
    assert " %X <br>    " in answer  # the real capture's form is served, not only the one-line one
    parsed = parse_export(answer)
    assert [p.abstract for p in parsed] == [r.abstract for r in theses]


def test_a_less_than_sign_in_a_title_or_abstract_is_text_not_markup() -> None:
    # ShowExport escapes a record's own < and > (&lt; &gt;); decoded first, `<7.0 … 与>` and
    # `(P<0.05)，年龄>` read as a tag and were cut out of the title and the abstract
    answer = (
        "<ul class='literature-list'><li>%0 Journal Article<br>%A 王明<br>"
        "%T 血糖&lt;7.0 mmol/L与&gt;10 mmol/L患者的预后比较<br>%J 中华内科杂志<br>"
        "%X 结果：两组差异有统计学意义(P&lt;0.05)，年龄&gt;60岁者预后较差。<br>%W CNKI</li>"
        "<li>%0 Journal Article<br>%T CO<sub>2</sub>捕集与封存<br>%W CNKI</li></ul>"
    )
    first, second = parse_export(answer)
    assert first.title == "血糖<7.0 mmol/L与>10 mmol/L患者的预后比较"
    assert first.abstract == "结果：两组差异有统计学意义(P<0.05)，年龄>60岁者预后较差。"
    assert second.title == "CO2捕集与封存"
    # text a user saved from the export page: no markup at all
    [saved] = parse_export("%0 Journal Article\n%T 剂量<5 mg与>10 mg组的比较\n%X P<0.05，年龄>60岁\n")
    assert (saved.title, saved.abstract) == ("剂量<5 mg与>10 mg组的比较", "P<0.05，年龄>60岁")
