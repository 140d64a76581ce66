"""read_pdf_text on PDFs the simulator produces."""

from __future__ import annotations

import re
from collections import OrderedDict
from pathlib import Path

import pytest

from cnki_mcp import pdf_text
from cnki_mcp.errors import CnkiError
from cnki_mcp.pdf_text import pages_spec, parse_pages, read_pdf_text
from cnki_mcp.sim.corpus import Corpus
from cnki_mcp.sim.pages.files import caj_bytes, pdf_bytes


@pytest.fixture(scope="module")
def record():  # type: ignore[no-untyped-def]
    return Corpus.load().by_id["r0021"]


@pytest.fixture
def data_dir(tmp_path: Path, record) -> Path:  # type: ignore[no-untyped-def]
    folder = tmp_path / "downloads" / "sub"
    folder.mkdir(parents=True)
    (folder / "paper.pdf").write_bytes(pdf_bytes(record))
    (folder / "paper.caj").write_bytes(caj_bytes(record))
    (tmp_path / "outside.pdf").write_bytes(pdf_bytes(record))
    return tmp_path


def flat(text: str) -> str:
    return "".join(text.split())


def code_of(**kwargs: object) -> str:
    with pytest.raises(CnkiError) as info:
        read_pdf_text(**kwargs)  # type: ignore[arg-type]
    return info.value.code


def test_whole_pdf_text_contains_title_and_last_section(data_dir: Path, record) -> None:  # type: ignore[no-untyped-def]
    got = read_pdf_text("sub/paper.pdf", data_dir, max_characters=200_000)
    assert got.page_count > 1 and got.pages_returned == list(range(1, got.page_count + 1))
    assert not got.truncated and got.next_page is None
    assert flat(record.title) in flat(got.text)
    assert flat(record.fulltext[-1].heading) in flat(got.text)


def test_page_range_returns_only_those_pages(data_dir: Path, record) -> None:  # type: ignore[no-untyped-def]
    first = read_pdf_text(data_dir / "downloads/sub/paper.pdf", data_dir, pages="1")
    rest = read_pdf_text("sub/paper.pdf", data_dir, pages="2-")
    assert first.pages_returned == [1] and rest.pages_returned[0] == 2
    assert flat(record.title) in flat(first.text) and flat(record.title) not in flat(rest.text)


def test_max_characters_truncates_and_says_where_to_continue(data_dir: Path) -> None:
    got = read_pdf_text("sub/paper.pdf", data_dir, max_characters=100)
    assert len(got.text) == 100 and got.truncated and got.next_page == 1


def test_following_next_page_and_next_offset_reads_the_whole_range_once(data_dir: Path) -> None:
    whole = read_pdf_text("sub/paper.pdf", data_dir, max_characters=200_000)
    last = whole.page_count
    parts: list[str] = []
    pages, offset = "1-", 0
    for _ in range(200):  # a client following the advice, with pages cut mid-page
        got = read_pdf_text("sub/paper.pdf", data_dir, pages=pages, max_characters=300, offset=offset)
        parts.append(got.text)
        if not got.truncated:
            break
        assert got.next_pages is not None and got.next_offset is not None
        assert (got.next_pages, got.next_offset) != (pages, offset)  # it moves on
        assert parse_pages(got.next_pages, last) == list(range(got.next_page, last + 1))
        pages, offset = got.next_pages, got.next_offset
    else:
        pytest.fail("the reads did not reach the end")
    assert len(parts) > 3 and flat("".join(parts)) == flat(whole.text)


def test_a_client_paging_through_a_pdf_in_small_parts_has_each_page_extracted_once(
    data_dir: Path, record, monkeypatch: pytest.MonkeyPatch  # type: ignore[no-untyped-def]
) -> None:
    """Every call needs the running-head sample of up to 12 pages besides its own: extracted once
    per file, not once per call (a client following next_pages/next_offset made dozens)."""
    from pypdf import PageObject

    extracted: list[int] = []
    real = PageObject.extract_text

    def counted(page: PageObject, *args: object, **kwargs: object) -> str:
        extracted.append(page.page_number or 0)
        return real(page, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(PageObject, "extract_text", counted)
    monkeypatch.setattr(pdf_text, "_extracts", OrderedDict())  # this file's pages unseen, whatever ran before
    pages, offset, calls = "1-", 0, 0
    while True:
        got = read_pdf_text("sub/paper.pdf", data_dir, pages=pages, max_characters=2_000, offset=offset)
        calls += 1
        if not got.truncated:
            break
        assert got.next_pages is not None and got.next_offset is not None
        pages, offset = got.next_pages, got.next_offset
    assert calls > 5 and sorted(extracted) == list(range(got.page_count)), extracted
    # the same bytes under another name are the same text; other bytes at this name are read anew
    (data_dir / "downloads" / "copy.pdf").write_bytes((data_dir / "downloads" / "sub" / "paper.pdf").read_bytes())
    assert read_pdf_text("copy.pdf", data_dir, max_characters=200_000).text == read_pdf_text(
        "sub/paper.pdf", data_dir, max_characters=200_000
    ).text
    other = Corpus.load().by_id["r0001"]
    (data_dir / "downloads" / "sub" / "paper.pdf").write_bytes(pdf_bytes(other))
    again = flat(read_pdf_text("sub/paper.pdf", data_dir, max_characters=200_000).text)
    assert flat(other.title) in again and flat(record.title) not in again


@pytest.mark.parametrize("beyond_first_page", [-1, 0, 1, 2, 3])
def test_the_parts_a_client_follows_rejoin_into_exactly_the_whole_text(
    data_dir: Path, beyond_first_page: int
) -> None:
    """Cuts that land just before, on, inside and after the blank line between two pages."""
    whole = read_pdf_text("sub/paper.pdf", data_dir, pages="1-3", max_characters=200_000).text
    first = len(read_pdf_text("sub/paper.pdf", data_dir, pages="1").text)
    size = first + beyond_first_page
    parts: list[str] = []
    pages, offset = "1-3", 0
    for _ in range(len(whole) // size + 2):
        got = read_pdf_text("sub/paper.pdf", data_dir, pages=pages, max_characters=size, offset=offset)
        parts.append(got.text)
        if not got.truncated:
            break
        assert got.next_pages is not None and got.next_offset is not None
        pages, offset = got.next_pages, got.next_offset
    assert "".join(parts) == whole  # the blank lines between pages included


def test_an_offset_past_the_end_of_the_only_page_is_invalid(data_dir: Path) -> None:
    assert code_of(path="sub/paper.pdf", data_dir=data_dir, pages="1", offset=10_000_000) == "INVALID_ARGUMENT"


def test_pages_given_out_of_order_go_on_in_that_order(data_dir: Path) -> None:
    three, one = (read_pdf_text("sub/paper.pdf", data_dir, pages=p).text for p in ("3", "1"))
    got = read_pdf_text("sub/paper.pdf", data_dir, pages="3,1", max_characters=50)
    assert (got.next_page, got.next_pages, got.next_offset) == (3, "3,1", 50)
    rest = read_pdf_text("sub/paper.pdf", data_dir, pages=got.next_pages, offset=got.next_offset)
    assert not rest.truncated and rest.pages_returned == [3, 1]
    assert got.text + rest.text == three + "\n\n" + one


def test_pages_spec_writes_runs_in_the_order_given() -> None:
    assert pages_spec([3, 1]) == "3,1"
    assert pages_spec([1, 4, 5, 6, 2]) == "1,4-6,2"
    assert parse_pages(pages_spec([7, 2, 3, 9]), 10) == [7, 2, 3, 9]


def test_an_offset_past_the_first_pages_end_goes_on_with_the_next_page(data_dir: Path) -> None:
    got = read_pdf_text("sub/paper.pdf", data_dir, pages="1-2", offset=10_000_000)
    second = read_pdf_text("sub/paper.pdf", data_dir, pages="2")
    assert got.pages_returned == [2] and got.text == second.text
    assert code_of(path="sub/paper.pdf", data_dir=data_dir, offset=-1) == "INVALID_ARGUMENT"


def test_non_pdf_is_invalid_file_and_paths_outside_downloads_are_refused(data_dir: Path) -> None:
    assert code_of(path="sub/paper.caj", data_dir=data_dir) == "INVALID_FILE"
    assert code_of(path=data_dir / "outside.pdf", data_dir=data_dir) == "INVALID_ARGUMENT"
    assert code_of(path="../outside.pdf", data_dir=data_dir) == "INVALID_ARGUMENT"
    assert code_of(path="sub/paper.pdf", data_dir=data_dir, max_characters=0) == "INVALID_ARGUMENT"


def test_page_ranges_expand_within_the_page_count_and_bad_ones_are_invalid_argument() -> None:
    assert parse_pages("1-3", 10) == [1, 2, 3]
    assert parse_pages("2,5-", 6) == [2, 5, 6]
    assert parse_pages(None, 3) == [1, 2, 3]
    assert parse_pages("4-20", 5) == [4, 5]
    for bad in ("0", "3-1", "x", "9"):
        with pytest.raises(CnkiError) as info:
            parse_pages(bad, 5)
        assert info.value.code == "INVALID_ARGUMENT", bad


def test_nul_byte_overlong_and_looping_paths_are_invalid_arguments(data_dir: Path) -> None:
    # ValueError / OSError (ENAMETOOLONG) / RuntimeError (symlink loop) used to surface as INTERNAL
    assert code_of(path="sub/pa\x00per.pdf", data_dir=data_dir) == "INVALID_ARGUMENT"
    assert code_of(path="x" * 1900 + ".pdf", data_dir=data_dir) == "INVALID_ARGUMENT"
    loop = data_dir / "downloads" / "loop"
    loop.symlink_to(loop)
    assert code_of(path="loop/paper.pdf", data_dir=data_dir) == "INVALID_ARGUMENT"


def test_a_symlinked_downloads_directory_is_refused_not_followed(tmp_path: Path, record) -> None:  # type: ignore[no-untyped-def]
    # resolving downloads/ before checking it made the symlink's target the confinement root
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "secret.pdf").write_bytes(pdf_bytes(record))
    data = tmp_path / "data"
    data.mkdir()
    (data / "downloads").symlink_to(outside)
    assert code_of(path="secret.pdf", data_dir=data) == "DATA_PATH_SYMLINK"
    assert code_of(path=outside / "secret.pdf", data_dir=data) == "DATA_PATH_SYMLINK"


def test_pages_without_any_text_are_an_invalid_file_not_a_blank_success(tmp_path: Path, record) -> None:  # type: ignore[no-untyped-def]
    # A scanned PDF (images only) gave text "\n\n\n\n" and truncated=false: a blank paper to the
    # reader, with nothing saying why or what to do instead.
    from pypdf import PdfWriter

    folder = tmp_path / "downloads"
    folder.mkdir()
    writer = PdfWriter()
    for _ in range(3):
        writer.add_blank_page(595, 842)
    writer.write(str(folder / "scan.pdf"))
    with pytest.raises(CnkiError) as info:
        read_pdf_text("scan.pdf", tmp_path)
    assert info.value.code == "INVALID_FILE"
    assert info.value.details["reason"] == "no_text" and info.value.details["page_count"] == 3
    assert code_of(path="scan.pdf", data_dir=tmp_path, pages="2") == "INVALID_FILE"
    (folder / "paper.pdf").write_bytes(pdf_bytes(record))  # a PDF with text still reads
    assert read_pdf_text("paper.pdf", tmp_path).text


def test_a_page_the_file_does_not_have_is_refused_with_the_page_count_even_in_a_list() -> None:
    # "1-2,99" of a 3-page file read as "1-2" without a word; "5-" was "页码范围无效".
    for spec in ("1-2,99", "5-", "4"):
        with pytest.raises(CnkiError) as info:
            parse_pages(spec, 3)
        assert info.value.code == "INVALID_ARGUMENT", spec
        assert info.value.details["page_count"] == 3, spec
    assert parse_pages("2-9", 3) == [2, 3]  # a range running past the end still stops at it


def test_line_wraps_inside_a_paragraph_are_undone(data_dir: Path, record) -> None:  # type: ignore[no-untyped-def]
    # Every visual line was a hard newline: 《民法典》第5\n85条, 借\n鉴 (a number and a word cut).
    got = read_pdf_text("sub/paper.pdf", data_dir, max_characters=200_000)
    # the blank line between pages, and a break after a sentence's end (kept on purpose: a full
    # line ending 。 may end its paragraph) left out, every paragraph reads in one piece
    joined = re.sub(r"(?<=[。！？：；])\n", "", got.text.replace("\n\n", ""))
    paragraphs = [p for s in record.fulltext for p in s.text.split("\n") if p.strip()]
    assert paragraphs and all(p in joined for p in paragraphs)
    assert "第5\n85条" not in got.text and "第585条" in got.text
    for heading in (s.heading for s in record.fulltext):
        assert f"\n{heading}\n" in got.text  # short lines keep their break


def test_unwrap_lines_joins_full_lines_only() -> None:
    from cnki_mcp.pdf_text import unwrap_lines

    lines = ["在原《合同法》第114条的基础上，《民法典》第5", "85条对约定违约金制度作了延续与完善和发展。", "短"]
    assert unwrap_lines(lines) == "在原《合同法》第114条的基础上，《民法典》第585条对约定违约金制度作了延续与完善和发展。\n短"
    # one full line on a page is no measure of the page's width: nothing is joined
    assert unwrap_lines(["思想理论教育导刊 58 2016 年第 8 期", "末行"]) == "思想理论教育导刊 58 2016 年第 8 期\n末行"
    body = ["一、引言", "正文正文正文正文正文正文正文", "正文正文正文正文正文正文正文", "正文。"]
    assert unwrap_lines(body) == "一、引言\n" + "正文" * 15 + "。"
    ended = ["完整的一句话写满一行结束。", "完整的一句话写满一行结束。", "下一段开头"]
    assert unwrap_lines(ended) == "\n".join(ended)
    english = ["This is a long line of the", "next words in the paper", "end."]
    assert unwrap_lines(english) == "This is a long line of the next words in the paper end."
    comma = ["This is a long line by Smith,", "and then the next words in", "end."]
    assert unwrap_lines(comma) == "This is a long line by Smith, and then the next words in end."
    # extraction spaces digits inside Chinese text: the number cut by the wrap is still one number
    spaced = ["在原《合同法》第 114 条的基础上，《民法典》第 5", "85 条对约定违约金制度作了延续与完善和发展。", "短"]
    assert unwrap_lines(spaced) == "在原《合同法》第 114 条的基础上，《民法典》第 585 条对约定违约金制度作了延续与完善和发展。\n短"


def test_pages_without_text_inside_a_range_are_named(tmp_path: Path, record) -> None:  # type: ignore[no-untyped-def]
    from pypdf import PdfReader, PdfWriter

    folder = tmp_path / "downloads"
    folder.mkdir()
    (folder / "paper.pdf").write_bytes(pdf_bytes(record))
    writer = PdfWriter()
    source = PdfReader(str(folder / "paper.pdf"))
    writer.add_page(source.pages[0])
    writer.add_blank_page(595, 842)  # a scanned page: no text
    writer.add_page(source.pages[1])
    writer.write(str(folder / "mixed.pdf"))
    got = read_pdf_text("mixed.pdf", tmp_path, max_characters=200_000)
    assert got.pages_returned == [1, 2, 3] and got.pages_without_text == [2]
    assert read_pdf_text("mixed.pdf", tmp_path, pages="1").pages_without_text == []


def test_the_cnki_copyright_line_on_every_page_is_left_out() -> None:
    from cnki_mcp.pdf_text import _page_text

    class Page:
        def __init__(self, text: str) -> None:
            self.text = text

        def extract_text(self) -> str:
            return self.text

    raw = (
        "正文第一行。\n"
        "思想理论教育导刊 58 2016 ©1994-2018 China Academic Journal Electronic Publishing House. "
        "All rights reserved. http://www.cnki.net年第 8 期\n"
        "(C)1994-2022 China Academic Journal Electronic Publishing House.All rights reserved.http://www.cnki.net\n"
        "末行。"
    )
    text = _page_text(Page(raw))
    assert "China Academic Journal" not in text and "cnki.net" not in text
    assert text == "正文第一行。\n思想理论教育导刊 58 2016 年第 8 期\n末行。"


def test_a_font_without_a_unicode_map_is_said_to_give_garbled_text(
    tmp_path: Path, record, monkeypatch: pytest.MonkeyPatch  # type: ignore[no-untyped-def]
) -> None:
    # An embedded CJK font with Identity-H codes and no ToUnicode map: extraction reads glyph ids
    # as characters (here they land in Indic, Tibetan and other blocks) and returned them as if
    # they were the paper's text.
    from cnki_mcp.sim.pages import files

    def glyph_ids(text: str) -> str:
        return "".join(f"{0x0A00 + (ord(c) * 7919) % 0x1F00:04X}" for c in text)

    monkeypatch.setattr(files, "_ucs2_hex", glyph_ids)
    raw = files.pdf_bytes(record).replace(b" /ToUnicode ", b" /XToUnicod ")
    raw = raw.replace(b"/Encoding /UniGB-UCS2-H", b"/Encoding /Identity-H  ")
    folder = tmp_path / "downloads"
    folder.mkdir()
    (folder / "glyphs.pdf").write_bytes(raw)
    got = read_pdf_text("glyphs.pdf", tmp_path, pages="1-2")
    assert got.garbled_pages == [1, 2] and got.warnings
    assert read_pdf_text("glyphs.pdf", tmp_path, pages="1", max_characters=50).garbled_pages == [1]
    monkeypatch.undo()
    (folder / "paper.pdf").write_bytes(pdf_bytes(record))
    clean = read_pdf_text("paper.pdf", tmp_path, pages="1-2")
    assert clean.garbled_pages == [] and clean.warnings == []


@pytest.mark.parametrize(
    "text",
    [
        "བོད་ཀྱི་རིག་གནས་དང་ཤེས་རིག་གི་འཕེལ་རྒྱས་སྐོར་གྱི་ཞིབ་འཇུག",  # Tibetan
        "ئۇيغۇر تىلى ۋە ئەدەبىياتى ھەققىدە تەتقىقات ماقالىسى",  # Uyghur (Arabic script)
        "ᠮᠣᠩᠭᠣᠯ ᠬᠡᠯᠡ ᠪᠢᠴᠢᠭ ᠤᠨ ᠰᠣᠳᠤᠯᠭ᠎ᠠ ᠶᠢᠨ ᠠᠰᠠᠭᠤᠳᠠᠯ",  # Mongolian
    ],
)
def test_a_page_in_a_minority_language_script_is_not_garbled(text: str) -> None:
    # CNKI carries Tibetan, Uyghur and Mongolian journals: their text was taken for glyph ids
    from cnki_mcp.pdf_text import looks_garbled

    assert not looks_garbled(text * 2)


@pytest.mark.parametrize("record_id", ["r0001", "r0021", "r0097"])  # journal (6 and 4 pages), thesis
def test_running_heads_and_page_numbers_are_left_out_and_paragraphs_read_over_the_page_break(
    tmp_path: Path, record_id: str
) -> None:
    rec = Corpus.load().by_id[record_id]
    (tmp_path / "downloads").mkdir()
    (tmp_path / "downloads" / "paper.pdf").write_bytes(pdf_bytes(rec))
    got = read_pdf_text("paper.pdf", tmp_path, max_characters=200_000)
    assert got.page_count >= 4
    for furniture in ("学位论文", "年第", "· ", "China Academic"):
        assert furniture not in got.text
    # a paragraph the page break cut reads whole once the blank line between pages is left out
    joined = re.sub(r"(?<=[。！？：；])\n", "", got.text.replace("\n\n", ""))
    paragraphs = [p for s in rec.fulltext for p in s.text.split("\n") if p.strip()]
    assert all(p in joined for p in paragraphs)
    # pages read one at a time, and a read cut short, give the same text
    alone = [
        read_pdf_text("paper.pdf", tmp_path, pages=str(n), max_characters=200_000).text
        for n in got.pages_returned
    ]
    assert "\n\n".join(alone) == got.text


def test_furniture_is_what_stands_at_the_edge_of_many_pages() -> None:
    from cnki_mcp.pdf_text import _without_furniture, furniture_of

    def body(page: int) -> list[str]:  # each page's running text is its own
        return [chr(0x4E00 + 40 * page + i) * 30 for i in range(6)]

    pages = [
        ["题名", *body(0), "· 75 ·"],
        ["现代法学 76 2014 年第 6 期", *body(1)],
        [*body(2), "2014 年第 6 期 现代法学 77"],
        ["现代法学 78 2014 年第 6 期", *body(3), "表1 描述性统计"],
        [*body(4), "2014 年第 6 期 现代法学 79"],
    ]
    furniture = furniture_of(lambda i: pages[i], len(pages))
    # the two mirrored heads are one; a line at the edge of one page only is the paper's own
    assert len(furniture) == 1
    assert _without_furniture(pages[1], furniture) == body(1)
    assert _without_furniture(pages[0], furniture) == ["题名", *body(0)]
    assert _without_furniture(pages[3], furniture) == [*body(3), "表1 描述性统计"]
    # the same words inside the running text stay, and so does a number there
    inner = [*body(5)[:3], "现代法学 80 2014 年第 6 期", "58", *body(5)[3:]]
    assert _without_furniture(inner, furniture) == inner
    assert furniture_of(lambda i: pages[i], 2) == frozenset()


def test_the_rows_of_a_table_keep_their_breaks_and_do_not_measure_the_page() -> None:
    from cnki_mcp.pdf_text import unwrap_lines

    text = ["表2 描述性统计", "变量 观测值 均值 标准差 最小值 最大值"]
    rows = [
        "数字经济指数 2,310 0.352 0.118 0.051 0.873",
        "就业结构 2,310 41.5% 9.21 12.30 78.60",
        "lnGDP 2,310 10.842 0.631 8.915 12.776",
        "DE -0.125*** (0.031) 0.087** (0.042)",
    ]
    prose = ["在原《合同法》第 114 条的基础上，《民法典》第 5", "85 条对约定违约金制度作了延续与完善和发展。", "短"]
    got = unwrap_lines(text + rows + prose)
    for row in rows:
        assert f"\n{row}\n" in got  # each row on its own line
    # the prose is still unwrapped although a table row is the page's widest line
    assert "第 585 条" in got
    # a sentence with spaced numbers in it is prose, not a row
    wrapped = [
        "2022 年我国数字经济规模达到 50.2 万亿元，占 GDP 比重超过",
        "41.5%，成为稳增长、促转型的重要引擎和推动高质量发展的关键",
        "力量。",
    ]
    assert unwrap_lines(wrapped).startswith("2022 年我国数字经济规模达到 50.2 万亿元，占 GDP 比重超过41.5%")


def test_a_tables_note_or_row_repeated_at_page_feet_is_not_a_running_head() -> None:
    from cnki_mcp.pdf_text import _without_furniture, furniture_of

    note = "注：***、**、*分别表示在1%、5%、10%的水平上显著，括号内为稳健标准误。"
    row = "观测值 3005 3005 2985"

    def page(n: int) -> list[str]:
        body = [chr(0x4E00 + 40 * n + i) * 30 for i in range(6)]
        head = [f"经济研究 {100 + n} 2020 年第 5 期"] if n else []
        # a regression table ends at the foot of 7 of 12 pages (its note and 观测值 row are never
        # a head, however often they repeat), and a section's closing line at the foot of 4 (under
        # 40 % of the 11 pages after the first: not enough for a head)
        foot = [row, note] if n % 3 != 0 or n == 11 else []
        closing = ["本章小结：以上分析表明结论稳健"] if n in (2, 5, 8, 11) else []
        return [*head, *body, *closing, *foot]

    pages = [page(n) for n in range(12)]
    furniture = furniture_of(lambda i: pages[i], len(pages))
    assert len(furniture) == 1  # the running head only
    kept = _without_furniture(pages[2], furniture)
    assert kept[-3:] == ["本章小结：以上分析表明结论稳健", row, note] and not kept[0].startswith("经济研究")
