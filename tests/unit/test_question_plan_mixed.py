"""Planning Chinese questions written with Latin acronyms, Roman numerals, numbers, versions and
units (DID, Ⅱ型, 90后, pH值, Windows 10, 500 kV, 第五代移动通信（5G）) and with 新 naming a new kind
of a thing (新工科, 新辅助): DESIGN.md §Question planning."""

from __future__ import annotations

import pytest

from tests.planning import planned_groups as _groups
from tests.planning import planned_terms as _terms


@pytest.mark.parametrize(
    ("question", "acronym"),
    [
        ("DID双重差分法", "DID"),
        ("基于DID模型的政策效应评估", "DID"),
        ("CAN总线通信协议", "CAN"),
        ("WHO指南解读", "WHO"),
        ("DO浓度对鱼类生长的影响", "DO"),
    ],
)
def test_an_acronym_spelled_like_an_english_stop_word_is_a_concept(question: str, acronym: str) -> None:
    assert _groups(question)[0] == [acronym]


def test_a_stop_word_in_capitals_in_english_prose_is_an_acronym_but_shouted_english_is_not() -> None:
    assert ["DO"] in _groups("the effect of DO on fish growth")
    assert "IS" not in _terms("WHAT IS ESG DISCLOSURE")


@pytest.mark.parametrize(
    ("question", "term", "lost"),
    [
        ("新工科人才培养模式", "新工科", "工科"),
        ("新文科建设背景下的课程改革", "新文科", "文科"),
        ("新高考改革对高中教学的影响", "新高考", "高考"),
        ("HER2阳性乳腺癌新辅助治疗", "新辅助", "辅助治疗"),
        ("新发展格局下的产业链", "新发展格局", ""),
    ],
)
def test_xin_written_against_a_concept_stays_in_it(question: str, term: str, lost: str) -> None:
    terms = _terms(question)
    assert any(term in t for t in terms), terms
    assert not lost or lost not in terms


def test_xin_alone_before_a_study_word_is_still_dropped() -> None:
    assert _groups("数字经济的新方法研究") == _groups("数字经济的方法研究")
    assert _groups("碳中和新技术应用") == [["碳中和"]]


@pytest.mark.parametrize(
    ("question", "term"),
    [
        ("Ⅱ型糖尿病并发症", "II型糖尿病"),
        ("Ⅲ期临床试验", "III期临床试验"),
        ("Ⅳ级胶质瘤", "IV级胶质瘤"),
        ("II型糖尿病", "II型糖尿病"),
    ],
)
def test_a_roman_numeral_belongs_to_the_type_stage_or_grade_it_numbers(question: str, term: str) -> None:
    groups = _groups(question)
    assert groups[0][0] == term
    assert not {"II", "III", "IV"} & _terms(question)


def test_a_roman_numeral_before_another_word_stays_a_term_of_its_own() -> None:
    assert _groups("IV估计") == [["IV"], ["估计"]]


@pytest.mark.parametrize(
    ("question", "term"),
    [("00后大学生心理健康", "00后"), ("90后员工离职", "90后"), ("80后父母的教养方式", "80后")],
)
def test_a_generation_born_after_a_year_is_one_word(question: str, term: str) -> None:
    assert term in _terms(question)
    assert not {"00", "90", "80"} & _terms(question)


@pytest.mark.parametrize(
    ("question", "groups"),
    [
        ("pH值对吸附的影响", [["pH值"], ["吸附"]]),
        ("K值对吸附的影响", [["K值"], ["吸附"]]),
        ("Ni基高温合金", [["Ni基"], ["高温合金", "高温", "合金"]]),
    ],
)
def test_a_suffix_character_after_a_latin_name_belongs_to_it(question: str, groups: list[list[str]]) -> None:
    assert _groups(question) == groups


@pytest.mark.parametrize(
    ("question", "acronym", "words"),
    [
        ("新冠病毒（SARS-CoV-2）", "SARS-CoV-2", {"新冠", "病毒"}),
        ("抗生素耐药性（AMR）", "AMR", {"抗生素", "耐药性"}),
    ],
)
def test_a_bracketed_acronym_of_a_lone_concept_is_an_alternative_of_both_its_halves(
    question: str, acronym: str, words: set[str]
) -> None:
    groups = _groups(question)
    assert len(groups) == 2
    assert all(acronym in g for g in groups)
    assert words <= {t for g in groups for t in g}


@pytest.mark.parametrize(
    ("question", "home", "acronym"),
    [("第五代移动通信(5G)技术在医疗中的应用", "第五代移动通信", "5G"), ("5-氟尿嘧啶（5-FU）耐药", "5-氟尿嘧啶", "5-FU")],
)
def test_a_bracketed_acronym_starting_with_a_digit_is_an_alternative(question: str, home: str, acronym: str) -> None:
    groups = _groups(question)
    assert groups[0][:2] == [home, acronym]
    assert [acronym] not in groups


def test_a_bracketed_year_or_dose_is_no_acronym() -> None:
    assert ["100mg"] in _groups("阿司匹林(100mg)")


@pytest.mark.parametrize(
    ("question", "groups"),
    [
        ("Windows 10漏洞", [["Windows 10"], ["漏洞"]]),
        ("ISO 9001质量管理体系", [["ISO 9001"], ["质量管理体系", "质量", "管理体系"]]),
        ("Python 3.x编程教学", [["Python 3.x"], ["编程教学", "编程", "教学"]]),
        ("500 kV变电站", [["500 kV"], ["变电站"]]),
        ("2.4 GHz天线设计", [["2.4 GHz"], ["天线设计", "天线", "设计"]]),
        ("5G 6G通信", [["5G"], ["6G通信"]]),
    ],
)
def test_a_version_after_a_name_and_a_unit_after_a_number_stay_in_the_term(
    question: str, groups: list[list[str]]
) -> None:
    assert _groups(question) == groups


@pytest.mark.parametrize("question", ["CD4+T细胞亚群与类风湿关节炎", "CD8+ T细胞浸润与预后"])
def test_a_marker_before_t_cells_leaves_the_t_to_the_cells(question: str) -> None:
    groups = _groups(question)
    assert groups[0] == [question[:4]]
    assert "T细胞" in groups[1]
    assert not {"CD4+T", "CD8+ T", "细胞"} & _terms(question)


@pytest.mark.parametrize(
    ("question", "ordinal"), [("第2类医疗器械", "第2类"), ("第Ⅱ类医疗器械", "第II类"), ("第7次全国人口普查", "第7次")]
)
def test_di_a_number_and_its_measure_word_are_one_term(question: str, ordinal: str) -> None:
    assert _groups(question)[0] == [ordinal]
    assert "第" not in _terms(question)


@pytest.mark.parametrize(
    ("question", "groups"),
    [
        ("中医 VS 西医 疗效", [["中医"], ["西医", "疗效"]]),
        ("A股 VS 港股", [["A股"], ["港股"]]),
        ("ChatGPT VS 文心一言", [["ChatGPT"], ["文心一言", "文心", "一言"]]),
        ("深度学习 FOR 图像识别", [["深度学习", "深度", "学习"], ["图像识别"]]),
    ],
)
def test_a_capital_connective_between_two_terms_is_no_acronym(question: str, groups: list[list[str]]) -> None:
    assert _groups(question) == groups


def test_vs_written_against_han_text_is_still_a_connective() -> None:
    assert "VS" not in " ".join(_terms("中医VS西医疗效比较"))


@pytest.mark.parametrize(
    ("question", "groups"),
    [
        ("Sora 2024年发布", [["Sora"], ["2024年发布"]]),
        ("ChatGPT 2023年 教育应用", [["ChatGPT"], ["2023年"], ["教育应用"]]),
        ("2019 GDP增长", [["2019"], ["GDP增长"]]),
        ("2023 AI教育", [["2023"], ["AI教育"]]),
        ("2023 T细胞", [["2023"], ["T细胞"]]),
    ],
)
def test_a_year_is_no_version_and_an_acronym_after_a_number_is_no_unit(
    question: str, groups: list[list[str]]
) -> None:
    assert _groups(question) == groups


@pytest.mark.parametrize(
    ("question", "term"),
    [
        ("Android 14系统安全", "Android 14"),
        ("28 nm工艺", "28 nm"),
        ("10 μm颗粒物", "10 μm"),
        ("3 MPa压力", "3 MPa"),
        ("1.5 T磁共振", "1.5 T"),
        ("1900 MHz频段", "1900 MHz"),
    ],
)
def test_a_unit_symbol_after_a_number_stays_in_the_term(question: str, term: str) -> None:
    assert _groups(question)[0] == [term]


@pytest.mark.parametrize(
    ("question", "term"), [("EPC+F模式", "EPC+F"), ("EPC+O模式风险", "EPC+O"), ("A+H股上市公司", "A+H")]
)
def test_a_plus_term_before_a_word_that_names_no_cells_stays_whole(question: str, term: str) -> None:
    assert _groups(question)[0] == [term]


def test_a_marker_before_t_lymphocytes_leaves_the_t_to_them() -> None:
    assert _groups("CD3+T淋巴细胞") == [["CD3+"], ["T淋巴细胞"]]


@pytest.mark.parametrize(
    ("question", "groups"),
    [
        ("基于新算法的图像识别", [["算法"], ["图像识别"]]),
        ("新修订的公司法", [["修订"], ["公司法"]]),
        ("图像去噪新算法", [["图像去噪"], ["算法"]]),
    ],
)
def test_xin_before_a_generic_word_is_the_adjective_and_dropped(question: str, groups: list[list[str]]) -> None:
    assert _groups(question) == groups


@pytest.mark.parametrize(("question", "term"), [("新零售模式", "新零售"), ("新材料产业发展", "新材料")])
def test_xin_before_a_word_naming_a_field_still_names_a_kind(question: str, term: str) -> None:
    assert _groups(question)[0][0] == term
