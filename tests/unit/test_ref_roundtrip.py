"""The product's own reference lists read back: every record rendered by `cnki_mcp.cite` in
GB/T 7714, APA, MLA, Chicago and Vancouver, pasted into `refparse` and judged by `refmatch`
against the same records, is `verified` against the record it was rendered from (journal,
thesis, conference and newspaper records; Chinese names, Western names, pinyin names)."""

from __future__ import annotations

from typing import Any

import pytest

from cnki_mcp.cite import export
from cnki_mcp.cite.refmatch import RecordView, judge
from cnki_mcp.cite.refparse import parse_references
from cnki_mcp.links import apply_links, find_title_spans

STYLES = ("gbt7714", "apa", "mla", "chicago", "vancouver")

RECORDS: list[dict[str, Any]] = [
    {"record_ref": "cnki:J1", "title": "约定违约金酌减规则的法律规制研究", "authors": ["贾楠", "夏思萍", "白嘉嘉"],
     "doc_type": "期刊", "source": "现代法学", "year": 2014, "date": "2014-11-27", "volume": "27", "issue": "6",
     "pages": "75-99"},
    {"record_ref": "cnki:J2", "title": "违约金调整规则的比较法考察", "authors": ["王杰", "唐远思", "尹燕东", "秦慧", "余超", "崔玉阳"],
     "doc_type": "期刊", "source": "比较法研究", "year": 2024, "date": "2024-03-05", "volume": "39", "issue": "2",
     "pages": "101-112", "doi": "10.3969/j.cnki.bjfy.2024.02.001"},
    {"record_ref": "cnki:J3", "title": "《民法典》第585条违约金酌减规则的适用", "authors": ["郭懿玉", "顾东", "贺晨英"],
     "doc_type": "期刊", "source": "法学研究", "year": 2022, "date": "2022-06-18", "volume": "27", "issue": "6",
     "pages": "57-78", "doi": "10.3969/j.cnki.laws.2022.06.001"},
    {"record_ref": "cnki:J4", "title": "论违约金的调整规则", "authors": ["邹雪", "胡鸣国", "彭军", "向海琪", "覃伟英"],
     "doc_type": "期刊", "source": "法律科学(西北政法学院学报)", "year": 2006, "date": "2006-09-26", "volume": "19",
     "issue": "9", "pages": "22-30", "doi": "10.3969/j.cnki.doub.2006.09.001"},
    {"record_ref": "cnki:D1", "title": "约定违约金酌减规则的解释论展开研究", "authors": ["任若涛"], "doc_type": "博士",
     "source": "武汉大学", "year": 2014},
    {"record_ref": "cnki:D2", "title": "违约金酌减规则的解释论展开研究", "authors": ["黎伟萍"], "doc_type": "硕士",
     "source": "西南政法大学", "year": 2021},
    {"record_ref": "cnki:C1", "title": "违约金调整规则的反思与重构", "authors": ["陶欣一"], "doc_type": "会议",
     "source": "中国法学会民法学研究会年会论文集", "year": 2016, "pages": "286-295"},
    {"record_ref": "cnki:Y1", "title": "违约金调整规则发展概况", "authors": ["张三"], "doc_type": "年鉴",
     "source": "中国法律年鉴", "year": 2017, "pages": "226"},
    {"record_ref": "cnki:N1", "title": "专家热议违约金酌减规则", "authors": ["许国涛"], "doc_type": "报纸",
     "source": "法治日报", "year": 2014, "date": "2014-12-28", "pages": "8"},
    {"record_ref": "cnki:W1", "title": "Modelling model compression of deep learning with graph-based methods",
     "authors": ["Tanaka, Yuki", "Smith, John", "Johnson, Emma"], "doc_type": "外文期刊",
     "source": "IEEE Transactions on Neural Networks and Learning Systems", "year": 2024, "date": "2024-05-22",
     "volume": "34", "issue": "5", "pages": "2909-2918", "doi": "10.1016/j.sjie.2024.605082"},
    {"record_ref": "cnki:W2", "title": "Carbon emissions and driving factors: evidence from China",
     "authors": ["Wilson, Sarah", "Chen Jie", "Zhang Wei", "Wu Hao"], "doc_type": "外文期刊",
     "source": "Journal of Cleaner Production", "year": 2020, "date": "2020-11-27", "volume": "30", "issue": "11",
     "pages": "259-273", "doi": "10.1016/j.sjcp.2020.789052"},
    {"record_ref": "cnki:W3", "title": "Rethinking emissions trading in the era of carbon emissions",
     "authors": ["Li Na", "Brown, Oliver", "Kim, Min-jun", "Rossi, Luca", "Wu Hao", "Huang Tao", "Zhang Wei",
                 "Tanaka, Yuki", "Garcia, Maria"], "doc_type": "外文期刊", "source": "Journal of Cleaner Production",
     "year": 2023, "date": "2023-08-07", "volume": "33", "issue": "8", "pages": "5097-5109"},
    {"record_ref": "cnki:W4", "title": "A review of compliance programs in data compliance",
     "authors": ["Li Na", "Schmidt, Anna"], "doc_type": "外文期刊", "source": "Computer Law & Security Review",
     "year": 2025, "date": "2025-05-18", "volume": "35", "issue": "5", "pages": "5127-5142",
     "doi": "10.1016/j.sjcl.2025.884652"},
]
VIEWS = [RecordView(**r) for r in RECORDS]  # the date too: a newspaper's day is checked


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("record", RECORDS, ids=[r["record_ref"] for r in RECORDS])
def test_an_exported_entry_read_back_is_verified_against_its_record(style: str, record: dict[str, Any]) -> None:
    text = export([record], style).text
    [entry] = parse_references(text)
    got = judge(entry, VIEWS)
    assert (got.verdict, got.fields, got.diffs) == ("verified", [], []), (text, entry)
    assert got.record is not None and got.record.record_ref == record["record_ref"]
    # the fields were read, not left unchecked
    assert entry.authors and entry.source and entry.year == record["year"]
    if record["doc_type"].endswith("期刊"):
        assert (entry.volume, entry.issue, entry.pages is not None) == (record["volume"], record["issue"], True)
    assert not any("未核对" in w for w in got.warnings), got.warnings


@pytest.mark.parametrize("style", STYLES)
def test_a_whole_exported_list_splits_into_its_entries_and_each_is_verified(style: str) -> None:
    text = export(RECORDS, style).text
    entries = parse_references(text)
    assert len(entries) == len(RECORDS)
    got = [judge(e, VIEWS) for e in entries]
    assert [(j.verdict, j.record.record_ref if j.record else None) for j in got] == [
        ("verified", r["record_ref"]) for r in RECORDS
    ]


def test_a_list_link_references_linked_reads_back_as_the_list_it_was() -> None:
    journals = [r for r in RECORDS if r["doc_type"] == "期刊"]
    quoted = {r["record_ref"]: r["title"].replace("《", "〈").replace("》", "〉") for r in journals}
    plain = "\n".join(
        f"[{n}] {'，'.join(r['authors'])}：《{quoted[r['record_ref']]}》，《{r['source']}》{r['year']}年第{r['issue']}期。"
        for n, r in enumerate(journals, 1)
    )
    spans = [s for s in find_title_spans(plain) if s.title in quoted.values()]
    urls = {s.key: f"https://doi.org/{r['doi']}" if r.get("doi") else "https://kns.cnki.net/kcms2/article/abstract?v=a_b"
            for s in spans for r in journals if quoted[r["record_ref"]] == s.title}  # fmt: skip
    linked = apply_links(plain, spans, urls)
    assert linked.count("](https://") == len(journals)
    got = [judge(e, VIEWS) for e in parse_references(linked)]
    assert [(j.verdict, j.diffs, j.record.record_ref if j.record else None) for j in got] == [
        ("verified", [], r["record_ref"]) for r in journals
    ]
    assert [e.model_dump(exclude={"raw"}) for e in parse_references(linked)] == [
        e.model_dump(exclude={"raw"}) for e in parse_references(plain)
    ]
