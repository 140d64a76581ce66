"""A deterministic citation hub for scale tests: one paper cited by hundreds (records.jsonl format).

The bundled corpus's longest citing list holds 25 papers and its longest reference list 15, so a
paper cited by hundreds — common on CNKI for a well-known article — never reaches the citation
API's paging, the graph's size limits or a walk's budget. `hub_records` builds one: a 2010
journal article cited by `citers` later papers (one in seven a thesis, as CNKI lists 硕士 and
博士 theses in their own databases), each citing the hub and up to `refs_each - 1` of the
papers before it, so a walk over them finds a dense network. Same arguments, same records; the
simulator serves them through the same lists as any corpus paper (newest first, 10 per page):
add them with `SimServer.add_record` (docs/simulator.md "Citation API")."""

from __future__ import annotations

import random
from typing import Any

HUB_ID = "hub0000"
HUB_TITLE = "引文网络规模测试：被数百篇文献引用的期刊论文"
_JOURNALS = ("情报学报", "图书情报工作", "中国图书馆学报", "情报理论与实践")
_SCHOOLS = ("武汉大学", "南京大学", "北京大学", "中山大学")


def hub_records(citers: int = 300, refs_each: int = 40, seed: int = 7) -> list[dict[str, Any]]:
    """The hub first, then its citing papers, oldest first (years 2011-2025)."""
    rng = random.Random(seed)
    hub: dict[str, Any] = {
        "id": HUB_ID, "db": "CJFD", "filename": "QBXB201001001", "type": "期刊", "title": HUB_TITLE,
        "authors": [{"name": "赵引文", "institution": "武汉大学信息管理学院"}], "source": _JOURNALS[0],
        "year": 2010, "date": "2010-01-15", "volume": "29", "issue": "1", "pages": "3-12",
        "keywords": ["引文网络", "文献计量"], "cited": citers, "downloads": 5000, "references": [],
    }  # fmt: skip
    records: list[dict[str, Any]] = [hub]
    earlier: list[str] = []
    for i in range(1, citers + 1):
        year = 2011 + (i - 1) * 15 // citers
        rid = f"hub{i:04d}"
        refs = [HUB_ID, *sorted(rng.sample(earlier, min(len(earlier), rng.randint(0, refs_each - 1))))]
        base: dict[str, Any] = {
            "id": rid, "title": f"基于引文网络的文献计量研究之{i}", "year": year,
            "date": f"{year}-{1 + i % 12:02d}-{1 + i % 27:02d}", "keywords": ["引文网络"],
            "cited": 0, "downloads": 10 + i, "references": refs,
        }  # fmt: skip
        if i % 7:
            journal = _JOURNALS[i % len(_JOURNALS)]
            base.update(db="CJFD", type="期刊", filename=f"QBGZ{year}{1 + i % 12:02d}{i:03d}", source=journal,
                        authors=[{"name": f"钱{i}", "institution": f"{_SCHOOLS[i % 4]}信息管理学院"}])  # fmt: skip
        else:
            doctoral = i % 2 == 0
            base.update(db="CDFD" if doctoral else "CMFD", type="博士" if doctoral else "硕士",
                        filename=f"10{i:08d}.nh", source=_SCHOOLS[i % 4],
                        authors=[{"name": f"孙{i}", "institution": _SCHOOLS[i % 4]}])  # fmt: skip
        records.append(base)
        earlier.append(rid)
    for rec in records[1:]:  # the listed count follows the lists (the grid's 被引 column)
        for ref in rec["references"][1:]:
            records[int(ref[3:])]["cited"] += 1
    return records
