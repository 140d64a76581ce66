"""Prompts: research_topic and literature_review (argument: topic)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from cnki_mcp.server.errors import CnkiServer

Topic = Annotated[str, Field(min_length=1, max_length=500, description="研究主题")]


def research_topic_text(topic: str) -> str:
    return (
        f"请用知网研究这个主题：{topic}\n\n"
        "步骤：\n"
        "1. 把主题拆成 2–4 个必要概念，每个概念列出常见同义词，调用 search（传 concept_groups）；"
        "status 为 running 时（调用内未完成），用 operation_status(operation_id=返回的 operation_id, wait_seconds=50) "
        "等待完成。\n"
        '2. 用 search_results(search_id, view="compact") 阅读筛选结果，必要时切换 scope="eligible"。\n'
        "3. 对最相关的文献调用 get_metadata(quality=true) 取得摘要、关键词和期刊收录信息。\n"
        "4. 按证据分级（A 已读全文，B 摘要与题录，C 仅有题名）总结主要观点、分歧和近年变化，每条结论标注来源题名。\n"
        "遇到 awaiting_user 时请我在浏览器窗口完成验证或登录。"
    )


def literature_review_text(topic: str) -> str:
    return (
        f"请就以下主题写一篇文献综述：{topic}\n\n"
        '1. 用 search 检索（mode="balanced"，必要时设定 year_from）；status 为 running 时用 '
        "operation_status(operation_id=返回的 operation_id, wait_seconds=50) 等待任务完成。\n"
        "2. 用 search_results 分页读取全部筛选结果，并用 get_metadata 补充摘要、关键词和来源质量。\n"
        "3. 按研究主题归类，比较研究方法与结论，指出理论分歧、研究空白和发展趋势。\n"
        "4. 结构：引言、研究现状（分主题）、评述、展望、参考文献（GB/T 7714）。\n"
        '5. 参考文献用 export_citations(record_refs=[...], format="gbt7714") 生成，不要手写；'
        "写好的列表可再用 verify_references(text=...) 逐条核对。\n"
        "只引用检索到的文献，不要编造题名或作者。"
    )


def register(server: CnkiServer) -> None:
    @server.prompt(name="research_topic", title="研究主题", description="用知网研究一个主题的步骤提示")
    def research_topic(topic: Topic) -> str:
        return research_topic_text(topic)

    @server.prompt(name="literature_review", title="文献综述", description="基于知网检索写文献综述的步骤提示")
    def literature_review(topic: Topic) -> str:
        return literature_review_text(topic)
