"""A reference list written in English romanises the Chinese authors of a Chinese paper (pinyin,
family first or last, initials); verify_references judges such a name the record's Han name."""

from __future__ import annotations

import pytest

from cnki_mcp.cite.names import names_agree, pinyin, plain_pinyin, spelt_in_pinyin
from cnki_mcp.cite.refmatch import RecordView, judge
from cnki_mcp.cite.refparse import parse_reference

RECORD = RecordView(
    record_ref="r0002",
    title="违约金惩罚性功能的困境与出路",
    authors=["姜雨欣", "谢国思"],
    source="法商研究",
    year=2022,
    volume="33",
    issue="1",
    pages="179-187",
    doc_type="期刊",
)


@pytest.mark.parametrize(
    ("entry", "record"),
    [
        ("Jiang Yuxin", "姜雨欣"),
        ("JIANG Y X", "姜雨欣"),
        ("Jiang, Y.", "姜雨欣"),
        ("Yuxin Jiang", "姜雨欣"),
        ("Jiang Yu-xin", "姜雨欣"),
        ("Ouyang Xiu", "欧阳修"),
        ("Shan Lin", "单林"),
        ("Lü Bo", "吕波"),
        ("Lv Bo", "吕波"),
        ("周静", "Jing ZHOU"),
        ("周靜", "Zhou, Jing"),
        ("Jiang Yu Xin", "姜雨欣"),
        ("Jiang, Y.-X.", "姜雨欣"),
        ("JIANG YX", "姜雨欣"),
        ("Lyu Xin", "吕欣"),
        ("Zeng Li", "曾丽"),
        ("Zhang Chongyang", "张重阳"),
        ("Li Le", "李乐"),
    ],
)
def test_a_pinyin_name_names_the_han_name(entry: str, record: str) -> None:
    assert names_agree(entry, record)


@pytest.mark.parametrize(
    ("entry", "record"),
    [
        ("Jiang Xinyu", "姜雨欣"),
        ("Zhang San", "李四"),
        ("Li Bo", "吕波"),
        ("Jiang Yuxin", "姜雨"),
        ("周静", "Jing ZHAO"),
        ("Jiang, Y. X.", "姜雨婷"),
        ("Hu J X", "胡锦涛"),
        ("Zhang, W.-H.", "张伟明"),
        ("Jiang Yu", "姜雨欣"),
        ("Zhang Wei", "张伟明"),
        ("Wang Li", "王丽华"),
        ("Jiang Y X Z", "姜雨欣"),
    ],
)
def test_a_different_pinyin_name_does_not(entry: str, record: str) -> None:
    assert not names_agree(entry, record)


@pytest.mark.parametrize(
    "entry",
    [
        "[1] Jiang Yuxin, Xie Guosi. 违约金惩罚性功能的困境与出路[J]. 法商研究, 2022, 33(1): 179-187.",
        "[2] JIANG Y X, XIE G S. 违约金惩罚性功能的困境与出路[J]. 法商研究, 2022, 33(1): 179-187.",
    ],
)
def test_a_reference_with_romanised_authors_is_verified(entry: str) -> None:
    got = judge(parse_reference(entry), [RECORD])
    assert (got.verdict, got.fields) == ("verified", [])


def test_a_reference_with_other_romanised_authors_is_still_a_mismatch() -> None:
    got = judge(
        parse_reference(
            "Wang Lei, Xie Guosi. 违约金惩罚性功能的困境与出路[J]. 法商研究, 2022, 33(1): 179-187."
        ),
        [RECORD],
    )
    assert (got.verdict, got.fields) == ("mismatch", ["authors"])


@pytest.mark.parametrize(
    "entry",
    [
        "Jiang, Y. X., & Xie, G. S. (2022). 违约金惩罚性功能的困境与出路. 法商研究, (1), 179-187.",
        "Jiang Yu, Xie Guo. 违约金惩罚性功能的困境与出路[J]. 法商研究, 2022(1): 179-187.",
    ],
)
def test_romanised_authors_with_other_given_names_are_a_mismatch(entry: str) -> None:
    """Review 8b H1: the initials (or the shortened given names) of 姜雨欣 / 谢国思 are not
    those of 姜雨婷 / 谢国明; written in characters the same authors were already a mismatch."""
    record = RecordView(
        record_ref="r0003",
        title="违约金惩罚性功能的困境与出路",
        authors=["姜雨婷", "谢国明"],
        source="法商研究",
        year=2022,
        volume=None,
        issue="1",
        pages="179-187",
        doc_type="期刊",
    )
    got = judge(parse_reference(entry), [record])
    assert (got.verdict, got.fields) == ("mismatch", ["authors"])


def test_an_apa_entry_with_the_title_translated_in_brackets_is_verified_and_the_english_journal_name_unchecked() -> (
    None
):
    entry = (
        "Jiang, Y., & Xie, G. (2022). 违约金惩罚性功能的困境与出路 [The dilemma and way out of the punitive"
        " function of liquidated damages]. Studies in Law and Business, 33(1), 179–187."
    )
    parsed = parse_reference(entry)
    assert parsed.title == "违约金惩罚性功能的困境与出路"
    got = judge(parsed, [RECORD])
    assert (got.verdict, got.fields) == ("verified", [])
    assert any(
        "Studies in Law and Business" in w for w in got.warnings
    )  # said unchecked, not silently passed


def test_a_chicago_notes_bibliography_entry_for_a_chinese_journal_reads_its_volume() -> None:
    parsed = parse_reference(
        'Jiang Yuxin and Xie Guosi. "违约金惩罚性功能的困境与出路." 法商研究 33, no. 1 (2022): 179–87.'
    )
    assert (parsed.source, parsed.volume, parsed.issue, parsed.year) == ("法商研究", "33", "1", 2022)
    assert judge(parsed, [RECORD]).verdict == "verified"


def test_a_wrong_journal_in_the_same_script_is_still_a_mismatch() -> None:
    got = judge(
        parse_reference("姜雨欣, 谢国思. 违约金惩罚性功能的困境与出路[J]. 法学研究, 2022, 33(1): 179-187."),
        [RECORD],
    )
    assert (got.verdict, got.fields) == ("mismatch", ["source"])


def test_an_apa_entry_written_with_chinese_punctuation_is_read_and_verified() -> None:
    parsed = parse_reference(
        "姜雨欣、谢国思（2022）。违约金惩罚性功能的困境与出路。法商研究，33（1），179–187。"
    )
    assert (parsed.title, parsed.source, parsed.volume, parsed.issue, parsed.pages, parsed.year) == (
        "违约金惩罚性功能的困境与出路",
        "法商研究",
        "33",
        "1",
        "179-187",
        2022,
    )
    assert judge(parsed, [RECORD]).verdict == "verified"


def test_a_journal_in_pinyin_is_compared_with_the_records() -> None:
    """Review 8b L3: a pinyin journal name was never compared; `Faxue Yanjiu` (法学研究) for a
    paper of 法商研究 is a wrong source, not a warning beside `verified`."""
    wrong = judge(
        parse_reference("Jiang Yuxin, Xie Guosi. 违约金惩罚性功能的困境与出路[J]. Faxue Yanjiu, 2022, 33(1): 179-187."),
        [RECORD],
    )
    assert (wrong.verdict, wrong.fields) == ("mismatch", ["source"])
    right = judge(
        parse_reference(
            "Jiang Yuxin, Xie Guosi. 违约金惩罚性功能的困境与出路[J]. Fashang Yanjiu, 2022, 33(1): 179-187."
        ),
        [RECORD],
    )
    assert (right.verdict, right.fields) == ("verified", [])
    assert not any("Fashang Yanjiu" in w for w in right.warnings)  # checked, not left unchecked


def test_an_english_journal_name_does_not_let_other_romanised_authors_pass() -> None:
    """Review 8b L3 with H1: the English journal name is not checked, the romanised authors are."""
    got = judge(
        parse_reference(
            "Jiang, Y. T., & Xie, G. M. (2022). 违约金惩罚性功能的困境与出路. Journal of Finance, 33(1), 179–187."
        ),
        [RECORD],
    )
    assert (got.verdict, got.fields) == ("mismatch", ["authors"])


@pytest.mark.parametrize(
    ("latin", "han", "spelt"),
    [
        ("Faxue Yanjiu", "法学研究", True),
        ("Faxue Yanjiu", "法商研究", False),
        ("Fa Xue Yan Jiu (Zhexue Shehui Kexue Ban)", "法学研究（哲学社会科学版）", True),
        ("Faxue Yanjiu", "法学研究（哲学社会科学版）", True),  # an edition left out
        ("Lvse Keji", "绿色科技", True),
        ("Lüse Keji", "绿色科技", True),
        ("Studies in Law and Business", "法商研究", None),
        ("Nature", "自然", None),
        ("Zeng", "曾", None),  # a journal's name, not a surname: 曾 is read ceng, one word tells nothing
        ("法学研究", "法学研究", None),
    ],
)
def test_a_latin_journal_name_is_its_chinese_names_plain_pinyin(latin: str, han: str, spelt: bool | None) -> None:
    assert spelt_in_pinyin(latin, han) is spelt


def test_a_name_reads_its_surname_a_title_its_plain_pinyin() -> None:
    assert (pinyin("曾"), plain_pinyin("曾")) == ("zeng", "ceng")
    assert pinyin("法学研究") == plain_pinyin("法学研究") == "faxueyanjiu"
