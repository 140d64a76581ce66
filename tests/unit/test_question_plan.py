"""Planning a raw question without sampling: segmentation, stop words, Latin terms, time phrases,
weak-plan advice, and the lazy segmenter."""

from __future__ import annotations

import subprocess
import sys

import pytest

from cnki_mcp.errors import CnkiError
from cnki_mcp.query.plan import PlanMethod, advise, plan_question
from cnki_mcp.query.segment import concept_runs, default_segmenter, question_concepts
from cnki_mcp.query.timephrase import chinese_number, extract_years

CUT = default_segmenter()


def _plan(question: str, now_year: int = 2026):  # type: ignore[no-untyped-def]
    return plan_question(question, now_year=now_year, cut=CUT)


def test_issue_question_gets_two_concepts_without_boilerplate() -> None:
    plan = _plan("大语言模型幻觉问题有哪些缓解方法？")
    assert plan.method == PlanMethod.SEGMENTED
    assert len(plan.groups) == 2
    flat = {t for g in plan.groups for t in g}
    assert "幻觉" in flat and "模型" in flat
    assert not flat & {"问题", "有哪些", "哪些", "缓解", "方法", "大语言模型幻觉问题有哪些缓解方法"}


@pytest.mark.parametrize(
    ("question", "words"),
    [
        ("LLM如何缓解幻觉", ["LLM", "幻觉"]),
        ("RAG在医疗问答中的应用研究", ["RAG", "医疗", "问答"]),
        ("2型糖尿病患者运动干预效果如何？", ["2型糖尿病", "患者", "运动", "干预"]),
        ("Wi-Fi 8的关键技术有哪些", ["Wi-Fi 8"]),
        ("GPT-4在教育中的应用", ["GPT-4", "教育"]),
        ("C++ 内存模型", ["C++", "内存", "模型"]),
        ("IEEE 802.11be 吞吐", ["IEEE 802.11be", "吞吐"]),
        ("绿色金融助力碳中和", ["绿色", "金融", "碳中和"]),
        ("碳达峰路径是什么", ["碳达峰"]),
    ],
)
def test_question_concepts_keep_latin_and_mixed_terms_and_drop_boilerplate(
    question: str, words: list[str]
) -> None:
    assert question_concepts(question, CUT) == words


def test_impact_is_dropped_unless_it_is_the_topic() -> None:
    assert "影响" not in question_concepts("数字经济对企业创新的影响", CUT)
    assert question_concepts("影响", CUT) == ["影响"]
    assert question_concepts("研究方法", CUT) == ["研究", "方法"]


def test_single_characters_rebuild_unknown_words_and_bind_to_the_next_word() -> None:
    assert concept_runs("大语言模型幻觉", CUT) == [["大语言", "模型", "幻觉"]]
    assert "思政" in question_concepts("课程思政的教学设计", CUT)
    assert "非独立" in question_concepts("非独立同分布数据", CUT)


def test_runs_break_at_function_words() -> None:
    assert concept_runs("自动驾驶汽车产品责任的归责原则", CUT) == [
        ["自动", "驾驶", "汽车", "产品", "责任"],
        ["归责", "原则"],
    ]


def test_three_runs_become_topic_and_aspects() -> None:
    plan = _plan("2型糖尿病患者的血糖控制与自我管理")
    assert len(plan.groups) == 2
    assert plan.groups[0][0] == "2型糖尿病患者"
    assert {"血糖", "自我管理"} <= set(plan.groups[1])


def test_listed_terms_are_kept_as_written() -> None:
    assert _plan("自动驾驶、产品责任").groups == [["自动驾驶"], ["产品责任"]]
    assert _plan("Wi-Fi 8 and 漫游").groups == [["Wi-Fi 8", "WiFi8", "Wi-Fi8"], ["漫游"]]


def test_plan_keeps_the_compiler_expansion_bounded() -> None:
    plan = _plan("绿色金融改革创新试验区政策对企业绿色技术创新投入的影响机制")
    product = 1
    for g in plan.groups:
        assert 1 <= len(g) <= 6
        product *= len(g)
    assert product <= 32


def test_one_concept_plan_is_weak_and_says_so() -> None:
    plan = _plan("区块链")
    assert plan.groups == [["区块链"]]
    assert plan.weak
    assert len(plan.warnings) == 2


def test_question_without_concepts_is_invalid_plan() -> None:
    with pytest.raises(CnkiError) as info:
        _plan("请帮我检索一下有哪些？")
    assert info.value.code == "INVALID_PLAN"


@pytest.mark.parametrize(
    ("question", "year_from", "year_to"),
    [
        ("2020年以来大模型幻觉", 2020, None),
        ("近五年RAG研究", 2021, None),
        ("近5年RAG研究", 2021, None),
        ("2019—2023年碳排放", 2019, 2023),
        ("2019-2023碳排放", 2019, 2023),
        ("从2010年至2020年的碳排放", 2010, 2020),
        ("2015年以前的碳排放", None, 2014),
        ("今年的碳排放", 2026, 2026),
        ("2030年前碳达峰路径", None, None),  # a target year, not a publication filter
        ("2008年金融危机", None, None),
        ("近年来碳排放", None, None),
        ("深度学习 2015年到现在", 2015, None),
        ("2018年迄今的区块链", 2018, None),
        ("从2010年到目前为止的碳排放", 2010, None),
        ("1990年代以来的城市化", 1990, None),
    ],
)
def test_time_phrases_become_years_and_leave_the_concepts(
    question: str, year_from: int | None, year_to: int | None
) -> None:
    plan = _plan(question)
    assert (plan.year_from, plan.year_to) == (year_from, year_to)
    flat = "".join(t for g in plan.groups for t in g)
    assert "以来" not in flat and "近五年" not in flat and "近年" not in flat
    assert not any(ch.isdigit() for ch in flat) or (year_from is None and year_to is None)


@pytest.mark.parametrize(
    ("question", "year_from", "year_to"),
    [
        ("近几年乡村振兴", None, None),  # vague, as 近年来: no range and no concept 近几年
        ("这几年的乡村振兴", None, None),
        ("最近几年的乡村振兴", None, None),
        ("近几十年来的乡村振兴", None, None),
        ("近半年乡村振兴", 2025, None),  # the window always holds the last six months
        ("近3-5年乡村振兴", 2021, None),  # a span of years: its larger end
        ("近三到五年乡村振兴", 2021, None),
        ("2015年起至今的乡村振兴", 2015, None),  # 至今 is part of the phrase, not a concept
        ("2015年以后至今的乡村振兴", 2015, None),
        ("从2015年开始的乡村振兴", 2015, None),
        ("从2015年开始至今的乡村振兴", 2015, None),
        ("2020年及以后的乡村振兴", 2020, None),
        ("2020年及以前的乡村振兴", None, 2020),  # 及: the year itself is in
        ("2019年底以来的乡村振兴", 2019, None),
        ("2020年上半年以来的乡村振兴", 2020, None),
        ("2018年以来至2022年的乡村振兴", 2018, 2022),
    ],
)
def test_more_chinese_time_phrases_are_windows_or_boilerplate_never_concepts(
    question: str, year_from: int | None, year_to: int | None
) -> None:
    plan = _plan(question)
    assert (plan.year_from, plan.year_to) == (year_from, year_to)
    flat = "".join(t for g in plan.groups for t in g)
    for word in ("几", "半年", "至今", "开始", "以来", "以后", "以前", "底", "近", "年"):
        assert word not in flat, (word, plan.groups)
    assert not any(ch.isdigit() for ch in flat)


@pytest.mark.parametrize(
    ("question", "concept"),
    [
        ("农村这些年轻人的返乡创业", "年轻人"),  # 年轻 is a word: 这些年 is no time phrase there
        ("这些年轻教师的职业倦怠", "年轻教师"),
        ("这几年级学生的阅读能力", "年级"),
        ("附近年轻人的就业", "年轻人"),
    ],
)
def test_a_vague_year_word_is_one_only_where_nian_ends_it(question: str, concept: str) -> None:
    plan = _plan(question)
    flat = "".join(t for g in plan.groups for t in g)
    assert concept in flat, plan.groups


@pytest.mark.parametrize(
    ("question", "first"),
    [
        ("这些年来农村土地流转的变化", "农村"),
        ("这几年来数字乡村建设的成效", "数字"),
        ("最近几年来乡村振兴的成效", "乡村"),
        ("近些年来乡村振兴的成效", "乡村"),
    ],
)
def test_lai_after_a_vague_year_word_is_part_of_it(question: str, first: str) -> None:
    """这些年来 / 这几年来 / 最近几年来: the 来 left 来农村土地, 来数字乡村 as concepts."""
    plan = _plan(question)
    assert (plan.year_from, plan.year_to) == (None, None)
    assert not any("来" in t for g in plan.groups for t in g), plan.groups
    assert plan.groups[0][0].startswith(first), plan.groups


@pytest.mark.parametrize("question", ["2015年前后的股市异常波动", "2015年左右的股市异常波动"])
def test_a_year_with_qianhou_is_around_that_year_not_a_window_before_it(question: str) -> None:
    """2015年前后 is 'around 2015' (the 2015 crash): the year stays in the topic as a bare 2015年
    does; it was read as 2015年前 (year_to 2014), which dropped every paper on that year."""
    plan = _plan(question)
    assert (plan.year_from, plan.year_to) == (None, None)
    assert plan.groups[0][0] == "2015年"
    assert not any("前" in t or "后" in t or "左右" in t for g in plan.groups for t in g)


def test_time_phrases_use_the_year_passed_in() -> None:
    assert extract_years("近三年", 2030).year_from == 2027
    assert extract_years("2028年以来", 2026).year_from is None


@pytest.mark.parametrize(
    ("text", "n"), [("五", 5), ("十", 10), ("十五", 15), ("二十", 20), ("两", 2), ("12", 12)]
)
def test_chinese_and_arabic_numerals_are_read_as_numbers(text: str, n: int) -> None:
    assert chinese_number(text) == n


def test_advice_for_one_concept_splits_it_into_words() -> None:
    got = advise("自动驾驶产品责任", [["自动驾驶产品责任"]], 3, CUT)
    assert got is not None and got.reason == "one_concept"
    assert len(got.groups) >= 2


def test_advice_for_no_candidates_keeps_the_first_two_groups() -> None:
    got = advise("q", [["a"], ["b"], ["c"]], 0, CUT)
    assert got is not None and got.reason == "no_candidates"
    assert got.groups == [["a"], ["b"]]
    assert advise("q", [["a"], ["b"]], 5, CUT) is None


def test_advice_for_no_candidates_never_repeats_the_plan_that_found_nothing() -> None:
    got = advise("Z世代 消费行为", [["Z世代"], ["消费行为", "消费"]], 0, CUT)
    assert got is not None and got.reason == "no_candidates"
    assert got.groups == [["Z世代"]]


@pytest.mark.parametrize(
    ("groups", "candidates", "reason", "suggested"),
    [
        ([["近五年区块链"]], 3, "one_concept", [["区块链"]]),
        ([["2020年以来的数字经济"]], 3, "one_concept", [["数字"], ["经济"]]),
        ([["近五年"], ["区块链"]], 0, "no_candidates", [["区块链"]]),
        ([["2020年以来"], ["数字经济"], ["就业"]], 0, "no_candidates", [["数字经济"], ["就业"]]),
        ([["近五年"], ["2020年以来"]], 0, "no_candidates", [["区块链"]]),
    ],
)
def test_advice_never_suggests_a_time_phrase_as_a_concept(
    groups: list[list[str]], candidates: int, reason: str, suggested: list[list[str]]
) -> None:
    """The caller's concept_groups [["近五年区块链"]] were advised [["近五年"], ["区块链"]] and
    [["近五年"], ["区块链"]] (0 found: 近五年 had to be in every text) [["近五年"]], while the same
    answer's warning said to take the time phrase out of concept_groups."""
    got = advise("区块链", groups, candidates, CUT, now_year=2026)
    assert got is not None and (got.reason, got.groups) == (reason, suggested)


def _fresh_python(*lines: str) -> str:
    """What `lines` print when run by a new interpreter (nothing this process imported)."""
    done = subprocess.run([sys.executable, "-c", "\n".join(lines)], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_segmenter_dictionary_is_not_loaded_at_import() -> None:
    imported = _fresh_python(
        "import sys, cnki_mcp.query.plan, cnki_mcp.pipeline.research", "print('jieba' in sys.modules)"
    )
    assert imported == "False"


@pytest.mark.parametrize(
    ("question", "first", "absent"),
    [
        ("近3年的大模型安全研究", ["大模型"], {"的大", "研究"}),
        ("如何利用区块链技术提升供应链金融风险管理", ["区块链"], {"链技术", "提升", "利用"}),
        ("请帮我找一下关于老年人数字鸿沟的文献", ["老年人"], {"找", "文献"}),
        ("《民法典》第585条违约金调整规则", ["民法典"], {"第", "585条违约金"}),
        (
            "双减政策实施后家庭教育支出的变化",
            ["双减政策实施", "双减", "政策", "实施"],
            {"后家庭教育", "变化"},
        ),
    ],
)
def test_particles_suffixes_and_request_verbs_do_not_make_odd_words(
    question: str, first: list[str], absent: set[str]
) -> None:
    plan = _plan(question)
    assert plan.groups[0] == first
    assert not absent & {t for g in plan.groups for t in g}


def test_more_than_eight_listed_terms_fold_the_rest_into_the_last_group() -> None:
    terms = [
        "深度强化学习",
        "多智能体",
        "协同控制",
        "无人机集群",
        "路径规划",
        "通信约束",
        "能耗优化",
        "仿真平台",
        "实验验证",
    ]
    plan = _plan("、".join(terms))
    assert plan.groups == [[t] for t in terms[:7]] + [["仿真平台", "实验验证"]]


def test_the_background_warm_up_loads_the_dictionary_off_the_calling_thread() -> None:
    ran = _fresh_python(
        "import threading",
        "from cnki_mcp.query.segment import default_segmenter, warm_in_background",
        "segmenter, threads = default_segmenter(), []",
        "warm = segmenter.warm",
        "segmenter.warm = lambda: (threads.append(threading.current_thread().name), warm())",
        "timer = warm_in_background(0)",
        "timer.join(60)",
        "print(timer.daemon, threads == [timer.name], threading.current_thread().name not in threads, segmenter.loaded)",
    )
    assert ran == "True True True True"


def test_a_failed_warm_up_is_left_to_the_cut_and_only_a_dictionary_segmenter_is_pending(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from cnki_mcp.query.segment import JiebaSegmenter, dictionary_pending, warm_quietly

    class Broken(JiebaSegmenter):
        def warm(self) -> None:
            raise OSError("dictionary unreadable")

    broken = Broken()
    assert dictionary_pending(broken)  # jieba's segmenter before its first load
    with caplog.at_level("DEBUG", logger="cnki_mcp.query.segment"):
        assert warm_quietly(broken) is False
    assert [r.exc_info[0] for r in caplog.records if r.exc_info] == [OSError]  # logged, not raised
    assert dictionary_pending(broken)
    assert not dictionary_pending(str.split)  # a plain cut function loads nothing


@pytest.mark.parametrize(
    ("question", "term"),
    [
        ("A股市场波动", "A股市场"),
        ("Z世代 消费行为", "Z世代"),
        ("X射线 衍射", "X射线"),
        ("T细胞 免疫", "T细胞"),
        ("B超 诊断", "B超"),
        ("γ射线探测 闪烁体", "γ射线探测"),
        ("α-淀粉酶 活性", "α-淀粉酶"),
        ("维生素D 缺乏", "维生素D"),
        ("维生素B12 贫血", "维生素B12"),
    ],
)
def test_a_letter_written_against_a_chinese_word_belongs_to_it(question: str, term: str) -> None:
    plan = _plan(question)
    assert plan.groups[0][0] == term
    flat = {t for g in plan.groups for t in g}
    assert not flat & {"A", "Z", "X", "T", "B", "D", "B12", "γ", "α", "股市场", "射线", "细胞", "世代", "淀粉酶"}


@pytest.mark.parametrize(
    ("question", "first", "other"),
    [
        ("维生素D的作用机制", "维生素D", None),
        ("维生素C与免疫", "维生素C", "免疫"),
        ("补充维生素D对老年人骨密度的影响", "补充维生素D", "老年人骨密度"),
    ],
)
def test_a_letter_before_a_function_word_stays_with_the_word_before_it(
    question: str, first: str, other: str | None
) -> None:
    """A letter written between a Chinese word and 的/与/对/和 is the word's suffix: glued to the
    function word it made terms such as `D的`, `C与免疫`, `补充维生素D对`."""
    plan = _plan(question)
    assert plan.groups[0][0] == first
    flat = [t for g in plan.groups for t in g]
    assert other is None or other in flat
    assert not [t for t in flat if t[:1] in "的与对" or t[-1:] in "的与对" or "与" in t]


def test_a_compound_keeps_a_word_an_earlier_concept_had() -> None:
    plan = _plan("深度学习与机器学习的区别")
    assert plan.groups[0][0] == "深度学习"
    assert plan.groups[1][0] == "机器学习"
    assert "学习" not in plan.groups[1]  # the repeated word is not offered again on its own
    assert _plan("量子计算与量子通信").groups == [["量子计算", "量子", "计算"], ["量子通信", "通信"]]
    assert question_concepts("深度学习与机器学习", CUT) == ["深度", "学习", "机器"]


def test_single_characters_are_not_glued_across_de() -> None:
    # traditional characters: the segmenter knows none of these words and cuts one by one
    for question in ("大語言模型幻覺問題的緩解方法", "大語言模型在線教育中的應用"):
        terms = [t for g in _plan(question).groups for t in g]
        assert terms and not any("的" in t for t in terms), terms
        assert not any(t.endswith("中") for t in terms), terms


@pytest.mark.parametrize(
    ("question", "groups", "excluded"),
    [
        ("违约金 OR 违约赔偿金 酌减", [["违约金", "违约赔偿金"], ["酌减"]], None),
        ("数字经济 + 数字化 * 就业", [["数字经济", "数字化"], ["就业"]], None),
        ("机器学习 AND 金融风险 NOT 股票", [["机器学习"], ["金融风险"]], "股票"),
        ("违约金 酌减 -约定", [["违约金"], ["酌减"]], "约定"),
        ("违约金 OR 违约赔偿金 NOT 定金", [["违约金", "违约赔偿金"]], "定金"),
    ],
)
def test_operators_in_the_question_are_read_not_searched(
    question: str, groups: list[list[str]], excluded: str | None
) -> None:
    plan = _plan(question)
    assert plan.groups == groups
    flat = {t for g in plan.groups for t in g}
    assert not flat & {"OR", "AND", "NOT", "+", "*", "-"}
    if excluded:
        assert excluded not in "".join(flat)
        assert any(excluded in w and "structured_search" in w for w in plan.warnings)


@pytest.mark.parametrize(
    ("question", "groups"),
    [
        ("人工智能 + 教育", [["人工智能"], ["教育"]]),
        ("数字乡村建设 - 以浙江为例", [["数字乡村建设"], ["浙江"]]),
        ("量子计算 - 密码学的挑战", [["量子计算"], ["密码学"]]),
    ],
)
def test_a_spaced_plus_or_dash_in_prose_joins_concepts_not_alternatives_or_exclusions(
    question: str, groups: list[list[str]]
) -> None:
    """CNKI's `+` (OR) and `-` (NOT) are read as such only beside its `*`: in Chinese prose `X + Y`
    means X combined with Y (互联网+), and a spaced dash comes before a subtitle; read as CNKI
    syntax, 人工智能 + 教育 searched either topic and the subtitle was excluded."""
    from cnki_mcp.query.written import read_written

    assert _plan(question).groups == groups
    assert read_written(question).excluded == []


@pytest.mark.parametrize(
    ("question", "groups"),
    [
        ("SU=人工智能 AND KY=教育", [["人工智能"], ["教育"]]),
        ("TI='区块链' * KY='金融'", [["区块链"], ["金融"]]),
        ("作者：王小明，关键词：数字经济", [["王小明"], ["数字经济"]]),
    ],
)
def test_field_prefixes_are_not_terms_and_the_plan_says_so(question: str, groups: list[list[str]]) -> None:
    plan = _plan(question)
    assert plan.groups == groups
    assert any("structured_search" in w for w in plan.warnings)


@pytest.mark.parametrize(
    ("question", "group"),
    [
        ("自然语言处理（NLP）、知识图谱", ["自然语言处理", "NLP"]),
        ("人工智能（AI）在医学影像诊断中的应用", ["人工智能", "AI"]),
        ("深度学习；卷积神经网络(CNN)", ["卷积神经网络", "CNN"]),
    ],
)
def test_a_bracketed_acronym_is_the_term_s_alternative_not_part_of_it(question: str, group: list[str]) -> None:
    plan = _plan(question)
    assert group in plan.groups
    assert not any(ch in t for g in plan.groups for t in g for ch in "()（）")


def test_listed_parts_with_punctuation_are_not_kept_as_written() -> None:
    plan = _plan("深度学习，抑郁症 (识别)")
    assert not any(ch in t for g in plan.groups for t in g for ch in "()（）")


@pytest.mark.parametrize(
    ("question", "groups"),
    [
        ("How does social media use affect adolescent depression?", [["social media use"], ["adolescent depression"]]),
        ("How does deep learning help depression detection?", [["deep learning"], ["depression detection"]]),
        ("What is the impact of ESG disclosure on firm value?", [["ESG disclosure"], ["firm value"]]),
        ("Please find papers about federated learning and differential privacy", [["federated learning"], ["differential privacy"]]),
    ],
)
def test_an_english_question_is_cut_into_concepts_not_searched_as_one_phrase(
    question: str, groups: list[list[str]]
) -> None:
    assert _plan(question).groups == groups


def test_an_english_study_word_inside_a_term_stays() -> None:
    assert _plan("journal impact factor").groups == [["journal impact factor"]]
    assert _plan("impact").groups == [["impact"]]


def test_a_question_of_several_sentences_is_topic_and_aspects_not_one_concept_per_phrase() -> None:
    plan = _plan("我想研究数字经济对制造业企业绿色技术创新的影响，特别是在长三角地区的差异")
    assert plan.groups[0][0] == "数字经济"
    assert len(plan.groups) == 2  # every phrase ANDed found nothing: 6 concepts, 我想 and 特别 among them
    assert not {"我想", "特别", "我", "想"} & {t for g in plan.groups for t in g}


@pytest.mark.parametrize(
    ("question", "groups"),
    [
        ("COVID-19 疫苗 犹豫", [["COVID-19"], ["疫苗"], ["犹豫"]]),
        ("李白 诗歌 意象", [["李白"], ["诗歌"], ["意象"]]),
        ("近五年 新冠肺炎 疫苗 影响因素", [["新冠肺炎"], ["疫苗"]]),
        ("deep learning 抑郁症", [["deep learning"], ["抑郁症"]]),
        ("Wi-Fi 8 漫游", [["Wi-Fi 8", "WiFi8", "Wi-Fi8"], ["漫游"]]),
    ],
)
def test_keywords_separated_by_spaces_are_all_required(question: str, groups: list[list[str]]) -> None:
    # before: the first keyword ANDed with any one of the others (诗歌 OR 意象), as for a sentence
    assert _plan(question).groups == groups


@pytest.mark.parametrize("question", ["发表在《管理世界》上的关于数字经济的文章", "《管理世界》期刊上的数字经济研究"])
def test_a_journal_named_as_the_place_of_publication_is_not_a_concept(question: str) -> None:
    # before: 发表 AND (管理世界 | … | 数字经济 | …): the subject search never reads the source
    plan = _plan(question)
    flat = {t for g in plan.groups for t in g}
    assert not flat & {"发表", "管理世界", "管理", "世界", "文章"}
    assert "数字" in "".join(flat)
    assert any("《管理世界》" in w and "structured_search" in w for w in plan.warnings)
    assert _plan("《红楼梦》中的女性形象").groups[0] == ["红楼梦"]  # a title that is the topic stays


@pytest.mark.parametrize(
    ("question", "groups"),
    [
        ("碳中和与绿色金融", [["碳中和"], ["绿色金融", "绿色", "金融"]]),
        ("碳中和及碳达峰路径", [["碳中和"], ["碳达峰"]]),
        ("碳达峰或碳中和", [["碳达峰", "碳中和"]]),  # 或: alternatives (test_or_between_two_concepts_…)
        ("碳中和和碳达峰", [["碳中和"], ["碳达峰"]]),
        ("A股和港股的联动效应", [["A股"], ["港股", "联动"]]),
        # 和 that ends the unknown word stays in it
        ("碳中和目标下的企业", [["碳中和"], ["企业"]]),
        ("新能源汽车与碳中和", [["新能源汽车", "新能源", "汽车"], ["碳中和"]]),
    ],
)
def test_a_conjunction_after_an_unknown_word_is_not_part_of_it(question: str, groups: list[list[str]]) -> None:
    assert _plan(question).groups == groups


@pytest.mark.parametrize(
    ("question", "groups"),
    [
        ("碳达峰或者碳中和", [["碳达峰", "碳中和"]]),
        ("碳达峰 或 碳中和", [["碳达峰", "碳中和"]]),
        ("人工智能或机器学习在医疗中的应用", [["人工智能", "机器学习", "机器", "学习"], ["医疗"]]),
        ("高血压或糖尿病患者的运动干预", [["高血压", "糖尿病患者", "糖尿病", "患者"], ["运动干预", "运动", "干预"]]),
        ("LLM或RAG的幻觉", [["LLM", "RAG"], ["幻觉"]]),
        ("不可或缺的要素研究", [["不可或缺"], ["要素"]]),  # 或 inside a word joins nothing
        ("或许人工智能会取代教师", [["或许人工智能", "或许", "人工智能"], ["会取代教师", "会取代", "教师"]]),
    ],
)
def test_or_between_two_concepts_makes_them_one_concept_s_alternatives(question: str, groups: list[list[str]]) -> None:
    # before: 或 was a boundary like 与, so A或B required both A and B (人工智能 AND 机器学习 AND …)
    assert _plan(question).groups == groups


@pytest.mark.parametrize(
    ("question", "types", "tiers"),
    [
        ("违约金酌减 博士论文", ["博士"], []),
        ("个人信息保护 知情同意 硕士论文", ["硕士"], []),
        ("违约金酌减 期刊论文 CSSCI", ["期刊"], ["CSSCI"]),
        ("关于违约金酌减的CSSCI期刊论文有哪些？", ["期刊"], ["CSSCI"]),
        ("数字经济对企业创新影响的北大核心论文", [], ["北大核心"]),
        # the kinds' own names (CNKI's 博士/硕士学位论文); before: a concept no paper's text names, 0 candidates
        ("违约金酌减 博士学位论文", ["博士"], []),
        ("违约金酌减的硕士学位论文", ["硕士"], []),
        ("个人信息保护 知情同意 硕博士学位论文", ["硕士", "博士"], []),
    ],
)
def test_a_document_type_or_tier_asked_for_is_not_a_concept(question: str, types: list[str], tiers: list[str]) -> None:
    # before: 博士论文 / 期刊论文 / CSSCI were required concepts, which no paper's text names: 0 candidates
    plan = _plan(question)
    flat = "".join(t for g in plan.groups for t in g)
    assert "论文" not in flat and "CSSCI" not in flat and "核心" not in flat
    [said] = [w for w in plan.warnings if "search_library" in w]
    assert f"document_types={types}" in said if types else "document_types" not in said
    assert f"source_tiers={tiers}" in said if tiers else "source_tiers" not in said


@pytest.mark.parametrize(
    ("question", "types", "tiers"),
    [
        ("违约金酌减 C刊论文", [], ["CSSCI来源期刊"]),
        ("违约金酌减的南大核心期刊论文", ["期刊"], ["CSSCI"]),
        ("违约金酌减 期刊论文 C刊", ["期刊"], ["CSSCI来源期刊"]),
        ("数字经济、企业创新、南大核心期刊", ["期刊"], ["CSSCI"]),
    ],
)
def test_a_tier_asked_for_by_the_name_people_call_it_is_not_a_concept(
    question: str, types: list[str], tiers: list[str]
) -> None:
    # before: C刊论文 stayed a required concept and 南大核心期刊论文 a group of 南大 / 核心 / 期刊论文,
    # words no paper's text holds: the search found next to nothing, with no word on why
    plan = _plan(question)
    flat = "".join(t for g in plan.groups for t in g)
    assert "C刊" not in flat and "南大" not in flat and "核心" not in flat and "论文" not in flat
    [said] = [w for w in plan.warnings if "search_library" in w]
    assert f"source_tiers={tiers}" in said
    assert f"document_types={types}" in said if types else "document_types" not in said


@pytest.mark.parametrize(
    ("question", "first"),
    [
        ("学位论文抄袭检测", "学位"),
        ("核心期刊评价体系研究", "核心期刊"),
        ("硕士论文写作指导", "硕士论文"),
        ("博士学位论文质量评价", "博士学位"),
    ],
)
def test_a_document_type_that_is_the_topic_stays_a_concept(question: str, first: str) -> None:
    plan = _plan(question)  # the word begins the question: its topic, not a wish
    assert plan.groups[0][0] == first
    assert not [w for w in plan.warnings if "search_library" in w]


@pytest.mark.parametrize(
    ("question", "concept"),
    [
        ("甲基强的松龙治疗急性SCI", "SCI"),  # SCI: 脊髓损伤 (spinal cord injury)
        ("SCI 康复护理", "SCI"),  # a bare tier with no document type asked for
        ("违约金酌减 CSSCI", "CSSCI"),
        ("我国高校SCI论文", "SCI"),  # written against the word before it, without 的: the topic
        ("人文社科核心期刊", "核心期刊"),
        ("研究生学位论文", "学位"),
    ],
)
def test_a_type_or_tier_word_that_is_part_of_the_topic_stays_a_concept(question: str, concept: str) -> None:
    # before: every one of these lost the word (急性SCI planned without the disease, 人文社科核心期刊
    # as 人文 AND 社科), and the warning said it was a filter wish
    plan = _plan(question)
    assert concept in {t for g in plan.groups for t in g}
    assert not [w for w in plan.warnings if "search_library" in w]


@pytest.mark.parametrize(
    ("question", "types", "tiers"),
    [
        ("违约金酌减，博士论文", ["博士"], []),
        ("数字经济、企业创新、CSSCI期刊", ["期刊"], ["CSSCI"]),
        ("数字经济对企业创新影响的CSSCI、北大核心期刊论文", ["期刊"], ["CSSCI", "北大核心"]),
    ],
)
def test_a_wish_after_a_comma_or_list_mark_is_read_as_one(question: str, types: list[str], tiers: list[str]) -> None:
    plan = _plan(question)
    flat = "".join(t for g in plan.groups for t in g)
    assert "论文" not in flat and "期刊" not in flat and "CSSCI" not in flat and "核心" not in flat
    [said] = [w for w in plan.warnings if "search_library" in w]
    assert f"document_types={types}" in said
    assert f"source_tiers={tiers}" in said if tiers else "source_tiers" not in said


@pytest.mark.parametrize("invisible", ["\u200b", "\u00ad", "\ufeff"])
def test_an_invisible_character_copied_with_a_question_is_no_word_boundary(invisible: str) -> None:
    clean = _plan("约定违约金酌减的司法标准")
    pasted = _plan(f"{invisible}约定违约金{invisible}酌减的司法标准")
    assert pasted.groups == clean.groups and pasted.warnings == clean.warnings


@pytest.mark.parametrize(
    ("question", "term"),
    [("R&D投入对企业创新绩效的影响", "R&D"), ("M&A绩效研究", "M&A"), ("R&amp;D投入对企业创新绩效的影响", "R&D")],
)
def test_an_ampersand_inside_a_latin_word_keeps_the_word_whole(question: str, term: str) -> None:
    # R&D, M&A (企业并购) are words; an HTML entity is the client's escaping, not the words R / amp
    groups = _plan(question).groups
    assert [term] in groups
    assert not any(t in ("R", "D投入", "amp", "M", "A绩效") for g in groups for t in g)
