"""Planning questions written in English, in traditional characters or in mixed scripts (the
researchers who do not write simplified Chinese): time phrases, letters that name the thing,
document-type wishes, script conversion."""

from __future__ import annotations

import pytest

from cnki_mcp.cite.names import names_agree
from cnki_mcp.links import title_variants
from cnki_mcp.query.plan import (
    ENGLISH_ONLY_WARNING,
    TRADITIONAL_GROUPS_WARNING,
    TRADITIONAL_WARNING,
    parse_sampling_reply,
    plan_explicit,
    plan_question,
    sampling_request,
)
from cnki_mcp.query.segment import default_segmenter
from cnki_mcp.query.timephrase import extract_years
from cnki_mcp.query.written import read_written, wish_filters
from cnki_mcp.store.library import parse_library_query

CUT = default_segmenter()


def _plan(question: str, now_year: int = 2026):  # type: ignore[no-untyped-def]
    return plan_question(question, now_year=now_year, cut=CUT)


def _terms(question: str) -> set[str]:
    return {t for g in _plan(question).groups for t in g}


@pytest.mark.parametrize(
    ("question", "year_from", "year_to", "concepts"),
    [
        (
            "digital finance and rural income in the last five years",
            2021,
            None,
            [["digital finance"], ["rural income"]],
        ),
        ("deep learning adversarial robustness since 2020", 2020, None, None),
        ("digital economy between 2015 and 2020", 2015, 2020, [["digital economy"]]),
        ("digital economy research from 2018 to 2022", 2018, 2022, [["digital economy"]]),
        ("green finance 2015 to 2020", 2015, 2020, [["green finance"]]),
        ("2020 to 2022 student mental health", 2020, 2022, [["student mental health"]]),
        ("carbon trading after 2015", 2016, None, [["carbon trading"]]),
        ("rural finance before 2010", None, 2009, [["rural finance"]]),
        ("ESG until 2018", None, 2018, [["ESG"]]),
        ("ESG from 2019 onwards", 2019, None, [["ESG"]]),
        ("ESG papers published in the past 10 years", 2016, None, [["ESG"]]),
        ("ESG disclosure in the past year", 2025, None, None),
        ("ESG this year", 2026, 2026, [["ESG"]]),
        ("ESG last year", 2025, 2025, [["ESG"]]),
        ("Industry 4.0 since 2015", 2015, None, [["Industry 4.0"]]),
        ("recent studies on ESG in recent years", None, None, [["ESG"]]),
        ("ESG信息披露 since 2020", 2020, None, None),
    ],
)
def test_english_time_phrases_become_years_and_leave_the_concepts(
    question: str, year_from: int | None, year_to: int | None, concepts: list[list[str]] | None
) -> None:
    plan = _plan(question)
    assert (plan.year_from, plan.year_to) == (year_from, year_to)
    flat = " ".join(t for g in plan.groups for t in g).lower()
    assert not any(w in flat.split() for w in ("since", "last", "past", "years", "year", "before", "after"))
    assert not any(ch.isdigit() for ch in flat.replace("4.0", ""))
    if concepts is not None:
        assert plan.groups == concepts


@pytest.mark.parametrize(
    "question",
    [
        "2008 financial crisis",
        "carbon peak before 2030",
        "carbon neutrality by 2060",
        "the last years of the Qing dynasty",
    ],
)
def test_an_english_year_that_names_the_topic_stays_in_it(question: str) -> None:
    plan = _plan(question)
    assert (plan.year_from, plan.year_to) == (None, None)


@pytest.mark.parametrize(
    ("question", "kept"),
    [
        ("palliative care in the last year of life", "last year"),
        ("students in their last year of high school", "last year"),
        ("ESG in the last five years of the plan", "last five years"),
        ("last year's policy", "last year policy"),
        ("Beijing Olympics 2008 and 2022", "2022"),
        ("comparing the 2008 and 2020 crises", "2008"),
        ("SQL Server 2008 to 2012 upgrade", "SQL Server 2008"),
        ("Five-Year Plan 2016–2020", "2020"),
        ("Windows 2000 through 2003 migration", "Windows 2000"),  # it was year_to 2003
    ],
)
def test_english_words_that_only_look_like_a_time_window_stay_in_the_topic(question: str, kept: str) -> None:
    plan = _plan(question)
    assert (plan.year_from, plan.year_to) == (None, None)
    assert kept in {t for g in plan.groups for t in g}


def test_english_time_phrases_use_the_year_passed_in() -> None:
    assert extract_years("ESG in the last three years", 2030).year_from == 2027
    assert extract_years("ESG since 2028", 2026).year_from is None


@pytest.mark.parametrize(
    ("question", "concepts"),
    [
        (
            "hepatitis A vaccination coverage in children",
            [["hepatitis A vaccination coverage"], ["children"]],
        ),
        ("vitamin A deficiency in pregnant women", [["vitamin A deficiency"], ["pregnant women"]]),
        ("type I diabetes and periodontitis", [["type I diabetes"], ["periodontitis"]]),
        ("Class A shares and stock returns", [["Class A shares"], ["stock returns"]]),
        ("A study of hepatitis A", [["hepatitis A"]]),
        ("What can I learn about ESG", [["learn"], ["ESG"]]),
    ],
)
def test_a_capital_letter_after_a_word_names_the_thing(question: str, concepts: list[list[str]]) -> None:
    assert _plan(question).groups == concepts


@pytest.mark.parametrize(
    ("question", "concepts"),
    [
        ("green finance I need recent papers", [["green finance"], ["need recent"]]),
        ("carbon tax A systematic review", [["carbon tax"], ["systematic"]]),
        ("Phase I trial of drug X", [["Phase I trial"], ["drug X"]]),
    ],
)
def test_a_capital_letter_starting_a_clause_is_the_pronoun_or_article(
    question: str, concepts: list[list[str]]
) -> None:
    assert _plan(question).groups == concepts


@pytest.mark.parametrize(
    ("question", "concepts"),
    [
        ("碳中和與綠色金融", [["碳中和"], ["绿色金融", "绿色", "金融"]]),
        ("人工智慧在教育的應用", [["人工智能", "人工智慧"], ["教育"]]),
        ("資料探勘", [["数据挖掘"]]),
        ("聯邦學習與隱私保護", [["联邦学习", "联邦", "学习"], ["隐私保护", "隐私", "保护"]]),
    ],
)
def test_a_question_in_traditional_characters_is_planned_in_simplified_mainland_terms(
    question: str, concepts: list[list[str]]
) -> None:
    plan = _plan(question)
    assert plan.groups == concepts
    assert any(TRADITIONAL_WARNING in w for w in plan.warnings)


@pytest.mark.parametrize(
    ("question", "mainland", "written"),
    [
        ("刑事程序中的證據規則", "刑事进程", "刑事程序"),  # a legal procedure, not a process
        ("社群媒體的輿論", "社区媒体", "社群媒体"),
        ("行政程序法的程式設計", "编程", "程式设计"),
    ],
)
def test_a_taiwan_term_rewritten_keeps_the_writers_words_as_an_alternative(
    question: str, mainland: str, written: str
) -> None:
    # OpenCC's Taiwan phrases rewrite 程序 as 进程 and 社群 as 社区: searched alone, a question on
    # criminal procedure asked CNKI for 刑事进程 and found papers on something else
    group = next(g for g in _plan(question).groups if mainland in g)
    assert group.index(mainland) < group.index(written)


def test_a_written_word_segmented_apart_from_its_mainland_term_is_no_alternative() -> None:
    # 智慧財產權 is 知识产权; the characters-only plan segments 智慧 / 财产权: 智慧 is another word
    plan = _plan("智慧財產權保護")
    assert plan.groups[0] == ["知识产权"]
    assert "智慧" not in {t for g in plan.groups for t in g}


@pytest.mark.parametrize(
    ("question", "concepts"),
    [
        ("物件導向", [["面向对象"]]),  # the writer's words segment apart: the mainland term stands alone
        ("線上遊戲成癮", [["在线"], ["游戏成瘾", "游戏", "成瘾"]]),  # no lone 线 beside 在线
        ("檔案數位化", [["文件", "档案"], ["数字化", "数位化"]]),  # 档案 shares no character with 文件
    ],
)
def test_the_writers_words_join_the_concept_their_mainland_term_is_in(
    question: str, concepts: list[list[str]]
) -> None:
    assert _plan(question).groups == concepts


@pytest.mark.parametrize(
    ("question", "term"),
    [("乾县农村电商发展", "乾县"), ("於梨华小说中的留学生形象", "於梨华"), ("麴氏高昌国研究", "麴氏高昌国")],
)
def test_simplified_characters_opencc_would_change_are_not_traditional(question: str, term: str) -> None:
    # 乾 於 麴 are in GB2312 and standard in mainland place and personal names; t2s changes them,
    # and a question holding one was planned 干县 / lost its surname 於 / 曲氏
    plan = _plan(question)
    assert term in {t for g in plan.groups for t in g}
    assert not any(TRADITIONAL_WARNING in w for w in plan.warnings)


def test_the_local_library_keeps_simplified_characters_opencc_would_change() -> None:
    assert parse_library_query("乾县 电商").required == '"乾县" AND "电商"'


@pytest.mark.parametrize("question", ["程序设计的教学方法", "人工智慧与教育"])
def test_a_simplified_question_is_not_converted(question: str) -> None:
    plan = _plan(question)
    assert not any(TRADITIONAL_WARNING in w for w in plan.warnings)
    assert plan.groups[0][0] in question


def test_a_traditional_time_phrase_still_gives_years() -> None:
    plan = _plan("近五年數位經濟與綠色金融")
    assert plan.year_from == 2021
    assert {"绿色金融"} <= {t for g in plan.groups for t in g}


def test_title_lookups_ask_a_traditional_title_in_simplified_characters_too() -> None:
    assert title_variants("違約金懲罰性功能的困境與出路") == [
        "違約金懲罰性功能的困境與出路",
        "违约金惩罚性功能的困境与出路",
    ]
    assert title_variants("违约金惩罚性功能的困境与出路") == ["违约金惩罚性功能的困境与出路"]


def test_names_differing_only_in_script_agree() -> None:
    assert names_agree("謝國思", "谢国思")
    assert not names_agree("謝國思", "谢国忠")


def test_the_local_library_reads_a_traditional_term_in_simplified_characters() -> None:
    assert parse_library_query("綠色金融").required == parse_library_query("绿色金融").required


@pytest.mark.parametrize(
    ("question", "concepts", "types", "tiers"),
    [
        ("theses on rural revitalization", [["rural revitalization"]], ["硕士", "博士"], []),
        ("core journals about common prosperity", [["common prosperity"]], ["期刊"], ["核心"]),
        ("CSSCI papers on digital economy", [["digital economy"]], [], ["CSSCI"]),
        ("doctoral dissertations about carbon neutrality", [["carbon neutrality"]], ["博士"], []),
        ("master's theses on ESG", [["ESG"]], ["硕士"], []),
        ("ESG journal articles in CSSCI journals", [["ESG"]], ["期刊"], ["CSSCI"]),
        ("conference papers on federated learning", [["federated learning"]], ["会议"], []),
        ("SCI papers on spinal cord injury", [["spinal cord injury"]], [], ["SCI"]),
    ],
)
def test_an_english_document_type_or_tier_wish_is_no_concept(
    question: str, concepts: list[list[str]], types: list[str], tiers: list[str]
) -> None:
    plan = _plan(question)
    assert plan.groups == concepts
    written = read_written(question)
    assert wish_filters(written.wishes) == (types, tiers)
    assert any("search_library" in w for w in plan.warnings)


@pytest.mark.parametrize(
    ("question", "concepts"),
    [
        ("evaluation of core journals", [["evaluation"], ["core journals"]]),
        ("impact factor of CSSCI journals", [["impact factor"], ["CSSCI journals"]]),
        ("quality of conference papers", [["quality"], ["conference papers"]]),
        ("a review of the doctoral dissertations", [["doctoral dissertations"]]),
    ],
)
def test_an_english_wish_after_of_or_about_is_the_topic(question: str, concepts: list[list[str]]) -> None:
    plan = _plan(question)
    assert plan.groups == concepts
    assert read_written(question).wishes == []
    assert not any("search_library" in w for w in plan.warnings)


@pytest.mark.parametrize(
    ("question", "concepts"),
    [("core competencies of nurses", [["core competencies"], ["nurses"]]), ("theses", [["theses"]])],
)
def test_english_words_that_are_the_topic_stay_concepts(question: str, concepts: list[list[str]]) -> None:
    assert _plan(question).groups == concepts


@pytest.mark.parametrize(
    "question", ["ESG disclosure and firm value", "federated learning privacy protection"]
)
def test_an_english_only_plan_says_to_add_chinese_terms(question: str) -> None:
    assert ENGLISH_ONLY_WARNING in _plan(question).warnings


@pytest.mark.parametrize("question", ["ESG披露与企业价值", "CRISPR 基因编辑 in rice", "碳中和與綠色金融"])
def test_a_plan_with_chinese_terms_does_not(question: str) -> None:
    assert ENGLISH_ONLY_WARNING not in _plan(question).warnings


def test_english_concept_groups_get_the_same_warning_and_mixed_ones_do_not() -> None:
    assert plan_explicit([["green finance"], ["ESG"]]).warnings == [ENGLISH_ONLY_WARNING]
    assert plan_explicit([["green finance", "绿色金融"], ["ESG"]]).warnings == []


def test_technical_names_chinese_records_write_in_latin_letters_get_no_english_warning() -> None:
    assert plan_explicit([["ChatGPT"], ["GPT-4"]]).warnings == []
    assert ENGLISH_ONLY_WARNING not in _plan("ChatGPT 5G").warnings
    assert plan_explicit([["ChatGPT"], ["education"]]).warnings == [ENGLISH_ONLY_WARNING]


def test_the_sampling_prompt_asks_for_chinese_terms_of_an_english_question() -> None:
    system, _, _ = sampling_request("ESG disclosure and firm value")
    assert "simplified Chinese term" in system


@pytest.mark.parametrize(
    ("question", "concepts"),
    [
        (
            "What are the determinants of ESG ratings in China's A-share market?",
            [["ESG ratings"], ["China A-share market"]],
        ),
        ("How do analysts’ forecasts affect firms’ R&D?", [["analysts forecasts"], ["firms R&D"]]),
        ("the impact of AI on employment: evidence from China", [["AI"], ["employment", "China"]]),
    ],
)
def test_an_english_possessive_is_no_term_of_its_own(question: str, concepts: list[list[str]]) -> None:
    assert _plan(question).groups == concepts


@pytest.mark.parametrize(
    ("question", "concepts"),
    [
        (
            "environmental, social and governance (ESG) disclosure and firm value",
            [["ESG disclosure", "environmental social and governance disclosure"], ["firm value"]],
        ),
        (
            "research and development (R&D) investment and firm growth",
            [["R&D investment", "research and development investment"], ["firm growth"]],
        ),
        (
            "small and medium-sized enterprises (SMEs) financing constraints",
            [["SMEs financing constraints", "small and medium-sized enterprises financing constraints"]],
        ),
        ("Ministry of Education (MOE) policy", [["MOE policy", "Ministry of Education policy"]]),
        ("deep learning (DL) and finance (XYZ)", [["DL", "deep learning"], ["finance", "XYZ"]]),
    ],
)
def test_an_english_expansion_before_its_acronym_is_one_concept(
    question: str, concepts: list[list[str]]
) -> None:
    assert _plan(question).groups == concepts


def test_a_chinese_term_before_its_acronym_is_unchanged() -> None:
    assert _plan("自然语言处理（NLP）在医疗中的应用").groups[0][:2] == ["自然语言处理", "NLP"]


def test_published_in_a_year_is_that_year_and_a_bare_year_stays_in_the_topic() -> None:
    published = _plan("ESG disclosure papers published in 2020")
    assert (published.year_from, published.year_to, published.groups) == (2020, 2020, [["ESG disclosure"]])
    assert (_plan("COVID-19 vaccine trials in 2021").year_from, _plan("2008 financial crisis").year_to) == (
        None,
        None,
    )


@pytest.mark.parametrize(
    ("question", "concepts", "field"),
    [
        ("Author: Zhang San deep learning", [["Zhang San deep learning"]], "Author:"),
        ("title: green finance", [["green finance"]], "title:"),
    ],
)
def test_an_english_field_label_is_removed_with_a_warning(
    question: str, concepts: list[list[str]], field: str
) -> None:
    assert _plan(question).groups == concepts
    assert read_written(question).fields == [field]


def test_a_sampled_plan_in_traditional_characters_or_english_only_is_treated_as_concept_groups_are() -> None:
    traditional = parse_sampling_reply('[["綠色金融", "绿色金融"], ["ESG信息披露"]]')
    assert traditional is not None and traditional.groups == [["绿色金融"], ["ESG信息披露"]]
    assert any(TRADITIONAL_GROUPS_WARNING in w for w in traditional.warnings)
    english = parse_sampling_reply('[["green finance"], ["ESG disclosure"]]')
    assert english is not None and english.warnings == [ENGLISH_ONLY_WARNING]
    chinese = parse_sampling_reply('[["绿色金融", "green finance"], ["ESG信息披露"]]')
    assert chinese is not None and chinese.warnings == []
