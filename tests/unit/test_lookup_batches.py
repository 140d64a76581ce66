"""`pipeline.links.plan_batches`: exact-title lookups packed into grid requests of at most
MAX_TITLES distinct phrases, whatever one title's spellings (site-rules.md §3.10)."""

from __future__ import annotations

from cnki_mcp.cite.refparse import chinese_marks
from cnki_mcp.links import title_variants
from cnki_mcp.pipeline.links import plan_batches
from cnki_mcp.pipeline.verify import spellings
from cnki_mcp.query.compiler import MAX_TITLES, compile_expression, lookup_phrase, title_lookup_expression

# 〈〉, straight quotes, a lone dash and CO₂: as written and folded, 12 spellings
MANY = '论〈民法典〉中"CO₂"排放权的法律属性：以碳交易为例—兼论碳市场'


def phrases_of(spellings: list[str]) -> set[str]:
    return {lookup_phrase(s.strip()) for s in spellings}


def sendable(batches: list[list[tuple[str, list[str]]]]) -> None:
    """Every batch holds a title and compiles to one request of at most MAX_TITLES phrases."""
    for batch in batches:
        assert batch
        sent = [s for _, group in batch for s in group]
        assert len(phrases_of(sent)) <= MAX_TITLES
        compile_expression(title_lookup_expression(sent))


def test_a_title_with_more_spellings_than_a_request_holds_gets_one_full_request_of_its_own() -> None:
    assert len(spellings(MANY)) > MAX_TITLES
    titles = {"a": "违约金酌减规则研究", "many": MANY, "b": "数字经济与企业创新"}
    batches, unsearchable = plan_batches(titles, spellings)
    sendable(batches)
    assert not unsearchable
    assert [key for batch in batches for key, _ in batch] == ["a", "many", "b"]
    [group] = [group for batch in batches for key, group in batch if key == "many"]
    assert group[0] == MANY  # as written first
    assert chinese_marks(MANY).translate(str.maketrans("〈〉", "《》")).replace("CO₂", "CO2") in group  # CNKI's spelling


def test_the_first_title_over_a_request_never_leaves_an_empty_batch() -> None:
    batches, _ = plan_batches({"many": MANY}, spellings)
    assert len(batches) == 1
    sendable(batches)


def test_a_batch_counts_the_distinct_phrases_it_sends_not_the_spellings() -> None:
    # over CNKI's 120-character box a title is asked by its head: 〈〉 after it is one leaf, not two
    head = "基于多源异构数据融合的城市轨道交通客流短时预测研究" * 5
    titles = {str(i): f"第{i}篇{head}之〈民法典〉视角" for i in range(MAX_TITLES)}
    assert all(len(title_variants(t)) == 2 for t in titles.values())
    assert len(phrases_of(list(titles.values()))) == MAX_TITLES
    batches, _ = plan_batches(titles)
    assert len(batches) == 1
    sendable(batches)



def test_a_year_range_in_a_title_costs_no_second_spelling() -> None:
    for title in ("中国对外开放40年(1978—2018)：回顾与展望", "长江经济带2000—2020年生态效率的时空演变"):
        assert title_variants(title) == [title]
    assert title_variants("研究—以1978—2018年为例") == ["研究—以1978—2018年为例", "研究——以1978—2018年为例"]
    titles = {str(i): f"中国对外开放{i}0年(1978—2018)：回顾与展望" for i in range(MAX_TITLES)}
    batches, _ = plan_batches(titles)
    assert len(batches) == 1
