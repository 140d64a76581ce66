"""Generate the simulator's bundled corpus (records, journals, relevance-labelled questions).

Deterministic: one `random.Random(seed)`, no clock, no set iteration, sorted output.
Usage: python scripts/gen_corpus.py [--out DIR] [--seed N]   (default DIR: cnki_mcp/sim/data/)"""

from __future__ import annotations

import argparse
import json
import random
import sys
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus_vocab as V

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "cnki_mcp" / "sim" / "data"
DEFAULT_SEED = 20240315
# Records per topic and type (foreign, bridge, same-title and tricky records come on top).
PER_TOPIC = {"期刊": 20, "博士": 2, "硕士": 4, "会议": 2, "报纸": 2, "年鉴": 1, "图书": 1}
ONLINE_FIRST_YEAR = 2026
DB_BY_TYPE = {"期刊": "CJFD", "博士": "CDFD", "硕士": "CMFD", "会议": "CPFD", "报纸": "CCND", "年鉴": "CYFD", "图书": "CBBD",
              "外文期刊": "WWJD"}
GENERIC = [
    "从理论层面看，{T}{A}涉及多重价值目标的协调。", "既有研究多从单一视角展开，对{A}的系统性关注仍显不足。",
    "需要指出的是，{K}在其中发挥着不可忽视的作用。", "这一结论在替换核心指标和调整样本区间后依然稳健。",
    "表{n}列出了主要变量与指标的描述性统计结果。", "由此可见，{T}{A}并非孤立的问题，而是与{K}紧密相连。",
    "具体而言，可以从以下几个方面加以把握。", "这一做法在实践中取得了一定成效，但也暴露出若干问题。",
    "综合上述分析，{T}{A}的完善应当遵循循序渐进的原则。", "图{n}展示了不同条件下{A}的变化趋势。",
    "相关主体之间的协同不足，是制约{T}{A}的深层原因。", "与已有文献相比，本文的边际贡献主要体现在三个方面。",
]
NEWS_TITLES = ["推动{T}高质量发展", "多地探索{T}{A}新路径", "专家热议{T}{A}", "让{T}更好服务人民群众", "{T}：从“有没有”到“好不好”"]
YEARBOOK_TITLES = ["{y}年{T}工作综述", "{T}{A}发展概况", "{y}年{T}大事记"]
BOOK_TITLES = ["{T}{A}研究", "{T}：理论与实践", "{T}导论", "{T}{A}专题研究"]
EN_TITLES = ["{A} in {T}: a {m} approach", "Modelling {A} of {T} with {m} methods", "{T} and {A}: evidence from China",
             "A review of {A} in {T}", "Rethinking {A} in the era of {T}"]
EN_METHODS = ["graph-based", "transformer-based", "panel-data", "multi-scale", "contrastive"]
# Chinese authors of English-language papers as CNKI's grid prints them: given name first, the
# family name in capitals (`Chengpeng XUE`, saved page kns8s-grid/kaffu_waam_p1.html)
LATIN_CN = ["Wei ZHANG", "Na LI", "Fang WANG", "Yang LIU", "Jie CHEN", "Lei YANG", "Min ZHAO", "Tao HUANG", "Jing ZHOU", "Hao WU"]
CN_NUM = "一二三四五六七八九十"


def cn_numeral(n: int) -> str:
    """1..99 as Chinese numerals (一, 十, 十一, 二十三)."""
    tens, ones = divmod(n, 10)
    head = "" if tens == 0 else ("十" if tens == 1 else CN_NUM[tens - 1] + "十")
    return head + (CN_NUM[ones - 1] if ones else "")


class Gen:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.topics = {t["key"]: t for t in V.TOPICS}
        self.journals = [self._journal(j) for j in V.JOURNALS + V.FOREIGN_JOURNALS]
        self.jby_code = {j["code"]: j for j in self.journals}
        self.jdisc = {j[1]: j[10] for j in V.JOURNALS + V.FOREIGN_JOURNALS}
        self.records: list[dict[str, Any]] = []
        self.seq: Counter[str] = Counter()
        self.used_filenames: set[str] = set()
        self.used_titles: set[str] = set()

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _journal(j: tuple[Any, ...]) -> dict[str, Any]:
        name, code, tr, former, tiers, cif, aif, issn, cn, sponsor, _disc = j
        out: dict[str, Any] = {"name": name, "code": code, "translated_title": tr}
        if former:
            out["former_titles"] = former
        out["tiers"] = tiers
        if cif is not None:
            out.update(composite_if=round(cif, 3), aggregate_if=round(aif, 3), metric_year=2025)
        out["issn"] = issn
        if cn:
            out["cn"] = cn
        out["sponsor"] = sponsor
        return out

    def person(self) -> str:
        r = self.rng
        return r.choice(V.SURNAMES) + "".join(r.choice(V.GIVEN) for _ in range(r.choice([1, 2, 2])))

    def institution(self, disc: str, uni: str | None = None) -> str:
        return (uni or self.rng.choice(V.UNIVERSITIES)) + self.rng.choice(V.SCHOOLS[disc])

    def authors(self, disc: str, n: int) -> list[dict[str, str]]:
        uni = self.rng.choice(V.UNIVERSITIES)
        out: list[dict[str, str]] = []
        for _ in range(n):
            u = uni if self.rng.random() < 0.6 else None
            out.append({"name": self.person(), "institution": self.institution(disc, u)})
        return out

    def year(self, t: dict[str, Any] | None = None) -> int:
        years = list(range(V.TOPIC_SINCE[t["key"]] if t else 2005, 2026))
        return self.rng.choices(years, weights=[1 + (y - 2005) * 0.35 for y in years])[0]

    def fill(self, s: str, t: dict[str, Any], term: str, aspect: tuple[Any, ...] | None) -> str:
        r = self.rng
        a = aspect or r.choice(t["aspects"])
        full, core = a[1], a[1].removeprefix("中的").removeprefix("的").removeprefix("与")
        disc = V.DISCIPLINES[t["discipline"]]
        s = s.replace("{T}{A}", term + full).replace("{T}", term).replace("{A}", core)
        s = s.replace("规则规则", "规则").replace("的的", "的")
        return (s.replace("{M}", r.choice(disc["methods"])).replace("{C}", r.choice(disc["contexts"]))
                .replace("{K}", r.choice(t["shared"])).replace("{N}", str(r.randint(86, 3200)))
                .replace("{n}", str(r.randint(1, 6))))

    def funds(self, disc: str) -> list[str]:
        r = self.rng
        pre, out = V.NSFC_PREFIX[disc], []
        for _ in range(r.choice([0, 1, 1, 2])):
            yy = r.randint(18, 24)
            if pre and r.random() < 0.7:
                out.append(r.choice([f"国家自然科学基金面上项目({pre}{r.randint(1000, 9999)}{r.randint(10, 99)})",
                                     f"国家自然科学基金青年科学基金项目({pre}{r.randint(1000, 9999)}{r.randint(10, 99)})",
                                     f"国家重点研发计划(20{yy}YFB{r.randint(1000, 9999)}00)"]))
            elif r.random() < 0.75:
                code = V.NSSF_CODE[disc]
                out.append(r.choice([f"国家社会科学基金重大项目({yy}&ZD{r.randint(10, 350)})",
                                     f"国家社会科学基金一般项目({yy}B{code}{r.randint(10, 199):03d})",
                                     f"国家社会科学基金青年项目({yy}C{code}{r.randint(10, 199):03d})",
                                     f"教育部人文社会科学研究规划基金项目({yy}YJA{r.randint(710000, 880000)})"]))
            else:
                out.append(r.choice(V.PROVINCIAL_FUNDS).replace("{n}", str(r.randint(100, 999))))
        return sorted(set(out), key=out.index)

    def keywords(self, t: dict[str, Any], term: str, aspect: tuple[Any, ...] | None, extra: list[str] = ()) -> list[str]:
        r = self.rng
        kws = [term]
        if aspect:
            kws += r.sample(aspect[2], r.choice([1, 2, 2]))
        kws += list(extra) + r.sample(t["shared"], r.choice([1, 2, 2]))
        if r.random() < 0.2:
            kws.append(r.choice(t["variants"]))
        return sorted(set(kws), key=kws.index)

    def abstract(self, t: dict[str, Any], term: str, aspect: tuple[Any, ...] | None, lo: int = 150, hi: int = 400) -> str:
        r, disc = self.rng, V.DISCIPLINES[t["discipline"]]
        parts = [r.choice(t["bg"]), r.choice(disc["method_s"]), r.choice(t["facts"]), r.choice(disc["concl_s"])]
        text = "".join(self.fill(p, t, term, aspect) for p in parts)
        pool = [p for p in disc["concl_s"] + t["facts"] + GENERIC if p not in parts]
        r.shuffle(pool)
        while len(text) < lo and pool:
            text += self.fill(pool.pop(), t, term, aspect)
        while len(text) > hi:
            text = text[: text.rfind("。", 0, len(text) - 1) + 1]
        return text

    def title(self, t: dict[str, Any], term: str, aspect: tuple[Any, ...], pool: list[str] | None = None) -> str:
        """A title not used yet (identical titles are only made on purpose, see `same_title_pairs`)."""
        disc = V.DISCIPLINES[t["discipline"]]
        for attempt in range(12):
            title = self.fill(self.rng.choice(pool or disc["titles"]), t, term, aspect)
            if attempt >= 6:
                title += self.fill(self.rng.choice(["——以{C}为例", "——基于{M}的考察", "——兼论{K}"]), t, term, aspect)
            if title not in self.used_titles:
                break
        self.used_titles.add(title)
        return title

    def unique_filename(self, fn: str) -> str:
        while fn in self.used_filenames:
            fn = fn[:-1] + str((int(fn[-1]) + 1) % 10) if fn[-1].isdigit() else fn + "1"
        self.used_filenames.add(fn)
        return fn

    def counts(self, year: int | None, kind: str) -> tuple[int, int]:
        r, age = self.rng, max(1, ONLINE_FIRST_YEAR - (year or 2015))
        mult = {"期刊": 1.0, "博士": 0.8, "硕士": 0.35, "会议": 0.3, "报纸": 0.02, "年鉴": 0.05, "图书": 1.5, "外文期刊": 0.6}[kind]
        cited = int(r.lognormvariate(1.2, 1.25) * age * 0.7 * mult)
        dl_mult = {"博士": 60, "硕士": 45, "报纸": 25}.get(kind, 22)
        downloads = int(cited * r.uniform(5, 20) + r.lognormvariate(3.5, 1.0) * age * dl_mult / 10)
        return cited, downloads

    # ------------------------------------------------------------------ record makers
    def base(self, t: dict[str, Any], kind: str, aspect: tuple[Any, ...] | None, term: str) -> dict[str, Any]:
        rec: dict[str, Any] = {"id": "", "db": DB_BY_TYPE[kind], "type": kind}
        rec["discipline"], rec["topic"] = t["discipline"], t["key"]
        rec["aspect"] = aspect[0] if aspect else None
        rec["term"] = term
        return rec

    def pick_journal(self, t: dict[str, Any], year: int) -> tuple[dict[str, Any], str]:
        r = self.rng
        codes = V.TOPIC_JOURNALS[t["key"]]
        j = self.jby_code[codes[min(int(r.expovariate(0.45)), len(codes) - 1)]]
        source = j["name"]
        former = V.FORMER_TITLE_UNTIL.get(source)
        if former and year <= former[1]:
            source = former[0]
        return j, source

    def journal_paper(self, t: dict[str, Any], aspect: tuple[Any, ...], term: str, *, year: int | None = None,
                      online_first: bool = False, journal: dict[str, Any] | None = None, title: str | None = None) -> dict[str, Any]:
        r, disc = self.rng, t["discipline"]
        rec = self.base(t, "期刊", aspect, term)
        rec["db"] = "CJFD"
        y = ONLINE_FIRST_YEAR if online_first else (year or self.year(t))
        j, source = (journal, journal["name"]) if journal else self.pick_journal(t, y)
        rec["title"] = title or self.title(t, term, aspect)
        if r.random() < 0.45:
            rec["title_en"] = f"Research on the {aspect[3]} of {t['en']}"
        rec["authors"] = self.authors(disc, r.choices([1, 2, 3, 4, 5, 6], weights=[15, 30, 25, 15, 10, 5])[0])
        rec["source"], rec["year"] = source, y
        code = j["code"]
        if online_first:
            m, d = r.randint(1, 3), r.randint(1, 28)
            rec["date"] = f"{y}-{m:02d}-{d:02d}"
            rec["online_first"] = True
            rec["filename"] = self.unique_filename(f"{code}{y}{m:02d}{d:02d}00{r.randint(1, 9)}")
        else:
            issue = r.randint(1, 6 if code in ("FSYJ", "XDFX", "BJFY", "WWBF", "CCRN", "ZGGJ") else 12)
            month = issue * 2 - 1 if issue <= 6 and code in ("FSYJ", "XDFX", "BJFY", "WWBF", "CCRN") else issue
            self.seq[f"{code}{y}{issue}"] += 1
            n = self.seq[f"{code}{y}{issue}"]
            start = r.randint(1, 180) if disc in ("法学", "经济管理", "教育", "文化遗产") else r.randint(1, 2400)
            rec.update(date=f"{y}-{month:02d}-{r.randint(5, 28):02d}", volume=str(y - 1975 - len(code) - ord(code[0]) % 20),
                       issue=str(issue), pages=f"{start}-{start + r.randint(6, 24)}")
            rec["filename"] = self.unique_filename(f"{code}{y}{issue:02d}{n:03d}")
            if r.random() < 0.7:
                rec["doi"] = f"{V.DOI_PREFIX[disc]}/j.cnki.{code.lower()}.{y}.{issue:02d}.{n:03d}"
        rec["abstract"] = self.abstract(t, term, aspect)
        rec["keywords"] = self.keywords(t, term, aspect)
        rec["funds"] = self.funds(disc)
        rec["classification"] = r.choice(t["clc"])
        return rec

    def thesis(self, t: dict[str, Any], aspect: tuple[Any, ...], term: str, kind: str) -> dict[str, Any]:
        r = self.rng
        rec = self.base(t, kind, aspect, term)
        rec["db"] = "CDFD" if kind == "博士" else "CMFD"
        y, uni = self.year(t), r.choice(V.UNIVERSITIES)
        title = self.title(t, term, aspect)
        rec["title"] = title if title.endswith(("研究", "分析", "探析")) else title + "研究"
        rec["title_en"] = f"Study on the {aspect[3]} of {t['en']}"
        rec["authors"] = [{"name": self.person(), "institution": uni}]
        rec.update(source=uni, place=uni, supervisor=self.person(), year=y, date=f"{y}-{r.randint(5, 12):02d}-{r.randint(1, 28):02d}")
        rec["filename"] = self.unique_filename(f"10{r.randint(10, 99)}{r.randint(100000, 999999)}.nh")
        rec["abstract"] = self.abstract(t, term, aspect, 260, 400)
        rec["keywords"] = self.keywords(t, term, aspect)
        rec["classification"] = r.choice(t["clc"])
        rec["page_count"] = r.randint(60, 110) if kind == "硕士" else r.randint(120, 260)
        return rec

    def conference(self, t: dict[str, Any], aspect: tuple[Any, ...], term: str) -> dict[str, Any]:
        r, disc = self.rng, t["discipline"]
        rec = self.base(t, "会议", aspect, term)
        meeting, proc, code = r.choice(V.CONFERENCES[disc])
        y, m = self.year(t), r.randint(4, 11)
        rec["title"] = self.title(t, term, aspect)
        rec["authors"] = self.authors(disc, r.randint(1, 4))
        start = r.randint(1, 400)
        rec.update(source=proc, conference=meeting, year=y, date=f"{y}-{m:02d}-{r.randint(1, 28):02d}", pages=f"{start}-{start + r.randint(4, 9)}")
        rec["place"] = V.CONFERENCE_PLACES[meeting]  # 会议地点; a fixed table, so no draw from the shared RNG
        rec["filename"] = self.unique_filename(f"{code}{y}{m:02d}001{r.randint(100, 999)}")
        rec["abstract"] = self.abstract(t, term, aspect, 150, 300)
        rec["keywords"] = self.keywords(t, term, aspect)
        rec["classification"] = r.choice(t["clc"])
        return rec

    def newspaper(self, t: dict[str, Any], aspect: tuple[Any, ...], term: str) -> dict[str, Any]:
        r, disc = self.rng, t["discipline"]
        rec = self.base(t, "报纸", aspect, term)
        paper, code = r.choice(V.NEWSPAPERS[disc])
        y, m, d, page = max(2012, self.year(t)), r.randint(1, 12), r.randint(1, 28), r.randint(1, 12)
        rec["title"] = self.fill(r.choice(NEWS_TITLES), t, term, aspect)
        rec["authors"] = [{"name": self.person()} for _ in range(r.choice([1, 1, 2]))]
        rec.update(source=paper, year=y, date=f"{y}-{m:02d}-{d:02d}", pages=str(page), edition=f"第{page}版")
        rec["filename"] = self.unique_filename(f"{code}{y}{m:02d}{d:02d}{page:03d}{r.randint(1, 9)}")
        lead = r.choice(["本报讯", "本报记者", ""])
        rec["abstract"] = lead + ("　" if lead else "") + self.fill(r.choice(t["bg"]), t, term, aspect) + self.fill(r.choice(t["facts"]), t, term, aspect)
        rec["keywords"] = [term, *r.sample(aspect[2], 1)]
        return rec

    def yearbook(self, t: dict[str, Any], aspect: tuple[Any, ...], term: str) -> dict[str, Any]:
        r, disc = self.rng, t["discipline"]
        rec = self.base(t, "年鉴", aspect, term)
        y = max(2010, self.year(t))
        rec["title"] = self.fill(r.choice(YEARBOOK_TITLES), t, term, aspect).replace("{y}", str(y - 1))
        if r.random() < 0.5:
            rec["authors"] = [{"name": self.person()}]
        rec.update(source=V.YEARBOOKS[disc], year=y, pages=str(r.randint(20, 600)))
        rec["filename"] = self.unique_filename(f"N{y}{r.randint(10, 12)}{r.randint(1000, 9999)}{r.randint(100000, 999999)}")
        rec["abstract"] = self.abstract(t, term, aspect, 120, 260)
        rec["keywords"] = [term, *r.sample(aspect[2], 1)]
        return rec

    def book(self, t: dict[str, Any], aspect: tuple[Any, ...], term: str) -> dict[str, Any]:
        r, disc = self.rng, t["discipline"]
        rec = self.base(t, "图书", aspect, term)
        publisher, place = r.choice(V.PUBLISHERS[disc])
        y = self.year(t)
        rec["title"] = self.fill(r.choice(BOOK_TITLES), t, term, aspect)
        rec["authors"] = self.authors(disc, r.choice([1, 1, 2]))
        rec.update(source=publisher, publisher=publisher, place=place, year=y, date=f"{y}-{r.randint(1, 12):02d}-01")
        rec["isbn"] = f"978-7-{r.randint(100, 999)}-{r.randint(10000, 99999)}-{r.randint(0, 9)}"
        rec["filename"] = self.unique_filename(f"978{r.randint(10**9, 10**10 - 1)}000")
        rec["abstract"] = self.abstract(t, term, aspect, 200, 400)
        rec["keywords"] = self.keywords(t, term, aspect)
        rec["classification"] = r.choice(t["clc"])
        return rec

    def foreign(self, t: dict[str, Any], aspect: tuple[Any, ...], n_authors: int | None = None) -> dict[str, Any]:
        r = self.rng
        rec = self.base(t, "外文期刊", aspect, t["en"])
        j = self.jby_code[V.FOREIGN_BY_TOPIC[t["key"]]]
        y = max(2015, self.year(t))
        title = r.choice(EN_TITLES).format(A=aspect[3], T=t["en"], m=r.choice(EN_METHODS))
        rec["title"] = title[0].upper() + title[1:]
        n = n_authors or r.randint(2, 6)
        latin = [f"{s}, {g}" for s, g in zip(V.LATIN_SURNAMES, V.LATIN_GIVEN, strict=True)]
        names = r.sample(LATIN_CN + latin, n)
        rec["authors"] = [{"name": nm} for nm in names]
        vol, issue, start = y - 1990, r.randint(1, 12), r.randint(100, 9000)
        rec.update(source=j["name"], year=y, date=f"{y}-{issue:02d}-{r.randint(1, 28):02d}", volume=str(vol), issue=str(issue),
                   pages=f"{start}-{start + r.randint(8, 16)}", language="en")
        rec["doi"] = f"10.1016/j.{j['code'].lower()}.{y}.{r.randint(100000, 999999)}"
        rec["filename"] = self.unique_filename(f"{j['code']}{r.randint(10**13, 10**14 - 1)}")
        rec["abstract"] = (f"Research on {t['en']} has grown rapidly in recent years. This study investigates {aspect[3]} "
                           f"using a {r.choice(EN_METHODS)} framework and data collected in China. Results show that the proposed "
                           f"approach improves {aspect[3]} substantially compared with established baselines, and we discuss "
                           f"implications for research on {t['en']} and for policy.")
        rec["keywords"] = [t["en"], aspect[3], r.choice(["China", "machine learning", "regulation", "sustainability", "evaluation"])]
        return rec

    # ------------------------------------------------------------------ corpus assembly
    def term(self, t: dict[str, Any]) -> str:
        v = t["variants"]
        return self.rng.choices(v, weights=[0.55, 0.3, 0.15, 0.1][: len(v)])[0]

    def build(self) -> None:
        r = self.rng
        for t in V.TOPICS:
            n = 0
            for kind, count in PER_TOPIC.items():
                for _ in range(count):
                    aspect, term = t["aspects"][n % len(t["aspects"])], self.term(t)
                    n += 1
                    if kind == "期刊":
                        self.records.append(self.journal_paper(t, aspect, term, online_first=n % 19 == 0))
                    elif kind in ("博士", "硕士"):
                        self.records.append(self.thesis(t, aspect, term, kind))
                    else:
                        self.records.append(getattr(self, {"会议": "conference", "报纸": "newspaper", "年鉴": "yearbook", "图书": "book"}[kind])(t, aspect, term))
        for primary, secondary, titles in V.BRIDGES:
            t, t2 = self.topics[primary], self.topics[secondary]
            since = max(V.TOPIC_SINCE[primary], V.TOPIC_SINCE[secondary], 2021)
            for k in range(5):
                term = t["variants"][k // len(titles) % len(t["variants"])]
                title = titles[k % len(titles)].replace("{T}", term)
                rec = self.journal_paper(t, r.choice(t["aspects"]), term, title=title, year=r.randint(since, 2025))
                rec["aspect"], rec["topic2"] = "bridge", secondary
                rec["keywords"] = [term, t2["variants"][0], *r.sample(t["shared"], 1), *r.sample(t2["shared"], 1)]
                rec["keywords"] = sorted(set(rec["keywords"]), key=rec["keywords"].index)
                rec["abstract"] = self.fill(r.choice(t2["bg"]), t2, t2["variants"][0], None) + rec["abstract"]
                self.records.append(rec)
        for i, key in enumerate(sorted(V.FOREIGN_BY_TOPIC)):
            t = self.topics[key]
            self.records.append(self.foreign(t, t["aspects"][i % 4]))
            if len([x for x in self.records if x["type"] == "外文期刊"]) < 16 and i < 5:
                self.records.append(self.foreign(t, t["aspects"][(i + 1) % 4], n_authors=9 if i == 0 else None))
        self.former_title_records()
        self.same_title_pairs()
        self.tricky()
        for i, rec in enumerate(self.records, 1):
            rec["id"] = f"r{i:04d}"

    def former_title_records(self) -> None:
        """Force a few records published under a journal's former title (older years)."""
        plan = [("kg", "XDTQ", 2014), ("kg", "XDTQ", 2016), ("liqdam", "DOUB", 2006), ("liqdam", "DOUB", 2005),
                ("carbon", "ZGRZ", 2008), ("pipl", "KJFL", 2019)]
        for key, code, year in plan:
            t = self.topics[key]
            j = self.jby_code[code]
            rec = self.journal_paper(t, t["aspects"][year % 4], t["variants"][0], year=year, journal=j)
            rec["source"] = V.FORMER_TITLE_UNTIL[j["name"]][0]
            self.records.append(rec)

    def same_title_pairs(self) -> None:
        """Identical titles by different authors in different venues and years: they stay distinct."""
        journal_recs = [x for x in self.records if x["type"] == "期刊" and not x.get("online_first") and x["aspect"] != "bridge"]
        for k in range(12):
            orig = journal_recs[k * (len(journal_recs) // 12) + 3]
            t = self.topics[orig["topic"]]
            aspect = next(a for a in t["aspects"] if a[0] == orig["aspect"])
            twin = self.journal_paper(t, aspect, orig["term"], title=orig["title"])
            while twin["authors"][0]["name"] == orig["authors"][0]["name"] or twin["year"] == orig["year"]:
                twin["authors"] = self.authors(t["discipline"], len(twin["authors"]))
                twin["year"] = self.year(t)
            twin["date"] = f"{twin['year']}{twin['date'][4:]}"
            twin["same_title_as"] = orig["filename"]
            self.records.append(twin)

    def tricky(self) -> None:
        T = self.topics
        specials = [
            ("deeplearn", "robust", "面向C++程序的深度学习缺陷检测方法"),
            ("kg", "construct", "基于BiLSTM-CRF的法律文书命名实体识别"),
            ("fedlearn", "comm", "TCP/IP网络环境下联邦学习的通信效率优化"),
            ("carbon", "driver", "碳排放强度下降18%目标下的省际分解方案"),
            ("libattery", "cathode", "锂离子电池LiNi0.8Co0.1Mn0.1O2(NCM811)正极材料的改性研究"),
            ("greenfin", "reform", '"双碳"目标下绿色金融支持体系研究'),
            ("pipl", "consent", "《个人信息保护法》第13条的解释与适用"),
            ("liqdam", "reduce", "《民法典》第585条违约金酌减规则的适用"),
            ("llm", "eval", "从\"可以用\"到'用得好'：大语言模型领域应用评测"),
        ]
        for key, akey, title in specials:
            t = T[key]
            aspect = next(a for a in t["aspects"] if a[0] == akey)
            year = max(self.year(t), 2022) if "《" in title or "双碳" in title else None
            rec = self.journal_paper(t, aspect, t["variants"][0], title=title, year=year)
            rec["tricky"] = True
            self.records.append(rec)
        for key, suffix in (("museum", "(文)"), ("liqdam", "（编）")):
            t = T[key]
            rec = self.newspaper(t, t["aspects"][0], t["variants"][0])
            rec["authors"] = [{"name": self.person() + suffix}]
            rec["tricky"] = True
            self.records.append(rec)
        t = T["digrelic"]
        book = self.book(t, t["aspects"][3], "数字文物")
        book["title"] = "数字文物保护概论"
        for k in ("year", "date", "source"):
            book.pop(k, None)
        book["tricky"] = True
        self.records.append(book)

    def link_references(self) -> None:
        r = self.rng
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for rec in self.records:
            by_topic.setdefault(rec["topic"], []).append(rec)
        citable = ("期刊", "博士", "硕士", "会议", "图书", "外文期刊")
        for rec in self.records:
            if rec["type"] not in ("期刊", "博士", "硕士", "外文期刊") or not rec.get("year") or r.random() < 0.1:
                continue
            same = [x for x in by_topic[rec["topic"]] if x["type"] in citable and x.get("year") and x["id"] != rec["id"]
                    and (x["year"] < rec["year"] or (x["year"] == rec["year"] and x["id"] < rec["id"]))]
            other = [x for x in self.records if x["discipline"] == rec["discipline"] and x["topic"] != rec["topic"]
                     and x["type"] in citable and x.get("year") and x["year"] < rec["year"]]
            want = r.randint(3, 15) if rec["type"] != "博士" else r.randint(10, 15)
            picks = r.sample(same, min(len(same), round(want * 0.8)))
            picks += r.sample(other, min(len(other), want - len(picks), max(1, round(want * 0.3))))
            rec["references"] = sorted(x["id"] for x in picks)

    def set_counts(self) -> None:
        citing: Counter[str] = Counter(ref for rec in self.records for ref in rec.get("references", ()))
        for rec in self.records:
            cited, downloads = self.counts(rec.get("year"), rec["type"])
            if rec.get("online_first"):
                cited, downloads = self.rng.randint(0, 2), self.rng.randint(30, 900)
            rec["cited"] = max(cited, citing[rec["id"]])
            rec["downloads"] = max(downloads, rec["cited"] * 3)
        classics = [x for x in self.records if x["type"] == "期刊" and x.get("year", 2100) <= 2012][:4]
        for i, rec in enumerate(classics):
            rec["cited"] = 10400 + i * 5173
            rec["downloads"] = 61000 + i * 17011

    def fulltext(self, rec: dict[str, Any], n_sections: int, lo: int, hi: int, with_refs: bool) -> list[dict[str, Any]]:
        r, t = self.rng, self.topics[rec["topic"]]
        disc = V.DISCIPLINES[t["discipline"]]
        aspect = next((a for a in t["aspects"] if a[0] == rec["aspect"]), None)
        term = rec["term"]
        pool = t["bg"] + t["facts"] + disc["method_s"] + disc["concl_s"] + GENERIC
        chinese_style = t["discipline"] in ("法学", "教育", "文化遗产")
        heads = [self.fill(h, t, term, aspect) for h in disc["headings"]]
        n_major = n_sections - sum(1 for i in range(n_sections) if 0 < i < n_sections - 1 and i % 3 == 2)
        extra = [f"{term}{a[1]}的具体展开" for a in t["aspects"] if a is not aspect]
        majors = heads[:-1] + [extra[k % len(extra)] + ("" if k < len(extra) else f"（续{k // len(extra)}）")
                               for k in range(max(0, n_major - len(heads)))] + heads[-1:]
        sub_labels = [self.fill(x, t, term, aspect) for x in
                      ["{T}{A}的现实表现", "{A}的影响机制", "{K}的作用", "典型案例分析", "进一步讨论", "主要争议"]]
        r.shuffle(sub_labels)
        sections: list[dict[str, Any]] = []
        deck: list[str] = []
        major = minor = 0
        for i in range(n_sections):
            if not (0 < i < n_sections - 1 and i % 3 == 2):
                label = majors[-1] if i == n_sections - 1 else majors[min(major, len(majors) - 2)]
                major, minor = major + 1, 0
                heading = f"{cn_numeral(major)}、{label}" if chinese_style else f"{major} {label}"
                level = 1
            else:
                minor += 1
                label = sub_labels[(i // 3) % len(sub_labels)]
                heading = f"（{cn_numeral(minor)}）{label}" if chinese_style else f"{major}.{minor} {label}"
                level = 2
            target, text = r.randint(lo, hi), ""
            while len(text) < target:
                if not deck:
                    deck = pool[:]
                    r.shuffle(deck)
                text += self.fill(deck.pop(), t, term, aspect)
                if r.random() < 0.2:
                    text += "\n"
            sections.append({"heading": heading, "level": level, "text": text.strip()})
        if with_refs and rec.get("references"):
            by_id = {x["id"]: x for x in self.records}
            lines = []
            for k, ref in enumerate(rec["references"], 1):
                x = by_id[ref]
                names = ",".join(a["name"] for a in x.get("authors", [])[:3])
                tag = {"期刊": "J", "博士": "D", "硕士": "D", "会议": "C", "图书": "M", "外文期刊": "J"}.get(x["type"], "Z")
                lines.append(f"[{k}]{names}.{x['title']}[{tag}].{x.get('source', '')},{x.get('year', '')}.")
            sections.append({"heading": "参考文献", "level": 1, "text": "\n".join(lines)})
        return sections

    def add_fulltext(self) -> None:
        chosen: list[dict[str, Any]] = []
        for t in V.TOPICS:
            recs = [x for x in self.records if x["topic"] == t["key"] and x["aspect"] != "bridge"]
            chosen += [x for x in recs if x["type"] == "期刊" and not x.get("online_first")][:2]
            chosen += [x for x in recs if x["type"] in ("博士", "硕士")][:1]
        chosen += [x for x in self.records if x.get("tricky") and x["type"] == "期刊"][:3]
        chosen += [x for x in self.records if x.get("topic2")][:3]
        for i, rec in enumerate(chosen):
            long = rec["type"] == "博士" and rec["topic"] == "liqdam"
            n = 16 if long else self.rng.randint(6, 12)
            rec["fulltext"] = self.fulltext(rec, n, 1300 if long else 300, 1500 if long else 1100, with_refs=i % 2 == 0)

    def questions(self) -> list[dict[str, Any]]:
        out = []
        for i, (question, concepts, rules) in enumerate(V.QUESTIONS, 1):
            rel: dict[str, int] = {}
            for rec in self.records:
                grade = max((g for topic, aspects, t2, g in rules if rec["topic"] == topic
                             and (aspects is None or rec["aspect"] in aspects) and (t2 is None or rec.get("topic2") == t2)), default=0)
                if grade and rec["type"] in ("报纸", "年鉴"):
                    grade = 1
                if grade:
                    rel[rec["id"]] = grade
            out.append({"id": f"q{i:02d}", "question": question, "concepts": concepts, "relevant": rel})
        return out


RECORD_ORDER = ["id", "db", "filename", "type", "title", "title_en", "authors", "source", "year", "date", "volume", "issue",
                "pages", "abstract", "keywords", "funds", "doi", "classification", "cited", "downloads", "references",
                "online_first", "publisher", "place", "supervisor", "conference", "discipline", "topic", "aspect", "topic2",
                "term", "language", "edition", "page_count", "isbn", "same_title_as", "tricky", "fulltext"]


def clean(rec: dict[str, Any]) -> dict[str, Any]:
    out = {k: rec[k] for k in RECORD_ORDER if k in rec and rec[k] not in (None, [], "", False)}
    for k in ("cited", "downloads"):
        out[k] = rec.get(k, 0)
    return {k: out[k] for k in RECORD_ORDER if k in out}


def two_institutions(rec: dict[str, Any]) -> None:
    """The first author is also at the second author's institution: a person at two places, whose
    detail page marks the name `<sup>1,2</sup>` (saved page detail-kcms2/pluginsx_detail_kcms2_2026.html,
    时郁婷<sup>1,2</sup>). Set after generation, so no other record changes."""
    first, second = rec["authors"][0], rec["authors"][1]
    if second["institution"] != first["institution"]:
        first["institution"] = [first["institution"], second["institution"]]


# CNKI mints DOIs for the theses, proceedings papers and newspaper articles it publishes:
# 10.<unit>/d.cnki.g<unit code>.<year>.<n> (theses), 10.26914/c.cnkihy.<year>.<n> (proceedings),
# 10.28514/n.cnki.n<paper code>.<year>.<n> (newspapers); dataset/kcms2_2025_doi_by_kind.txt in
# tests/fixtures/cnki-real (docs/simulator.md "CNKI DOIs beyond journals"). A 2007 thesis page
# shows none, so only records from this year on get one.
CNKI_DOI_FROM = 2020


def _letters(text: str, n: int = 4) -> str:
    """A fixed lower-case code for a name (CNKI's unit and paper codes: gdzku, gbjku, nkxsb)."""
    h = zlib.crc32(text.encode())
    return "".join(chr(ord("a") + (h >> (5 * i)) % 26) for i in range(n))


def cnki_dois(records: list[dict[str, Any]]) -> None:
    """Give the corpus's recent theses, proceedings papers and newspaper articles a CNKI DOI. Set
    after generation from each record's id and source (no draw from the shared RNG), so no other
    field changes."""
    for i, rec in enumerate(records):
        if rec.get("doi") or (rec.get("year") or 0) < CNKI_DOI_FROM:
            continue
        n, year, src = zlib.crc32(rec["id"].encode()) % 1_000_000, rec["year"], rec.get("source") or ""
        if rec["type"] in ("博士", "硕士"):
            doi = f"10.{26900 + zlib.crc32(src.encode()) % 900}/d.cnki.g{_letters(src)}.{year}.{n:06d}"
        elif rec["type"] == "会议":
            doi = f"10.26914/c.cnkihy.{year}.{n:06d}"
        elif rec["type"] == "报纸":
            doi = f"10.28514/n.cnki.n{_letters(src)}.{year}.{n:06d}"
        else:
            continue
        records[i] = {k: ({**rec, "doi": doi})[k] for k in RECORD_ORDER if k in rec or k == "doi"}


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")


def generate(out: Path, seed: int = DEFAULT_SEED) -> dict[str, Any]:
    g = Gen(seed)
    g.build()
    g.link_references()
    g.set_counts()
    g.add_fulltext()
    records = sorted((clean(r) for r in g.records), key=lambda r: r["id"])
    two_institutions(records[0])
    cnki_dois(records)
    journals = sorted(g.journals, key=lambda j: j["code"])
    questions = g.questions()
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(out / "records.jsonl", records)
    write_jsonl(out / "journals.jsonl", journals)
    write_jsonl(out / "questions.jsonl", questions)
    titles = Counter(r["title"] for r in records)
    return {
        "records": len(records), "journals": len(journals), "questions": len(questions),
        "by_type": dict(Counter(r["type"] for r in records).most_common()),
        "by_discipline": dict(Counter(r["discipline"] for r in records).most_common()),
        "with_fulltext": sum(1 for r in records if "fulltext" in r),
        "longest_fulltext_chars": max(sum(len(s["text"]) for s in r.get("fulltext", [])) for r in records),
        "with_references": sum(1 for r in records if r.get("references")),
        "online_first": sum(1 for r in records if r.get("online_first")),
        "same_title_groups": sum(1 for c in titles.values() if c > 1),
        "cited_over_10000": sum(1 for r in records if r["cited"] > 10000),
        "bytes": sum((out / f).stat().st_size for f in ("records.jsonl", "journals.jsonl", "questions.jsonl")),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = ap.parse_args(argv)
    stats = generate(args.out, args.seed)
    for key, value in stats.items():
        print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
