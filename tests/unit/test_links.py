"""`cnki_mcp.links`: which 《…》 spans are titles (nesting, code, links, URLs, HTML), how repeated
and differently spaced titles group, the statuses, the Markdown written, and the limits."""

from __future__ import annotations

import pytest

from cnki_mcp.errors import CnkiError
from cnki_mcp.links import (
    MAX_TEXT_BYTES,
    MAX_TITLES,
    Candidate,
    LinkInput,
    apply_links,
    distinct_titles,
    escape_url,
    find_title_spans,
    markdown_link,
    reference_key,
    resolve,
    scan_references,
    title_variants,
)

URL = "https://kns.cnki.net/kcms2/article/abstract?v=abc"


def titles(text: str) -> list[str]:
    return [s.title for s in find_title_spans(text)]


def link_all(text: str, url: str = URL) -> str:
    spans = find_title_spans(text)
    return apply_links(text, spans, {s.key: url for s in spans})


# --------------------------------------------------------------- nesting


def test_nested_double_marks_form_one_title_with_the_inner_marks_kept() -> None:
    assert titles("参考《论《民法典》违约金》一文") == ["论《民法典》违约金"]


def test_single_marks_inside_double_marks_are_part_of_the_title() -> None:
    assert titles("见《论〈民法典〉中的违约金》。") == ["论〈民法典〉中的违约金"]


def test_a_b_c_nesting_gives_the_outer_title_only() -> None:
    assert titles("《A《B》C》") == ["A《B》C"]


def test_deep_nesting_closes_only_when_depth_returns_to_zero() -> None:
    assert titles("《A《B《C》D》E》 and 《F》") == ["A《B《C》D》E", "F"]


def test_unclosed_mark_gives_no_span_but_later_titles_still_count() -> None:
    assert titles("《未闭合的题名 以及《完整题名》") == ["完整题名"]
    assert titles("只有开头《没有结尾") == []


def test_stray_closing_mark_is_ignored() -> None:
    assert titles("》前面多了一个 《题名》") == ["题名"]


def test_a_title_runs_onto_the_next_line_and_no_further() -> None:
    assert titles("《第一行\n第二行》 《正常》") == ["第一行第二行", "正常"]
    assert titles("《一\n二\n三》 《正常》 《段\n\n落》 - 《列\n- 表》") == ["正常"]


def test_empty_marks_are_not_titles() -> None:
    assert titles("《》《  》《有》") == ["有"]


# --------------------------------------------------------------- code


def test_inline_code_span_is_left_alone() -> None:
    text = "代码 `print('《不是题名》')` 之后《是题名》"
    assert titles(text) == ["是题名"]
    assert "`print('《不是题名》')`" in link_all(text)


def test_double_backtick_span_closes_only_at_a_run_of_the_same_length() -> None:
    assert titles("``a ` 《内》 `` 《外》") == ["外"]


def test_unclosed_backtick_run_skips_only_itself() -> None:
    assert titles("``《题名》 后面没有闭合") == ["题名"]


def test_fenced_code_block_is_left_alone() -> None:
    text = "前《甲》\n```python\nx = '《乙》'\n```\n后《丙》"
    assert titles(text) == ["甲", "丙"]
    out = link_all(text)
    assert "x = '《乙》'" in out
    assert out.count("](") == 2


def test_tilde_fence_and_longer_closing_fence() -> None:
    text = "~~~\n《甲》\n~~~~\n````\n《乙》\n```\n《丙》\n````\n《丁》"
    assert titles(text) == ["丁"]


def test_unclosed_fence_runs_to_the_end() -> None:
    assert titles("《甲》\n```\n《乙》\n《丙》") == ["甲"]


# --------------------------------------------------------------- links, images, URLs, HTML


def test_existing_markdown_link_is_left_alone() -> None:
    text = "已链接[《甲》](https://example.com/a) 未链接《乙》"
    assert titles(text) == ["乙"]
    assert link_all(text).startswith("已链接[《甲》](https://example.com/a) ")


def test_a_cnki_link_this_tool_wrote_is_a_title_again_and_is_rewritten_whole() -> None:
    old = markdown_link("《论违约金[上]》", URL)
    text = f"见{old}，又见[《甲》](https://doi.org/10.1/x)与[详见《乙》]({URL})。"
    [span] = find_title_spans(text)
    assert (span.title, span.label) == ("论违约金[上]", "《论违约金[上]》")
    new = "https://kns.cnki.net/kcms2/article/abstract?v=fresh"
    assert link_all(text, new) == f"见{markdown_link('《论违约金[上]》', new)}，" + text.split("，", 1)[1]
    assert apply_links(text, [span], {}) == text  # a title found no more keeps its link


def test_a_cnki_link_without_its_expiring_token_is_left_alone() -> None:
    assert titles("[《甲》](https://kns.cnki.net/kcms/detail/detail.aspx?filename=X) 《乙》") == ["乙"]


def test_link_with_brackets_and_parentheses_in_it_is_one_unit() -> None:
    text = "[见[注]《甲》](https://x.org/a_(b)) 《乙》"
    assert titles(text) == ["乙"]


def test_image_is_left_alone() -> None:
    assert titles("![《图题》](img.png) 《乙》") == ["乙"]


def test_reference_style_link_and_definition_are_left_alone() -> None:
    assert titles("[《甲》][1] 与《乙》\n[1]: https://x.org/《丙》") == ["乙"]


def test_square_brackets_without_a_destination_do_not_hide_titles() -> None:
    assert titles("[1] 王利明：《论合同》") == ["论合同"]


def test_autolink_is_left_alone() -> None:
    assert titles("<https://x.org/《甲》> 以及 《丙》") == ["丙"]


def test_bare_url_is_one_unit_so_its_backticks_open_no_code_span() -> None:
    # Unprotected, the URL's backtick would pair with the later one and hide 《丙》.
    assert titles("https://x.org/a`b 《丙》 `c`") == ["丙"]


def test_title_right_after_a_url_in_chinese_text_is_still_found() -> None:
    assert titles("见https://x.org/a，《丙》") == ["丙"]


def test_html_anchor_and_tag_attributes_are_left_alone() -> None:
    text = '<a href="u">《甲》</a> <span title="《乙》">《丙》</span> <CODE>《丁》</CODE>'
    assert titles(text) == ["丙"]


# --------------------------------------------------------------- grouping


def test_repeated_title_is_one_reference_with_its_count_and_every_occurrence_linked() -> None:
    text = "《甲》……再次引用《甲》，另见《乙》"
    grouped = distinct_titles(find_title_spans(text))
    assert list(grouped.values()) == [("甲", 2), ("乙", 1)]
    out = apply_links(text, find_title_spans(text), {reference_key("甲"): URL})
    assert out.count(f"[《甲》]({URL})") == 2
    assert "《乙》" in out and "[《乙》]" not in out


def test_spacing_and_case_variants_inside_marks_group_together() -> None:
    text = "《数据 合规 ： 路径》 与 《数据 合规：路径》 与 《Data  Law》 和 《data law》"
    grouped = distinct_titles(find_title_spans(text))
    assert [count for _, count in grouped.values()] == [2, 2]


def test_single_and_double_inner_marks_share_one_key() -> None:
    assert reference_key("〈民法典〉实施背景下的研究") == reference_key("《民法典》实施背景下的研究")
    assert title_variants("〈民法典〉研究") == ["〈民法典〉研究", "《民法典》研究"]
    assert title_variants("普通 题名") == ["普通 题名"]


@pytest.mark.parametrize(
    ("cited", "cnki"),
    [
        ("违约金酌减\u200b规则研究", "违约金酌减规则研究"),  # a zero-width space copied from a PDF
        ("违约金酌减规则的法\u00ad律规制", "违约金酌减规则的法律规制"),  # a soft hyphen
        ("\ufeff违约金研究", "违约金研究"),  # a BOM
        ("CO₂捕集与封存技术", "CO2捕集与封存技术"),  # CNKI's text of CO<sub>2</sub>
        ("ＣＯ２捕集与封存技术", "CO2捕集与封存技术"),  # full-width letters and digits
        ("R&amp;D投入对企业创新的影响", "R&D投入对企业创新的影响"),  # an HTML entity
        ("列夫•托尔斯泰的宗教思想", "列夫·托尔斯泰的宗教思想"),  # the name dot as a bullet
        ("列夫‧托尔斯泰的宗教思想", "列夫·托尔斯泰的宗教思想"),  # ... from a Taiwanese IME
        # typed on an English keyboard: straight quotes and a lone dash for CNKI's “” and ——
        ('基于"互联网+"的思政教育创新研究—以某高校为例', "基于“互联网+”的思政教育创新研究——以某高校为例"),
        ('从"可以用"到"用得好"--大模型评测', "从“可以用”到“用得好”——大模型评测"),
        # Latin words spaced off Han characters, as many writers and AI assistants space them
        ("ChatGPT 对在线教育的影响与应对", "ChatGPT对在线教育的影响与应对"),
        ("面向 C++ 程序的深度学习缺陷检测方法", "面向C++程序的深度学习缺陷检测方法"),
        ("基于 STIRPAT 模型的碳达峰路径分析", "基于STIRPAT模型的碳达峰路径分析"),
    ],
)
def test_a_cited_title_is_also_looked_up_in_the_spelling_cnki_gives_it(cited: str, cnki: str) -> None:
    spellings = title_variants(cited)
    assert reference_key(cnki) in {reference_key(s) for s in spellings}
    assert not any(ch in s for s in spellings for ch in "\u200b\u00ad\ufeff")  # never sent to CNKI


def test_meaningful_punctuation_differences_stay_apart() -> None:
    assert reference_key("C++ 编程") != reference_key("C# 编程")
    assert reference_key("版本 1.2") != reference_key("版本 12")


# --------------------------------------------------------------- statuses and output


def test_statuses_follow_the_number_of_distinct_papers_and_the_url() -> None:
    assert resolve("t", []).status == "unresolved"
    assert resolve("t", [Candidate("rec_a", None)]).status == "matched_without_link"
    linked = resolve("t", [Candidate("rec_a", URL), Candidate("rec_a", URL)])
    assert (linked.status, linked.record_refs, linked.url) == ("linked", ["rec_a"], URL)
    amb = resolve("t", [Candidate("rec_a", URL), Candidate("rec_b", URL)])
    assert (amb.status, amb.record_refs, amb.url) == ("ambiguous", ["rec_a", "rec_b"], None)


def test_link_wraps_the_raw_span_and_encodes_parentheses() -> None:
    assert escape_url("https://x/a(b) c") == "https://x/a%28b%29%20c"
    assert markdown_link("《A[1]*B*》", "https://x/(y)") == r"[《A\[1\]\*B\*》](https://x/%28y%29)"


def test_an_escape_the_text_already_has_is_kept_in_the_link() -> None:
    """`\\*` already shows `*`: escaping its backslash again showed the backslash (`论\\*x\\*`)."""
    assert markdown_link(r"《论\*已转义\*与\_下划线\_》", "u") == r"[《论\*已转义\*与\_下划线\_》](u)"
    assert markdown_link(r"《C\+\+ \[注\] a\b》", "u") == r"[《C\+\+ \[注\] a\\b》](u)"  # `\b` is no escape
    assert link_all(r"见《论\*星号\*》。") == rf"见[《论\*星号\*》]({URL})。"


def test_a_tilde_in_the_link_text_is_escaped() -> None:
    """GitHub's Markdown (cmark-gfm) strikes through between single tildes: 《2~3岁与5~6岁》 showed
    2<del>3岁与5</del>6岁 once linked."""
    assert markdown_link("《2~3岁与5~6岁》", "u") == r"[《2\~3岁与5\~6岁》](u)"


def test_nested_title_link_keeps_the_raw_text() -> None:
    assert link_all("参考《论《民法典》违约金》") == f"参考[《论《民法典》违约金》]({URL})"


def test_unlinked_text_is_returned_unchanged() -> None:
    text = "《甲》 `《乙》` [《丙》](u)"
    assert apply_links(text, find_title_spans(text), {}) == text


# --------------------------------------------------------------- limits


def test_text_over_512_kib_is_input_too_large() -> None:
    big = "中" * (MAX_TEXT_BYTES // 3 + 1)  # 3 bytes each in UTF-8: just over the limit
    with pytest.raises(CnkiError) as info:
        LinkInput(text=big)
    assert info.value.code == "INPUT_TOO_LARGE"
    with pytest.raises(CnkiError) as info:
        scan_references(big)
    assert info.value.code == "INPUT_TOO_LARGE"


def test_text_at_the_limit_is_accepted() -> None:
    ok = "a" * MAX_TEXT_BYTES
    assert LinkInput(text=ok).text == ok


def test_more_than_100_distinct_titles_is_too_many_references() -> None:
    text = "".join(f"《题名{i}》" for i in range(MAX_TITLES + 1))
    with pytest.raises(CnkiError) as info:
        scan_references(text)
    assert info.value.code == "TOO_MANY_REFERENCES"


def test_100_distinct_titles_repeated_many_times_are_allowed() -> None:
    text = "".join(f"《题名{i}》" for i in range(MAX_TITLES)) * 3
    spans, grouped = scan_references(text)
    assert (len(spans), len(grouped)) == (3 * MAX_TITLES, MAX_TITLES)


def test_titles_inside_code_do_not_count_toward_the_limit() -> None:
    text = "```\n" + "".join(f"《题名{i}》" for i in range(500)) + "\n```\n《真》"
    _, grouped = scan_references(text)
    assert list(grouped) == [reference_key("真")]


def test_tens_of_thousands_of_unclosed_marks_find_no_title() -> None:
    text = ("《" * 50_000) + ("[" * 50_000) + ("`" * 7 + "a") * 5_000 + ("<a x>" * 5_000)
    assert find_title_spans(text) == []


def test_footnote_definitions_are_content_not_link_definitions() -> None:
    text = "正文[^1]。\n\n[^1]: 王某：《论违约金》，载《法学研究》2020年第1期。\n[^note]: 另见《乙》"
    assert titles(text) == ["论违约金", "法学研究", "乙"]
    assert f"[^1]: 王某：[《论违约金》]({URL})，" in link_all(text)


def test_a_url_holding_title_marks_or_chinese_characters_is_one_unit() -> None:
    text = "见 https://example.com/s?q=《论违约金》&x=1 与《论违约金》"
    assert titles(text) == ["论违约金"]
    assert link_all(text).startswith("见 https://example.com/s?q=《论违约金》&x=1 与[")
    assert titles("https://zh.wikipedia.org/wiki/民法典《甲》 《乙》") == ["乙"]


def test_a_url_inside_a_title_ends_at_the_title_mark() -> None:
    # the 》 closes a 《 opened before the URL: the URL stops there and 《乙》 after it is found
    # (a title never spans a protected region, so 《见…》 itself is not one)
    assert titles("《见https://x.org/a》与《乙》") == ["乙"]


def test_a_title_with_chinese_punctuation_only_is_asked_in_one_spelling() -> None:
    # CNKI's titles carry ：—— （） themselves: folding them would cost a second OR leaf per title
    title = "数字化转型：机制与路径——以长三角（部分城市）为例"
    assert title_variants(title) == [title]
