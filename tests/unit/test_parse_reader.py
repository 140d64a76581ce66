"""Reader parser: body container, sections, TOC coverage, trial and too-short bodies."""

from __future__ import annotations

import pytest
from selectolax.lexbor import LexborHTMLParser

from cnki_mcp.errors import CnkiError
from cnki_mcp.models import ReaderScope
from cnki_mcp.parse._html import parse_html
from cnki_mcp.parse.reader import parse_reader
from tests.conftest import read_real

PARA = "这是正文段落，用于检验阅读页解析是否完整保留章节内容与段落结构。" * 3


def _page(body: str, toc: tuple[str, ...] = ("第一章", "第二章", "参考文献"), head: str = "") -> str:
    items = "".join(f'<span class="tit">{t}</span>' for t in toc)
    return (
        f"<html><head>{head}</head><body><div class='catalogboxs'>{items}</div>"
        f"<div id='XMLContent'><div id='paperRead'>{body}</div></div></body></html>"
    )


BODY = (
    "<div class='js-prefix'><h1 class='Chapter'>数字文物传播研究</h1></div>"
    f"<h2>第一章</h2><p>{PARA}</p><h3>1.1 背景</h3><p>背景段落。</p><p>Loading [MathJax]/x.js</p>"
    f"<h2>第二章</h2><p>{PARA}</p><p>第二段：{PARA}</p>"
    "<h3 id='bibliography'>参考文献</h3><p>[1]王利明.违约金调整规则研究[J].法学研究,2019.</p>"
    "<div class='toolbar'>工具栏文字</div><button>下载</button>"
)


def test_reader_fixture_gives_sections_offsets_and_full_coverage() -> None:
    page = parse_reader(_page(BODY), "https://x.cnki.net/reader?id=1", expected_title="数字文物传播研究")
    assert page.title == "数字文物传播研究"
    assert page.coverage.container == "#paperRead"
    titles = [(s.level, s.title) for s in page.sections]
    # The title (`.js-prefix h1.Chapter`) is not a section; levels are outline levels.
    assert titles == [(1, "第一章"), (2, "1.1 背景"), (1, "第二章"), (1, "参考文献")]
    for s in page.sections:
        assert page.text[s.offset :].startswith(s.title)
    chapter1 = page.sections[0]
    sliced = page.text[chapter1.offset : chapter1.offset + chapter1.length]
    assert "1.1 背景" in sliced and "背景段落。" in sliced  # the slice includes its subsection
    assert "第二章" not in sliced
    assert "Loading [MathJax]" not in page.text
    assert "工具栏文字" not in page.text and "下载" not in page.text
    assert "\n\n" in page.text and "\n\n\n" not in page.text
    assert page.coverage.catalog_headings == ["第一章", "第二章", "参考文献"]
    assert page.coverage.missing_catalog_headings == []
    assert page.coverage.scope == ReaderScope.UNKNOWN
    assert page.trial is False


def test_lazily_incomplete_page_reports_missing_headings_as_partial() -> None:
    html = _page(BODY, toc=("第一章", "第二章", "第三章", "参考文献"))
    page = parse_reader(html)
    assert page.coverage.missing_catalog_headings == ["第三章"]
    assert page.coverage.scope == ReaderScope.PARTIAL


def test_trial_url_marks_trial_scope() -> None:
    page = parse_reader(_page(BODY), "https://x.cnki.net/reader?loginType=trialRead&id=1")
    assert page.trial is True
    assert page.coverage.scope == ReaderScope.TRIAL


def test_trial_text_marker_marks_trial() -> None:
    page = parse_reader(_page(BODY + "<p>试读结束，购买后阅读全文</p>"))
    assert page.trial is True


def test_too_short_body_is_reader_unsupported() -> None:
    with pytest.raises(CnkiError) as err:
        parse_reader(_page("<h2>第一章</h2><p>很短。</p>"))
    assert err.value.code == "READER_UNSUPPORTED"


def test_abstract_only_page_is_never_a_body() -> None:
    html = f"<html><body><span id='ChDivSummary'>{PARA * 3}</span></body></html>"
    with pytest.raises(CnkiError) as err:
        parse_reader(html)
    assert err.value.code == "READER_UNSUPPORTED"
    inside = _page(f"<span id='ChDivSummary'>{PARA * 3}</span>")
    with pytest.raises(CnkiError) as err:
        parse_reader(inside)
    assert err.value.code == "READER_UNSUPPORTED"


def test_a_reader_head_of_title_authors_and_a_long_abstract_is_not_a_body() -> None:
    # the reader's head (`.js-prefix`: title, authors, 摘要) counted as body, so a page with no body
    # but an abstract over 150 characters (the simulator's book reader, 222 characters) was given
    # as the full text
    head = (
        "<div class='js-prefix'><h1 class='Chapter'>违约金导论</h1><div class='author'><p>余晓明</p></div>"
        f"<div class='abstract'><p>摘要：{PARA * 3}</p></div></div>"
    )
    with pytest.raises(CnkiError) as err:
        parse_reader(_page(head))
    assert err.value.code == "READER_UNSUPPORTED"
    page = parse_reader(_page(head + BODY))  # the same head before a body: read whole
    assert "摘要：" in page.text and page.coverage.extracted_characters > 150


def test_a_reader_page_is_parsed_once_with_its_head_in_the_text_but_not_in_the_body_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the body check without the head parsed the container's HTML a second time
    parsed: list[str] = []

    def counted(html: str) -> LexborHTMLParser:
        parsed.append(html)
        return parse_html(html)

    monkeypatch.setattr("cnki_mcp.parse.reader.parse_html", counted)
    head = "<div class='js-prefix'><h1 class='Chapter'>数字文物传播研究</h1><p>摘要：" + PARA * 3 + "</p></div>"
    meta = "<meta name='citation_title' content='数字文物传播研究'>"
    page = parse_reader(_page(head + BODY, head=meta))
    assert len(parsed) == 1
    assert "摘要：" in page.text and [s.title for s in page.sections] == ["第一章", "1.1 背景", "第二章", "参考文献"]
    assert page.coverage.non_text_elements == 0
    with pytest.raises(CnkiError) as err:
        parse_reader(_page(head, head=meta))
    assert err.value.code == "READER_UNSUPPORTED" and len(parsed) == 2


def test_title_mismatch_is_identity_conflict() -> None:
    head = "<meta name='citation_title' content='别的论文'>"
    with pytest.raises(CnkiError) as err:
        parse_reader(_page(BODY, head=head), expected_title="数字文物传播研究")
    assert err.value.code == "IDENTITY_CONFLICT"


def test_title_match_ignores_punctuation_and_width() -> None:
    head = "<meta name='citation_title' content='《数字文物传播研究》'>"
    page = parse_reader(_page(BODY, head=head), expected_title="数字文物 传播研究")
    assert page.title == "《数字文物传播研究》"


def test_non_text_elements_are_counted() -> None:
    page = parse_reader(_page(BODY + "<img src='a.png'><svg></svg><math></math>"))
    assert page.coverage.non_text_elements == 3
    assert page.coverage.extracted_characters > 150
    assert page.coverage.dom_characters >= page.coverage.extracted_characters


def test_real_htmlread_entry_page_is_not_an_article() -> None:
    html = read_real("reader/pluginsx_bar_htmlread_paywall_2026.html")
    with pytest.raises(CnkiError) as err:
        parse_reader(html, "https://bar.cnki.net/bar/htmlread.html?lang=CHS&cacheID=x")
    assert err.value.code == "READER_UNSUPPORTED"


def test_table_cells_stay_apart_one_row_per_line() -> None:
    # Cells were run together: a row 12 | 3.4 read "123.4", a header 变量 | 均值 "变量均值".
    table = (
        "<table><thead><tr><th>变量</th><th>均值</th><th>标准差</th></tr></thead>"
        "<tbody><tr><td>A</td><td>12</td><td>3.4</td></tr><tr><td><p>B</p></td><td>5</td><td></td></tr></tbody></table>"
    )
    page = parse_reader(_page(f"<h2>第一章</h2><p>{PARA}</p>{table}<h2>第二章</h2><p>{PARA}</p>", toc=()))
    lines = page.text.split("\n")
    assert "变量 | 均值 | 标准差" in lines
    assert "A | 12 | 3.4" in lines
    assert "B | 5 |" in lines
    assert [s.title for s in page.sections] == ["第一章", "第二章"]


def _body_text(inner: str) -> str:
    page = parse_reader(_page(f"<h2>第一章</h2><p>{PARA * 2}</p>{inner}", toc=("第一章",)))
    return page.text


def test_sub_and_superscripts_keep_their_level() -> None:
    text = _body_text(
        "<p>水H<sub>2</sub>O，浓度10<sup>-3</sup> mol/L，面积x<sup>2</sup>，空间V<sub>n+1</sub>，"
        "功率P<sub>实际</sub>，x<sup>a+b</sup>。</p>"
    )
    assert "水H₂O，浓度10⁻³ mol/L，面积x²，空间Vₙ₊₁，功率P_(实际)，x^(a+b)。" in text
    assert "10-3" not in text


def test_superscript_reference_markers_stay_markers() -> None:
    text = _body_text("<p>研究表明<sup>[1,2]</sup>如此<sup>3</sup>，系数0.12<sup>***</sup>，(a+b)<sup>2</sup>。</p>")
    assert "研究表明[1,2]如此[3]，系数0.12***，(a+b)²。" in text
    # circled note numbers, as Chinese (law) papers mark their footnotes
    assert "见王利明文①，另见⑫。" in _body_text("<p>见王利明文<sup>①</sup>，另见<sup>⑫</sup>。</p>")


def test_mathml_is_linearised_not_run_together() -> None:
    math = (
        "<p><math><mi>y</mi><mo>=</mo><msup><mi>x</mi><mn>2</mn></msup><mo>+</mo>"
        "<mfrac><mn>1</mn><mrow><mi>n</mi><mo>+</mo><mn>1</mn></mrow></mfrac><mo>+</mo>"
        "<msqrt><mi>z</mi></msqrt><mo>+</mo><munderover><mo>∑</mo><mrow><mi>i</mi><mo>=</mo><mn>1</mn></mrow>"
        "<mi>N</mi></munderover><msub><mi>a</mi><mi>i</mi></msub></math></p>"
        "<p><math alttext='E=mc^2'><mi>E</mi></math></p>"
        "<p><math><semantics><mi>F</mi><annotation encoding='application/x-tex'>F=ma</annotation>"
        "</semantics></math></p>"
    )
    text = _body_text(math)
    assert "y=x²+1/(n+1)+√z+∑_(i=1)^Naᵢ" in text
    assert "E=mc^2" in text
    assert "$F=ma$" in text
    frac = "<p><math><mfrac><mrow><mo>(</mo><mi>a</mi><mo>)</mo><mo>+</mo><mo>(</mo><mi>b</mi><mo>)</mo></mrow><mi>c</mi></mfrac></math></p>"
    assert "((a)+(b))/c" in _body_text(frac)  # (a)+(b) is not one bracketed group


def test_heading_with_inline_markup_is_a_section() -> None:
    body = (
        f"<h2>一、CO<sub>2</sub>排放</h2><p>{PARA}</p><h2>二、<em>民法典</em>视角</h2><p>{PARA}</p>"
    )
    toc = ("一、CO<sub>2</sub>排放", "二、<em>民法典</em>视角")
    page = parse_reader(_page(body, toc=toc))
    assert [s.title for s in page.sections] == ["一、CO₂排放", "二、民法典视角"]
    assert page.coverage.missing_catalog_headings == []
    assert page.coverage.scope == ReaderScope.UNKNOWN


def test_spanned_table_cells_keep_their_columns() -> None:
    table = (
        "<table><caption>表1 回归结果</caption>"
        "<tr><th rowspan='2'>变量</th><th colspan='2'>模型</th></tr><tr><th>(1)</th><th>(2)</th></tr>"
        "<tr><td>x</td><td>0.12</td><td>0.30</td></tr>"
        "<tr><td>0</td><td>0</td><td>0</td></tr><tr><td>0</td><td>0</td><td>0</td></tr></table>"
    )
    lines = _body_text(table).split("\n")
    rows = [ln for ln in lines if " | " in ln]
    assert rows == ["变量 | 模型 | 模型", "变量 | (1) | (2)", "x | 0.12 | 0.30", "0 | 0 | 0", "0 | 0 | 0"]
    assert "表1 回归结果" in lines


def test_an_image_says_where_it_stood() -> None:
    text = _body_text(
        "<p>公式如图<img src='f.png' alt='E=mc^2'>所示，另见<img src='g.png'>。</p>"
        "<div class='area_img'><img src='x.png' alt='图1'><p class='imgtitle'>图1 结构示意图</p></div>"
    )
    assert "公式如图[图：E=mc^2]所示，另见[图片]。" in text
    assert "[图：图1]\n\n图1 结构示意图" in text


def test_an_ordered_list_keeps_the_numbers_a_browser_draws() -> None:
    text = _body_text(
        "<h3 id='bibliography'>参考文献</h3><ol><li>张三.甲[J].乙,2020.</li><li><p>李四.丙[J].丁,2021.</p></li>"
        "<li>[3] 王五.戊[J].己,2022.</li></ol><ol start='5'><li>x</li><li value='9'>y</li><li>z</li></ol>"
    )
    assert "1. 张三.甲[J].乙,2020.\n\n2. 李四.丙[J].丁,2021.\n\n[3] 王五.戊[J].己,2022." in text
    assert "5. x\n\n9. y\n\n10. z" in text


def test_mathjax_typeset_formulas_read_once_from_their_mathml_copy() -> None:
    # MathJax 2 (AssistiveMML) and 3 hide their glyph spans from screen readers (aria-hidden) and
    # keep a MathML copy: the copy is the formula's text, read once.
    mml = "<math><mi>y</mi><mo>=</mo><msup><mi>x</mi><mn>2</mn></msup></math>"
    v2 = (
        "<p>式<span class='MathJax_Preview' style='display: none;'></span><span class='MathJax' role='presentation'>"
        "<nobr aria-hidden='true'><span>y</span><span>=</span><span>x</span><span>2</span></nobr>"
        f"<span class='MJX_Assistive_MathML' role='presentation'>{mml}</span></span>"
        f"<script type='math/mml'>{mml}</script>成立。</p>"
    )
    v3 = (
        "<p>又<mjx-container class='MathJax' jax='CHTML'><mjx-math aria-hidden='true'><mjx-mi>y</mjx-mi>"
        f"</mjx-math><mjx-assistive-mml display='inline'>{mml}</mjx-assistive-mml></mjx-container>成立。</p>"
    )
    text = _body_text(v2 + v3)
    assert "式y=x²成立。" in text and "又y=x²成立。" in text


def test_a_reader_of_page_images_is_no_body_and_says_how_many_images() -> None:
    # An old article the reader shows as page scans: the [图片] marks are not body text.
    pages = "".join(f"<div class='page'><img src='p{i}.png'></div>" for i in range(40))
    with pytest.raises(CnkiError) as err:
        parse_reader(_page(f"<h2>第一章</h2>{pages}", toc=("第一章",)))
    assert err.value.code == "READER_UNSUPPORTED" and err.value.details["images"] == 40


def test_a_title_heading_with_formula_markup_is_the_papers_title() -> None:
    """Without a citation_title meta the heading is the title: read with spaces around its
    sub/superscripts (`H 3 PO 4`) it was IDENTITY_CONFLICT with the title the list gave."""
    title = "外施Ca2+、ABA及H3PO4对盐碱胁迫的缓解效应"
    marked = "外施Ca<sup>2+</sup>、ABA及H<sub>3</sub>PO<sub>4</sub>对盐碱胁迫的缓解效应"
    body = BODY.replace("<h1 class='Chapter'>数字文物传播研究</h1>", f"<h1 class='Chapter'>{marked}</h1>")
    page = parse_reader(_page(body), "https://x.cnki.net/reader?id=1", expected_title=title)
    assert page.title == title
    assert "H₃PO₄" in page.text and "H3PO4" not in page.text  # the heading in the text keeps its scripts


@pytest.mark.parametrize(
    ("mathml", "text"),
    [
        ("<msubsup><mi>x</mi><mi>i</mi><mn>2</mn></msubsup>", "xᵢ²"),
        ("<munder><mo>lim</mo><mrow><mi>n</mi><mo>→</mo><mi>∞</mi></mrow></munder>", "lim_(n→∞)"),
        ("<mover><mi>x</mi><mo>¯</mo></mover>", "x^¯"),
        ("<mroot><mi>x</mi><mn>3</mn></mroot>", "√[3]x"),
        ("<mfenced open='[' close=']'><mi>a</mi><mi>b</mi></mfenced>", "[a,b]"),
        ("<mfenced separators=';'><mi>a</mi><mi>b</mi></mfenced>", "(a;b)"),
        (
            "<mtable><mtr><mtd><mi>a</mi></mtd><mtd><mi>b</mi></mtd></mtr>"
            "<mtr><mtd><mi>c</mi></mtd><mtd><mi>d</mi></mtd></mtr></mtable>",
            "[a, b; c, d]",
        ),
    ],
)
def test_each_mathml_layout_reads_as_one_line(mathml: str, text: str) -> None:
    # limits, roots, fenced lists and matrices were run together (`limn→∞`, `x3`, `abcd`)
    assert text in _body_text(f"<p><math>{mathml}</math></p>")
