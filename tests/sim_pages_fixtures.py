"""Small records, a tiny corpus and deterministic fake Links for the simulator page tests."""

from __future__ import annotations

from typing import Literal
from urllib.parse import quote

from cnki_mcp.sim.corpus import Corpus, SimAuthor, SimJournal, SimRecord, SimSection

BASE = "http://sim.test"


class FakeLinks:
    def detail(self, record_id: str) -> str:
        return f"{BASE}/kcms2/article/abstract?v=tok-{record_id}"

    def journal(self, journal_name: str) -> str:
        return f"{BASE}/knavi/detail?p={quote(journal_name)}"

    def author(self, name: str, institution: str | None = None) -> str:
        return f"{BASE}/kcms2/author/detail?v={quote(name)}&u={quote(institution or '')}"

    def reader(self, record_id: str) -> str:
        return f"{BASE}/reader/{record_id}"

    def reader_entry(self, record_id: str) -> str:
        return f"{BASE}/bar/htmlread.html?lang=CHS&cacheID={record_id}"

    def download(self, record_id: str, fmt: Literal["pdf", "caj"]) -> str:
        return f"{BASE}/bar/download/order?id={record_id}&fmt={fmt}"

    def login(self, return_url: str) -> str:
        return f"{BASE}/login?ReturnURL={quote(return_url, safe='')}"

    def verify(self, return_url: str) -> str:
        return f"{BASE}/verify/home?returnUrl={quote(return_url, safe='')}"

    def kns(self, path: str) -> str:
        return f"{BASE}{path}"

    def www(self, path: str) -> str:
        return f"{BASE}/www{path}"


def sections(n: int) -> tuple[SimSection, ...]:
    out = []
    for i in range(1, n + 1):
        out.append(SimSection(f"{i}　第{i}章 研究内容", 1, f"第{i}章正文，关于违约金调整规则的讨论。" * 12))
        out.append(SimSection(f"{i}.1 小节{i}", 2, f"小节{i}的详细论述。" * 8))
    return tuple(out)


JOURNAL_REC = SimRecord(
    id="j1",
    title="违约金调整规则研究<b>&amp;",
    type="期刊",
    authors=(
        SimAuthor("张三", "北京大学法学院"),
        SimAuthor("李四", "清华大学法学院"),
        SimAuthor("王五", "北京大学法学院"),
    ),
    source="法学研究",
    year=2024,
    volume="46",
    issue="03",
    pages="103-120",
    abstract="本文讨论违约金的调整规则 & 其<边界>。",
    keywords=("违约金", "损害赔偿", "合同法"),
    funds=("国家社会科学基金项目(21BFX001)",),
    doi="10.1234/fx.2024.03.007",
    classification="D923.6",
    cited=12,
    downloads=345,
    references=("t1", "c1", "n1", "自由文本参考文献：某某著作"),
    fulltext=sections(3),
    extra={"album": "社会科学Ⅰ辑", "topic": "民商法"},
)
THESIS_REC = SimRecord(
    id="t1",
    title="合同责任论",
    type="博士",
    authors=(SimAuthor("赵六", "中国人民大学"),),
    source="中国人民大学",
    year=2020,
    abstract="博士论文摘要。",
    supervisor="王利明",
    references=("c1",),
    extra={"major": "民商法学"},
)
CONF_REC = SimRecord(
    id="c1",
    title="违约责任研讨会论文",
    type="会议",
    authors=(SimAuthor("钱七"),),
    source="第十届民法论坛论文集",
    conference="第十届民法论坛",
    date="2021-05-20",
    year=2021,
    place="北京",
    abstract="会议论文摘要。",
)
NEWS_REC = SimRecord(
    id="n1",
    title="法院审理违约金纠纷",
    type="报纸",
    authors=(SimAuthor("林倩"),),
    source="人民法院报",
    date="2022-03-01",
    year=2022,
    abstract="正文片段：某法院近日审结一起违约金纠纷案。",
    extra={"edition": "003"},
)
BOOK_REC = SimRecord(
    id="b1",
    title="合同法总论",
    type="图书",
    authors=(SimAuthor("韩世远"),),
    publisher="法律出版社",
    year=2018,
    abstract="图书简介。",
    fulltext=sections(1),
)
ONLINE_REC = SimRecord(
    id="o1",
    title="网络首发论文",
    type="期刊",
    authors=(SimAuthor("孙八", "武汉大学"),),
    source="法学研究",
    year=2025,
    date="2025-01-29 09:01",
    online_first=True,
    abstract="网络首发摘要。",
    references=("j1",),
)
JOURNAL = SimJournal(
    name="法学研究",
    code="FXYJ",
    translated_title="Chinese Journal of Law",
    former_titles=("法学研究动态", "政法研究"),
    tiers=("北大核心", "CSSCI", "AMI顶级"),
    composite_if=16.135,
    aggregate_if=9.597,
    metric_year=2025,
    issn="1002-896X",
    cn="11-1162/D",
    sponsor="中国社会科学院法学研究所",
)


def corpus() -> Corpus:
    return Corpus(
        records=[JOURNAL_REC, THESIS_REC, CONF_REC, NEWS_REC, BOOK_REC, ONLINE_REC], journals=[JOURNAL]
    )
