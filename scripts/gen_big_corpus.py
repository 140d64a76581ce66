"""Generate a large labelled corpus that can tell retrieval and enrichment policies apart.

The bundled corpus (`gen_corpus.py`) has at most ~37 matches per channel, so any policy that pages
once and enriches a few papers looks as good as any other. This one has ~10,000 records over the
same 22 topics, several hundred subject-channel matches per question, and graded labels (0-3)
that follow each record's content, not its title (docs/simulator.md "Large labelled corpora"):

* every record has a latent topic and aspect, a *focus* (`core`: about its aspect; `broad`: an
  overview covering 2-3 aspects) and *mentions* (other aspects, of its topic or of a sibling topic,
  named in passing in the abstract and sometimes in the keywords);
* titles: most name the term and the aspect, some only the term, some neither (a relevant paper
  with a generic title, found only through its abstract and keywords), and *decoys* name a topic
  and aspect the paper is not about ("从A看B", or another aspect of the same topic);
* sources: each topic's core journals, ordinary journals of the discipline (fictional names, no
  index tier), master's and doctoral theses, conference papers, newspapers, yearbooks and books,
  all independent of relevance, so source quality varies within the relevant set.

Two variants: `main` (seed 20261203, 24 questions) and `heldout` (another seed, 20 different
questions on other aspects, worded differently), for checking that defaults were not tuned to
one corpus. A third, `diverse`, is `main` with its journal papers spread over many more journals,
as the real site's result pages are (docs/simulator.md "Source diversity"): the same records,
texts, questions and labels, only the journal of each journal paper redrawn, from a second
random stream. Deterministic: `random.Random(seed)` (and `seed + 1` for `diverse`'s journals), no
clock, no set iteration.

Usage:
    python scripts/gen_big_corpus.py [--variant main|heldout|diverse] [--out DIR] [--scale 1.0]
    (default DIR: .bench/corpus/<variant>; `ensure_corpus()` generates it on demand)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import sys
from bisect import bisect_left
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus_vocab as V
import gen_corpus as G

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".bench" / "corpus"
GENERATOR_VERSION = 1  # with the sources' digest in MANIFEST.json: a cached corpus from other code is regenerated
SEEDS = {"main": 20261203, "heldout": 77031, "diverse": 20261203}
# Records per topic and type at scale 1.0 (22 topics -> ~10,100 records with the decoys).
PER_TOPIC = {"期刊": 330, "硕士": 50, "博士": 20, "会议": 30, "报纸": 16, "年鉴": 4, "图书": 6}
FOCUS_BROAD = 0.25  # share of records that survey their topic instead of one aspect
THIN = 0.4  # share of the others whose abstract only names their aspect (grade 1 at most)
THIN_SENTENCES = ["本文在梳理相关文献的基础上提出了若干思考。", "文章对实践中的若干问题进行了初步讨论。",
                  "研究对相关工作具有一定的参考意义。", "文章最后提出了进一步研究的方向。", "相关问题有待今后深入研究。"]
CORE_JOURNAL_SHARE = 0.55  # the rest of a topic's journal papers go to ordinary journals
DECOYS_PER_PAIR = 8  # records whose title names a (topic, aspect) they are not about

# Ordinary journals (no index tier): fictional names generated for the simulator, no ISSN/CN.
ORDINARY: dict[str, list[str]] = {
    "法学": ["法治实践与探索", "法学理论与实务", "法制研究参考", "基层法治论丛"],
    "计算机": ["信息技术与应用实践", "计算机应用前沿", "智能系统与工程", "软件与数据技术"],
    "医学": ["临床医学研究与实践", "基层医学论坛", "现代医学与健康研究", "医学理论与实践探索"],
    "经济管理": ["经济管理研究与实践", "区域经济论丛", "现代商业经济", "产业经济评论参考"],
    "教育": ["教育理论与实践探索", "高校教学研究", "教育教学论丛", "现代教育实践"],
    "材料机械": ["材料工程与技术", "机械制造与工艺", "现代焊接与成形", "新能源材料进展参考"],
    "文化遗产": ["文博研究与实践", "文化遗产论丛", "博物馆与社会", "文物保护技术参考"],
    "环境": ["环境科学与管理实践", "低碳经济研究参考", "生态环境论丛", "区域环境与发展"],
}
PARTIAL_TITLES = ["{T}若干问题研究", "{T}的理论反思与制度回应", "{T}研究的新进展", "{C}背景下{T}问题研究",
                  "{T}的现实困境与优化路径", "关于{T}的几点思考"]
GENERIC_TITLES: dict[str, list[str]] = {
    "法学": ["{C}背景下的制度回应与路径选择", "新型纠纷中的规则适用问题研究", "司法裁判中的利益衡量与规则完善", "{C}的法律规制研究"],
    "计算机": ["一种改进的多尺度特征融合方法", "面向{C}的高效建模方法研究", "基于{M}的优化算法", "融合多源信息的智能分析框架"],
    "医学": ["{C}相关因素的横断面调查", "临床综合干预效果的回顾性分析", "基于{M}的相关因素研究", "影响因素分析及护理对策"],
    "经济管理": ["{C}下的机制检验与政策启示", "来自中国省级面板数据的经验证据", "基于{M}的实证研究", "影响机制与异质性分析"],
    "教育": ["{C}背景下的实践路径研究", "基于{M}的实证研究", "高校教学改革的探索与实践", "育人模式的构建与应用"],
    "材料机械": ["工艺参数优化及其试验研究", "基于{M}的性能分析", "{C}构件的试验研究", "关键工艺的数值模拟与验证"],
    "文化遗产": ["{C}背景下的实践探索", "基于{M}的案例研究", "文化资源保护利用的路径探析", "公共文化服务的创新实践"],
    "环境": ["{C}的时空演变与驱动机制", "基于{M}的情景预测", "区域绿色低碳转型路径研究", "环境治理的政策效应评估"],
}
# Another aspect discussed briefly (a grade-1 mention) or only named (no grade).
MENTION_DISCUSS = ["此外，文章对{X}问题亦有所涉及。", "文章也简要分析了{X}的相关问题。", "文章还对{X}作了初步讨论。"]
MENTION_PASSING = ["{X}不在本文讨论范围之内，留待另文探讨。", "与既有关于{X}的研究不同，本文聚焦于{A}。",
                   "既有研究多集中于{X}，对{A}关注不足。", "本文不讨论{X}问题。"]
MENTION_OTHER = ["与{X}等问题不同，{T}{A}有其自身的特殊性。", "近年来，{X}同样受到广泛关注。",
                 "本文的分析框架亦可为{X}研究提供借鉴。", "有别于{X}，本文关注{T}{A}。"]
SIBLING_MENTION = 0.35  # share of records naming a sibling topic's term and aspect in passing
DECOY_TITLES = ["从{XT}{XA}看{T}{A}", "{XT}{XA}视角下的{T}{A}研究", "超越{XT}{XA}：{T}{A}的再思考"]
# Journal items that are not research on what their title names: book reviews, meeting reports,
# calls for papers. Their abstracts are generic (as such items' are), so only the detail page tells
# them from a paper. Grade 0 for every question. (kind, titles, abstract sentences, keywords)
NOTICES_PER_PAIR = 12
NOTICES: list[tuple[str, list[str], list[str], list[str]]] = [
    ("review", ["评《{T}{A}研究》", "《{T}{A}论》书评", "读《{T}{A}：理论与实践》"],
     ["该书系统梳理了相关领域的理论与实践，结构清晰，论证充分。", "作者长期关注该领域，书中不乏独到见解。",
      "本书对后续研究具有一定的参考价值，但部分章节的论证仍有待深化。"], ["书评", "学术著作"]),
    ("meeting", ["“{T}{A}”学术研讨会综述", "{T}{A}高端论坛会议综述", "{T}{A}专题研讨会纪要"],
     ["本次研讨会由多家单位联合主办，来自高校、科研院所和实务部门的专家学者参加了会议。",
      "与会代表围绕会议主题展开了深入研讨，形成了若干共识。", "会议认为，相关问题仍需理论界与实务界持续关注。"],
     ["会议综述", "学术研讨会"]),
    ("call", ["“{T}{A}”专题征稿启事", "{T}{A}专栏征文通知"],
     ["为推动相关领域研究，本刊拟开设专栏，现面向海内外学者征集稿件。", "来稿须为未公开发表的原创成果，请通过本刊投稿系统提交。"],
     ["征稿启事"]),
]

# Questions: (topic, grade-3 aspects, grade-2 aspects). The main set and the held-out set use
# different (topic, aspect) pairs; concept groups come from `concepts()` with the variant's wording.
MAIN_QUESTIONS: list[tuple[str, list[str], list[str]]] = [
    ("liqdam", ["reduce"], ["adjust"]), ("autodrive", ["liability"], ["defect"]), ("pipl", ["consent"], ["sensitive"]),
    ("datacomp", ["criminal"], ["program"]), ("deeplearn", ["medimg"], ["image"]), ("llm", ["halluc"], ["eval"]),
    ("fedlearn", ["privacy"], []), ("kg", ["construct"], ["embed"]), ("depress", ["sleep"], []),
    ("t2dm", ["control"], ["selfmanage"]), ("tcm", ["netpharm"], ["formula"]), ("digecon", ["innov"], ["industry"]),
    ("greenfin", ["reform"], ["greeninno"]), ("rural", ["income"], ["digital"]), ("online", ["engage"], ["analytics"]),
    ("ideo", ["design"], ["eval"]), ("waam", ["micro"], ["stress"]), ("libattery", ["thermal"], []),
    ("digrelic", ["3d"], ["archive"]), ("museum", ["edu"], []), ("carbon", ["driver"], ["efficiency"]),
    ("peak", ["path"], []), ("llm", ["finetune"], []), ("pipl", ["crossborder"], []),
]
HELDOUT_QUESTIONS: list[tuple[str, list[str], list[str]]] = [
    ("liqdam", ["burden"], []), ("autodrive", ["accident"], ["insurance"]), ("pipl", ["remedy"], []),
    ("datacomp", ["platform"], ["security"]), ("deeplearn", ["robust"], []), ("llm", ["domain"], []),
    ("fedlearn", ["noniid"], ["comm"]), ("kg", ["qa"], ["reason"]), ("depress", ["adolescent"], ["suicide"]),
    ("t2dm", ["complication"], []), ("tcm", ["quality"], []), ("digecon", ["gap"], ["employ"]),
    ("greenfin", ["esg"], []), ("rural", ["govern"], []), ("online", ["aied"], []), ("ideo", ["teacher"], []),
    ("waam", ["path"], ["monitor"]), ("libattery", ["recycle"], ["soh"]), ("carbon", ["trade"], []),
    ("peak", ["policy"], ["city"]),
]
QUESTION_SETS = {"main": MAIN_QUESTIONS, "heldout": HELDOUT_QUESTIONS, "diverse": MAIN_QUESTIONS}
WORDED_AS = {"main": "main", "heldout": "heldout", "diverse": "main"}  # a variant's question wording
# The growth benchmark's broad question (`growth.jsonl`, unlabelled): one concept group whose terms
# run through nine topics, ~4,750 subject matches on the main corpus, so a search can reach 3,000
# candidates (`scripts/bench.py growth`).
GROWTH_QUESTION = {"id": "g01", "question": "人工智能与数字化",
                   "concepts": [["人工智能", "深度学习", "神经网络", "数字", "智能", "知识图谱"]], "relevant": {}}


def aspect_core(aspect: tuple[Any, ...]) -> str:
    return str(aspect[1]).removeprefix("中的").removeprefix("的").removeprefix("与")


# `diverse`: journals per discipline besides the topics' own core journals (generated names, no
# ISSN/CN), drawn with weights 1 / (rank + 1) ** DIVERSE_ZIPF. Calibrated on the saved real result
# pages: 16 and 18 distinct sources among 20 rows (docs/simulator.md "Source diversity").
DIVERSE_TIERED = 40
DIVERSE_ORDINARY = 80
DIVERSE_ZIPF = 0.8
DIVERSE_KEEP_CORE = 0.3  # share of core-journal papers left in the topic's own core journals
DIVERSE_REGIONS = ["华东", "华北", "西南", "西北", "东北", "中南", "江淮", "岭南", "湖湘", "巴蜀", "齐鲁", "燕赵",
                   "关中", "闽台", "滨海", "河洛"]
DIVERSE_STEMS: dict[str, list[str]] = {
    "法学": ["法治", "法学", "司法", "法律"], "计算机": ["计算", "信息", "智能", "数据"],
    "医学": ["医学", "临床", "医药", "健康"], "经济管理": ["经济", "管理", "商业", "金融"],
    "教育": ["教育", "教学", "高教", "师范"], "材料机械": ["材料", "机械", "制造", "工程"],
    "文化遗产": ["文博", "遗产", "考古", "文物"], "环境": ["环境", "生态", "资源", "能源"],
}
DIVERSE_SUFFIXES = ["论丛", "学刊", "研究", "评论", "实践", "通讯", "前沿", "探索", "导刊", "学报"]
SOCIAL = {"法学", "经济管理", "教育", "文化遗产"}
DIVERSE_TIERS = {True: [["北大核心", "CSSCI"], ["CSSCI"], ["北大核心"], ["AMI核心"], ["北大核心", "CSSCI", "AMI核心"]],
                 False: [["北大核心", "CSCD"], ["CSCD"], ["北大核心"], ["EI"], ["北大核心", "CSCD", "EI"]]}


class BigGen(G.Gen):
    def __init__(self, seed: int, scale: float = 1.0, *, diverse: bool = False) -> None:
        super().__init__(seed)
        self.scale = scale
        # `diverse`: its own stream, so the main stream (every text, label and other source) is
        # consumed exactly as in `main`
        self.spread = random.Random(seed + 1) if diverse else None
        self.pools: dict[str, dict[bool, list[dict[str, Any]]]] = {}
        self.ordinary: dict[str, list[dict[str, Any]]] = {}
        for d, (disc, names) in enumerate(sorted(ORDINARY.items())):
            for k, name in enumerate(names):
                j = {"name": name, "code": f"P{chr(65 + d)}{chr(65 + k)}X", "tiers": [],
                     "sponsor": self.rng.choice(V.UNIVERSITIES)}
                self.journals.append(j)
                self.jby_code[j["code"]] = j
                self.ordinary.setdefault(disc, []).append(j)
        if self.spread is not None:
            self._diverse_pools()

    def _diverse_pools(self) -> None:
        """Per discipline, DIVERSE_TIERED index-tier and DIVERSE_ORDINARY ordinary journals with
        generated names (region + stem + suffix), none a name already in the corpus."""
        assert self.spread is not None
        r = self.spread
        taken = {j["name"] for j in self.journals}
        for d, disc in enumerate(sorted(DIVERSE_STEMS)):
            names = [f"{a}{b}{c}" for a in DIVERSE_REGIONS for b in DIVERSE_STEMS[disc] for c in DIVERSE_SUFFIXES]
            r.shuffle(names)
            names = [n for n in names if n not in taken][: DIVERSE_TIERED + DIVERSE_ORDINARY]
            taken.update(names)
            for k, name in enumerate(names):
                tiered = k < DIVERSE_TIERED
                j: dict[str, Any] = {"name": name, "code": f"V{chr(65 + d)}{k:03d}", "tiers": []}
                if tiered:
                    j["tiers"] = list(r.choice(DIVERSE_TIERS[disc in SOCIAL]))
                    j["composite_if"] = round(r.uniform(0.6, 8.0), 3)
                    j["aggregate_if"] = round(j["composite_if"] * r.uniform(0.5, 0.8), 3)
                    j["metric_year"] = 2025
                j["sponsor"] = r.choice(V.UNIVERSITIES)
                self.journals.append(j)
                self.jby_code[j["code"]] = j
                self.pools.setdefault(disc, {}).setdefault(tiered, []).append(j)

    def _spread(self, t: dict[str, Any], j: dict[str, Any], source: str) -> tuple[dict[str, Any], str]:
        """`diverse`: the journal of a journal paper redrawn from its discipline's pools: a core
        journal's paper stays there with DIVERSE_KEEP_CORE, else goes to a generated journal of
        the same kind (index tier or not)."""
        r = self.spread
        assert r is not None
        tiered = bool(j.get("tiers"))
        if tiered and r.random() < DIVERSE_KEEP_CORE:
            return j, source
        pool = self.pools[t["discipline"]][tiered]
        weights = [1.0 / (k + 1) ** DIVERSE_ZIPF for k in range(len(pool))]
        picked = r.choices(pool, weights=weights)[0]
        return picked, picked["name"]

    # ------------------------------------------------------------------ content
    def pick_journal(self, t: dict[str, Any], year: int) -> tuple[dict[str, Any], str]:
        if self.rng.random() < CORE_JOURNAL_SHARE:
            j, source = super().pick_journal(t, year)
        else:
            j = self.rng.choice(self.ordinary[t["discipline"]])
            source = j["name"]
        return (j, source) if self.spread is None else self._spread(t, j, source)

    def mention_text(self, rec: dict[str, Any], t: dict[str, Any], term: str, aspect: tuple[Any, ...]) -> tuple[str, list[str]]:
        """Sentences naming other aspects in passing; returns (text, mentions as 'topic/aspect')."""
        r, out, mentions = self.rng, "", []
        others = [a for a in t["aspects"] if a[0] != aspect[0] and a[0] not in rec.get("covers", ())]
        for a in r.sample(others, min(len(others), r.choice([0, 1, 1, 2, 2, 3]))):
            x = r.choice([aspect_core(a), *a[2]])
            discussed = r.random() < 0.4
            out += r.choice(MENTION_DISCUSS if discussed else MENTION_PASSING).replace("{X}", x).replace("{A}", aspect_core(aspect))
            if discussed:
                mentions.append(f"{t['key']}/{a[0]}")
            if r.random() < (0.3 if discussed else 0.15):  # authors list what they name, too
                rec["keywords"].append(x)
        if r.random() < SIBLING_MENTION:  # a sibling topic of the discipline, named with one of its aspects
            sib = r.choice([x for x in V.TOPICS if x["discipline"] == t["discipline"] and x["key"] != t["key"]])
            a = r.choice(sib["aspects"])
            x = r.choice(sib["variants"]) + r.choice([aspect_core(a), *a[2]])
            out += self.fill(r.choice(MENTION_OTHER).replace("{X}", x), t, term, aspect)
        return out, mentions

    def broad_abstract(self, t: dict[str, Any], term: str, covers: list[tuple[Any, ...]]) -> str:
        r, disc = self.rng, V.DISCIPLINES[t["discipline"]]
        text = self.fill(r.choice(t["bg"]), t, term, covers[0]).replace(aspect_core(covers[0]), "相关问题")
        text += f"本文系统梳理了{term}研究的主要议题，包括" + "、".join(aspect_core(a) for a in covers) + "等方面。"
        for a in covers:
            text += self.fill(r.choice(t["facts"]), t, term, a)
        return text + self.fill(r.choice(disc["concl_s"]), t, term, covers[-1])

    def shape(self, rec: dict[str, Any], t: dict[str, Any], aspect: tuple[Any, ...], term: str) -> dict[str, Any]:
        """Focus, mentions and title style on a record made by the base generator."""
        r = self.rng
        if r.random() < FOCUS_BROAD and rec["type"] not in ("报纸", "年鉴"):
            covers = [aspect, *r.sample([a for a in t["aspects"] if a[0] != aspect[0]], r.choice([1, 2]))]
            rec["focus"], rec["covers"] = "broad", [a[0] for a in covers]
            rec["abstract"] = self.broad_abstract(t, term, covers)
            rec["keywords"] = [term, *[r.choice(a[2]) for a in covers], *r.sample(t["shared"], 1)]
            rec["title"] = self.fill(r.choice(["{T}研究综述", "{T}研究的回顾与展望", "{T}：议题、方法与前沿",
                                               "{T}若干问题研究", "{T}的理论与实践"]), t, term, aspect)
        elif r.random() < THIN and rec["type"] not in ("报纸", "年鉴"):
            # titled like a paper on its aspect, but the abstract only names it once: a thin paper
            rec["focus"] = "thin"
            first = self.fill(r.choice(t["bg"]), t, term, aspect)
            if aspect_core(aspect) not in first:
                first += f"本文围绕{term}{aspect[1]}展开讨论。"
            rec["abstract"] = first + "".join(r.sample(THIN_SENTENCES, r.choice([2, 3])))
            rec["keywords"] = [term, *r.sample(t["shared"], 2)]
        else:
            rec["focus"] = "core"
        text, mentions = self.mention_text(rec, t, term, aspect)
        if text:
            cut = rec["abstract"].find("。") + 1
            rec["abstract"] = rec["abstract"][:cut] + text + rec["abstract"][cut:]
        rec["mentions"] = mentions
        rec["keywords"] = list(dict.fromkeys(rec["keywords"]))
        style = "specific"
        if rec["focus"] in ("core", "thin") and rec["type"] not in ("报纸", "年鉴", "图书"):
            roll = r.random()
            if roll < 0.2:
                style, pool = "partial", PARTIAL_TITLES
            elif roll < 0.5:
                style, pool = "generic", GENERIC_TITLES[t["discipline"]]
            if style != "specific":
                rec["title"] = self.title(t, term, aspect, pool)
                if rec["type"] in ("博士", "硕士") and not rec["title"].endswith(("研究", "分析", "探析")):
                    rec["title"] += "研究"
        rec["title_style"] = "broad" if rec["focus"] == "broad" else style
        return rec

    def make(self, t: dict[str, Any], kind: str, aspect: tuple[Any, ...], term: str) -> dict[str, Any]:
        if kind == "期刊":
            return self.journal_paper(t, aspect, term, online_first=self.rng.random() < 0.03)
        if kind in ("博士", "硕士"):
            return self.thesis(t, aspect, term, kind)
        maker = {"会议": self.conference, "报纸": self.newspaper, "年鉴": self.yearbook, "图书": self.book}[kind]
        return maker(t, aspect, term)

    def decoy(self, t: dict[str, Any], aspect: tuple[Any, ...]) -> dict[str, Any]:
        """A paper whose title names (t, aspect) while it is about something else."""
        r = self.rng
        if r.random() < 0.5:  # another aspect of the same topic under this aspect's title
            latent_t = t
            latent_a = r.choice([a for a in t["aspects"] if a[0] != aspect[0]])
        else:  # a sibling topic: "从 A 看 B"
            latent_t = r.choice([x for x in V.TOPICS if x["discipline"] == t["discipline"] and x["key"] != t["key"]])
            latent_a = r.choice(latent_t["aspects"])
        term = self.term(latent_t)
        rec = self.journal_paper(latent_t, latent_a, term) if r.random() < 0.8 else self.thesis(latent_t, latent_a, term, "硕士")
        rec["focus"], rec["mentions"], rec["title_style"] = "core", [], "decoy"
        if latent_t is t:
            rec["title"] = self.title(t, self.term(t), aspect)
        else:
            pattern = r.choice(DECOY_TITLES).replace("{XT}", self.term(t)).replace("{XA}", aspect_core(aspect))
            rec["title"] = self.fill(pattern, latent_t, term, latent_a)
        rec["decoy_for"] = f"{t['key']}/{aspect[0]}"
        return rec

    def notice(self, t: dict[str, Any], aspect: tuple[Any, ...]) -> dict[str, Any]:
        """A review, meeting report or call for papers whose title names (t, aspect)."""
        r = self.rng
        kind, titles, sentences, keywords = r.choice(NOTICES)
        term = self.term(t)
        rec = self.journal_paper(t, aspect, term)
        rec["title"] = self.fill(r.choice(titles), t, term, aspect)
        rec["abstract"] = "".join(r.sample(sentences, min(len(sentences), r.choice([2, 3]))))
        rec["keywords"], rec["funds"] = list(keywords), []
        rec.pop("title_en", None)
        if kind == "call":
            rec["authors"] = [{"name": "本刊编辑部"}]
        rec["focus"], rec["mentions"], rec["title_style"] = kind, [], "decoy"
        rec["decoy_for"] = f"{t['key']}/{aspect[0]}"
        return rec

    def build(self) -> None:
        per_topic = {k: max(1, round(v * self.scale)) for k, v in PER_TOPIC.items()}
        for t in V.TOPICS:
            n = 0
            for kind, count in per_topic.items():
                for _ in range(count):
                    aspect, term = t["aspects"][n % len(t["aspects"])], self.term(t)
                    n += 1
                    self.records.append(self.shape(self.make(t, kind, aspect, term), t, aspect, term))
        for t in V.TOPICS:
            for aspect in t["aspects"]:
                for _ in range(max(1, round(DECOYS_PER_PAIR * min(1.0, self.scale * 2)))):
                    self.records.append(self.decoy(t, aspect))
                for _ in range(max(1, round(NOTICES_PER_PAIR * min(1.0, self.scale * 2)))):
                    self.records.append(self.notice(t, aspect))
        for i, rec in enumerate(self.records, 1):
            rec["id"] = f"r{i:05d}"

    def link_references(self) -> None:
        """Each journal paper or thesis cites 3-15 earlier papers of its topic (no O(n^2) scan)."""
        r = self.rng
        by_topic: dict[str, list[tuple[int, str]]] = {}
        for rec in self.records:
            if rec["type"] in ("期刊", "博士", "硕士", "会议", "图书") and rec.get("year"):
                by_topic.setdefault(rec["topic"], []).append((rec["year"], rec["id"]))
        for rows in by_topic.values():
            rows.sort()
        for rec in self.records:
            if rec["type"] not in ("期刊", "博士", "硕士") or not rec.get("year") or r.random() < 0.1:
                continue
            rows = by_topic[rec["topic"]]
            earlier = rows[: bisect_left(rows, (rec["year"], ""))]
            picks = r.sample(earlier, min(len(earlier), r.randint(3, 15)))
            rec["references"] = sorted(i for _, i in picks)


def grade(rec: dict[str, Any], topic: str, best: list[str], related: list[str]) -> int:
    """A record's grade for a question, from its content (latent topic, aspect, focus, mentions)."""
    if rec["topic"] != topic or rec["focus"] not in ("core", "broad", "thin"):
        return 0  # another topic, or a review / meeting report / call for papers
    covers = rec.get("covers") or []
    mentioned = {m.split("/", 1)[1] for m in rec.get("mentions", ()) if m.startswith(topic + "/")}
    if rec["focus"] == "thin":  # an abstract that only names its aspect
        return 1 if rec["aspect"] in best else 0
    g = 0
    if rec["focus"] == "core" and rec["aspect"] in best:
        g = 3
    elif (rec["focus"] == "core" and rec["aspect"] in related) or any(a in covers for a in best):
        g = 2
    elif mentioned & set(best) or any(a in covers for a in related):
        g = 1
    if g and rec["type"] in ("报纸", "年鉴"):
        g = 1
    return g


def concepts(variant: str, topic: dict[str, Any], aspects: list[tuple[Any, ...]]) -> list[list[str]]:
    """Concept groups as a client would send them: the topic's terms AND the aspect's terms.
    The held-out set words them differently (fewer synonyms, the aspect's keywords first)."""
    terms = list(topic["variants"])
    facet: list[str] = []
    for a in aspects:
        facet += [aspect_core(a), *a[2]] if WORDED_AS[variant] == "main" else [*a[2][:2], aspect_core(a)]
    if WORDED_AS[variant] != "main":
        terms = terms[:2]
    return [terms, list(dict.fromkeys(facet))]


def questions(variant: str, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    topics = {t["key"]: t for t in V.TOPICS}
    out = []
    for i, (key, best, related) in enumerate(QUESTION_SETS[variant], 1):
        t = topics[key]
        aspects = [next(a for a in t["aspects"] if a[0] == k) for k in best]
        text = t["variants"][0] + aspect_core(aspects[0]) + ("研究" if WORDED_AS[variant] == "main" else "的主要问题")
        rel = {r["id"]: g for r in records if (g := grade(r, key, best, related))}
        out.append({"id": f"{variant[0]}{i:02d}", "question": text, "concepts": concepts(variant, t, aspects),
                    "topic": key, "aspects": best, "related": related, "relevant": rel})
    return out


ORDER = [*G.RECORD_ORDER[:-1], "focus", "covers", "mentions", "title_style", "decoy_for"]


def clean(rec: dict[str, Any]) -> dict[str, Any]:
    out = {k: rec[k] for k in ORDER if k in rec and rec[k] not in (None, [], "", False)}
    for k in ("cited", "downloads"):
        out[k] = rec.get(k, 0)
    if "mentions" not in out:
        out["mentions"] = []
    return {k: out[k] for k in ORDER if k in out}


def generate(out: Path, variant: str = "main", scale: float = 1.0, seed: int | None = None) -> dict[str, Any]:
    g = BigGen(SEEDS[variant] if seed is None else seed, scale, diverse=variant == "diverse")
    g.build()
    g.link_references()
    g.set_counts()
    records = sorted((clean(r) for r in g.records), key=lambda r: r["id"])
    journals = sorted((j for j in g.journals), key=lambda j: j["code"])
    qs = questions(variant, records)
    out.mkdir(parents=True, exist_ok=True)
    G.write_jsonl(out / "records.jsonl", records)
    G.write_jsonl(out / "journals.jsonl", journals)
    G.write_jsonl(out / "questions.jsonl", qs)
    G.write_jsonl(out / "growth.jsonl", [GROWTH_QUESTION])
    digest = checksum(out)
    (out / "MANIFEST.json").write_text(json.dumps(
        {"generator": GENERATOR_VERSION, "sources": sources_digest(), "variant": variant, "scale": scale, "seed": g_seed(variant, seed),
         "sha256": digest, "records": len(records), "questions": len(qs)}, indent=1) + "\n", encoding="utf-8")
    return {"records": len(records), "journals": len(journals), "questions": len(qs), "sha256": digest,
            "by_type": dict(Counter(r["type"] for r in records).most_common()),
            "title_style": dict(Counter(r["title_style"] for r in records).most_common()),
            "bytes": sum((out / f).stat().st_size for f in ("records.jsonl", "journals.jsonl", "questions.jsonl"))}


def g_seed(variant: str, seed: int | None) -> int:
    return SEEDS[variant] if seed is None else seed


def checksum(directory: Path) -> str:
    h = hashlib.sha256()
    for name in FILES:
        h.update((directory / name).read_bytes())
    return h.hexdigest()


def sources_digest() -> str:
    """The generator's own code and vocabularies: a cached corpus written by other code is stale."""
    h = hashlib.sha256()
    for f in (Path(__file__), Path(G.__file__), Path(V.__file__)):
        h.update(f.resolve().read_bytes())
    return h.hexdigest()[:16]


FILES = ("records.jsonl", "journals.jsonl", "questions.jsonl", "growth.jsonl")


def ensure_corpus(variant: str = "main", scale: float = 1.0, root: Path = CACHE) -> Path:
    """The variant's directory, generated when missing or written by another generator version."""
    out = root / (variant if scale == 1.0 else f"{variant}-x{scale:g}")
    manifest = out / "MANIFEST.json"
    if manifest.exists() and all((out / f).exists() for f in FILES):
        meta = json.loads(manifest.read_text(encoding="utf-8"))
        if (meta.get("generator"), meta.get("sources")) == (GENERATOR_VERSION, sources_digest()) and meta.get(
            "sha256"
        ) == checksum(out):
            return out
    # Written aside and moved into place, so a process that finds the directory finds it whole
    # (two benches started together may both generate; the last move wins, same bytes).
    tmp = out.with_name(f"{out.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    generate(tmp, variant, scale)
    old = out.with_name(f"{out.name}.old{os.getpid()}")
    if out.exists():
        out.rename(old)
    tmp.rename(out)
    shutil.rmtree(old, ignore_errors=True)
    return out


def channel_hits(corpus: Any, groups: list[list[str]]) -> dict[str, set[str]]:
    """Record ids each research channel (subject, title, keywords) matches: the production
    compiler's QueryJson evaluated by the simulator, as a search sends it."""
    sys.path.insert(0, str(ROOT))
    from cnki_mcp.query.compiler import compile_expression, concept_expression
    from cnki_mcp.query.expr import Field
    from cnki_mcp.sim.query import Sort, parse_query_json, search

    out: dict[str, set[str]] = {}
    for name, fld in (("SU", Field.SUBJECT), ("TI", Field.TITLE), ("KY", Field.KEYWORDS)):
        compiled = compile_expression(concept_expression(groups, fld))
        ids: set[str] = set()
        for subject in compiled.subjects:
            body = {"QNode": {"QGroup": [subject]}}
            ids.update(r.id for r in search(corpus, parse_query_json(body), Sort.FFD))
        out[name] = ids
    return out


def stats_table(directory: Path) -> str:
    """Per question: matches per channel (relevant among them), grades, grade-3 papers whose title
    names neither concept, grade-0 papers whose title names both, source kinds among grade >= 2."""
    sys.path.insert(0, str(ROOT))
    from cnki_mcp.sim.corpus import Corpus

    corpus = Corpus.load(directory)
    tiers = {j.name: j.tiers for j in corpus.journals}
    qs = [json.loads(x) for x in (directory / "questions.jsonl").read_text(encoding="utf-8").splitlines() if x]

    def kind(r: Any) -> str:
        if r.type != "期刊":
            return {"硕士": "thesis", "博士": "thesis", "会议": "conf."}.get(r.type, "other")
        t = tiers.get(r.source or "", ())
        return "CSSCI" if "CSSCI" in t else "core" if t else "ordinary"

    def names(text: str, group: list[str]) -> bool:
        return any(x.casefold() in text.casefold() for x in group)

    lines = ["| question | SU (relevant) | TI (relevant) | KY (relevant) | grade 3 / 2 / 1 | grade 3, generic title"
             " | grade 0, on-topic title | grade >= 2 by source: CSSCI / core / ordinary / thesis / conf. |",
             "|---|---:|---:|---:|---|---:|---:|---|"]
    for q in qs:
        rel, hits = q["relevant"], channel_hits(corpus, q["concepts"])
        cells = [f"{len(ids)} ({sum(1 for i in ids if rel.get(i))})" for ids in hits.values()]
        g = Counter(rel.values())
        generic = sum(1 for i, v in rel.items() if v == 3 and not any(names(corpus.by_id[i].title, c) for c in q["concepts"]))
        decoy = sum(1 for i in hits["SU"] if not rel.get(i) and all(names(corpus.by_id[i].title, c) for c in q["concepts"]))
        kinds = Counter(kind(corpus.by_id[i]) for i, v in rel.items() if v >= 2)
        spread = " / ".join(str(kinds[k]) for k in ("CSSCI", "core", "ordinary", "thesis", "conf."))
        lines.append(f"| {q['id']} {q['question']} | {' | '.join(cells)} | {g[3]} / {g[2]} / {g[1]} | {generic}"
                     f" | {decoy} | {spread} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variant", choices=sorted(SEEDS), default="main")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--scale", type=float, default=1.0, help="records per topic relative to the default")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--stats", action="store_true", help="also print per-question channel matches and labels")
    args = ap.parse_args(argv)
    out = args.out or CACHE / args.variant
    if args.stats and args.out is None and args.seed is None:
        out = ensure_corpus(args.variant, args.scale)
        print(stats_table(out))
        return 0
    stats = generate(out, args.variant, args.scale, args.seed)
    for key, value in stats.items():
        print(f"{key}: {value}")
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
