"""A labelled reference set built from the bundled corpus (deterministic): correct references in
several citation styles and punctuation, each kind of field mismatch, fabricated references
(real authors and journals, invented titles), ambiguous ones (titles the corpus holds twice,
cited without anything that tells the records apart) and unreadable ones.

Each sample: (text, expected verdict, expected mismatch fields)."""

from __future__ import annotations

from dataclasses import dataclass

from cnki_mcp.cite.refmatch import title_similarity
from cnki_mcp.sim.corpus import Corpus, SimRecord

FULLWIDTH = str.maketrans({".": "．", ",": "，", ":": "：", "(": "（", ")": "）", "[": "［", "]": "］"})

# Invented titles in the corpus's subject areas (checked below to be far from every real title).
FABRICATED_TITLES = (
    "量子纠缠视角下民事诉讼证明责任的重新分配",
    "区块链赋能乡村振兴的宪法学路径研究",
    "元宇宙空间中刑事管辖权的冲突与协调",
    "基于脑机接口的合同意思表示认定",
    "深海采矿环境损害的国际私法适用",
    "人工智能法官的程序正义悖论及其克服",
    "外卖骑手算法考勤的劳动法定性",
    "跨境碳关税对我国出口企业合规的冲击",
    "气象大数据在保险理赔中的证据能力",
    "无人机物流配送侵权责任的归责原则",
    "民间借贷利率上限的经济学反思",
    "城市地下空间使用权的登记难题",
)
UNPARSABLE = (
    "同上",
    "参见前注",
    "（此处引用略）",
    "https://www.example.com/some/paper",
    "王某某的一篇文章，记不清题目了",
    "相关研究很多，不一一列举",
)


@dataclass(frozen=True)
class Sample:
    text: str
    verdict: str
    fields: tuple[str, ...] = ()


def _names(r: SimRecord) -> list[str]:
    return [a.name for a in r.authors]


def _gbt_authors(r: SimRecord) -> str:
    names = _names(r)
    return ", ".join(names[:3]) + (", 等" if len(names) > 3 else "")


def gbt_journal(r: SimRecord, **over: object) -> str:
    f = {"authors": _gbt_authors(r), "title": r.title, "code": "J", "source": r.source, "year": r.year,
         "volume": r.volume, "issue": r.issue, "pages": r.pages}
    f.update(over)
    vol = f"{f['volume']}" if f["volume"] else ""
    return f"{f['authors']}. {f['title']}[{f['code']}]. {f['source']}, {f['year']}, {vol}({f['issue']}): {f['pages']}."


def apa_journal(r: SimRecord) -> str:
    names = _names(r)
    return f"{', '.join(names)}. ({r.year}). {r.title}. {r.source}, {r.volume}({r.issue}), {r.pages}."


def free_journal(r: SimRecord) -> str:
    names = _names(r)
    authors = "、".join(names[:3]) + ("等" if len(names) > 3 else "")  # up to three, then 等
    return f"{authors}：《{r.title}》，《{r.source}》{r.year}年第{int(str(r.issue))}期，第{r.pages}页。"


def gbt_thesis(r: SimRecord) -> str:
    place = r.place or "北京"
    return f"{_names(r)[0]}. {r.title}[D]. {place}: {r.source}, {r.year}."


def build(corpus: Corpus | None = None) -> list[Sample]:
    corpus = corpus or Corpus.load()
    titles = [r.title for r in corpus.records]
    counts: dict[str, int] = {}
    for t in titles:
        counts[t] = counts.get(t, 0) + 1
    unique = [r for r in corpus.records if counts[r.title] == 1]
    journals = [
        r for r in unique
        if r.type == "期刊" and r.volume and r.issue and r.pages and r.source and len(r.authors) >= 2
    ]
    theses = [r for r in unique if r.type in ("硕士", "博士") and r.source and r.authors]
    other_sources = sorted({r.source for r in journals if r.source})
    out: list[Sample] = []

    # verified: several styles and punctuation (journal articles), theses
    for k, r in enumerate(journals[0:12]):
        out.append(Sample(f"[{k + 1}] {gbt_journal(r)}", "verified"))
    for r in journals[12:18]:
        out.append(Sample(gbt_journal(r).translate(FULLWIDTH), "verified"))
    for r in journals[18:24]:
        out.append(Sample(apa_journal(r), "verified"))
    for r in journals[24:30]:
        out.append(Sample(free_journal(r), "verified"))
    for r in theses[0:6]:
        out.append(Sample(gbt_thesis(r), "verified"))

    # mismatches, one field each
    pool = journals[30:]
    for i, r in enumerate(pool[0:5]):
        out.append(Sample(gbt_journal(r, year=(r.year or 2000) + 1 + i % 2), "mismatch", ("year",)))
    for i, r in enumerate(pool[5:9]):
        other = next(s for s in other_sources[i * 3 :] if s != r.source)
        out.append(Sample(gbt_journal(r, source=other), "mismatch", ("source",)))
    for r in pool[9:13]:
        out.append(Sample(gbt_journal(r, volume=str(int(str(r.volume)) + 1)), "mismatch", ("volume",)))
    for r in pool[13:17]:
        out.append(Sample(gbt_journal(r, issue=str(int(str(r.issue)) % 12 + 1)), "mismatch", ("issue",)))
    for r in pool[17:21]:
        first, _, last = str(r.pages).partition("-")
        out.append(Sample(gbt_journal(r, pages=f"{int(first) + 1}-{last or int(first) + 3}"), "mismatch", ("pages",)))
    for r in pool[21:25]:
        names = _names(r)
        wrong = ", ".join([names[0], "欧阳某", *names[2:3]]) + (", 等" if len(names) > 3 else "")
        out.append(Sample(gbt_journal(r, authors=wrong), "mismatch", ("authors",)))
    for r in pool[25:29]:
        cut = len(r.title) // 2
        garbled = r.title[:cut] + r.title[cut + 1 :]  # one character dropped
        out.append(Sample(gbt_journal(r, title=garbled), "mismatch", ("title",)))
    for r in pool[29:32]:
        out.append(Sample(gbt_journal(r, code="D"), "mismatch", ("type",)))

    # fabricated: real first author and journal, invented title
    for i, fake in enumerate(FABRICATED_TITLES):
        assert max(title_similarity(fake, t) for t in titles) < 50, fake
        r = pool[32 + i]
        out.append(Sample(gbt_journal(r, title=fake), "not_found"))

    # ambiguous: a title the corpus holds twice, cited with nothing that tells them apart
    dupes = sorted(t for t, n in counts.items() if n > 1)
    for t in dupes[:6]:
        out.append(Sample(f"《{t}》", "ambiguous"))

    for text in UNPARSABLE:
        out.append(Sample(text, "unparsable"))
    return out
