"""Planning questions that mix Chinese with the Latin, Greek and digit names of science, medicine
and engineering (gene, protein and compound names): DESIGN.md §Question planning."""

from __future__ import annotations

import pytest

from tests.planning import planned_groups as _groups
from tests.planning import planned_terms as _terms


@pytest.mark.parametrize(
    ("question", "name"),
    [
        ("TNF-α抑制剂治疗银屑病", "TNF-α"),
        ("IL-1β与炎症反应", "IL-1β"),
        ("TGF-β1信号通路与肝纤维化", "TGF-β1"),
        ("HIF-1α在肿瘤缺氧中的作用", "HIF-1α"),
        ("NF-κB信号通路", "NF-κB"),
        ("Wnt/β-catenin信号通路", "Wnt/β-catenin"),
        ("α-SMA表达与纤维化", "α-SMA"),
    ],
)
def test_a_greek_letter_inside_a_latin_name_stays_in_the_name(question: str, name: str) -> None:
    groups = _groups(question)
    assert groups[0] == [name]
    fragments = {t for g in groups for t in g if t != name and (t in name or name.startswith(t[:2]))}
    assert not fragments, fragments


@pytest.mark.parametrize(
    ("question", "name", "other"),
    [
        ("D-二聚体与肺栓塞", "D-二聚体", "肺栓塞"),
        ("5-氟尿嘧啶化疗", "5-氟尿嘧啶", "化疗"),
        ("L-谷氨酸钠的神经毒性", "L-谷氨酸钠", "神经毒性"),
    ],
)
def test_a_hyphen_prefix_belongs_to_the_chinese_name_after_it(question: str, name: str, other: str) -> None:
    groups = _groups(question)
    assert groups[0][0] == name
    assert other in {t for g in groups for t in g}
    assert not {t for g in groups for t in g if t.endswith("-")}


@pytest.mark.parametrize(
    ("question", "name", "fragments"),
    [
        ("α-突触核蛋白帕金森病", "α-突触核蛋白", {"α-突触", "核蛋白", "核蛋白帕金森病"}),
        ("β-淀粉样蛋白与阿尔茨海默病", "β-淀粉样蛋白", {"β-淀粉", "样蛋白"}),
        ("N-乙酰半胱氨酸治疗慢阻肺", "N-乙酰半胱氨酸", {"N-乙酰"}),
    ],
)
def test_a_prefixed_name_the_segmenter_cut_short_stays_whole(question: str, name: str, fragments: set[str]) -> None:
    groups = _groups(question)
    assert groups[0] == [name]
    assert not _terms(question) & fragments


def test_a_prefixed_name_the_segmenter_knows_keeps_the_word_after_it_apart() -> None:
    # 淀粉酶 is a whole word: α-淀粉酶抑制剂 stays two concepts
    assert _groups("α-淀粉酶抑制剂") == [["α-淀粉酶"], ["抑制剂"]]
